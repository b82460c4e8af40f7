// Checks `agent-memory mcp --compat server-memory` against the reference MCP memory server
// (@modelcontextprotocol/server-memory): the same sequence of the nine tools is sent to both
// over stdio, and every answer is compared (entities, relations and observations as sets;
// whether the call failed). Then the reference server's memory.jsonl is imported into a
// fresh namespace of ours, and our read_graph of it must equal the reference's.
//
// Usage: node compat.mjs REFERENCE_JS AGENT_MEMORY_BIN WORK_DIR
// Exits 1 on any difference, printing both answers.

import { spawn, execFileSync } from "node:child_process";
import { createInterface } from "node:readline";
import path from "node:path";

const [referenceJs, bin, work] = process.argv.slice(2);
if (!referenceJs || !bin || !work) {
  console.error("usage: node compat.mjs REFERENCE_JS AGENT_MEMORY_BIN WORK_DIR");
  process.exit(2);
}
const memoryFile = path.join(work, "reference-memory.jsonl");
const store = path.join(work, "compat.db");

/** A JSON-RPC client on a child's standard input and output. */
function client(command, args, env) {
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const waiting = new Map();
  let next = 1;
  createInterface({ input: child.stdout }).on("line", (line) => {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    if (message.id !== undefined && waiting.has(message.id)) {
      waiting.get(message.id)(message);
      waiting.delete(message.id);
    }
  });
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => reject(new Error(`${command}: no answer to ${method}`)), 30000);
      waiting.set(id, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  const notify = (method) =>
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method }) + "\n");
  return {
    async start() {
      const init = await request("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "compat-check", version: "0" },
      });
      if (!init.result) throw new Error(`${command}: initialize failed: ${JSON.stringify(init)}`);
      notify("notifications/initialized");
    },
    async call(name, args) {
      const message = await request("tools/call", { name, arguments: args });
      if (message.error) return { error: true };
      const result = message.result;
      if (result.isError) return { error: true };
      const text = result.content?.[0]?.text ?? "";
      let value;
      try {
        value = JSON.parse(text);
      } catch {
        value = text;
      }
      return { error: false, value };
    },
    stop() {
      child.stdin.end();
      child.kill();
    },
  };
}

/** Entities, relations and observations as sorted sets, so order does not matter. */
function normalize(value) {
  if (Array.isArray(value)) {
    return value.map(normalize).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }
  if (value && typeof value === "object") {
    const out = {};
    for (const key of Object.keys(value).sort()) {
      // Paging is ours alone: one page holds these small graphs.
      if (key === "nextCursor") continue;
      out[key] = normalize(value[key]);
    }
    return out;
  }
  return value;
}

const steps = [
  ["create_entities", { entities: [
    { name: "Ada Lovelace", entityType: "person", observations: ["Wrote the first program", "Born in London"] },
    { name: "Charles Babbage", entityType: "person", observations: ["Designed the engine"] },
    { name: "Analytical Engine", entityType: "machine", observations: [] },
  ] }],
  ["create_entities", { entities: [
    { name: "Ada Lovelace", entityType: "person", observations: ["ignored: she exists"] },
    { name: "Lovelace Trust", entityType: "organization", observations: ["Keeps her papers"] },
  ] }],
  ["create_relations", { relations: [
    { from: "Ada Lovelace", to: "Analytical Engine", relationType: "programs" },
    { from: "Charles Babbage", to: "Analytical Engine", relationType: "designs" },
    { from: "Ada Lovelace", to: "Charles Babbage", relationType: "corresponds_with" },
    { from: "Lovelace Trust", to: "Ada Lovelace", relationType: "remembers" },
  ] }],
  ["create_relations", { relations: [
    { from: "Ada Lovelace", to: "Analytical Engine", relationType: "programs" },
  ] }],
  ["add_observations", { observations: [
    { entityName: "Ada Lovelace", contents: ["Likes mathematics", "Wrote the first program"] },
    { entityName: "Analytical Engine", contents: ["Never finished"] },
  ] }],
  ["add_observations", { observations: [{ entityName: "Nobody", contents: ["x"] }] }],
  ["delete_observations", { deletions: [{ entityName: "Ada Lovelace", observations: ["Born in London"] }] }],
  ["delete_relations", { relations: [{ from: "Ada Lovelace", to: "Charles Babbage", relationType: "corresponds_with" }] }],
  ["delete_entities", { entityNames: ["Lovelace Trust"] }],
  ["read_graph", {}],
  ["search_nodes", { query: "engine" }],
  ["search_nodes", { query: "person" }],
  ["search_nodes", { query: "mathematics" }],
  // Parts of words, in another case: substrings of observations, names and types.
  ["search_nodes", { query: "ATHEM" }],
  ["search_nodes", { query: "never fin" }],
  ["search_nodes", { query: "ngin" }],
  ["open_nodes", { names: ["Ada Lovelace", "Charles Babbage"] }],
  ["open_nodes", { names: ["Analytical Engine", "Nobody"] }],
];

let differences = 0;
const reference = client("node", [referenceJs], { MEMORY_FILE_PATH: memoryFile });
const ours = client(bin, ["--store", store, "-n", "compat", "mcp", "--compat", "server-memory"], {});
try {
  await reference.start();
  await ours.start();
  let referenceGraph;
  for (const [tool, args] of steps) {
    const expected = await reference.call(tool, args);
    const got = await ours.call(tool, args);
    const same = JSON.stringify(normalize(expected)) === JSON.stringify(normalize(got));
    console.log(`${same ? "same" : "DIFFERENT"}  ${tool} ${JSON.stringify(args).slice(0, 80)}`);
    if (!same) {
      differences++;
      console.log(`  reference: ${JSON.stringify(normalize(expected))}`);
      console.log(`  ours:      ${JSON.stringify(normalize(got))}`);
    }
    if (tool === "read_graph") referenceGraph = expected;
  }

  // The reference server's file, imported into a fresh namespace of ours.
  const imported = JSON.parse(
    execFileSync(bin, ["--store", store, "-n", "imported", "--json", "import", "--format", "mcp-memory", memoryFile], {
      encoding: "utf8",
    }),
  );
  console.log(`imported memory.jsonl: ${JSON.stringify(imported.imported)}`);
  const again = client(bin, ["--store", store, "-n", "imported", "mcp", "--compat", "server-memory"], {});
  await again.start();
  const graph = await again.call("read_graph", {});
  again.stop();
  const same = JSON.stringify(normalize(graph)) === JSON.stringify(normalize(referenceGraph));
  console.log(`${same ? "same" : "DIFFERENT"}  read_graph after importing the reference's memory.jsonl`);
  if (!same) {
    differences++;
    console.log(`  reference: ${JSON.stringify(normalize(referenceGraph))}`);
    console.log(`  ours:      ${JSON.stringify(normalize(graph))}`);
  }
} finally {
  reference.stop();
  ours.stop();
}
console.log(`compat: ${steps.length + 1 - differences} passed, ${differences} failed`);
process.exit(differences === 0 ? 0 : 1);
