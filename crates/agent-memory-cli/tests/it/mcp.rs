//! The MCP server: `agent-memory mcp` on stdio, spoken to in JSON-RPC, and `/mcp` of
//! `agent-memory serve` over Streamable HTTP.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Stdio};

use serde_json::{Value, json};

use crate::support::{ADMIN_KEY, DropSchema, Server, TempDir, backends, command, remember_kiwis};

/// A client on the server's standard input and output.
struct Stdio_ {
    child: std::process::Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Stdio_ {
    fn start(dir: &TempDir, store: &[String], args: &[&str]) -> Self {
        let mut child = command(dir)
            .args(store)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start agent-memory mcp");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        let mut client = Self {
            child,
            input,
            output,
            next_id: 1,
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "it", "version": "0"}
            }),
        );
        assert_eq!(
            init["result"]["serverInfo"]["name"], "agent-memory",
            "{init}"
        );
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    /// A client of the reference memory server's tools (`mcp --compat server-memory`) in
    /// namespace `kb`.
    fn compat(dir: &TempDir, store: &[String]) -> Self {
        Self::start(
            dir,
            store,
            &["-n", "kb", "mcp", "--compat", "server-memory"],
        )
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").expect("write to the server");
        self.input.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let read = self
                .output
                .read_line(&mut line)
                .expect("read from the server");
            assert!(read > 0, "the server closed its output");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC message");
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// A tool's result as JSON: its structured content, else its text parsed.
    fn payload(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.call(tool, arguments);
        let result = &response["result"];
        assert_eq!(result["isError"], false, "{tool}: {response}");
        if let Some(structured) = result.get("structuredContent") {
            return structured.clone();
        }
        result["content"][0]["text"]
            .as_str()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null)
    }
}

impl Drop for Stdio_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn stdio_remember_then_recall() {
    let dir = TempDir::new("mcp-stdio");
    for (backend, store) in backends(&dir, "mcp_stdio") {
        let _schema = DropSchema(store.clone());
        let mut client = Stdio_::start(&dir, &store, &["-n", "acme", "mcp"]);
        stdio_scenario(&mut client);
        eprintln!("{backend}: passed");
    }
}

