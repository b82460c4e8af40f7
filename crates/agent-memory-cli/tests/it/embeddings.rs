//! The optional embedding channel from the command line: the configuration file's
//! `[embeddings]` table (or the environment) names an OpenAI-compatible `/embeddings`
//! service, and recall finds memories by meaning as well as by words.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use crate::support::{ADA_MEMORY_FILE, Server, TempDir, command, run_json};

/// Toy vectors of 4 values: pets, vehicles, food, and a small constant so none is zero. A
/// text in the query form (put after `query: `) reads "animal" as a pet, as a model with
/// distinct query and document forms reads a query differently.
fn toy_vector(text: &str) -> [f32; 4] {
    let query_form = text.starts_with("query: ");
    let mut vector = [0.0, 0.0, 0.0, 0.1];
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let slot = match word.to_lowercase().as_str() {
            "cat" | "kitten" | "dog" | "puppy" | "pet" => 0,
            "animal" if query_form => 0,
            "car" | "bike" | "tyres" | "bus" => 1,
            "cake" | "bread" | "baked" | "cook" => 2,
            _ => continue,
        };
        vector[slot] += 1.0;
    }
    vector
}

/// An `/embeddings` service on a free port, answering every request with [`toy_vector`]s;
/// runs until the test process ends. Returns its base URL.
fn toy_service() -> String {
    slow_toy_service(std::time::Duration::ZERO)
}

/// [`toy_service`], answering each request `delay` after reading it, one at a time.
fn slow_toy_service(delay: std::time::Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let request: serde_json::Value =
                serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
            let inputs: Vec<String> = match &request["input"] {
                serde_json::Value::String(text) => vec![text.clone()],
                serde_json::Value::Array(texts) => texts
                    .iter()
                    .map(|text| text.as_str().unwrap_or_default().to_owned())
                    .collect(),
                _ => Vec::new(),
            };
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .map(|(index, text)| {
                    serde_json::json!({"object": "embedding", "index": index, "embedding": toy_vector(text)})
                })
                .collect();
            std::thread::sleep(delay);
            let answer = serde_json::json!({"object": "list", "data": data}).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    format!("http://{address}/v1")
}

fn write_config(dir: &TempDir, text: &str) {
    let config = dir.path().join("config").join("agent-memory");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("config.toml"), text).expect("write the configuration");
}

