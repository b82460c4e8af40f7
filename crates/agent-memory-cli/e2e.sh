#!/usr/bin/env bash
# End-to-end checks of the built `agent-memory` from the outside:
#   1. schemathesis (PyPI) against /openapi.json of a running server, bounded examples;
#   2. the MCP Inspector CLI 0.15.0 (npm) listing the tools, then calling remember and
#      recall, over stdio and over HTTP;
#   3. `mcp --compat server-memory` against the reference MCP memory server
#      (@modelcontextprotocol/server-memory from npm): the same tool calls to both, the same
#      entities, relations and observations back, and its memory.jsonl imported into ours;
#   4. a load test from a second process (wrk) of HTTP recall on a 10k-memory namespace on
#      SQLite, and on PostgreSQL when AGENT_MEMORY_TEST_POSTGRES_URL names a server (in a
#      schema of its own, dropped after), with remembers beside it: throughput and latency
#      percentiles, no failed request, every acknowledged write stored.
# Usage: bash crates/agent-memory-cli/e2e.sh   (from the workspace root; needs python3 with
# venv, node/npx 20 and network access to PyPI and npm; installs wrk with apt-get if missing)
# Environment: E2E_EXAMPLES (schemathesis examples per operation, default 10),
# E2E_SECONDS (load duration, default 10), E2E_RATE (also recall at this steady rate, e.g.
# 500, and report p50/p99 from the scheduled send, with oha when installed; unset by
# default), E2E_PROFILE (release, the default, for load
# figures that mean something; debug reuses the test build, as CI does), CARGO_TARGET_DIR
# (default ./target).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
examples="${E2E_EXAMPLES:-10}"
seconds="${E2E_SECONDS:-10}"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

profile="${E2E_PROFILE:-release}"
echo "==> building agent-memory ($profile)"
if [ "$profile" = release ]; then
  cargo build --release -p agent-memory-cli --manifest-path "$root/Cargo.toml"
else
  cargo build -p agent-memory-cli --manifest-path "$root/Cargo.toml"
fi
bin="$target/$profile/agent-memory"
admin="e2e-admin-$(date +%s)-$RANDOM$RANDOM"

# Starts a server on $1 (store) with extra flags; sets $address.
start_server() {
  local store="$1"
  shift
  local log="$work/server-$RANDOM.log"
  AGENT_MEMORY_LOG=warn "$bin" --store "$store" serve --listen 127.0.0.1:0 --admin-key "$admin" "$@" 2>"$log" &
  pids+=("$!")
  for _ in $(seq 1 100); do
    address="$(sed -n 's|^agent-memory listening on http://||p' "$log" | head -1)"
    [ -n "$address" ] && return 0
    sleep 0.1
  done
  echo "the server did not start:" >&2
  cat "$log" >&2
  return 1
}

new_key() {
  curl -fsS -X POST "http://$address/v1/keys" -H "Authorization: Bearer $admin" \
    -H 'Content-Type: application/json' -d "{\"namespace\":\"$1\",\"name\":\"e2e\"}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])'
}

echo "==> schemathesis against /openapi.json ($examples examples per operation)"
start_server "$work/schema.db"
key="$(new_key e2e)"
venv="$target/e2e-venv"
[ -x "$venv/bin/st" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q schemathesis; }
# schemathesis keeps its state in the current directory: run it in the scratch one.
(cd "$work" && "$venv/bin/st" run "http://$address/openapi.json" \
  -H "Authorization: Bearer $key" \
  --max-examples "$examples" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --exclude-path /v1/keys --exclude-path '/v1/keys/{id}')

echo "==> MCP Inspector CLI 0.15.0: tools/list over stdio"
npx -y @modelcontextprotocol/inspector@0.15.0 --cli "$bin" --store "$work/mcp.db" -n e2e mcp --method tools/list |
  python3 -c 'import json,sys; tools=[t["name"] for t in json.load(sys.stdin)["tools"]]; print("stdio tools:", tools); assert "recall" in tools'