fn stdio_scenario(client: &mut Stdio_) {
    let tools = client.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for expected in [
        "remember",
        "recall",
        "context",
        "forget",
        "add_entity",
        "add_relation",
        "conflicts",
        "write_page",
        "read_page",
        "list_pages",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let remember = &tools["result"]["tools"][0];
    assert_eq!(
        remember["inputSchema"]["required"],
        json!(["text"]),
        "{remember}"
    );

    let stored = client.call(
        "remember",
        json!({"text": "Dana prefers meetings after 10am", "kind": "semantic"}),
    );
    assert_eq!(stored["result"]["isError"], false, "{stored}");
    let id = stored["result"]["structuredContent"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert_eq!(stored["result"]["structuredContent"]["namespace"], "acme");

    let found = client.call("recall", json!({"query": "when does Dana like meetings?"}));
    let results = &found["result"]["structuredContent"]["results"];
    assert_eq!(results[0]["id"], id.as_str(), "{found}");
    assert!(
        found["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("10am"))
    );

    // Bad arguments and another tenant's namespace are tool errors the model can read.
    let bad = client.call("remember", json!({"txt": "typo"}));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    // A metadata condition the memory does not hold leaves it out; one that is not an
    // object is an error naming it.
    let none = client.call(
        "recall",
        json!({"query": "Dana meetings", "metadata": {"user": "ann"}}),
    );
    assert_eq!(none["result"]["isError"], false, "{none}");
    assert_eq!(
        none["result"]["structuredContent"]["results"],
        json!([]),
        "{none}"
    );
    let tagged = client.call(
        "recall",
        json!({"query": "Dana meetings", "tags": ["calendar"]}),
    );
    assert_eq!(
        tagged["result"]["structuredContent"]["results"],
        json!([]),
        "a tag the memory does not carry: {tagged}"
    );
    let eli = client.call(
        "add_entity",
        json!({"id": "eli", "name": "Eli", "entity_type": "person",
               "attributes": {"born": 1990, "city": "Lisbon"}}),
    );
    assert_eq!(
        eli["result"]["structuredContent"]["attributes"],
        json!({"born": 1990, "city": "Lisbon"}),
        "{eli}"
    );
    let mentors = client.call(
        "add_relation",
        json!({"source_id": "eli", "target_id": "eli", "relation_type": "mentors",
               "attributes": {"since": 2020}}),
    );
    assert_eq!(
        mentors["result"]["structuredContent"]["attributes"],
        json!({"since": 2020}),
        "{mentors}"
    );
    let around = client.call("related_entities", json!({"id": "eli"}));
    let context = around["result"]["structuredContent"]["context"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.contains("[person] Eli (born: 1990; city: Lisbon)")
            && context.contains("  -- mentors (since: 2020) --> Eli"),
        "{around}"
    );
    let bad = client.call(
        "add_entity",
        json!({"id": "x", "name": "X", "entity_type": "person", "attributes": "Lisbon"}),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    let bad = client.call("recall", json!({"query": "Dana", "metadata": ["user"]}));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(
        bad["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("metadata")),
        "{bad}"
    );
    // The memory's `content` is the tool's `text`: an empty one is named so.
    let blank = client.call("remember", json!({"text": "  "}));
    assert_eq!(blank["result"]["isError"], true, "{blank}");
    assert!(
        blank["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("text: ") && !t.contains("content")),
        "{blank}"
    );
    let other = client.call("recall", json!({"query": "Dana", "namespace": "other"}));
    assert_eq!(other["result"]["isError"], true, "{other}");
    assert!(
        other["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("forbidden"))
    );
    let gone = client.call("forget", json!({"id": id}));
    assert_eq!(gone["result"]["isError"], false, "{gone}");
    let again = client.call("forget", json!({"id": id}));
    assert_eq!(again["result"]["isError"], true, "{again}");

    // A transcript: the answer is found through the question it answers; a bad turn is a
    // tool error naming it, and stores nothing.
    let refused = client.call(
        "remember_dialogue",
        json!({"namespace": "acme/chat", "turns": [{"text": "hi"}, {"text": "x", "role": "robot"}]}),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        refused["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("turns[1]")),
        "{refused}"
    );
    let chat = client.payload(
        "remember_dialogue",
        json!({"namespace": "acme/chat", "turns": [
            {"speaker": "Caroline", "text": "How long have you two been married?", "session": "1"},
            {"speaker": "Melanie", "text": "Five years this June!", "session": "1", "id": "answer"}
        ]}),
    );
    assert_eq!(chat["memories"].as_array().map(Vec::len), Some(2), "{chat}");
    let found = client.payload(
        "recall",
        json!({"query": "married how long", "namespace": "acme/chat", "limit": 5}),
    );
    let ids: Vec<&str> = found["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|hit| hit["id"].as_str())
        .collect();
    assert!(ids.contains(&"answer"), "{found}");

    // Entities a page at a time: every one once, in order, though one read already is
    // deleted between pages; a cursor the server did not give is refused by name.
    for id in ["p1", "p2", "p3", "p4"] {
        let added = client.call(
            "add_entity",
            json!({"id": id, "name": id, "entity_type": "thing", "namespace": "acme/pages"}),
        );
        assert_eq!(added["result"]["isError"], false, "{added}");
    }
    let first = client.payload(
        "list_entities",
        json!({"namespace": "acme/pages", "limit": 2}),
    );
    let ids_of = |page: &Value| -> Vec<String> {
        page["entities"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entity| entity["id"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(ids_of(&first), ["p1", "p2"], "{first}");
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    // An offset would now skip p3.
    let deleted = client.call(
        "delete_entity",
        json!({"id": "p1", "namespace": "acme/pages"}),
    );
    assert_eq!(deleted["result"]["isError"], false, "{deleted}");
    let rest = client.payload(
        "list_entities",
        json!({"namespace": "acme/pages", "limit": 2, "cursor": cursor}),
    );
    assert_eq!(ids_of(&rest), ["p3", "p4"], "{rest}");
    assert!(rest.get("next_cursor").is_none(), "the last page: {rest}");
    let bad = client.call(
        "list_entities",
        json!({"namespace": "acme/pages", "cursor": "2"}),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(
        bad["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("cursor")),
        "{bad}"
    );

    // Knowledge pages: written, read with what links to them, listed by title.
    let runbook = client.payload(
        "write_page",
        json!({"id": "runbook", "title": "Deploy runbook", "summary": "How we deploy",
               "namespace": "acme/wiki"}),
    );
    assert_eq!(runbook["title"], "Deploy runbook", "{runbook}");
    let release = client.payload(
        "write_page",
        json!({"id": "release", "title": "Release checklist", "references": ["runbook"],
               "namespace": "acme/wiki"}),
    );
    assert_eq!(release["references"], json!(["runbook"]), "{release}");
    let read = client.payload(
        "read_page",
        json!({"id": "runbook", "namespace": "acme/wiki"}),
    );
    assert_eq!(read["referrers"], json!(["release"]), "{read}");
    let index = client.payload("list_pages", json!({"namespace": "acme/wiki", "limit": 1}));
    assert_eq!(index["pages"][0]["id"], "runbook", "by title: {index}");
    assert_eq!(index["pages"][0]["referenced_by"], 1, "{index}");
    let cursor = index["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let rest = client.payload(
        "list_pages",
        json!({"namespace": "acme/wiki", "limit": 1, "cursor": cursor}),
    );
    assert_eq!(rest["pages"][0]["id"], "release", "{rest}");
    assert!(rest.get("next_cursor").is_none(), "{rest}");
    let missing = client.call(
        "read_page",
        json!({"id": "nowhere", "namespace": "acme/wiki"}),
    );
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    let blank = client.call(
        "write_page",
        json!({"id": "blank", "title": " ", "namespace": "acme/wiki"}),
    );
    assert_eq!(blank["result"]["isError"], true, "{blank}");
    assert!(
        blank["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("title")),
        "{blank}"
    );
}

/// A recall without `limit`, over MCP on stdio, over MCP on `serve` and over HTTP, returns
/// the configuration file's `[retriever]` `max_results`; an explicit `limit` wins.
#[test]
fn a_recall_without_a_limit_returns_the_configured_number() {
    let dir = TempDir::new("mcp-recall-limit");
    remember_kiwis(&dir, "acme", 8);
    let config = dir.path().join("config").join("agent-memory");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("config.toml"), "[retriever]\nmax_results = 3\n").expect("write");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("store.db").to_string_lossy().into_owned(),
    ];
    let count = |found: &Value| found["results"].as_array().map_or(0, Vec::len);

    let mut client = Stdio_::start(&dir, &store, &["-n", "acme", "mcp"]);
    assert_eq!(
        count(&client.payload("recall", json!({"query": "kiwi"}))),
        3
    );
    let found = client.payload("recall", json!({"query": "kiwi", "limit": 6}));
    assert_eq!(count(&found), 6);
    drop(client);

    let server = Server::start(&dir, &store, &[]);
    let key = server.key_for("acme");
    let (status, found) = server.call(
        "POST",
        "/v1/recall",
        Some(&key),
        Some(json!({"query": "kiwi"})),
    );
    assert_eq!(status, 200, "{found}");
    assert_eq!(count(&found), 3, "{found}");
    let (status, found) = server.call(
        "POST",
        "/v1/recall",
        Some(ADMIN_KEY),
        Some(json!({"query": "kiwi", "namespace": "acme", "limit": 7})),
    );
    assert_eq!(status, 200, "{found}");
    assert_eq!(count(&found), 7, "{found}");
}

#[test]
fn stdio_facts_that_change() {
    let dir = TempDir::new("mcp-facts");
    for (backend, store) in backends(&dir, "mcp_facts") {
        let _schema = DropSchema(store.clone());
        let mut client = Stdio_::start(&dir, &store, &["-n", "acme", "mcp"]);
        facts_scenario(&mut client);
        eprintln!("{backend}: passed");
    }
}

fn facts_scenario(client: &mut Stdio_) {
    let first = client.payload(
        "remember",
        json!({"text": "Dana works at Initech", "fact_key": "dana.employer", "kind": "semantic"}),
    );
    assert_eq!(first["outcome"], "added", "{first}");
    let second = client.payload(
        "remember",
        json!({"text": "Dana now works at Globex", "fact_key": "dana.employer", "kind": "semantic"}),
    );
    assert_eq!(second["outcome"], "superseded", "{second}");
    assert_eq!(second["old"], json!([first["id"]]), "{second}");
    let history = client.payload("history", json!({"id": first["id"]}));
    let versions: Vec<&Value> = history["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(versions.len(), 2, "{history}");
    assert_eq!(versions[0]["ended"]["by"], second["id"], "{history}");
    let all = client.payload(
        "recall",
        json!({"query": "where does Dana work", "include_ended": true}),
    );
    assert_eq!(all["results"].as_array().map(Vec::len), Some(2), "{all}");
    let now = client.payload("recall", json!({"query": "where does Dana work"}));
    assert_eq!(now["results"].as_array().map(Vec::len), Some(1), "{now}");

    let lunch = client.payload("remember", json!({"text": "Lunch is at noon"}));
    let later = client.payload("remember", json!({"text": "Lunch moved to one o'clock"}));
    let settled = client.payload("supersede", json!({"old": lunch["id"], "new": later["id"]}));
    assert_eq!(settled["old"], lunch["id"], "{settled}");
    let retracted = client.payload("retract", json!({"id": later["id"], "reason": "cancelled"}));
    assert_eq!(retracted["retracted"], later["id"], "{retracted}");
    let again = client.call("retract", json!({"id": later["id"]}));
    assert_eq!(again["result"]["isError"], true, "{again}");
}

/// A line that does not parse gets a JSON-RPC parse error with a null id, where the
/// transport dropped it and its client waited for ever; the session goes on.
#[test]
fn stdio_a_line_that_does_not_parse_gets_a_parse_error() {
    let dir = TempDir::new("mcp-parse");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let mut client = Stdio_::start(&dir, &store, &["-n", "acme", "mcp"]);
    for line in [
        r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"remember","arguments":{"text":"caf\ud83d"}}}"#,
        r#"{"jsonrpc":"2.0","id":12,"method":"ping"}{"jsonrpc":"2.0","id":13,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"remember","arguments":{"text":"x","importance":1e400}}}"#,
    ] {
        writeln!(client.input, "{line}").expect("write");
        client.input.flush().expect("flush");
        let mut answer = String::new();
        client.output.read_line(&mut answer).expect("an answer");
        let answer: Value = serde_json::from_str(&answer).expect("JSON-RPC");
        assert_eq!(answer["id"], Value::Null, "{line}: {answer}");
        assert_eq!(answer["error"]["code"], -32700, "{line}: {answer}");
    }
    // A request the transport cannot read (an id it does not take): an error with a null
    // id, where the transport's had no id at all.
    for line in [
        r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
        r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
    ] {
        writeln!(client.input, "{line}").expect("write");
        client.input.flush().expect("flush");
        let mut answer = String::new();
        client.output.read_line(&mut answer).expect("an answer");
        let answer: Value = serde_json::from_str(&answer).expect("JSON-RPC");
        assert_eq!(answer.get("id"), Some(&Value::Null), "{line}: {answer}");
        assert!(answer["error"]["code"].is_i64(), "{line}: {answer}");
    }
    let pong = client.request("ping", json!({}));
    assert!(pong.get("result").is_some(), "{pong}");
}

/// A session that fails to start (its first message no `initialize`) ends the process, with
/// stdin still open: the read of standard input left pending no longer holds the exit.
#[test]
fn stdio_a_session_that_fails_to_start_exits() {
    let dir = TempDir::new("mcp-no-init");
    let mut child = command(&dir)
        .args(["-n", "acme", "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start agent-memory mcp");
    let mut input = child.stdin.take().expect("stdin");
    writeln!(
        input,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("write");
    input.flush().expect("flush");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = child.kill();
    drop(input);
    let status = status.expect("the process exits though stdin is open");
    // A client out of turn is a usage error, not a bug of the server.
    assert_eq!(status.code(), Some(2), "{status:?}");
}

/// A client that closes standard input before `initialize` ends the session as a client
/// that closes it later does: exit 0, nothing written.
#[test]
fn stdio_an_input_closed_before_initialize_exits_cleanly() {
    let dir = TempDir::new("mcp-closed");
    let output = command(&dir)
        .args(["-n", "acme", "mcp"])
        .stdin(Stdio::null())
        .output()
        .expect("run agent-memory mcp");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.stdout.is_empty() && output.stderr.is_empty(),
        "{output:?}"
    );
}

#[test]
fn stdio_conflicts() {
    let dir = TempDir::new("mcp-conflicts");
    for (backend, store) in backends(&dir, "mcp_conflicts") {
        let _schema = DropSchema(store.clone());
        let mut client = Stdio_::start(&dir, &store, &["-n", "acme", "mcp"]);
        conflicts_scenario(&mut client);
        eprintln!("{backend}: passed");
    }
}

fn conflicts_scenario(client: &mut Stdio_) {
    let tools = client.request("tools/list", json!({}));
    let tool = tools["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|tool| tool["name"] == "conflicts")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
    let properties = &tool["inputSchema"]["properties"];
    assert_eq!(properties["limit"]["maximum"], 100, "{tool}");
    assert!(properties["cursor"].is_object() && properties["namespace"].is_object());
    assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{tool}");

    let empty = client.payload("conflicts", json!({}));
    assert_eq!(empty["conflicts"], json!([]), "{empty}");
    let paris = client.payload(
        "remember",
        json!({"text": "Alice lives in Paris", "kind": "semantic"}),
    );
    let berlin = client.payload(
        "remember",
        json!({"text": "Alice lives in Berlin", "kind": "semantic"}),
    );
    assert_eq!(berlin["conflicts"][0]["id"], paris["id"], "{berlin}");
    let monday = client.payload(
        "remember",
        json!({"text": "The review is on Monday", "namespace": "acme/ops"}),
    );
    let friday = client.payload(
        "remember",
        json!({"text": "The review is on Friday", "namespace": "acme/ops"}),
    );
    assert_eq!(friday["conflicts"][0]["id"], monday["id"], "{friday}");

    let all = client.payload("conflicts", json!({}));
    assert_eq!(all["conflicts"].as_array().map(Vec::len), Some(2), "{all}");
    let first = client.payload("conflicts", json!({"limit": 1}));
    assert_eq!(
        first["conflicts"].as_array().map(Vec::len),
        Some(1),
        "{first}"
    );
    let cursor = first["next_cursor"].as_str().expect("a second page");
    let second = client.payload("conflicts", json!({"limit": 1, "cursor": cursor}));
    assert_eq!(
        second["conflicts"].as_array().map(Vec::len),
        Some(1),
        "{second}"
    );
    assert!(second.get("next_cursor").is_none(), "{second}");
    let ops = client.payload("conflicts", json!({"namespace": "acme/ops"}));
    let pair = &ops["conflicts"][0];
    assert_eq!(pair["namespace"], "acme/ops", "{ops}");
    assert_eq!(pair["older"]["content"], "The review is on Monday", "{ops}");
    assert_eq!(pair["newer"]["id"], friday["id"], "{ops}");

    // Errors a model can read: the field named, another tenant refused.
    for (arguments, field) in [
        (json!({"limit": 0}), "limit"),
        (json!({"limit": 101}), "limit"),
        (json!({"cursor": "nowhere"}), "cursor"),
    ] {
        let refused = client.call("conflicts", arguments.clone());
        let result = &refused["result"];
        assert_eq!(result["isError"], true, "{refused}");
        let error = &result["structuredContent"]["error"];
        assert_eq!(error["kind"], "invalid_input", "{arguments}: {refused}");
        assert_eq!(error["field"], field, "{arguments}: {refused}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(field), "{arguments}: {text}");
    }
    // Arguments of the wrong type or shape name the argument at fault, as the HTTP API
    // names a body's field.
    for (arguments, field) in [
        (json!({"text": 5}), "text"),
        (json!({"text": "x", "tags": "a"}), "tags"),
        (json!({"text": "x", "tags": ["a", 5]}), "tags[1]"),
        (json!({"text": "x", "importance": "NaN"}), "importance"),
        (json!({}), "text"),
    ] {
        let refused = client.call("remember", arguments.clone());
        let error = &refused["result"]["structuredContent"]["error"];
        assert_eq!(error["kind"], "invalid_input", "{arguments}: {refused}");
        assert_eq!(error["field"], field, "{arguments}: {refused}");
    }
    // A field missing inside an element is named with its element.
    let refused = client.call("remember_dialogue", json!({"turns": [{}]}));
    let error = &refused["result"]["structuredContent"]["error"];
    assert_eq!(error["kind"], "invalid_input", "{refused}");
    assert_eq!(error["field"], "turns[0].text", "{refused}");
    let other = client.call("conflicts", json!({"namespace": "other"}));
    assert_eq!(other["result"]["isError"], true, "{other}");
    assert_eq!(
        other["result"]["structuredContent"]["error"]["kind"], "forbidden",
        "{other}"
    );
    assert!(
        other["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("forbidden")),
        "{other}"
    );

    // Settled, the pair leaves the list.
    client.payload(
        "supersede",
        json!({"old": paris["id"], "new": berlin["id"]}),
    );
    let left = client.payload("conflicts", json!({}));
    assert_eq!(
        left["conflicts"].as_array().map(Vec::len),
        Some(1),
        "{left}"
    );
    assert_eq!(left["conflicts"][0]["namespace"], "acme/ops", "{left}");
    // The first page held the settled pair; its cursor still leads to the other one.
    assert_eq!(first["conflicts"][0]["namespace"], "acme", "{first}");
    let after = client.payload("conflicts", json!({"limit": 1, "cursor": cursor}));
    assert_eq!(after["conflicts"][0]["namespace"], "acme/ops", "{after}");
}

#[test]
fn stdio_compat_server_memory() {
    let dir = TempDir::new("mcp-compat");
    for (backend, store) in backends(&dir, "mcp_compat") {
        let _schema = DropSchema(store.clone());
        let mut client = Stdio_::compat(&dir, &store);
        compat_scenario(&mut client);
        eprintln!("{backend}: passed");
    }
}

fn compat_scenario(client: &mut Stdio_) {
    let tools = client.request("tools/list", json!({}));
    let mut names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "add_observations",
            "create_entities",
            "create_relations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
            "open_nodes",
            "read_graph",
            "search_nodes"
        ]
    );
    let created = client.payload(
        "create_entities",
        json!({"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["Writes the first program"]},
            {"name": "Engine", "entityType": "machine", "observations": []}
        ]}),
    );
    assert_eq!(
        created["entities"].as_array().map(Vec::len),
        Some(2),
        "{created}"
    );
    let related = client.payload(
        "create_relations",
        json!({"relations": [{"from": "Ada", "to": "Engine", "relationType": "programs"}]}),
    );
    assert_eq!(
        related["relations"].as_array().map(Vec::len),
        Some(1),
        "{related}"
    );
    let added = client.payload(
        "add_observations",
        json!({"observations": [{"entityName": "Ada", "contents": ["Likes mathematics", "Writes the first program"]}]}),
    );
    assert_eq!(
        added["results"][0]["addedObservations"],
        json!(["Likes mathematics"]),
        "{added}"
    );
    let found = client.payload("search_nodes", json!({"query": "mathematics"}));
    let entities = &found["entities"];
    assert_eq!(entities[0]["name"], "Ada", "{found}");
    assert_eq!(
        entities[0]["observations"].as_array().map(Vec::len),
        Some(2)
    );

    let page = client.payload("read_graph", json!({"limit": 1}));
    let graph = &page;
    assert_eq!(
        graph["entities"].as_array().map(Vec::len),
        Some(1),
        "{page}"
    );
    let cursor = graph["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let rest = client.payload("read_graph", json!({"limit": 1, "cursor": cursor}));
    assert!(rest.get("nextCursor").is_none(), "{rest}");

    let opened = client.payload("open_nodes", json!({"names": ["Ada", "Engine"]}));
    assert_eq!(
        opened["relations"][0]["relationType"], "programs",
        "{opened}"
    );
    client.payload(
        "delete_observations",
        json!({"deletions": [{"entityName": "Ada", "observations": ["Likes mathematics"]}]}),
    );
    client.payload(
        "delete_relations",
        json!({"relations": [{"from": "Ada", "to": "Engine", "relationType": "programs"}]}),
    );
    client.payload("delete_entities", json!({"entityNames": ["Engine"]}));
    let opened = client.payload("open_nodes", json!({"names": ["Ada", "Engine"]}));
    let graph = &opened;
    assert_eq!(
        graph["entities"].as_array().map(Vec::len),
        Some(1),
        "{opened}"
    );
    assert_eq!(
        graph["entities"][0]["observations"],
        json!(["Writes the first program"])
    );
    assert_eq!(graph["relations"], json!([]));
}

#[test]
fn stdio_compat_search_nodes_matches_parts_of_observations() {
    let dir = TempDir::new("mcp-compat-search");
    for (backend, store) in backends(&dir, "mcp_compat_search") {
        let _schema = DropSchema(store.clone());
        let mut client = Stdio_::compat(&dir, &store);
        client.payload(
            "create_entities",
            json!({"entities": [
                {"name": "Tea Party", "entityType": "event", "observations": ["Alice likes tea"]},
                {"name": "Bob", "entityType": "person", "observations": ["Plays chess on Sundays"]},
                {"name": "Carol", "entityType": "person", "observations": []}
            ]}),
        );
        let names = |client: &mut Stdio_, query: &str| -> Vec<String> {
            let found = client.payload("search_nodes", json!({"query": query}));
            let mut names: Vec<String> = found["entities"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|entity| entity["name"].as_str().map(str::to_owned))
                .collect();
            names.sort_unstable();
            names
        };
        // A part of a word of another entity's observation, in any case, as the reference
        // server finds it; across words too.
        assert_eq!(names(&mut client, "ali"), ["Tea Party"], "{backend}");
        assert_eq!(names(&mut client, "ALI"), ["Tea Party"], "{backend}");
        assert_eq!(names(&mut client, "ys ch"), ["Bob"], "{backend}");
        assert_eq!(names(&mut client, "unday"), ["Bob"], "{backend}");
        // Names and types as before; nothing for what nobody holds.
        assert_eq!(names(&mut client, "perso"), ["Bob", "Carol"], "{backend}");
        assert_eq!(names(&mut client, "ea par"), ["Tea Party"], "{backend}");
        assert!(names(&mut client, "zebra").is_empty(), "{backend}");
        // A deleted observation is found no more.
        client.payload(
            "delete_observations",
            json!({"deletions": [{"entityName": "Tea Party", "observations": ["Alice likes tea"]}]}),
        );
        assert!(names(&mut client, "ali").is_empty(), "{backend}");
        // Paged by position: an entity deleted after the first page pushes none off the
        // second; a cursor this server did not give is refused by name.
        let first = client.payload("search_nodes", json!({"query": "o", "limit": 1}));
        assert_eq!(first["entities"][0]["name"], "Bob", "{backend}: {first}");
        let cursor = first["nextCursor"]
            .as_str()
            .expect("a second page")
            .to_owned();
        client.payload("delete_entities", json!({"entityNames": ["Bob"]}));
        let second = client.payload(
            "search_nodes",
            json!({"query": "o", "limit": 1, "cursor": cursor}),
        );
        assert_eq!(
            second["entities"][0]["name"], "Carol",
            "{backend}: {second}"
        );
        assert!(second.get("nextCursor").is_none(), "{backend}: {second}");
        let refused = client.request(
            "tools/call",
            json!({"name": "search_nodes", "arguments": {"query": "o", "cursor": "1"}}),
        );
        assert!(
            refused.to_string().contains("cursor"),
            "{backend}: {refused}"
        );
        eprintln!("{backend}: passed");
    }
}

/// Reads the JSON-RPC message of a Streamable HTTP response: plain JSON, or the `data:`
/// line of an event stream.
pub(crate) fn message_of(body: &str) -> Value {
    if let Ok(value) = serde_json::from_str(body) {
        return value;
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|value| value.get("id").is_some())
        .unwrap_or(Value::Null)
}

#[test]
fn streamable_http_on_serve() {
    let dir = TempDir::new("mcp-http");
    for (backend, store) in backends(&dir, "mcp_http") {
        let _schema = DropSchema(store.clone());
        let server = Server::start(&dir, &store, &[]);
        streamable_http_scenario(&server);
        assert_eq!(server.stop(), Some(0), "{backend}: a clean stop");
    }
}

/// Sends an MCP `initialize` to `/mcp` with `key`: the status, the session id the server
/// gave (if any) and the body.
fn open_mcp_session(server: &Server, key: &str) -> (u16, Option<String>, String) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}})
    .to_string();
    let (status, head, body) = server.raw_with_headers(
        "POST",
        "/mcp",
        Some(key),
        &[("Accept", "application/json, text/event-stream".to_owned())],
        Some(&init),
    );
    let session = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    (status, session, body)
}

/// The sessions open at once on /mcp are bounded: an `initialize` past
/// `--max-mcp-sessions` gets a JSON 503 (a client opening sessions in a loop grew the
/// server's memory until it ran out), and one more opens once a session ends.
#[test]
fn mcp_sessions_past_the_limit_are_refused_until_one_ends() {
    let dir = TempDir::new("mcp-sessions");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let server = Server::start(&dir, &store, &["--max-mcp-sessions", "2"]);
    let key = server.key_for("acme");
    let accept = ("Accept", "application/json, text/event-stream".to_owned());
    let open = || open_mcp_session(&server, &key);
    let (status, first, body) = open();
    assert_eq!(status, 200, "{body}");
    let first = first.expect("a session id");
    assert_eq!(open().0, 200);
    let (status, _, body) = open();
    assert_eq!(status, 503, "{body}");
    let refused: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(refused["error"]["kind"], "unavailable", "{body}");
    // A session that is open still works past the limit.
    let (status, _, body) = server.raw_with_headers(
        "POST",
        "/mcp",
        Some(&key),
        &[
            accept.clone(),
            ("Mcp-Session-Id", first.clone()),
            ("Mcp-Protocol-Version", "2025-06-18".to_owned()),
        ],
        Some(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string()),
    );
    assert_eq!(status, 200, "{body}");
    // What the transport refuses is a JSON error too: a body that is not JSON-RPC is a
    // malformed body (400, where the transport said 415), a missing Accept header 406.
    let refusal = |headers: &[(&str, String)], body: &str| {
        let (status, _, text) =
            server.raw_with_headers("POST", "/mcp", Some(&key), headers, Some(body));
        let error: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON: {text}"));
        (status, error)
    };
    let in_session = [
        accept.clone(),
        ("Mcp-Session-Id", first.clone()),
        ("Mcp-Protocol-Version", "2025-06-18".to_owned()),
    ];
    for body in [
        r#"{"jsonrpc": "2.0", "id": 3, "method": "#,
        r#"{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": "\ud800"}}"#,
    ] {
        let (status, error) = refusal(&in_session, body);
        assert_eq!(status, 400, "{body}: {error}");
        assert_eq!(error["error"]["kind"], "invalid_input", "{error}");
    }
    let (status, error) = refusal(
        &in_session[1..],
        r#"{"jsonrpc": "2.0", "id": 5, "method": "ping"}"#,
    );
    assert_eq!(status, 406, "{error}");
    assert!(error["error"]["message"].is_string(), "{error}");
    let (status, _, body) = server.raw_with_headers(
        "DELETE",
        "/mcp",
        Some(&key),
        &[("Mcp-Session-Id", first)],
        None,
    );
    assert!(status < 300, "{status}: {body}");
    assert_eq!(open().0, 200, "a session ended makes room for one");
    assert_eq!(server.stop(), Some(0));
}

/// One tenant cannot hold every MCP session: past its share (an eighth of the bound, at
/// least 16) its `initialize` gets 503 while another tenant still opens one.
#[test]
fn one_tenant_cannot_hold_every_mcp_session() {
    let dir = TempDir::new("mcp-tenant-sessions");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let server = Server::start(&dir, &store, &["--max-mcp-sessions", "40"]);
    let (acme, other) = (server.key_for("acme"), server.key_for("other"));
    let open = |key: &str| open_mcp_session(&server, key);
    let mut held = Vec::new();
    for _ in 0..16 {
        let (status, session, body) = open(&acme);
        assert_eq!(status, 200, "{body}");
        held.push(session.expect("a session id"));
    }
    let (status, _, body) = open(&acme);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("tenant"), "{body}");
    assert_eq!(open(&other).0, 200, "another tenant still opens one");
    let (status, _, body) = server.raw_with_headers(
        "DELETE",
        "/mcp",
        Some(&acme),
        &[("Mcp-Session-Id", held.remove(0))],
        None,
    );
    assert!(status < 300, "{status}: {body}");
    assert_eq!(open(&acme).0, 200, "a session ended makes room for one");
    assert_eq!(server.stop(), Some(0));
}

/// Opens an MCP session on `/mcp` with `key` (`initialize`, then `notifications/initialized`)
/// and returns its id.
fn initialized_mcp_session(server: &Server, key: &str) -> String {
    let (status, session, body) = open_mcp_session(server, key);
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    let (status, _, body) = server.raw_with_headers(
        "POST",
        "/mcp",
        Some(key),
        &[
            ("Accept", "application/json, text/event-stream".to_owned()),
            ("Mcp-Session-Id", session.clone()),
            ("Mcp-Protocol-Version", "2025-06-18".to_owned()),
        ],
        Some(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()),
    );
    assert!(status == 202 || status == 200, "{status}: {body}");
    session
}

/// Asks for the event stream of MCP session `session` (`GET /mcp`) with `key`: the status,
/// the connection (still open while the stream is), and the body when it is no stream (an
/// error, read whole).
fn open_event_stream(
    server: &Server,
    key: &str,
    session: &str,
) -> (u16, std::net::TcpStream, String) {
    open_event_stream_after(server, key, session, None)
}

/// [`open_event_stream`] with `Last-Event-ID: last` when given.
fn open_event_stream_after(
    server: &Server,
    key: &str,
    session: &str,
    last: Option<&str>,
) -> (u16, std::net::TcpStream, String) {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(&server.address).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("read timeout");
    write!(
        stream,
        "GET /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {key}\r\n\
         Accept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         Mcp-Protocol-Version: 2025-06-18\r\nConnection: close\r\n{}\r\n",
        last.map_or(String::new(), |last| format!("Last-Event-ID: {last}\r\n"))
    )
    .expect("a request");
    let mut received = Vec::new();
    let mut buffer = [0u8; 1024];
    while !received.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream
            .read(&mut buffer)
            .expect("the head of the answer in time");
        assert!(
            read > 0,
            "closed before a head: {}",
            String::from_utf8_lossy(&received)
        );
        received.extend_from_slice(&buffer[..read]);
    }
    let head = String::from_utf8_lossy(&received).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head}"));
    if status == 200 {
        return (status, stream, String::new());
    }
    let _ = stream.read_to_end(&mut received);
    let text = String::from_utf8_lossy(&received);
    let body = text
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, body)| body.to_owned());
    (status, stream, body)
}

/// An event stream's status, asked for again until it is not 409 (its session's stream
/// still being let go) or 10 seconds have passed.
fn event_stream_once_free(
    server: &Server,
    key: &str,
    session: &str,
) -> (u16, std::net::TcpStream, String) {
    let started = std::time::Instant::now();
    loop {
        let answer = open_event_stream(server, key, session);
        if answer.0 != 409 || started.elapsed() > std::time::Duration::from_secs(10) {
            return answer;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// MCP event streams (`GET /mcp`), which hold a connection each for as long as their
/// client keeps them, cannot take every connection: a session keeps one (a second gets
/// 409), the server at most half of `--max-connections`, and a tenant its share of those
/// (503 past either), so every other request is still served. A stream closed, or its
/// session ended, gives its place back. Before, one tenant opening streams without reading
/// them held every connection, and even `GET /healthz` waited until its sessions idled out.
#[test]
fn mcp_event_streams_cannot_take_every_connection() {
    let dir = TempDir::new("mcp-streams");
    let store = vec!["--store".to_owned(), "memory:".to_owned()];
    // 20 streams at most, 16 of them one tenant's.
    let server = Server::start(&dir, &store, &["--max-connections", "40"]);
    let (acme, other) = (server.key_for("acme"), server.key_for("other"));
    let first = initialized_mcp_session(&server, &acme);
    let (status, stream, body) = open_event_stream(&server, &acme, &first);
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = open_event_stream(&server, &acme, &first);
    assert_eq!(status, 409, "a second stream of one session: {body}");
    let refused: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(refused["error"]["kind"], "conflict", "{refused}");
    // Resuming the stream of one of the session's requests is another stream.
    let (status, resumed, body) = open_event_stream_after(&server, &acme, &first, Some("0/1"));
    assert_eq!(
        status, 200,
        "a request's stream beside the session's: {body}"
    );
    // Resumed again while the first resumption's connection still looks open (a client
    // that lost it reconnects): not refused, the transport moves the events to the newest.
    let (status, again, body) = open_event_stream_after(&server, &acme, &first, Some("0/1"));
    assert_eq!(status, 200, "a resumption made again: {body}");
    drop((resumed, again));
    drop(stream);
    let (status, stream, body) = event_stream_once_free(&server, &acme, &first);
    assert_eq!(status, 200, "a stream closed gives its place back: {body}");
    let mut held = vec![stream];
    for _ in 1..16 {
        let session = initialized_mcp_session(&server, &acme);
        let (status, stream, body) = open_event_stream(&server, &acme, &session);
        assert_eq!(status, 200, "{body}");
        held.push(stream);
    }
    let waiting = initialized_mcp_session(&server, &acme);
    let (status, _, body) = open_event_stream(&server, &acme, &waiting);
    assert_eq!(status, 503, "past the tenant's share: {body}");
    let refused: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(refused["error"]["kind"], "unavailable", "{refused}");
    assert!(body.contains("tenant"), "{body}");
    for _ in 0..4 {
        let session = initialized_mcp_session(&server, &other);
        let (status, stream, body) = open_event_stream(&server, &other, &session);
        assert_eq!(status, 200, "another tenant's: {body}");
        held.push(stream);
    }
    let session = initialized_mcp_session(&server, &other);
    let (status, _, body) = open_event_stream(&server, &other, &session);
    assert_eq!(status, 503, "past the server's bound: {body}");
    assert!(body.contains("this server keeps"), "{body}");
    // Every other request is still served.
    let (status, body) = server.raw("GET", "/healthz", None, None);
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.raw("GET", "/v1/memories", Some(&acme), None);
    assert_eq!(status, 200, "{body}");
    // A session ended ends its stream, and gives its place back.
    let (status, _, body) = server.raw_with_headers(
        "DELETE",
        "/mcp",
        Some(&acme),
        &[("Mcp-Session-Id", first)],
        None,
    );
    assert!(status < 300, "{status}: {body}");
    let started = std::time::Instant::now();
    let (status, body) = loop {
        let (status, stream, body) = open_event_stream(&server, &acme, &waiting);
        if status == 200 || started.elapsed() > std::time::Duration::from_secs(10) {
            held.push(stream);
            break (status, body);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status, 200, "once a session ended: {body}");
    drop(held);
    assert_eq!(server.stop(), Some(0));
}

fn streamable_http_scenario(server: &Server) {
    let key = server.key_for("acme");
    let post = |session: Option<&str>, key: Option<&str>, body: Value| {
        let mut headers = vec![("Accept", "application/json, text/event-stream".to_owned())];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session.to_owned()));
            headers.push(("Mcp-Protocol-Version", "2025-06-18".to_owned()));
        }
        server.raw_with_headers("POST", "/mcp", key, &headers, Some(&body.to_string()))
    };
    let (status, _, body) = post(
        None,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert_eq!(status, 401, "{body}");

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}});
    let (status, head, body) = post(None, Some(&key), init);
    assert_eq!(status, 200, "{head}\n{body}");
    let session = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    let session = session.as_deref();
    assert_eq!(
        message_of(&body)["result"]["serverInfo"]["name"],
        "agent-memory",
        "{body}"
    );
    let (status, _, _) = post(
        session,
        Some(&key),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert!(status == 202 || status == 200, "{status}");
    let (status, _, body) = post(
        session,
        Some(&key),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "remember", "arguments": {"text": "The office is in Lisbon"}}}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        message_of(&body)["result"]["structuredContent"]["namespace"],
        "acme",
        "{body}"
    );
    // On SQLite, recall and context read through the server's reader connections, which
    // see the write just acknowledged.
    let (_, _, body) = post(
        session,
        Some(&key),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "office city"}}}),
    );
    let message = message_of(&body);
    assert!(
        message["result"]["structuredContent"]["results"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Lisbon")),
        "{body}"
    );
    let (_, _, body) = post(
        session,
        Some(&key),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "context", "arguments": {"query": "where is the office"}}}),
    );
    assert!(
        message_of(&body)["result"]["structuredContent"]["context"]
            .as_str()
            .is_some_and(|context| context.contains("Lisbon")),
        "{body}"
    );
    // The key's tenant holds over MCP too.
    let (_, _, body) = post(
        session,
        Some(&key),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "office", "namespace": "other"}}}),
    );
    assert_eq!(message_of(&body)["result"]["isError"], true, "{body}");
}

