//! The commands on a temporary SQLite file.

use crate::support::{ADA_MEMORY_FILE, TempDir, command, ok_in, remember_kiwis, run, run_json};

#[test]
fn remember_recall_forget_stats() {
    let dir = TempDir::new("cycle");
    let (code, remembered) = run_json(
        &dir,
        &[
            "-n",
            "user-42",
            "remember",
            "The user prefers Rust for systems programming",
            "--kind",
            "semantic",
            "--tag",
            "Languages",
        ],
    );
    assert_eq!(code, 0, "{remembered}");
    let id = remembered["id"].as_str().expect("an id").to_owned();
    assert_eq!(remembered["namespace"], "user-42");
    run_json(
        &dir,
        &[
            "-n",
            "user-42",
            "remember",
            "The user has a cat called Miso",
        ],
    );

    let (code, found) = run_json(
        &dir,
        &[
            "-n",
            "user-42",
            "recall",
            "programming language",
            "--explain",
        ],
    );
    assert_eq!(code, 0, "{found}");
    let first = &found["results"][0];
    assert_eq!(first["id"], id.as_str(), "{found}");
    assert_eq!(first["source"], "memory");
    assert!(
        first["explanation"]["signals"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "{found}"
    );

    // A metadata condition: only the memories whose metadata holds it.
    let (code, _) = run_json(
        &dir,
        &[
            "-n",
            "user-42",
            "remember",
            "The user's sister programs in Go",
            "--metadata",
            r#"{"about":"sister"}"#,
        ],
    );
    assert_eq!(code, 0);
    let (code, sister) = run_json(
        &dir,
        &[
            "-n",
            "user-42",
            "recall",
            "programming language",
            "--metadata",
            r#"{"about":"sister"}"#,
        ],
    );
    assert_eq!(code, 0, "{sister}");
    let results = sister["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{sister}");
    assert!(
        results[0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Go")),
        "{sister}"
    );

    // Another tenant sees nothing of user-42.
    let (_, other) = run_json(&dir, &["-n", "user-4", "recall", "programming language"]);
    assert_eq!(other["results"], serde_json::json!([]), "{other}");

    let (code, context) = run_json(
        &dir,
        &["-n", "user-42", "context", "what does the user like?"],
    );
    assert_eq!(code, 0);
    assert!(
        context["context"]
            .as_str()
            .is_some_and(|c| c.contains("Rust")),
        "{context}"
    );

    // A budget outside 1 to 100000 tokens is refused, as by the HTTP API and MCP.
    for budget in ["0", "100001"] {
        let (code, refused) = run_json(
            &dir,
            &[
                "-n",
                "user-42",
                "context",
                "anything",
                "--max-tokens",
                budget,
            ],
        );
        assert_eq!(code, 3, "{refused}");
        assert_eq!(refused["error"]["field"], "max_tokens", "{refused}");
    }

    let (code, stats) = run_json(&dir, &["-n", "user-42", "stats"]);
    assert_eq!(code, 0);
    assert_eq!(stats["total"], 3, "{stats}");
    // As `GET /v1/stats` shows them: what is not known (no capacity set) left out.
    assert!(stats.get("capacity_use").is_none(), "{stats}");

    let (code, forgotten) = run_json(&dir, &["-n", "user-42", "forget", &id]);
    assert_eq!(code, 0, "{forgotten}");
    let (code, again) = run_json(&dir, &["-n", "user-42", "forget", &id]);
    assert_eq!(code, 4, "forgetting twice is not found: {again}");
    assert_eq!(again["error"]["kind"], "not_found");

    let (_, stats) = run_json(&dir, &["-n", "user-42", "stats"]);
    assert_eq!(stats["total"], 2, "{stats}");

    let (code, all) = run_json(&dir, &["-n", "user-42", "forget", "--all"]);
    assert_eq!(code, 0);
    assert_eq!(all["forgotten"], 2);

    let (code, maintained) = run_json(&dir, &["-n", "user-42", "maintain"]);
    assert_eq!(code, 0);
    assert_eq!(maintained["evicted"], 0);
}

/// `get` shows one memory by id; `list` the memories matching filters, oldest first unless
/// asked otherwise, at most the limit.
#[test]
fn get_and_list_show_what_is_stored() {
    let dir = TempDir::new("browse");
    let mut ids = Vec::new();
    for (text, tag, metadata, at) in [
        (
            "Ann booked the flight",
            "travel",
            r#"{"user":"ann"}"#,
            "2024-01-01",
        ),
        (
            "Bob booked a hotel",
            "travel",
            r#"{"user":"bob"}"#,
            "2024-02-01",
        ),
        (
            "Ann likes green tea",
            "food",
            r#"{"user":"ann"}"#,
            "2024-03-01",
        ),
    ] {
        let (code, done) = run_json(
            &dir,
            &[
                "-n",
                "team",
                "remember",
                text,
                "--tag",
                tag,
                "--metadata",
                metadata,
                "--created-at",
                at,
            ],
        );
        assert_eq!(code, 0, "{done}");
        ids.push(done["id"].as_str().expect("an id").to_owned());
    }
    let (code, got) = run_json(&dir, &["-n", "team", "get", &ids[1]]);
    assert_eq!(code, 0, "{got}");
    assert_eq!(got["content"], "Bob booked a hotel", "{got}");
    assert_eq!(got["metadata"]["user"], "bob", "{got}");
    let (code, missing) = run_json(&dir, &["-n", "other", "get", &ids[1]]);
    assert_eq!(code, 4, "another namespace does not hold it: {missing}");
    assert_eq!(missing["error"]["kind"], "not_found");

    let listed = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["-n", "team", "list"];
        all.extend_from_slice(args);
        let (code, found) = run_json(&dir, &all);
        assert_eq!(code, 0, "{args:?}: {found}");
        found["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|item| item["content"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(
        listed(&[]),
        [
            "Ann booked the flight",
            "Bob booked a hotel",
            "Ann likes green tea"
        ]
    );
    assert_eq!(
        listed(&["--tag", "travel", "--newest-first"]),
        ["Bob booked a hotel", "Ann booked the flight"]
    );
    assert_eq!(
        listed(&["--metadata", r#"{"user":"ann"}"#, "--limit", "1"]),
        ["Ann booked the flight"]
    );
    assert_eq!(
        listed(&["--since", "2024-02-01", "--until", "2024-03-01"]),
        ["Bob booked a hotel"]
    );
    let (code, refused) = run_json(&dir, &["-n", "team", "list", "--limit", "0"]);
    assert_eq!(code, 3, "{refused}");
    assert_eq!(refused["error"]["field"], "limit", "{refused}");
    let text = run(&dir, &["-n", "team", "list", "--tag", "food"]);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("Ann likes green tea"),
        "{text:?}"
    );

    // A page at a time: the cursor of each page lists the next, both ways.
    for (order, expected) in [(None, [0, 1, 2]), (Some("--newest-first"), [2, 1, 0])] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut args = vec!["-n", "team", "list", "--limit", "1"];
            args.extend(order);
            if let Some(at) = cursor.as_deref() {
                args.extend(["--cursor", at]);
            }
            let (code, page) = run_json(&dir, &args);
            assert_eq!(code, 0, "{page}");
            seen.extend(
                page["items"]
                    .as_array()
                    .expect("items")
                    .iter()
                    .map(|item| item["id"].as_str().unwrap_or_default().to_owned()),
            );
            cursor = page["next_cursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                break;
            }
            assert!(seen.len() < 10, "the pages end");
        }
        let expected: Vec<String> = expected.iter().map(|at| ids[*at].clone()).collect();
        assert_eq!(seen, expected, "{order:?}");
    }
    let text = run(&dir, &["-n", "team", "list", "--limit", "2"]);
    let shown = String::from_utf8_lossy(&text.stdout);
    let cursor = shown
        .lines()
        .last()
        .and_then(|line| line.strip_prefix("more: --cursor "))
        .unwrap_or_else(|| panic!("the text names the next page: {shown}"));
    let (code, rest) = run_json(&dir, &["-n", "team", "list", "--cursor", cursor]);
    assert_eq!(code, 0, "{rest}");
    assert_eq!(rest["items"][0]["id"], ids[2].as_str(), "{rest}");
    let (code, refused) = run_json(&dir, &["-n", "team", "list", "--cursor", "42"]);
    assert_eq!(code, 3, "{refused}");
    assert_eq!(refused["error"]["field"], "cursor", "{refused}");
}

/// `page`: pages written, shown with what cites them, listed by title, and removed; a blank
/// title refused by name, a missing page not found.
#[test]
fn knowledge_pages_from_the_command_line() {
    let dir = TempDir::new("pages");
    let ok = |args: &[&str]| ok_in(&dir, "kb", args);
    let runbook = ok(&[
        "page",
        "put",
        "runbook",
        "Deploy runbook",
        "--summary",
        "How we deploy",
        "--tag",
        "ops",
    ]);
    assert_eq!(runbook["tags"], serde_json::json!(["ops"]), "{runbook}");
    ok(&[
        "page",
        "put",
        "release",
        "Release checklist",
        "--content",
        "Follow the runbook.",
        "--cites",
        "runbook",
    ]);
    let shown = ok(&["page", "show", "runbook"]);
    assert_eq!(
        shown["referrers"],
        serde_json::json!(["release"]),
        "{shown}"
    );
    // An edit made from the copy read is written; a second from the same copy is refused
    // (exit code 5, "retrying may succeed"), and the first stays.
    let read_at = shown["updated_at"].as_str().expect("updated_at").to_owned();
    let edit = |summary: &str| {
        run_json(
            &dir,
            &[
                "-n",
                "kb",
                "page",
                "put",
                "runbook",
                "Deploy runbook",
                "--summary",
                summary,
                "--tag",
                "ops",
                "--if-updated-at",
                &read_at,
            ],
        )
    };
    let (code, edited) = edit("How we deploy now");
    assert_eq!(code, 0, "{edited}");
    let (code, refused) = edit("How we deployed once");
    assert_eq!(code, 5, "{refused}");
    assert_eq!(refused["error"]["kind"], "conflict", "{refused}");
    assert_eq!(
        ok(&["page", "show", "runbook"])["summary"],
        "How we deploy now"
    );
    let text = run(&dir, &["-n", "kb", "page", "show", "release"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Release checklist (release)")
            && text.contains("cites: runbook")
            && text.contains("Follow the runbook."),
        "{text}"
    );
    let listed = ok(&["page", "list"]);
    let ids: Vec<&str> = listed["pages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|page| page["id"].as_str())
        .collect();
    assert_eq!(ids, ["runbook", "release"], "by title: {listed}");
    let (code, refused) = run_json(&dir, &["-n", "kb", "page", "put", "blank", " "]);
    assert_eq!(code, 3, "{refused}");
    assert_eq!(refused["error"]["field"], "title", "{refused}");
    ok(&["page", "remove", "release"]);
    assert_eq!(
        ok(&["page", "show", "runbook"])["referrers"],
        serde_json::json!([])
    );
    let (code, gone) = run_json(&dir, &["-n", "kb", "page", "show", "release"]);
    assert_eq!(code, 4, "{gone}");
    let (code, gone) = run_json(&dir, &["-n", "kb", "page", "remove", "release"]);
    assert_eq!(code, 4, "{gone}");
}

/// `graph`: entities added, shown, related and removed; relations with attributes; bad
/// input refused by name.
#[test]
fn the_graph_from_the_command_line() {
    let dir = TempDir::new("graph");
    let ok = |args: &[&str]| ok_in(&dir, "kb", args);
    let ana = ok(&[
        "graph",
        "add",
        "ana",
        "Ana Lima",
        "person",
        "--tag",
        "team",
        "--attributes",
        r#"{"born":1990}"#,
    ]);
    assert_eq!(ana["attributes"]["born"], 1990, "{ana}");
    ok(&[
        "graph",
        "add",
        "acme",
        "Acme",
        "company",
        "--description",
        "Makes anvils",
    ]);
    let employs = ok(&[
        "graph",
        "relate",
        "acme",
        "employs",
        "ana",
        "--weight",
        "0.8",
        "--attributes",
        r#"{"since":2019}"#,
    ]);
    assert_eq!(employs["attributes"]["since"], 2019, "{employs}");
    let shown = ok(&["graph", "show", "ana"]);
    assert_eq!(shown["entity"]["name"], "Ana Lima", "{shown}");
    assert_eq!(shown["relations"][0]["relation_type"], "employs", "{shown}");
    let related = ok(&["graph", "related", "acme", "--depth", "1"]);
    assert_eq!(related["items"][0]["entity"]["id"], "ana", "{related}");
    let text = run(&dir, &["-n", "kb", "graph", "related", "acme"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("[company] Acme: Makes anvils")
            && text.contains("  -- employs (since: 2019) --> Ana Lima"),
        "{text}"
    );
    for (args, field) in [
        (
            &["graph", "add", "x", "X", "thing", "--attributes", "[1]"][..],
            "attributes",
        ),
        (
            &["graph", "relate", "acme", "employs", "ana", "--weight", "2"],
            "weight",
        ),
        (&["graph", "related", "acme", "--depth", "9"], "depth"),
    ] {
        let mut all = vec!["-n", "kb"];
        all.extend_from_slice(args);
        let (code, refused) = run_json(&dir, &all);
        assert_eq!(code, 3, "{args:?}: {refused}");
        assert_eq!(refused["error"]["field"], field, "{refused}");
    }
    ok(&["graph", "unrelate", "acme", "employs", "ana"]);
    assert_eq!(
        ok(&["graph", "show", "ana"])["relations"],
        serde_json::json!([])
    );
    ok(&["graph", "remove", "ana"]);
    let (code, gone) = run_json(&dir, &["-n", "kb", "graph", "show", "ana"]);
    assert_eq!(code, 4, "{gone}");
    // A hub shows a page of its relations, and says it has more.
    let mut file = String::from(
        "{\"type\":\"entity\",\"name\":\"hub\",\"entityType\":\"thing\",\"observations\":[]}\n",
    );
    for n in 0..101 {
        file.push_str(&format!(
            "{{\"type\":\"relation\",\"from\":\"hub\",\"to\":\"leaf{n:03}\",\"relationType\":\"links\"}}\n"
        ));
    }
    let path = dir.path().join("hub.jsonl");
    std::fs::write(&path, file).expect("write hub.jsonl");
    ok(&["import", path.to_str().expect("utf-8")]);
    let hub = ok(&["graph", "show", "hub"]);
    assert_eq!(
        hub["relations"].as_array().map(Vec::len),
        Some(100),
        "{hub}"
    );
    assert_eq!(hub["relations_truncated"], true, "{hub}");
    let text = run(&dir, &["-n", "kb", "graph", "show", "hub"]);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("there are more"),
        "{text:?}"
    );
    let leaf = ok(&["graph", "show", "leaf000"]);
    assert_eq!(leaf["relations_truncated"], false, "{leaf}");
    let (code, gone) = run_json(
        &dir,
        &["-n", "kb", "graph", "unrelate", "acme", "employs", "ana"],
    );
    assert_eq!(code, 4, "{gone}");
}

#[test]
fn text_output_is_for_people() {
    let dir = TempDir::new("text");
    let output = run(&dir, &["remember", "Paris is the capital of France"]);
    assert!(output.status.success());
    let id = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(!id.is_empty());
    let output = run(&dir, &["recall", "capital of France"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains(&id) && text.contains("Paris"), "{text}");
}

#[test]
fn bad_input_has_meaningful_exit_codes() {
    let dir = TempDir::new("bad");
    // Usage: an unknown command.
    let output = run(&dir, &["remmber", "x"]);
    assert_eq!(output.status.code(), Some(2));
    let (code, usage) = run_json(&dir, &["remmber", "x"]);
    assert_eq!(code, 2);
    assert_eq!(usage["error"]["kind"], "usage", "{usage}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("remember"),
        "suggests the command"
    );
    // Invalid input: importance out of range, empty text, bad metadata, bad namespace.
    for args in [
        &["remember", "x", "--importance", "2"][..],
        &["remember", "   "],
        &["remember", "x", "--metadata", "{not json"],
        &["-n", "a//b", "stats"],
        &["recall", "x", "--limit", "0"],
        &["recall", "x", "--metadata", "[1]"],
        &["recall", "x", "--metadata", "{not json"],
    ] {
        let (code, value) = run_json(&dir, args);
        assert_eq!(code, 3, "{args:?}: {value}");
        assert_eq!(value["error"]["kind"], "invalid_input", "{args:?}");
        assert!(
            value["error"]["hint"]
                .as_str()
                .is_some_and(|h| !h.is_empty())
        );
    }
    let (_, value) = run_json(&dir, &["remember", "x", "--importance", "2"]);
    assert_eq!(value["error"]["field"], "importance", "{value}");
    let (_, value) = run_json(&dir, &["recall", "x", "--metadata", "[1]"]);
    assert_eq!(value["error"]["field"], "metadata", "{value}");
    // The memory's `content` is the TEXT argument: an empty one is named `text`.
    let (code, value) = run_json(&dir, &["remember", " "]);
    assert_eq!(code, 3, "{value}");
    assert_eq!(value["error"]["field"], "text", "{value}");
    assert_eq!(
        value["error"]["message"], "invalid input: text: empty",
        "{value}"
    );
    // An empty store is named, not opened as a file without a name.
    let output = command(&dir)
        .args(["--store", "", "--json", "stats"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let refused: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(refused["error"]["field"], "store", "{refused}");
    // Storage: a store in a directory that does not exist.
    let output = command(&dir)
        .args(["--store", "/nonexistent/dir/x.db", "stats"])
        .output()
        .expect("run");
    assert_eq!(
        output.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("hint:"));
}

/// Output that cannot be written (a full disk: `/dev/full`) is a failure with its exit
/// code and message, not a panic (exit 101) from `println!`, and not filed as a bug.
#[test]
fn output_that_cannot_be_written_is_a_failure_not_a_panic() {
    let dir = TempDir::new("full");
    ok_in(&dir, "h", &["remember", "a memory to list"]);
    let full = || {
        std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    let output = command(&dir)
        .args(["-n", "h", "list"])
        .stdout(full())
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("writing the result"), "{stderr}");
    assert!(!stderr.contains("bug"), "{stderr}");
    // The failure itself cannot be written either: the exit code still tells it.
    for args in [
        &["-n", "h", "--json", "list"][..],
        &["-n", "h", "--json", "recall", "x", "--limit", "0"],
    ] {
        let output = command(&dir)
            .args(args)
            .stdout(full())
            .output()
            .expect("run");
        assert!(
            matches!(output.status.code(), Some(3 | 5)),
            "{args:?}: {:?} {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // What a remember notes for people goes to stderr: a full one costs no panic.
    let output = command(&dir)
        .args(["-n", "h", "remember", "a memory to list"])
        .stderr(full())
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[test]
fn configuration_file_environment_and_flags_in_that_order() {
    let dir = TempDir::new("config");
    let file = dir.path().join("am.toml");
    std::fs::write(&file, "namespace = \"from-file\"\n").expect("write config");
    let store = dir.path().join("store.db");
    let remember = |extra: &[&str], env: Option<&str>| {
        let mut cmd = command(&dir);
        cmd.arg("--config")
            .arg(&file)
            .arg("--store")
            .arg(&store)
            .arg("--json");
        if let Some(ns) = env {
            cmd.env("AGENT_MEMORY_NAMESPACE", ns);
        }
        let output = cmd
            .args(extra)
            .args(["remember", "x"])
            .output()
            .expect("run");
        let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        value["namespace"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(remember(&[], None), "from-file");
    assert_eq!(remember(&[], Some("from-env")), "from-env");
    assert_eq!(
        remember(&["-n", "from-flag"], Some("from-env")),
        "from-flag"
    );
    std::fs::write(&file, "nmespace = \"typo\"\n").expect("write config");
    let output = command(&dir)
        .arg("--config")
        .arg(&file)
        .arg("stats")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nmespace"));
}

#[test]
fn export_then_import_elsewhere_and_the_mcp_memory_format() {
    let dir = TempDir::new("transfer");
    run_json(
        &dir,
        &["-n", "team", "remember", "Deploys happen on Tuesdays"],
    );
    let dump = dir.path().join("dump.jsonl");
    let (code, exported) = run_json(
        &dir,
        &["-n", "team", "export", "-o", dump.to_str().expect("utf-8")],
    );
    assert_eq!(code, 0, "{exported}");
    assert_eq!(exported["exported"]["memories"], 1);

    let other = TempDir::new("transfer-target");
    let (code, imported) = run_json(&other, &["import", dump.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{imported}");
    assert_eq!(imported["imported"]["memories"], 1);
    let (_, found) = run_json(&other, &["-n", "team", "recall", "deploys"]);
    assert_eq!(
        found["results"].as_array().map(Vec::len),
        Some(1),
        "{found}"
    );

    let mcp = dir.path().join("memory.jsonl");
    std::fs::write(&mcp, ADA_MEMORY_FILE).expect("write memory.jsonl");
    let (code, imported) = run_json(
        &other,
        &["-n", "kb", "import", mcp.to_str().expect("utf-8")],
    );
    assert_eq!(code, 0, "{imported}");
    assert_eq!(imported["format"], "mcp-memory");
    assert_eq!(imported["imported"]["observations"], 2);
    let (_, found) = run_json(&other, &["-n", "kb", "recall", "mathematics"]);
    assert_eq!(found["results"][0]["text"], "Likes mathematics", "{found}");
    let (_, stats) = run_json(&other, &["-n", "kb", "stats"]);
    assert_eq!(stats["entities"], 2, "{stats}");
    // Imported again, the file (which has no attributes) leaves those given since alone.
    for args in [
        &[
            "graph",
            "add",
            "Ada",
            "Ada Lovelace",
            "person",
            "--description",
            "The first programmer",
            "--tag",
            "pioneer",
            "--attributes",
            r#"{"born":1815}"#,
        ][..],
        &[
            "graph",
            "relate",
            "Ada",
            "programs",
            "Analytical Engine",
            "--attributes",
            r#"{"year":1843}"#,
        ],
    ] {
        let mut all = vec!["-n", "kb"];
        all.extend_from_slice(args);
        let (code, done) = run_json(&other, &all);
        assert_eq!(code, 0, "{done}");
    }
    let observations = || {
        let (code, listed) = run_json(&other, &["-n", "kb", "list"]);
        assert_eq!(code, 0, "{listed}");
        listed["items"].clone()
    };
    let before = observations();
    let (code, imported) = run_json(
        &other,
        &["-n", "kb", "import", mcp.to_str().expect("utf-8")],
    );
    assert_eq!(code, 0, "{imported}");
    // The observations stored already are left as they were (they had been written anew:
    // their creation times, edits and statistics reset).
    assert_eq!(observations(), before);
    let (_, ada) = run_json(&other, &["-n", "kb", "graph", "show", "Ada"]);
    assert_eq!(ada["entity"]["attributes"]["born"], 1815, "{ada}");
    // And the name, description and tags it does not have either.
    assert_eq!(ada["entity"]["name"], "Ada Lovelace", "{ada}");
    assert_eq!(
        ada["entity"]["description"], "The first programmer",
        "{ada}"
    );
    assert_eq!(
        ada["entity"]["tags"],
        serde_json::json!(["pioneer"]),
        "{ada}"
    );
    assert_eq!(ada["relations"][0]["attributes"]["year"], 1843, "{ada}");

    // A relation to an entity the file never declares (the reference server keeps such
    // relations) imports with that end created, typed `unknown`.
    std::fs::write(
        &mcp,
        concat!(
            r#"{"type":"entity","name":"Ada","entityType":"person","observations":[]}"#,
            "\n",
            r#"{"type":"relation","from":"Ada","to":"Nobody","relationType":"knows"}"#,
        ),
    )
    .expect("write");
    let (code, imported) = run_json(
        &other,
        &["-n", "kb2", "import", mcp.to_str().expect("utf-8")],
    );
    assert_eq!(code, 0, "{imported}");
    assert_eq!(imported["created_ends"], 1, "{imported}");
    let (_, nobody) = run_json(&other, &["-n", "kb2", "graph", "show", "Nobody"]);
    assert_eq!(nobody["entity"]["entity_type"], "unknown", "{nobody}");
    assert_eq!(nobody["relations"][0]["source_id"], "Ada", "{nobody}");
}

/// The configuration file's `[retriever]` table sets every recall; a key that is no
/// setting, a value out of range or of the wrong type is refused by name, as the file
/// writes it (`retriever.min_score`).
#[test]
fn the_config_file_sets_the_retriever() {
    let dir = TempDir::new("retriever-config");
    let (code, _) = run_json(&dir, &["remember", "Deploys happen on Tuesdays"]);
    assert_eq!(code, 0);
    let results = |found: &serde_json::Value| found["results"].as_array().map(Vec::len);
    let (_, found) = run_json(&dir, &["recall", "deploys"]);
    assert_eq!(results(&found), Some(1), "{found}");

    let config = dir.path().join("config").join("agent-memory");
    std::fs::create_dir_all(&config).expect("config dir");
    let write = |text: &str| std::fs::write(config.join("config.toml"), text).expect("write");
    // Knowledge pages only: the memory is not searched.
    write("[retriever]\nstrategy = \"knowledge_only\"\n");
    let (code, found) = run_json(&dir, &["recall", "deploys"]);
    assert_eq!(code, 0, "{found}");
    assert_eq!(results(&found), Some(0), "{found}");

    for (text, field) in [
        (
            "[retriever]\ndrop_time_word = true\n",
            "retriever.drop_time_word",
        ),
        (
            "[retriever]\nother_speaker_factor = 0.0\n",
            "retriever.other_speaker_factor",
        ),
        ("[retriever]\nmin_score = 2.0\n", "retriever.min_score"),
        ("[retriever]\nmax_results = 0\n", "retriever.max_results"),
        (
            "[retriever]\ndrop_time_words = \"yes\"\n",
            "retriever.drop_time_words",
        ),
    ] {
        write(text);
        let (code, found) = run_json(&dir, &["recall", "deploys"]);
        assert_eq!(code, 3, "{text}: {found}");
        assert_eq!(found["error"]["field"], field, "{text}: {found}");
    }
    write("[retriever]\ndrop_time_words = true\nmax_results = 5\n");
    let (code, found) = run_json(&dir, &["recall", "deploys"]);
    assert_eq!(code, 0, "{found}");
    assert_eq!(results(&found), Some(1), "{found}");

    // A file that is no TOML of known keys: the hint names every key and table.
    write("[retriever\n");
    let (code, refused) = run_json(&dir, &["recall", "deploys"]);
    assert_eq!(code, 3, "{refused}");
    let hint = refused["error"]["hint"].as_str().unwrap_or_default();
    for table in ["[retriever]", "[eviction]", "[decay]", "[embeddings]"] {
        assert!(hint.contains(table), "{table}: {refused}");
    }
}

/// A recall without `--limit` returns the `[retriever]` table's `max_results`, else 10;
/// `--limit` wins over both.
#[test]
fn a_recall_without_a_limit_returns_the_configured_number() {
    let dir = TempDir::new("recall-limit");
    remember_kiwis(&dir, "k", 14);
    let results = |args: &[&str]| {
        let mut all = vec!["-n", "k", "recall", "kiwi"];
        all.extend_from_slice(args);
        let (code, found) = run_json(&dir, &all);
        assert_eq!(code, 0, "{found}");
        found["results"].as_array().map_or(0, Vec::len)
    };
    assert_eq!(results(&[]), 10);
    assert_eq!(results(&["--limit", "12"]), 12);

    let config = dir.path().join("config").join("agent-memory");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("config.toml"), "[retriever]\nmax_results = 3\n").expect("write");
    assert_eq!(results(&[]), 3);
    assert_eq!(results(&["-k", "5"]), 5);
    // A table without the key leaves the default.
    std::fs::write(
        config.join("config.toml"),
        "[retriever]\ndrop_time_words = true\n",
    )
    .expect("write");
    assert_eq!(results(&[]), 10);
}

/// A recall on a store that takes no write (another process holds its write lock past the
/// busy timeout) answers, and notes that its statistics were not written: they only make
/// memories look more recalled, and failing the command threw the answer away.
#[test]
fn a_recall_answers_though_its_statistics_cannot_be_written() {
    let dir = TempDir::new("stats-locked");
    let db = dir.path().join("r.db");
    let store = db.to_string_lossy().into_owned();
    let output = command(&dir)
        .args(["--store", &store, "-n", "h", "remember", "The boat is blue"])
        .output()
        .expect("remember");
    assert!(output.status.success(), "{output:?}");
    let blocker = rusqlite::Connection::open(&db).expect("open");
    blocker.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let output = command(&dir)
        .args(["--store", &store, "-n", "h", "--json", "recall", "boat"])
        .output()
        .expect("recall");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let found: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(found["results"][0]["text"], "The boat is blue", "{found}");
    assert!(stderr.contains("statistics were not written"), "{stderr}");
    blocker.execute_batch("ROLLBACK").expect("unlock");
}

/// `export --output FILE` replaces FILE only once every record is written: an export that
/// fails (a store that cannot be read) leaves an existing backup whole, and the store's own
/// file is refused as the output (it was emptied, then every memory was gone).
#[test]
fn a_failed_export_leaves_the_backup_whole() {
    let dir = TempDir::new("export-backup");
    let db = dir.path().join("e.db");
    let store = db.to_string_lossy().into_owned();
    let backup = dir.path().join("backup.jsonl");
    let header = serde_json::json!({"format": "agent-memory-jsonl", "version": 2,
        "scope": {"namespace": "", "descendants": true}, "exported_at": "2026-12-07T14:16:32Z",
        "counts": {"memories": 3000, "recall_stats": 0, "pages": 0, "entities": 0, "relations": 0}});
    let lines: String = std::iter::once(format!("{header}\n"))
        .chain((0..3000).map(|i| {
            let record = serde_json::json!({"type": "memory", "id": format!("m{i}"),
                "namespace": "h", "content": format!("memory {i} {}", "words ".repeat(80)),
                "kind": "episodic", "importance": 0.5, "metadata": {}, "tags": [],
                "source": null, "credibility": 1.0, "created_at": "2026-12-07T14:16:32Z",
                "updated_at": "2026-12-07T14:16:32Z", "last_accessed": null, "access_count": 0});
            format!("{record}\n")
        }))
        .collect();
    let records = dir.path().join("records.jsonl");
    std::fs::write(&records, lines).expect("write records");
    let output = command(&dir)
        .args(["--store", &store, "import", &records.to_string_lossy()])
        .output()
        .expect("import");
    assert!(output.status.success(), "{output:?}");
    let output = command(&dir)
        .args(["--store", &store, "export", "--all-namespaces", "--output"])
        .arg(&backup)
        .output()
        .expect("export");
    assert!(output.status.success(), "{output:?}");
    let whole = std::fs::read(&backup).expect("backup");
    assert!(whole.len() > 100_000, "{} bytes", whole.len());

    // What the output is stays what it is: a link's target is written and the link kept, a
    // private file stays private, a device is written in place.
    {
        use std::os::unix::fs::PermissionsExt;
        let target = dir.path().join("target.jsonl");
        std::fs::write(&target, "old").expect("target");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("0600");
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        let nothing = dir.path().join("nothing.jsonl");
        std::os::unix::fs::symlink("/dev/null", &nothing).expect("link to /dev/null");
        for output in [&link, &nothing] {
            let done = command(&dir)
                .args(["--store", &store, "export", "--all-namespaces", "--output"])
                .arg(output)
                .output()
                .expect("export");
            assert!(done.status.success(), "{done:?}");
            let meta = std::fs::symlink_metadata(output).expect("output");
            assert!(
                meta.file_type().is_symlink(),
                "{} is still a link",
                output.display()
            );
        }
        // The same records (the header's export time aside).
        let records = |bytes: &[u8]| bytes.splitn(2, |b| *b == b'\n').nth(1).map(<[u8]>::to_vec);
        let written = std::fs::read(&target).expect("target");
        assert!(
            records(&written) == records(&whole),
            "the link's target holds the records"
        );
        let mode = std::fs::metadata(&target)
            .expect("target")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "still private");
    }

    // The store's own file as the output: refused, the store untouched.
    let output = command(&dir)
        .args([
            "--store",
            &store,
            "--json",
            "export",
            "--all-namespaces",
            "--output",
            &store,
        ])
        .output()
        .expect("export");
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let refused: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(refused["error"]["field"], "output", "{refused}");
    let output = command(&dir)
        .args(["--store", &store, "-n", "h", "--json", "stats"])
        .output()
        .expect("stats");
    let stats: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(stats["total"], 3000, "{stats}");

    // A store whose pages cannot be read: the export fails, the backup stays as it was.
    let mut bytes = std::fs::read(&db).expect("store");
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle..middle + 20_000] {
        *byte = 0x5a;
    }
    std::fs::write(&db, bytes).expect("corrupt the store");
    let output = command(&dir)
        .args(["--store", &store, "export", "--all-namespaces", "--output"])
        .arg(&backup)
        .output()
        .expect("export");
    assert!(!output.status.success(), "{output:?}");
    assert!(
        std::fs::read(&backup).expect("backup") == whole,
        "the backup is whole"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(left.is_empty(), "no partial file left: {left:?}");
}

/// SQLite's files beside the store (`-wal`, `-shm`, `-journal`), named or through a link, are
/// refused as an export's output as the store's own file is: replacing the write-ahead log
/// under the open store broke it ("disk I/O error").
#[test]
fn an_export_over_a_file_beside_the_store_is_refused() {
    let dir = TempDir::new("export-companions");
    let db = dir.path().join("e.db");
    let store = db.to_string_lossy().into_owned();
    let run_on = |args: &[&str]| {
        let output = command(&dir)
            .args(["--store", &store, "-n", "w", "--json"])
            .args(args)
            .output()
            .expect("run");
        let value: serde_json::Value =
            serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null);
        (output.status.code(), value)
    };
    let (code, _) = run_on(&["remember", "The lighthouse is painted red"]);
    assert_eq!(code, Some(0));
    let link = dir.path().join("wal-link.jsonl");
    std::os::unix::fs::symlink(format!("{store}-wal"), &link).expect("link");
    let relative_link = dir.path().join("journal-link.jsonl");
    std::os::unix::fs::symlink("e.db-journal", &relative_link).expect("link");
    let outputs = [
        format!("{store}-wal"),
        format!("{store}-shm"),
        format!("{store}-journal"),
        // Relative to the working directory, which is the store's.
        "e.db-wal".to_owned(),
        link.to_string_lossy().into_owned(),
        relative_link.to_string_lossy().into_owned(),
    ];
    for output in &outputs {
        let (code, refused) = run_on(&["export", "--output", output]);
        assert_eq!(code, Some(3), "{output}: {refused}");
        assert_eq!(refused["error"]["field"], "output", "{output}: {refused}");
        let (code, found) = run_on(&["recall", "lighthouse"]);
        assert_eq!(code, Some(0), "after {output}: {found}");
        assert_eq!(
            found["results"][0]["text"], "The lighthouse is painted red",
            "after {output}: {found}"
        );
    }
    // A file merely named like one, beside another store, is written.
    let other = dir.path().join("other.db-wal");
    let (code, done) = run_on(&["export", "--output", &other.to_string_lossy()]);
    assert_eq!(code, Some(0), "{done}");
    assert_eq!(done["exported"]["memories"], 1, "{done}");
}

/// A native import is kept within `--max-memories` as remembered memories are: each
/// namespace it wrote is evicted down to the capacity once it is written (another namespace
/// within it keeps all of its memories), and without a capacity every memory stays.
#[test]
fn a_native_import_is_kept_within_the_capacity() {
    let dir = TempDir::new("import-capacity");
    let header = serde_json::json!({"format": "agent-memory-jsonl", "version": 2,
        "scope": {"namespace": "", "descendants": true}, "exported_at": "2026-12-07T14:16:32Z",
        "counts": {"memories": 104, "recall_stats": 0, "pages": 0, "entities": 0, "relations": 0}});
    let memory = |namespace: &str, i: usize| {
        let record = serde_json::json!({"type": "memory", "id": format!("{namespace}{i}"),
            "namespace": namespace, "content": format!("note {i} of {namespace}"),
            "kind": "episodic", "importance": 0.5, "metadata": {}, "tags": [],
            "source": null, "credibility": 1.0, "created_at": "2026-12-07T14:16:32Z",
            "updated_at": "2026-12-07T14:16:32Z", "last_accessed": null, "access_count": 0});
        format!("{record}\n")
    };
    let lines: String = std::iter::once(format!("{header}\n"))
        .chain((0..101).map(|i| memory("h", i)))
        .chain((0..3).map(|i| memory("g", i)))
        .collect();
    let records = dir.path().join("records.jsonl");
    // The last line without its line end.
    std::fs::write(&records, lines.trim_end()).expect("write records");
    let records = records.to_string_lossy().into_owned();
    let total = |namespace: &str| {
        let (code, stats) = run_json(&dir, &["-n", namespace, "stats"]);
        assert_eq!(code, 0, "{stats}");
        stats["total"].as_u64().expect("a total")
    };

    let (code, imported) = run_json(&dir, &["--max-memories", "10", "import", &records]);
    assert_eq!(code, 0, "{imported}");
    assert_eq!(imported["imported"]["memories"], 104, "{imported}");
    assert_eq!(total("h"), 10);
    assert_eq!(total("g"), 3);

    let unbounded = TempDir::new("import-unbounded");
    let (code, imported) = run_json(&unbounded, &["import", &records]);
    assert_eq!(code, 0, "{imported}");
    let (_, stats) = run_json(&unbounded, &["-n", "h", "stats"]);
    assert_eq!(stats["total"], 101, "{stats}");
}

/// `export | head`: a reader that stops early is not an error, as for `recall x | head -1`.
#[test]
fn an_export_read_in_part_is_not_an_error() {
    use std::io::Read;
    let dir = TempDir::new("export-head");
    // Enough turns that the records outgrow a pipe's buffer.
    let lines: Vec<String> = (0..400)
        .map(|turn| {
            serde_json::json!({"conv_id": "c", "dia_id": format!("D1:{turn}"), "session": 1,
                "date": "8 May, 2023", "timestamp": "2023-05-08T13:56:00",
                "speaker": "Ana", "text": format!("turn {turn} {}", "words ".repeat(60))})
            .to_string()
        })
        .collect();
    std::fs::write(dir.path().join("turns.jsonl"), lines.join("\n")).expect("write");
    let (code, imported) = run_json(&dir, &["-n", "bench", "import", "turns.jsonl"]);
    assert_eq!(code, 0, "{imported}");
    let mut child = command(&dir)
        .arg("--store")
        .arg(dir.path().join("store.db"))
        .args(["export", "--all-namespaces"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start export");
    let mut head = [0u8; 100];
    child
        .stdout
        .take()
        .expect("stdout")
        .read_exact(&mut head)
        .expect("the first records");
    // stdout dropped: the pipe's reader is gone.
    let output = child.wait_with_output().expect("export ends");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// With `--json`, help and the version are one JSON document on stdout too.
#[test]
fn help_and_version_with_json_are_json() {
    let dir = TempDir::new("json-help");
    for (args, key) in [
        (&["--json", "--help"][..], "help"),
        (&["--json", "recall", "--help"], "help"),
        (&["--json", "--version"], "version"),
    ] {
        let output = command(&dir).args(args).output().expect("run");
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        let value: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("one JSON document");
        assert!(
            value[key].as_str().is_some_and(|text| !text.is_empty()),
            "{args:?}: {value}"
        );
    }
}

/// A PostgreSQL store that cannot be opened says why, and points at the connection only
/// when the connection is what failed: a database the server does not have, against a
/// schema holding another tool's `memories` table, which the server answered fine.
#[test]
fn a_postgres_store_that_cannot_be_opened_gets_the_hint_of_its_cause() {
    let Ok(url) = std::env::var("AGENT_MEMORY_TEST_POSTGRES_URL") else {
        return;
    };
    if url.is_empty() {
        return;
    }
    let dir = TempDir::new("pg_hints");
    let schema = format!("cli_hints_{}", std::process::id());
    let _drop = crate::support::DropSchema(vec![
        "--store".to_owned(),
        url.clone(),
        "--postgres-schema".to_owned(),
        schema.clone(),
    ]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("the test server");
        tokio::spawn(connection);
        client
            .batch_execute(&format!(
                "CREATE SCHEMA \"{schema}\"; CREATE TABLE \"{schema}\".memories (x int)"
            ))
            .await
            .expect("another tool's table");
    });
    let connection_hint = "running, reachable";
    let open = |args: &[&str]| {
        let output = command(&dir)
            .arg("--json")
            .args(args)
            .arg("stats")
            .output()
            .expect("run agent-memory");
        let value: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("one JSON document");
        (output.status.code(), value)
    };
    let (code, foreign) = open(&["--store", &url, "--postgres-schema", &schema]);
    assert_ne!(code, Some(0), "{foreign}");
    let hint = foreign["error"]["hint"].as_str().unwrap_or_default();
    assert!(!hint.contains(connection_hint), "{foreign}");

    let Some((server, _)) = url.rsplit_once('/') else {
        panic!("a URL with a database: {url}");
    };
    let missing = format!("{server}/no_such_database_{}", std::process::id());
    let (code, refused) = open(&["--store", &missing]);
    assert_ne!(code, Some(0), "{refused}");
    let hint = refused["error"]["hint"].as_str().unwrap_or_default();
    assert!(hint.contains(connection_hint), "{refused}");
}

/// The configuration file's `[eviction]` and `[decay]` tables set what `maintain` (and
/// every write) forgets and how importance fades: without them `maintain` had nothing to
/// expire or decay. A key no setting has, or the table beside `--max-memories`, is refused
/// by name.
#[test]
fn the_config_file_sets_eviction_and_decay() {
    let dir = TempDir::new("eviction-config");
    let (code, old) = run_json(
        &dir,
        &[
            "remember",
            "The office was in Leeds",
            "--created-at",
            "2020-01-01T00:00:00Z",
        ],
    );
    assert_eq!(code, 0, "{old}");
    let (code, new) = run_json(&dir, &["remember", "The office is in York"]);
    assert_eq!(code, 0, "{new}");
    let month_ago = (chrono::Utc::now() - chrono::Duration::days(30)).to_rfc3339();
    let (code, fading) = run_json(
        &dir,
        &[
            "remember",
            "The canteen closes at noon",
            "--created-at",
            &month_ago,
        ],
    );
    assert_eq!(code, 0, "{fading}");
    let (_, nothing) = run_json(&dir, &["maintain"]);
    assert_eq!(nothing["expired"], 0, "{nothing}");
    assert_eq!(nothing["decayed"], 0, "{nothing}");

    let config = dir.path().join("config").join("agent-memory");
    std::fs::create_dir_all(&config).expect("config dir");
    let write = |text: &str| std::fs::write(config.join("config.toml"), text).expect("write");
    for (text, field) in [
        ("[eviction]\npolicy = \"ttl\"\nttl_sec = 60\n", "eviction"),
        (
            "[eviction]\npolicy = \"ttl\"\nttl_secs = 60\nmax_items = 3\n",
            "eviction.max_items",
        ),
        ("[eviction]\nttl_secs = 60\n", "eviction.policy"),
        (
            "[eviction]\npolicy = \"ttl\"\nttl_secs = 0\n",
            "eviction.ttl_secs",
        ),
        (
            "[eviction]\npolicy = \"capacity\"\nmax_items = 0\n",
            "eviction.max_items",
        ),
        (
            "[eviction]\npolicy = \"hybrid\"\n[eviction.recall]\nmax_items = 0\n\
             recall_weight = 1.0\nscore_weight = 1.0\nrecency_weight = 1.0\n",
            "eviction.recall.max_items",
        ),
        ("[decay]\ndaily_rat = 0.5\n", "decay.daily_rat"),
        ("[decay]\ndaily_rate = 2.0\n", "decay.daily_rate"),
        ("[decay]\nmin_threshold = -1.0\n", "decay.min_threshold"),
        // A value of the wrong type is named by its key too.
        ("[decay]\ndaily_rate = \"x\"\n", "decay.daily_rate"),
        (
            "[eviction]\npolicy = \"capacity\"\nmax_items = \"x\"\n",
            "eviction.max_items",
        ),
        ("[eviction]\npolicy = \"forever\"\n", "eviction.policy"),
        (
            "[eviction]\npolicy = \"capacityy\"\nmax_items = 100\n",
            "eviction.policy",
        ),
        (
            "[eviction]\npolicy = \"ttl\"\nttl_secs = 60\n[retriever]\nmin_score = \"high\"\n",
            "retriever.min_score",
        ),
    ] {
        write(text);
        let (code, refused) = run_json(&dir, &["maintain"]);
        assert_eq!(code, 3, "{text}: {refused}");
        assert_eq!(refused["error"]["field"], field, "{text}: {refused}");
    }
    write("[eviction]\npolicy = \"value_based\"\nmax_items = 5\n");
    let (code, both) = run_json(&dir, &["--max-memories", "3", "maintain"]);
    assert_eq!(code, 3, "{both}");
    assert_eq!(both["error"]["field"], "max_memories", "{both}");

    // A year to live, and a fast decay with no grace.
    write(
        "[eviction]\npolicy = \"ttl\"\nttl_secs = 31536000\n\n\
         [decay]\ndaily_rate = 0.5\ngrace_period_days = 0\nmin_threshold = 0.0\n",
    );
    let (code, report) = run_json(&dir, &["maintain"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["expired"], 1, "{report}");
    assert!(report["decayed"].as_u64() >= Some(1), "{report}");
    let (_, listed) = run_json(&dir, &["list"]);
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|item| item["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        [
            fading["id"].as_str().expect("id"),
            new["id"].as_str().expect("id")
        ],
        "{listed}"
    );
    let faded = listed["items"][0]["importance"]
        .as_f64()
        .expect("importance");
    assert!(faded < 0.01, "{listed}");
    // The decay state is the library's: not shown in the metadata, so metadata read and
    // sent back never carries it.
    assert_eq!(
        listed["items"][0]["metadata"],
        serde_json::json!({}),
        "{listed}"
    );
    let text = run(&dir, &["maintain"]);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("conflicting pairs"),
        "{text:?}"
    );
}