inspect_stdio() { npx -y @modelcontextprotocol/inspector@0.15.0 --cli "$bin" --store "$work/mcp.db" -n e2e mcp "$@"; }
echo "==> MCP Inspector CLI 0.15.0: tools/call remember, then recall, over stdio"
inspect_stdio --method tools/call --tool-name remember \
  --tool-arg 'text=The e2e office is in Lisbon' --tool-arg fact_key=office.city |
  python3 -c 'import json,sys; r=json.load(sys.stdin); print("stdio remember:", r["structuredContent"]); assert not r.get("isError")'
inspect_stdio --method tools/call --tool-name recall --tool-arg 'query=where is the office' |
  python3 -c 'import json,sys; r=json.load(sys.stdin); hits=r["structuredContent"]["results"]; print("stdio recall:", hits[0]["text"]); assert "Lisbon" in hits[0]["text"]'

echo "==> MCP Inspector CLI 0.15.0: tools/list over Streamable HTTP"
start_server "$work/mcp-http.db" --no-auth
npx -y @modelcontextprotocol/inspector@0.15.0 --cli "http://$address/mcp" --transport http --method tools/list |
  python3 -c 'import json,sys; tools=[t["name"] for t in json.load(sys.stdin)["tools"]]; print("http tools:", tools); assert "recall" in tools'
inspect_http() { npx -y @modelcontextprotocol/inspector@0.15.0 --cli "http://$address/mcp" --transport http "$@"; }
echo "==> MCP Inspector CLI 0.15.0: tools/call remember, then recall, over Streamable HTTP"
inspect_http --method tools/call --tool-name remember --tool-arg 'text=The e2e warehouse is in Porto' |
  python3 -c 'import json,sys; r=json.load(sys.stdin); print("http remember:", r["structuredContent"]); assert not r.get("isError")'
inspect_http --method tools/call --tool-name recall --tool-arg 'query=where is the warehouse' |
  python3 -c 'import json,sys; r=json.load(sys.stdin); hits=r["structuredContent"]["results"]; print("http recall:", hits[0]["text"]); assert "Porto" in hits[0]["text"]'

echo "==> compatibility with the reference MCP memory server (npm), over stdio"
node_dir="$target/e2e-node"
reference="$node_dir/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
[ -f "$reference" ] || npm install --prefix "$node_dir" --no-audit --no-fund --silent \
  @modelcontextprotocol/server-memory@2026.8.31
node "$root/crates/agent-memory-cli/e2e/compat.mjs" "$reference" "$bin" "$work"

command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
# The 10,000 memories are imported in one transaction (remembering them one by one, each
# reconciled with those before it, is the import's job, not the load test's).
python3 - "$work/seed.jsonl" <<'PY'
import json, sys, random
words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu".split()
rng = random.Random(7)
with open(sys.argv[1], "w") as out:
    out.write(json.dumps({"format": "agent-memory-jsonl", "version": 2,
        "scope": {"namespace": "load", "descendants": True},
        "exported_at": "2026-01-01T00:00:00Z",
        "counts": {"memories": 10000, "recall_stats": 0, "pages": 0, "entities": 0, "relations": 0}}) + "\n")
    for i in range(10000):
        out.write(json.dumps({"type": "memory", "id": f"seed-{i}", "namespace": "load",
            "content": " ".join(rng.choice(words) for _ in range(12)) + f" note {i}",
            "kind": "episodic", "importance": 0.5, "metadata": {}, "tags": [], "source": None,
            "credibility": 1.0, "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z", "last_accessed": None, "access_count": 0}) + "\n")
PY