/// `create_entities` writes all or nothing: when the observations cannot be embedded (an
/// embedding service nobody answers at), no entity is left behind, so the same call made
/// again once the service works stores the entities with their observations.
#[test]
fn stdio_compat_create_entities_leaves_nothing_when_it_fails() {
    let dir = TempDir::new("mcp-compat-atomic");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("store.db").display().to_string(),
    ];
    let config = dir.path().join("config").join("agent-memory");
    std::fs::create_dir_all(&config).expect("config dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[embeddings]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"toy\"\ndimension = 4\n"
        ),
    )
    .expect("write the configuration");
    let entities = json!({"entities": [
        {"name": "Ada", "entityType": "person", "observations": ["Writes the first program"]},
        {"name": "Engine", "entityType": "machine", "observations": []}
    ]});
    let mut client = Stdio_::compat(&dir, &store);
    let failed = client.call("create_entities", entities.clone());
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    drop(client);

    std::fs::write(config.join("config.toml"), "").expect("write the configuration");
    let mut client = Stdio_::compat(&dir, &store);
    let graph = client.payload("read_graph", json!({}));
    assert_eq!(graph["entities"], json!([]), "no entity left: {graph}");
    let created = client.payload("create_entities", entities);
    assert_eq!(
        created["entities"].as_array().map(Vec::len),
        Some(2),
        "{created}"
    );
    let opened = client.payload("open_nodes", json!({"names": ["Ada"]}));
    assert_eq!(
        opened["entities"][0]["observations"],
        json!(["Writes the first program"]),
        "{opened}"
    );
}