/// Lists the store without the embedding service: it must be empty.
fn assert_nothing_stored(dir: &TempDir) {
    write_config(dir, "");
    let (code, listed) = run_json(dir, &["list"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(
        listed["items"].as_array().map(Vec::len),
        Some(0),
        "{listed}"
    );
}

/// The value of the embedding signal in a hit's explanation (0 without one).
fn embedding_signal(hit: &serde_json::Value) -> f64 {
    hit["explanation"]["signals"]
        .as_array()
        .and_then(|signals| signals.iter().find(|signal| signal["name"] == "embedding"))
        .and_then(|signal| signal["value"].as_f64())
        .unwrap_or(0.0)
}

fn ids(found: &serde_json::Value) -> Vec<String> {
    found["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .filter_map(|hit| hit["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// With the table, a memory is found by a word it does not use; without it, not.
#[test]
fn the_embeddings_table_finds_memories_by_meaning() {
    let service = toy_service();
    let dir = TempDir::new("embeddings-table");
    write_config(
        &dir,
        &format!("[embeddings]\nbase_url = \"{service}\"\nmodel = \"toy\"\ndimension = 4\n"),
    );
    let (code, kitten) = run_json(&dir, &["remember", "I adopted a kitten last spring"]);
    assert_eq!(code, 0, "{kitten}");
    let (code, _) = run_json(&dir, &["remember", "The car needs new tyres"]);
    assert_eq!(code, 0);
    let kitten_id = kitten["id"].as_str().expect("an id").to_owned();

    let (code, found) = run_json(&dir, &["recall", "which cat do I have", "--explain"]);
    assert_eq!(code, 0, "{found}");
    // The kitten first; the car's vector is nearly orthogonal to the query's.
    assert_eq!(ids(&found).first(), Some(&kitten_id), "{found}");
    assert!(embedding_signal(&found["results"][0]) > 0.9, "{found}");

    // Without the table, recall is keyword-only: "cat" is not "kitten".
    write_config(&dir, "");
    let (code, found) = run_json(&dir, &["recall", "which cat do I have"]);
    assert_eq!(code, 0, "{found}");
    assert!(ids(&found).is_empty(), "{found}");

    // The environment names the service in place of the table.
    let output = command(&dir)
        .env("AGENT_MEMORY_EMBEDDINGS_BASE_URL", &service)
        .env("AGENT_MEMORY_EMBEDDINGS_MODEL", "toy")
        .env("AGENT_MEMORY_EMBEDDINGS_DIMENSION", "4")
        .arg("--store")
        .arg(dir.path().join("store.db"))
        .args(["--json", "recall", "which cat do I have"])
        .output()
        .expect("run agent-memory");
    let found: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON document");
    assert_eq!(ids(&found).first(), Some(&kitten_id), "{found}");
}

/// `query_prefix` and `document_prefix` reach the service: a query in the model's query
/// form finds what the same words without it do not.
#[test]
fn the_table_prefixes_queries_and_stored_texts() {
    let service = toy_service();
    let dir = TempDir::new("embeddings-prefixes");
    let table = format!("[embeddings]\nbase_url = \"{service}\"\nmodel = \"toy\"\ndimension = 4\n");
    write_config(
        &dir,
        &format!("{table}query_prefix = \"query: \"\ndocument_prefix = \"passage: \"\n"),
    );
    let (code, kitten) = run_json(&dir, &["remember", "I adopted a kitten last spring"]);
    assert_eq!(code, 0, "{kitten}");
    let (code, _) = run_json(&dir, &["remember", "The car needs new tyres"]);
    assert_eq!(code, 0);
    let kitten_id = kitten["id"].as_str().expect("an id").to_owned();
    let (code, found) = run_json(&dir, &["recall", "which animal do I have", "--explain"]);
    assert_eq!(code, 0, "{found}");
    assert_eq!(ids(&found).first(), Some(&kitten_id), "{found}");
    assert!(embedding_signal(&found["results"][0]) > 0.9, "{found}");

    // The same query without the prefix is in no pet's direction.
    write_config(&dir, &table);
    let (code, found) = run_json(&dir, &["recall", "which animal do I have", "--explain"]);
    assert_eq!(code, 0, "{found}");
    assert!(
        ids(&found).first() != Some(&kitten_id) || embedding_signal(&found["results"][0]) < 0.5,
        "{found}"
    );
}

/// A table the service cannot take is refused by name before anything is stored.
#[test]
fn a_bad_embeddings_table_is_refused_by_name() {
    let dir = TempDir::new("embeddings-bad");
    for (table, field) in [
        (
            "base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"toy\"\ndimension = 0\n",
            "embeddings.dimension",
        ),
        (
            "base_url = \"http://127.0.0.1:9/v1\"\nmodel = \" \"\ndimension = 4\n",
            "embeddings.model",
        ),
        (
            "base_url = \"\"\nmodel = \"toy\"\ndimension = 4\n",
            "embeddings.base_url",
        ),
        (
            "base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"toy\"\ndimension = 4\nbatch_size = 0\n",
            "embeddings.batch_size",
        ),
        ("model = \"toy\"\ndimension = 4\n", "config"),
        (
            &*format!(
                "base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"toy\"\ndimension = 4\nquery_prefix = \"{}\"\n",
                "x".repeat(1001)
            ),
            "embeddings.query_prefix",
        ),
        (
            "base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"toy\"\ndimension = 4\nkey = \"x\"\n",
            "config",
        ),
    ] {
        write_config(&dir, &format!("[embeddings]\n{table}"));
        let (code, found) = run_json(&dir, &["remember", "I adopted a kitten"]);
        assert_eq!(code, 3, "{table}: {found}");
        assert_eq!(found["error"]["field"], field, "{table}: {found}");
    }
    assert_nothing_stored(&dir);
}

/// Writes an `[embeddings]` table naming a service on a port nothing listens on (bound, then
/// released).
fn configure_unreachable_service(dir: &TempDir) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    write_config(
        dir,
        &format!(
            "[embeddings]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"toy\"\ndimension = 4\n"
        ),
    );
}

/// A service that cannot be reached fails the write with a clear error and stores nothing.
#[test]
fn an_unreachable_service_fails_the_write_and_stores_nothing() {
    let dir = TempDir::new("embeddings-down");
    configure_unreachable_service(&dir);
    let (code, found) = run_json(&dir, &["remember", "I adopted a kitten"]);
    assert_ne!(code, 0, "{found}");
    assert_eq!(code, 5, "unavailable: {found}");
    assert!(
        found["error"]["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("embedding service")),
        "{found}"
    );
    assert_nothing_stored(&dir);
}

/// A recall while the service is down answers by words alone, and says so on standard error
/// (the commands log warnings there).
#[test]
fn a_recall_without_the_service_answers_by_words_and_warns() {
    let dir = TempDir::new("embeddings-recall-down");
    let (code, stored) = run_json(&dir, &["remember", "I adopted a kitten"]);
    assert_eq!(code, 0, "{stored}");
    configure_unreachable_service(&dir);
    let output = crate::support::run(&dir, &["--json", "recall", "kitten"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let found: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(ids(&found).len(), 1, "{found}");
    assert!(
        stderr.contains("WARN") && stderr.contains("without the embedding channel"),
        "{stderr}"
    );
}

/// An edit of a memory's text over HTTP embeds the new text: the old vector described the
/// old one.
#[test]
fn an_edited_memory_is_embedded_again() {
    let service = toy_service();
    let dir = TempDir::new("embeddings-edit");
    write_config(
        &dir,
        &format!("[embeddings]\nbase_url = \"{service}\"\nmodel = \"toy\"\ndimension = 4\n"),
    );
    let store = vec![
        "--store".to_owned(),
        dir.path().join("store.db").display().to_string(),
    ];
    let server = Server::start(&dir, &store, &["--no-auth"]);
    let (status, made) = server.call(
        "POST",
        "/v1/memories",
        None,
        Some(serde_json::json!({"text": "The car needs new tyres", "namespace": "acme"})),
    );
    assert_eq!(status, 201, "{made}");
    let id = made["id"].as_str().expect("an id").to_owned();
    let (status, edited) = server.call(
        "PATCH",
        &format!("/v1/memories/{id}?namespace=acme"),
        None,
        Some(serde_json::json!({"content": "I adopted a kitten", "namespace": "acme"})),
    );
    assert_eq!(status, 200, "{edited}");
    let (status, found) = server.call(
        "POST",
        "/v1/recall",
        None,
        Some(serde_json::json!({"query": "which cat do I have", "namespace": "acme", "explain": true})),
    );
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["results"][0]["id"], id.as_str(), "{found}");
    assert!(
        embedding_signal(&found["results"][0]) > 0.9,
        "the new text's vector: {found}"
    );
    assert_eq!(server.stop(), Some(0));
}

/// `POST /v1/memories/reembed` embeds the memories of its namespace that were remembered
/// before the server had an embedding service, and no others; again, only what still lacks
/// a vector, or every one with `all`. Without a service it is refused, naming `embeddings`.
#[test]
fn the_http_api_embeds_memories_remembered_before_the_service() {
    let service = toy_service();
    let dir = TempDir::new("embeddings-http-reembed");
    write_config(&dir, "");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("store.db").display().to_string(),
    ];
    let reembed = |server: &Server, body: serde_json::Value| {
        server.call("POST", "/v1/memories/reembed", None, Some(body))
    };
    let server = Server::start(&dir, &store, &["--no-auth"]);
    let mut kittens = Vec::new();
    for namespace in ["acme", "beta"] {
        let (status, made) = server.call(
            "POST",
            "/v1/memories",
            None,
            Some(serde_json::json!({"text": "I adopted a kitten last spring", "namespace": namespace})),
        );
        assert_eq!(status, 201, "{made}");
        kittens.push(made["id"].as_str().expect("an id").to_owned());
    }
    let (status, refused) = reembed(&server, serde_json::json!({"namespace": "acme"}));
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "embeddings", "{refused}");
    assert_eq!(server.stop(), Some(0));

    write_config(
        &dir,
        &format!("[embeddings]\nbase_url = \"{service}\"\nmodel = \"toy\"\ndimension = 4\n"),
    );
    let server = Server::start(&dir, &store, &["--no-auth"]);
    let recall = |namespace: &str| {
        let (status, found) = server.call(
            "POST",
            "/v1/recall",
            None,
            Some(serde_json::json!({"query": "which cat do I have", "namespace": namespace, "explain": true})),
        );
        assert_eq!(status, 200, "{found}");
        found
    };
    assert!(ids(&recall("acme")).is_empty(), "no vector yet");

    let (status, report) = reembed(&server, serde_json::json!({"namespace": "acme"}));
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        (&report["examined"], &report["embedded"], &report["skipped"]),
        (
            &serde_json::json!(1),
            &serde_json::json!(1),
            &serde_json::json!(0)
        ),
        "{report}"
    );
    let found = recall("acme");
    assert_eq!(ids(&found), [kittens[0].clone()], "{found}");
    assert!(embedding_signal(&found["results"][0]) > 0.9, "{found}");
    assert!(
        ids(&recall("beta")).is_empty(),
        "another namespace is left alone"
    );

    let (status, report) = reembed(&server, serde_json::json!({"namespace": "acme"}));
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["embedded"], 0, "nothing lacks a vector: {report}");
    let (status, report) = reembed(
        &server,
        serde_json::json!({"namespace": "acme", "all": true}),
    );
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["embedded"], 1, "{report}");
    let (status, refused) = reembed(
        &server,
        serde_json::json!({"namespace": "acme", "every": true}),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(server.stop(), Some(0));
}

/// Observations imported from a `memory.jsonl` are embedded as remembered memories are.
#[test]
fn imported_observations_are_embedded() {
    let service = toy_service();
    let dir = TempDir::new("embeddings-import");
    write_config(
        &dir,
        &format!("[embeddings]\nbase_url = \"{service}\"\nmodel = \"toy\"\ndimension = 4\n"),
    );
    let file = dir.path().join("memory.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"type":"entity","name":"Rex","entityType":"animal","observations":["Is a puppy"]}"#,
            "\n"
        ),
    )
    .expect("write memory.jsonl");
    let (code, imported) = run_json(&dir, &["import", file.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{imported}");
    let (code, found) = run_json(&dir, &["recall", "my dog", "--explain"]);
    assert_eq!(code, 0, "{found}");
    let hit = found["results"]
        .as_array()
        .and_then(|results| results.iter().find(|hit| hit["text"] == "Is a puppy"))
        .unwrap_or_else(|| panic!("the observation is found by meaning: {found}"));
    assert!(embedding_signal(hit) > 0.9, "{found}");
}

/// Memories remembered before the table was added are embedded by `reembed`, and then
/// found by meaning; `--all` embeds every one again; without a service it is refused.
#[test]
fn reembed_embeds_memories_remembered_before_the_table() {
    let service = toy_service();
    let dir = TempDir::new("embeddings-reembed");
    write_config(&dir, "");
    let (code, kitten) = run_json(&dir, &["remember", "I adopted a kitten last spring"]);
    assert_eq!(code, 0, "{kitten}");
    let kitten_id = kitten["id"].as_str().expect("an id").to_owned();
    let (code, refused) = run_json(&dir, &["reembed"]);
    assert_eq!(code, 3, "{refused}");
    assert_eq!(refused["error"]["field"], "embeddings", "{refused}");

    write_config(
        &dir,
        &format!("[embeddings]\nbase_url = \"{service}\"\nmodel = \"toy\"\ndimension = 4\n"),
    );
    let (code, _) = run_json(&dir, &["remember", "The car needs new tyres"]);
    assert_eq!(code, 0);
    let (code, found) = run_json(&dir, &["recall", "which cat do I have"]);
    assert_eq!(code, 0, "{found}");
    assert!(!ids(&found).contains(&kitten_id), "no vector yet: {found}");

    let (code, report) = run_json(&dir, &["reembed"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["examined"], 2, "{report}");
    assert_eq!(
        report["embedded"], 1,
        "only the memory without a vector: {report}"
    );
    let (code, found) = run_json(&dir, &["recall", "which cat do I have", "--explain"]);
    assert_eq!(code, 0, "{found}");
    assert_eq!(ids(&found).first(), Some(&kitten_id), "{found}");
    assert!(embedding_signal(&found["results"][0]) > 0.9, "{found}");

    let (code, report) = run_json(&dir, &["reembed", "--all"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["embedded"], 2, "{report}");
}

/// An import of the MCP memory server's file embeds its observations before it writes
/// anything: when the service fails (here it answers vectors of another dimension than
/// the table says), the import fails and leaves no entity behind.
#[test]
fn a_failing_service_fails_an_mcp_import_before_it_writes() {
    let service = toy_service();
    let dir = TempDir::new("embeddings-mcp-import");
    write_config(
        &dir,
        &format!("[embeddings]\nbase_url = \"{service}\"\nmodel = \"toy\"\ndimension = 8\n"),
    );
    let file = dir.path().join("memory.jsonl");
    std::fs::write(&file, ADA_MEMORY_FILE).expect("write memory.jsonl");
    let (code, failed) = run_json(&dir, &["-n", "kb", "import", file.to_str().expect("utf-8")]);
    assert_ne!(code, 0, "{failed}");
    write_config(&dir, "");
    let (code, stats) = run_json(&dir, &["-n", "kb", "stats"]);
    assert_eq!(code, 0, "{stats}");
    assert_eq!(stats["entities"], 0, "nothing written: {stats}");
    assert_eq!(stats["total"], 0, "{stats}");
}

/// A server without keys on a SQLite store in `dir`, embedding through a service that takes
/// `delay` a call, with a request deadline of `deadline_ms`.
fn slow_server(dir: &TempDir, delay: std::time::Duration, deadline_ms: &str) -> Server {
    let service = slow_toy_service(delay);
    write_config(
        dir,
        &format!("[embeddings]\nbase_url = \"{service}\"\nmodel = \"toy\"\ndimension = 4\n"),
    );
    let store = vec![
        "--store".to_owned(),
        dir.path().join("store.db").display().to_string(),
    ];
    Server::start(
        dir,
        &store,
        &["--no-auth", "--request-timeout-ms", deadline_ms],
    )
}

/// A write cut off by the deadline says its outcome is unknown (a write the store had begun
/// runs to its end) and how to retry without a duplicate; a read cut off is only late.
#[test]
fn a_write_past_its_deadline_says_it_may_be_stored() {
    let dir = TempDir::new("embeddings-write-deadline");
    let server = slow_server(&dir, std::time::Duration::from_millis(600), "150");
    let (status, refused) = server.call(
        "POST",
        "/v1/memories",
        None,
        Some(serde_json::json!({"text": "a note about a cake", "namespace": "acme"})),
    );
    assert_eq!(status, 504, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("may be stored or not")),
        "{refused}"
    );
    assert!(
        refused["error"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("read it back")),
        "{refused}"
    );
    let (status, late) = server.call(
        "POST",
        "/v1/recall",
        None,
        Some(serde_json::json!({"query": "cake", "namespace": "acme"})),
    );
    assert_eq!(status, 504, "{late}");
    assert!(
        late["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.contains("stored")),
        "{late}"
    );
}

/// A batch written one memory at a time stops before its deadline and says how many it
/// stored (they are), rather than be cut off by the deadline with no count.
#[test]
fn a_slow_batch_stops_before_its_deadline_and_counts_what_it_stored() {
    let dir = TempDir::new("embeddings-deadline");
    let server = slow_server(&dir, std::time::Duration::from_millis(60), "900");
    let memories: Vec<serde_json::Value> = (0..40)
        .map(|n| serde_json::json!({"text": format!("note {n} about a cake"), "namespace": "acme"}))
        .collect();
    let (status, refused) = server.call(
        "POST",
        "/v1/memories/batch",
        None,
        Some(serde_json::json!({ "memories": memories })),
    );
    assert_eq!(status, 504, "{refused}");
    assert_eq!(refused["error"]["kind"], "timeout", "{refused}");
    let message = refused["error"]["message"].as_str().expect("a message");
    let stored: u64 = message
        .split("; the ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("a count in {message:?}"));
    assert!(stored > 0 && stored < 40, "{message}");
    assert!(
        message.starts_with(&format!("memories[{stored}]")),
        "{message}"
    );
    let (status, stats) = server.call("GET", "/v1/stats?namespace=acme", None, None);
    assert_eq!(status, 200, "{stats}");
    assert_eq!(stats["total"], stored, "{stats}");
    assert_eq!(server.stop(), Some(0));
}

/// A tool call over `/mcp` has the server's request deadline: a remember waiting on an
/// embedding service far slower than the deadline ends with a `timeout` tool error, and
/// the session goes on.
#[test]
fn an_mcp_tool_call_over_http_has_the_request_deadline() {
    let dir = TempDir::new("embeddings-mcp-deadline");
    let server = slow_server(&dir, std::time::Duration::from_secs(5), "400");
    let post = |session: Option<&str>, body: serde_json::Value| {
        let mut headers = vec![("Accept", "application/json, text/event-stream".to_owned())];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session.to_owned()));
            headers.push(("Mcp-Protocol-Version", "2025-06-18".to_owned()));
        }
        server.raw_with_headers("POST", "/mcp", None, &headers, Some(&body.to_string()))
    };
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}});
    let (status, head, body) = post(None, init);
    assert_eq!(status, 200, "{head}\n{body}");
    let session = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    post(
        session.as_deref(),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let (status, _, body) = post(
        session.as_deref(),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "The office is in Lisbon"}}}),
    );
    assert_eq!(status, 200, "{body}");
    let result = &crate::mcp::message_of(&body)["result"];
    assert_eq!(result["isError"], true, "{body}");
    assert_eq!(
        result["structuredContent"]["error"]["kind"], "timeout",
        "{body}"
    );
    // The session is still there for the next call.
    let (status, _, body) = post(
        session.as_deref(),
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        crate::mcp::message_of(&body)["result"]["tools"].is_array(),
        "{body}"
    );
    assert_eq!(server.stop(), Some(0));
}