# Recall under load on store $1 (named $2), with remember traffic beside it: every request
# must succeed, and every write acknowledged must be stored (counted after).
load_test() {
  local store="$1" label="$2"
  echo "==> load: HTTP recall on a 10k-memory namespace ($label) with remember traffic beside it, wrk for ${seconds}s"
  "$bin" --store "$store" --json import --format agent-memory "$work/seed.jsonl" >/dev/null
  start_server "$store"
  local server="${pids[-1]}"
  key="$(new_key load)"
  cat > "$work/recall.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $key"
local queries = {"alpha bravo", "tango zulu note", "kilo lima mike", "echo", "victor whiskey xray"}
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, "/v1/recall", nil, '{"query":"' .. queries[(n % #queries) + 1] .. '","limit":10}')
end
LUA
  # A writer beside the load: one remember after another, each counted once acknowledged.
  python3 - "$address" "$key" "$seconds" > "$work/writes.txt" <<'PY' &
import json, sys, time, urllib.request
address, key, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
acknowledged, started, index = 0, time.monotonic(), 0
while time.monotonic() - started < seconds:
    body = json.dumps({"text": f"load write {index}: the build {index} passed on runner {index % 7}"}).encode()
    request = urllib.request.Request(f"http://{address}/v1/memories", data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request) as response:
        if response.status in (200, 201) and json.load(response)["outcome"] != "merged":
            acknowledged += 1
    index += 1
print(acknowledged)
PY
  local writer=$!
  wrk -t2 -c8 -d"${seconds}s" --latency -s "$work/recall.lua" "http://$address" | tee "$work/wrk.txt"
  wait "$writer"
  local acknowledged
  acknowledged="$(cat "$work/writes.txt")"
  # With E2E_RATE set: recall at that steady rate (open loop), with rare-word queries, then
  # queries whose words each occur in a third of the memories. oha (`cargo install oha`)
  # when installed, with its correction for coordinated omission; else e2e/openloop.py.
  if [ -n "${E2E_RATE:-}" ]; then
    local rare='["1234", "5678", "42", "999", "3141"]'
    local common='["alpha bravo", "tango zulu note", "kilo lima mike", "echo", "victor whiskey xray"]'
    local queries
    for queries in "$rare" "$common"; do
      if command -v oha >/dev/null; then
        python3 -c 'import json,sys; [print(json.dumps({"query": q, "limit": 10})) for q in json.loads(sys.argv[1])]' \
          "$queries" > "$work/bodies.jsonl"
        echo "$label, rate $E2E_RATE/s for ${seconds}s: $queries"
        oha -z "${seconds}s" -q "$E2E_RATE" --latency-correction -c 8 --no-tui -m POST \
          -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
          -Z "$work/bodies.jsonl" "http://$address/v1/recall" |
          grep -E 'Success rate|Requests/sec|(50|90|99)\.00% in|^ *\[[0-9]{3}\] [0-9]+ responses'
      else
        python3 "$root/crates/agent-memory-cli/e2e/openloop.py" "$address" "$key" "$E2E_RATE" "$seconds" 8 "$queries"
      fi
    done
  fi
  # Every response was a success.
  if grep -q "Non-2xx or 3xx responses\|Socket errors" "$work/wrk.txt"; then
    echo "e2e: the load test on $label saw failed requests" >&2
    exit 1
  fi
  # Nothing acknowledged is lost: the server holds the seed and every write it acknowledged.
  local stored expected
  stored="$(curl -fsS "http://$address/v1/stats?namespace=load" -H "Authorization: Bearer $key" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')"
  expected=$((10000 + acknowledged))
  echo "$label: remembered during the load: $acknowledged acknowledged; stored $stored of $expected"
  [ "$stored" = "$expected" ] || { echo "e2e: $label: $stored memories stored, $expected expected" >&2; exit 1; }
  kill -TERM "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
}

load_test "$work/load.db" SQLite
# PostgreSQL too when a server is named (as `.ci/run` does), in a schema of its own that is
# dropped afterwards.
if [ -n "${AGENT_MEMORY_TEST_POSTGRES_URL:-}" ]; then
  export AGENT_MEMORY_POSTGRES_SCHEMA="e2e_load_$(date +%s)_$RANDOM"
  if command -v psql >/dev/null; then
    trap 'cleanup; psql "$AGENT_MEMORY_TEST_POSTGRES_URL" -qc "DROP SCHEMA IF EXISTS $AGENT_MEMORY_POSTGRES_SCHEMA CASCADE" >/dev/null 2>&1 || true' EXIT
  fi
  load_test "$AGENT_MEMORY_TEST_POSTGRES_URL" PostgreSQL
fi
echo "e2e: all checks passed"