/// `create_relations` checks that every end exists before it writes the first relation.
#[test]
fn stdio_compat_create_relations_writes_none_when_an_end_is_missing() {
    let dir = TempDir::new("mcp-compat-relations");
    for (backend, store) in backends(&dir, "mcp_compat_relations") {
        let _schema = DropSchema(store.clone());
        let mut client = Stdio_::compat(&dir, &store);
        client.payload(
            "create_entities",
            json!({"entities": [
                {"name": "Ada", "entityType": "person", "observations": []},
                {"name": "Engine", "entityType": "machine", "observations": []}
            ]}),
        );
        let failed = client.call(
            "create_relations",
            json!({"relations": [
                {"from": "Ada", "to": "Engine", "relationType": "designs"},
                {"from": "Ada", "to": "Nobody", "relationType": "knows"}
            ]}),
        );
        assert_eq!(failed["result"]["isError"], true, "{backend}: {failed}");
        assert!(failed.to_string().contains("Nobody"), "{backend}: {failed}");
        let graph = client.payload("read_graph", json!({}));
        assert_eq!(graph["relations"], json!([]), "{backend}: {graph}");
    }
}

/// The compatibility tools take as observations only the memories they wrote: a memory the
/// user stored otherwise with the same `entity` metadata is neither shown with the entity
/// nor deleted with it. A write call of more than 1,000 records is refused whole.
#[test]
fn stdio_compat_leaves_other_memories_and_bounds_its_calls() {
    let dir = TempDir::new("mcp-compat-own");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("store.db").to_string_lossy().into_owned(),
    ];
    let own = crate::support::ok_in(
        &dir,
        "kb",
        &[
            "remember",
            "Alice moved to Berlin",
            "--metadata",
            r#"{"entity": "Alice"}"#,
        ],
    );
    let id = own["id"].as_str().expect("an id").to_owned();
    let mut client = Stdio_::compat(&dir, &store);
    client.payload(
        "create_entities",
        json!({"entities": [
            {"name": "Alice", "entityType": "person", "observations": ["works at Acme"]}
        ]}),
    );
    let opened = client.payload("open_nodes", json!({"names": ["Alice"]}));
    assert_eq!(
        opened["entities"][0]["observations"],
        json!(["works at Acme"]),
        "{opened}"
    );
    let found = client.payload("search_nodes", json!({"query": "Berlin"}));
    assert_eq!(found["entities"], json!([]), "{found}");
    client.payload("delete_entities", json!({"entityNames": ["Alice"]}));
    drop(client);
    let kept = crate::support::ok_in(&dir, "kb", &["get", &id]);
    assert_eq!(kept["content"], "Alice moved to Berlin", "{kept}");

    let mut client = Stdio_::compat(&dir, &store);
    let many: Vec<Value> = (0..1_001)
        .map(|n| json!({"from": "hub", "to": format!("e{n}"), "relationType": "links"}))
        .collect();
    let refused = client.call("create_relations", json!({ "relations": many }));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused.to_string().contains("relations"), "{refused}");
    let names: Vec<String> = (0..1_001).map(|n| format!("e{n}")).collect();
    let refused = client.call("delete_entities", json!({ "entityNames": names }));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
}

/// An entity with more relations than a read shows brings a page of them, those from it
/// first, and the read names it in `relationsTruncated`; one with fewer brings all of them
/// and no such field.
#[test]
fn stdio_compat_reads_show_a_page_of_a_hubs_relations() {
    let dir = TempDir::new("mcp-compat-hub");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("store.db").to_string_lossy().into_owned(),
    ];
    let mut client = Stdio_::compat(&dir, &store);
    let mut entities: Vec<Value> = (0..150)
        .map(|n| json!({"name": format!("leaf-{n:03}"), "entityType": "thing"}))
        .collect();
    entities.push(json!({"name": "hub", "entityType": "thing"}));
    client.payload("create_entities", json!({ "entities": entities }));
    // 120 relations from the hub and 30 to it; one leaf relates to the hub alone.
    let mut relations: Vec<Value> = (0..120)
        .map(|n| json!({"from": "hub", "to": format!("leaf-{n:03}"), "relationType": "links"}))
        .collect();
    relations
        .extend((120..150).map(
            |n| json!({"from": format!("leaf-{n:03}"), "to": "hub", "relationType": "cites"}),
        ));
    client.payload("create_relations", json!({ "relations": relations }));
    // A relation stored past the first read of the hub's is known; a new one is created.
    let again = client.payload(
        "create_relations",
        json!({"relations": [
            {"from": "hub", "to": "leaf-119", "relationType": "links"},
            {"from": "hub", "to": "leaf-149", "relationType": "links"}
        ]}),
    );
    assert_eq!(
        again["relations"],
        json!([{"from": "hub", "to": "leaf-149", "relationType": "links"}]),
        "{again}"
    );
    client.payload(
        "delete_relations",
        json!({"relations": [{"from": "hub", "to": "leaf-149", "relationType": "links"}]}),
    );
    let opened = client.payload("open_nodes", json!({"names": ["hub", "leaf-149"]}));
    let shown = opened["relations"].as_array().expect("relations");
    // The hub's first 100 (all from it), and the leaf's one, to the hub.
    assert_eq!(shown.len(), 101, "{opened}");
    assert_eq!(
        shown
            .iter()
            .filter(|relation| relation["from"] == "hub")
            .count(),
        100
    );
    assert!(
        shown
            .iter()
            .any(|relation| relation["from"] == "leaf-149" && relation["to"] == "hub")
    );
    assert_eq!(opened["relationsTruncated"], json!(["hub"]), "{opened}");
    // The page of the graph holding the hub shows 100 of the 120 relations from it.
    let mut from_hub = None;
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let mut arguments = json!({"limit": 200});
        if let Some(cursor) = &cursor {
            arguments["cursor"] = json!(cursor);
        }
        let page = client.payload("read_graph", arguments);
        if page["entities"]
            .as_array()
            .expect("entities")
            .iter()
            .any(|entity| entity["name"] == "hub")
        {
            let relations = page["relations"].as_array().expect("relations");
            from_hub = Some(
                relations
                    .iter()
                    .filter(|relation| relation["from"] == "hub")
                    .count(),
            );
            assert_eq!(page["relationsTruncated"], json!(["hub"]), "{page}");
            // Every leaf's own relation (the 30 to the hub) is there too.
            assert_eq!(relations.len(), 130, "{page}");
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(from_hub, Some(100));
    // A leaf alone is shown whole, without the field.
    let opened = client.payload("open_nodes", json!({"names": ["leaf-000"]}));
    assert_eq!(opened["relations"].as_array().map(Vec::len), Some(1));
    assert!(opened.get("relationsTruncated").is_none(), "{opened}");
}

/// `search_nodes` pages through more entities and observations than it reads at once: every
/// match once, in name order, by name, type or observation.
#[test]
fn stdio_compat_search_nodes_pages_through_many() {
    let dir = TempDir::new("mcp-compat-many");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("store.db").to_string_lossy().into_owned(),
    ];
    let mut client = Stdio_::compat(&dir, &store);
    // 300 entities matched by name, 300 by an observation, 100 not at all.
    let entities: Vec<Value> = (0..700)
        .map(|n| {
            let (name, observations) = match n {
                0..300 => (format!("match-{n:03}"), vec![]),
                300..600 => (format!("e-{n:03}"), vec![format!("a note on match {n}")]),
                _ => (format!("other-{n:03}"), vec!["nothing here".to_owned()]),
            };
            json!({"name": name, "entityType": "thing", "observations": observations})
        })
        .collect();
    client.payload("create_entities", json!({ "entities": entities }));
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let mut arguments = json!({"query": "match", "limit": 200});
        if let Some(cursor) = &cursor {
            arguments["cursor"] = json!(cursor);
        }
        let page = client.payload("search_nodes", arguments);
        seen.extend(
            page["entities"]
                .as_array()
                .expect("entities")
                .iter()
                .map(|entity| entity["name"].as_str().unwrap_or_default().to_owned()),
        );
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let mut want: Vec<String> = (0..300)
        .map(|n| format!("match-{n:03}"))
        .chain((300..600).map(|n| format!("e-{n:03}")))
        .collect();
    want.sort();
    assert_eq!(seen, want);
    // Pages of the graph and opened nodes carry each entity's own observations, read in
    // one pass over more observations than are read at once.
    client.payload(
        "add_observations",
        json!({"observations": [{"entityName": "e-300", "contents": ["second note", "third note"]}]}),
    );
    let opened = client.payload(
        "open_nodes",
        json!({"names": ["e-300", "match-000", "other-650", "nobody"]}),
    );
    let shown: Vec<(String, Value)> = opened["entities"]
        .as_array()
        .expect("entities")
        .iter()
        .map(|entity| {
            (
                entity["name"].as_str().unwrap_or_default().to_owned(),
                entity["observations"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (
                "e-300".to_owned(),
                json!(["a note on match 300", "second note", "third note"])
            ),
            ("match-000".to_owned(), json!([])),
            ("other-650".to_owned(), json!(["nothing here"])),
        ]
    );
    let mut observed = 0;
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let mut arguments = json!({"limit": 200});
        if let Some(cursor) = &cursor {
            arguments["cursor"] = json!(cursor);
        }
        let page = client.payload("read_graph", arguments);
        for entity in page["entities"].as_array().expect("entities") {
            let name = entity["name"].as_str().unwrap_or_default();
            let notes = entity["observations"].as_array().expect("observations");
            if name.starts_with("e-") && name != "e-300" {
                assert_eq!(notes.len(), 1, "{entity}");
                assert!(
                    notes[0].as_str().unwrap_or_default().ends_with(&name[2..]),
                    "{entity}"
                );
            }
            observed += notes.len();
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(observed, 300 + 2 + 100);
}

/// The compatibility tools' observations are kept within `--max-memories`, as remembered
/// memories are: they are written to the store directly, and the write path's eviction
/// runs after them.
#[test]
fn compat_observations_stay_within_the_capacity() {
    let dir = TempDir::new("mcp-compat-capacity");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
        "--max-memories".to_owned(),
        "3".to_owned(),
    ];
    let mut client = Stdio_::compat(&dir, &store);
    let observations: Vec<String> = (0..8)
        .map(|at| format!("Observation number {at}"))
        .collect();
    client.payload(
        "create_entities",
        json!({"entities": [{"name": "Ada", "entityType": "person", "observations": observations}]}),
    );
    let more: Vec<String> = (8..12)
        .map(|at| format!("Observation number {at}"))
        .collect();
    client.payload(
        "add_observations",
        json!({"observations": [{"entityName": "Ada", "contents": more}]}),
    );
    let graph = client.payload("read_graph", json!({}));
    let kept = graph["entities"][0]["observations"]
        .as_array()
        .map(Vec::len)
        .unwrap_or_default();
    assert!(kept <= 3, "at most the capacity: {graph}");
    assert!(kept > 0, "{graph}");
}
