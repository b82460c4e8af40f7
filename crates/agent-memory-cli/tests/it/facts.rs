//! Facts that change, through the three faces: what `remember` reports (added, merged,
//! superseded, conflicts), history, retraction, supersession, consolidation, recall as of a
//! time or with ended memories, updates, and batches reconciled memory by memory. The HTTP
//! scenario runs on SQLite and, when AGENT_MEMORY_TEST_POSTGRES_URL is set, on PostgreSQL.

use serde_json::{Value, json};

use crate::support::{DropSchema, Server, TempDir, backends, run_json};

fn ids(results: &Value) -> Vec<String> {
    results
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|hit| hit["id"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn facts_over_http() {
    let dir = TempDir::new("facts-http");
    for (backend, store) in backends(&dir, "facts") {
        let server = Server::start(&dir, &store, &[]);
        let _schema = DropSchema(store.clone());
        facts_scenario(&server, &backend);
        assert_eq!(server.stop(), Some(0), "{backend}: a clean stop");
    }
}

fn facts_scenario(server: &Server, backend: &str) {
    let key = server.key_for("facts");
    let key = Some(key.as_str());
    let remember = |body: Value| server.call("POST", "/v1/memories", key, Some(body));

    // A fact key: the second statement supersedes the first.
    let (status, paris) = remember(json!({"text": "The user lives in Paris",
        "fact_key": "user.city", "created_at": "2024-01-10T00:00:00Z"}));
    assert_eq!(status, 201, "{backend}: {paris}");
    assert_eq!(paris["outcome"], "added", "{paris}");
    assert_eq!(paris["conflicts"], json!([]), "{paris}");
    let paris_id = paris["id"].as_str().expect("id").to_owned();
    let (status, berlin) = remember(json!({"text": "The user moved to Berlin",
        "fact_key": "user.city", "created_at": "2024-06-01T00:00:00Z"}));
    assert_eq!(status, 201, "{berlin}");
    assert_eq!(berlin["outcome"], "superseded", "{berlin}");
    assert_eq!(berlin["old"], json!([paris_id]), "{berlin}");
    let berlin_id = berlin["id"].as_str().expect("id").to_owned();

    // A listing holds the history, the ended version marked; `current` lists what holds.
    let listed = |query: &str| {
        let (status, page) = server.call("GET", &format!("/v1/memories{query}"), key, None);
        assert_eq!(status, 200, "{page}");
        page["items"].as_array().cloned().unwrap_or_default()
    };
    let all = listed("");
    assert_eq!(all.len(), 2, "{backend}: {all:?}");
    assert!(
        all.iter().any(|item| item["ended"]["kind"] == "superseded"),
        "{all:?}"
    );
    let current = listed("?current=true");
    assert_eq!(current.len(), 1, "{backend}: {current:?}");
    assert_eq!(current[0]["id"], berlin_id.as_str());

    // Recall now, as of a time, and with ended memories.
    let recall = |body: Value| {
        let (status, found) = server.call("POST", "/v1/recall", key, Some(body));
        assert_eq!(status, 200, "{found}");
        found
    };
    let now = recall(json!({"query": "where does the user live"}));
    assert_eq!(
        ids(&now["results"]),
        [berlin_id.as_str()],
        "{backend}: {now}"
    );
    let then =
        recall(json!({"query": "where does the user live", "as_of": "2024-03-01T00:00:00Z"}));
    assert_eq!(
        ids(&then["results"]),
        [paris_id.as_str()],
        "{backend}: {then}"
    );
    let all = recall(
        json!({"query": "where does the user live", "include_ended": true, "explain": true}),
    );
    assert_eq!(
        ids(&all["results"]),
        [berlin_id.clone(), paris_id.clone()],
        "{all}"
    );
    let ended = &all["results"][1];
    assert_eq!(ended["ended"]["kind"], "superseded", "{all}");
    assert_eq!(ended["ended"]["by"], berlin_id.as_str(), "{all}");
    assert_eq!(ended["fact_key"], "user.city", "{all}");
    let signals: Vec<&str> = ended["explanation"]["signals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|signal| signal["name"].as_str())
        .collect();
    assert!(signals.contains(&"stale"), "{all}");
    let (status, both) = server.call(
        "POST",
        "/v1/recall",
        key,
        Some(json!({"query": "x", "as_of": "2024-03-01", "include_ended": true})),
    );
    assert_eq!(status, 400, "{both}");
    assert_eq!(both["error"]["field"], "as_of");

    // History from either version.
    let (status, history) = server.call(
        "GET",
        &format!("/v1/memories/{paris_id}/history"),
        key,
        None,
    );
    assert_eq!(status, 200, "{history}");
    assert_eq!(
        ids(&history["versions"]),
        [paris_id.clone(), berlin_id.clone()],
        "{history}"
    );
    assert_eq!(history["versions"][0]["ended"]["kind"], "superseded");
    assert!(history["versions"][1].get("ended").is_none(), "{history}");
    let (status, _) = server.call("GET", "/v1/memories/nothing/history", key, None);
    assert_eq!(status, 404);

    // A duplicate merges (200); a changed value is flagged as a conflict.
    let (status, first) =
        remember(json!({"text": "Deploys happen on Tuesdays", "kind": "semantic"}));
    assert_eq!(status, 201, "{first}");
    let (status, again) =
        remember(json!({"text": "deploys happen on tuesdays!", "kind": "semantic"}));
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["outcome"], "merged", "{again}");
    assert_eq!(again["into"], first["id"], "{again}");
    let (_, twelve) = remember(json!({"text": "The team has 12 engineers", "kind": "semantic"}));
    let (status, nine) = remember(json!({"text": "The team has 9 engineers", "kind": "semantic"}));
    assert_eq!(status, 201, "{nine}");
    assert_eq!(nine["outcome"], "added", "{nine}");
    assert_eq!(nine["conflicts"][0]["id"], twelve["id"], "{nine}");
    assert!(nine["conflicts"][0]["reason"].is_string(), "{nine}");

    // Settle the conflict explicitly, then retract the survivor.
    let twelve_id = twelve["id"].as_str().expect("id").to_owned();
    let nine_id = nine["id"].as_str().expect("id").to_owned();
    let (status, settled) = server.call(
        "POST",
        &format!("/v1/memories/{twelve_id}/supersede"),
        key,
        Some(json!({"by": nine_id})),
    );
    assert_eq!(status, 200, "{settled}");
    assert_eq!(settled["old"]["ended"]["by"], nine_id.as_str(), "{settled}");
    assert_eq!(
        settled["new"]["supersedes"],
        json!([twelve_id]),
        "{settled}"
    );
    let (status, again) = server.call(
        "POST",
        &format!("/v1/memories/{twelve_id}/supersede"),
        key,
        Some(json!({"by": nine_id})),
    );
    assert_eq!(
        status, 400,
        "an ended memory is not superseded twice: {again}"
    );
    let (status, retracted) = server.call(
        "POST",
        &format!("/v1/memories/{nine_id}/retract"),
        key,
        Some(json!({"reason": "the count was a guess"})),
    );
    assert_eq!(status, 200, "{retracted}");
    assert_eq!(retracted["ended"]["kind"], "retracted", "{retracted}");
    assert_eq!(retracted["ended"]["reason"], "the count was a guess");
    let gone = recall(json!({"query": "how many engineers"}));
    assert_eq!(ids(&gone["results"]), Vec::<String>::new(), "{gone}");
    let (status, _) = server.call("POST", "/v1/memories/nothing/retract", key, Some(json!({})));
    assert_eq!(status, 404);

    // Credibility: a less credible source does not replace a fact; they are flagged.
    let (_, office) =
        remember(json!({"text": "The office is in Lisbon", "fact_key": "office.city"}));
    let (status, rumour) = remember(json!({"text": "The office is in Porto",
        "fact_key": "office.city", "credibility": 0.3}));
    assert_eq!(status, 201, "{rumour}");
    assert_eq!(rumour["outcome"], "added", "{rumour}");
    assert_eq!(rumour["conflicts"][0]["id"], office["id"], "{rumour}");
    let (status, bad) = remember(json!({"text": "x", "credibility": 3}));
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["error"]["field"], "credibility", "{bad}");
    let (status, bad) = remember(json!({"text": "x", "valid_from": "yesterday"}));
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["error"]["field"], "valid_from", "{bad}");

    // Consolidation folds episodes into one summary that lists them.
    let (_, a) = remember(json!({"text": "Standup: Ana finished the billing migration"}));
    let (_, b) = remember(json!({"text": "Standup: Bo started the search rewrite"}));
    let sources = json!([a["id"], b["id"]]);
    let (status, folded) = server.call(
        "POST",
        "/v1/memories/consolidate",
        key,
        Some(json!({"ids": sources, "max_tokens": 60})),
    );
    assert_eq!(status, 201, "{folded}");
    assert_eq!(folded["summary"]["supersedes"], sources, "{folded}");
    assert_eq!(folded["summary"]["kind"], "long_term", "{folded}");
    let summary_id = folded["summary"]["id"].as_str().expect("id").to_owned();
    let standup = recall(json!({"query": "standup billing migration search rewrite"}));
    assert!(ids(&standup["results"]).contains(&summary_id), "{standup}");
    for source in [&a["id"], &b["id"]] {
        assert!(
            !ids(&standup["results"]).contains(&source.as_str().unwrap_or_default().to_owned()),
            "{standup}"
        );
    }
    let (status, one) = server.call(
        "POST",
        "/v1/memories/consolidate",
        key,
        Some(json!({"ids": [summary_id]})),
    );
    assert_eq!(status, 400, "{one}");

    // Updates change only what is given, are checked, and 404 for a missing memory.
    let office_id = office["id"].as_str().expect("id").to_owned();
    let path = format!("/v1/memories/{office_id}");
    let (status, changed) = server.call(
        "PATCH",
        &path,
        key,
        Some(json!({"importance": 0.9, "tags": ["Office"], "metadata": {"checked": true}})),
    );
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        changed["importance"].as_f64().map(|v| (v * 10.0).round()),
        Some(9.0)
    );
    assert_eq!(changed["tags"], json!(["office"]), "{changed}");
    assert_eq!(changed["content"], "The office is in Lisbon", "{changed}");
    let (status, replaced) = server.call(
        "PUT",
        &path,
        key,
        Some(json!({"content": "The office is in Lisbon, on the river"})),
    );
    assert_eq!(status, 200, "{replaced}");
    let (_, got) = server.call("GET", &path, key, None);
    assert_eq!(
        got["content"], "The office is in Lisbon, on the river",
        "{got}"
    );
    assert_eq!(got["metadata"], json!({"checked": true}), "{got}");
    assert_eq!(got["fact_key"], "office.city", "{got}");
    for (body, field) in [
        (json!({"importance": 7}), "importance"),
        (json!({"content": ""}), "content"),
        (json!({"metadata": [1]}), "metadata"),
    ] {
        let (status, bad) = server.call("PATCH", &path, key, Some(body));
        assert_eq!(status, 400, "{bad}");
        assert_eq!(bad["error"]["kind"], "invalid_input", "{bad}");
        assert_eq!(bad["error"]["field"], field, "{bad}");
    }
    let (status, missing) = server.call(
        "PATCH",
        "/v1/memories/nothing",
        key,
        Some(json!({"importance": 0.1})),
    );
    assert_eq!(status, 404, "{missing}");
    let (status, _) = server.call(
        "PATCH",
        &format!("{path}?namespace=other"),
        key,
        Some(json!({"namespace": "other", "importance": 0.1})),
    );
    assert_eq!(status, 403, "another tenant's namespace");

    // A batch is reconciled memory by memory: a repeat inside it merges.
    let (status, batch) = server.call(
        "POST",
        "/v1/memories/batch",
        key,
        Some(json!({"memories": [
            {"text": "Carol plays chess on Sundays", "kind": "semantic"},
            {"text": "Carol plays chess on sundays.", "kind": "semantic"},
            {"text": "Carol lives in Oslo", "fact_key": "carol.city"},
            {"text": "Carol lives in Bergen", "fact_key": "carol.city"}
        ]})),
    );
    assert_eq!(status, 201, "{batch}");
    let outcomes: Vec<&str> = batch["memories"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["outcome"].as_str())
        .collect();
    assert_eq!(
        outcomes,
        ["added", "merged", "added", "superseded"],
        "{batch}"
    );
    assert_eq!(batch["memories"][1]["into"], batch["memories"][0]["id"]);
}

#[test]
fn facts_from_the_command_line() {
    let dir = TempDir::new("facts-cli");
    let run = |args: &[&str]| {
        let mut all = vec!["-n", "user-7"];
        all.extend_from_slice(args);
        run_json(&dir, &all)
    };
    let (code, paris) = run(&[
        "remember",
        "The user lives in Paris",
        "--fact-key",
        "user.city",
        "--valid-from",
        "2024-01-10",
        "--created-at",
        "2024-01-10",
    ]);
    assert_eq!(code, 0, "{paris}");
    assert_eq!(paris["outcome"], "added");
    let (code, berlin) = run(&[
        "remember",
        "The user moved to Berlin",
        "--fact-key",
        "user.city",
        "--created-at",
        "2024-06-01T00:00:00Z",
        "--credibility",
        "1",
    ]);
    assert_eq!(code, 0, "{berlin}");
    assert_eq!(berlin["outcome"], "superseded", "{berlin}");
    assert_eq!(berlin["old"], json!([paris["id"]]), "{berlin}");
    let berlin_id = berlin["id"].as_str().expect("id");
    let paris_id = paris["id"].as_str().expect("id");

    // `list` shows the history with the ended version marked; `--current` what holds.
    let (code, current) = run(&["list", "--current"]);
    assert_eq!(code, 0, "{current}");
    assert_eq!(ids(&current["items"]), [berlin_id], "{current}");
    let text = crate::support::run(&dir, &["-n", "user-7", "list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|line| line.contains(paris_id) && line.ends_with("[superseded]")),
        "{text}"
    );

    let (_, now) = run(&["recall", "where does the user live"]);
    assert_eq!(ids(&now["results"]), [berlin_id], "{now}");
    let (_, then) = run(&[
        "recall",
        "where does the user live",
        "--as-of",
        "2024-03-01",
    ]);
    assert_eq!(ids(&then["results"]), [paris_id], "{then}");
    let (_, all) = run(&[
        "recall",
        "where does the user live",
        "--include-ended",
        "--explain",
    ]);
    assert_eq!(ids(&all["results"]), [berlin_id, paris_id], "{all}");
    assert_eq!(all["results"][1]["ended"]["kind"], "superseded");
    let (code, _) = run(&["recall", "x", "--as-of", "2024-01-01", "--include-ended"]);
    assert_eq!(code, 2, "the two views exclude each other");
    let (code, bad) = run(&["recall", "x", "--as-of", "soon"]);
    assert_eq!(code, 3, "{bad}");
    assert_eq!(bad["error"]["field"], "as_of");

    let (code, history) = run(&["history", berlin_id]);
    assert_eq!(code, 0, "{history}");
    assert_eq!(
        ids(&history["versions"]),
        [paris_id, berlin_id],
        "{history}"
    );

    // The text of --explain names the stale signal; history reads as a timeline.
    let output = crate::support::run(
        &dir,
        &[
            "-n",
            "user-7",
            "recall",
            "where does the user live",
            "--include-ended",
            "--explain",
        ],
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("stale"), "{text}");
    assert!(text.contains("[superseded]"), "{text}");
    let output = crate::support::run(&dir, &["-n", "user-7", "history", paris_id]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(&format!("superseded by {berlin_id}")),
        "{text}"
    );
    assert!(text.contains("(current)"), "{text}");

    // Retract, supersede, consolidate.
    let (_, tea) = run(&[
        "remember",
        "The user drinks green tea",
        "--kind",
        "semantic",
    ]);
    let (_, coffee) = run(&[
        "remember",
        "The user drinks black coffee now",
        "--kind",
        "semantic",
    ]);
    let tea_id = tea["id"].as_str().expect("id");
    let coffee_id = coffee["id"].as_str().expect("id");
    let (code, superseded) = run(&["supersede", tea_id, coffee_id]);
    assert_eq!(code, 0, "{superseded}");
    let (code, again) = run(&["supersede", tea_id, coffee_id]);
    assert_eq!(code, 3, "{again}");
    let (code, retracted) = run(&["retract", coffee_id, "--reason", "misheard"]);
    assert_eq!(code, 0, "{retracted}");
    assert_eq!(retracted["ended"]["reason"], "misheard", "{retracted}");
    let (code, missing) = run(&["retract", "nothing"]);
    assert_eq!(code, 4, "{missing}");
    let (_, a) = run(&["remember", "Sprint 1: the login page shipped"]);
    let (_, b) = run(&["remember", "Sprint 1: the signup page slipped"]);
    let (code, folded) = run(&[
        "consolidate",
        a["id"].as_str().expect("id"),
        b["id"].as_str().expect("id"),
        "--max-tokens",
        "50",
    ]);
    assert_eq!(code, 0, "{folded}");
    assert_eq!(folded["summary"]["supersedes"], json!([a["id"], b["id"]]));
    let (code, _) = run(&["consolidate", a["id"].as_str().expect("id")]);
    assert_eq!(code, 2, "one id is a usage error");

    // Text output keeps the id alone on stdout.
    let output = crate::support::run(
        &dir,
        &[
            "-n",
            "user-7",
            "remember",
            "The user lives in Rome",
            "--fact-key",
            "user.city",
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("supersedes"),
        "{output:?}"
    );

    // A memory past the time it holds has not ended, and is not current either: recall
    // leaves it out, and the text of list and history says so.
    let (code, expired) = run(&[
        "remember",
        "The user has a temporary badge",
        "--valid-until",
        "2025-01-01",
    ]);
    assert_eq!(code, 0, "{expired}");
    let expired_id = expired["id"].as_str().expect("id");
    let output = crate::support::run(&dir, &["-n", "user-7", "history", expired_id]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("(expired)"), "{text}");
    let output = crate::support::run(&dir, &["-n", "user-7", "list"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.lines()
            .any(|line| line.contains(expired_id) && line.ends_with("[expired]")),
        "{text}"
    );
}

#[test]
fn batches_keep_each_namespace_within_its_capacity() {
    let dir = TempDir::new("capacity");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
        "--max-memories".to_owned(),
        "3".to_owned(),
    ];
    let server = Server::start(&dir, &store, &[]);
    let key = server.key_for("cap");
    // The first is the most important: eviction goes by value, so it outlives newer ones.
    let memories: Vec<Value> = [
        ("Ana plays the cello", 1.0),
        ("Bo collects stamps", 0.1),
        ("Cy runs marathons", 0.1),
        ("Di grows tomatoes", 0.1),
        ("Ed repairs bicycles", 0.1),
    ]
    .iter()
    .map(|(text, importance)| json!({"text": text, "importance": importance}))
    .collect();
    let (status, batch) = server.call(
        "POST",
        "/v1/memories/batch",
        Some(&key),
        Some(json!({"memories": memories})),
    );
    assert_eq!(status, 201, "{batch}");
    let (_, stats) = server.call("GET", "/v1/stats", Some(&key), None);
    assert_eq!(stats["total"], 3, "evicted down to the capacity: {stats}");
    let (_, listed) = server.call("GET", "/v1/memories", Some(&key), None);
    assert!(
        listed.to_string().contains("Ana plays the cello"),
        "the important memory is kept: {listed}"
    );
    let (_, other) = server.call(
        "POST",
        "/v1/memories",
        Some(&key),
        Some(json!({"text": "Fay sails", "namespace": "cap/other"})),
    );
    assert_eq!(other["outcome"], "added", "{other}");
    let (_, stats) = server.call("GET", "/v1/stats", Some(&key), None);
    assert_eq!(stats["per_namespace"]["cap"], 3, "{stats}");
    assert_eq!(stats["per_namespace"]["cap/other"], 1, "{stats}");
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn conflicts_over_http() {
    let dir = TempDir::new("conflicts-http");
    for (backend, store) in backends(&dir, "conflicts") {
        let server = Server::start(&dir, &store, &[]);
        let _schema = DropSchema(store.clone());
        conflicts_scenario(&server, &backend);
        assert_eq!(server.stop(), Some(0), "{backend}: a clean stop");
    }
}

fn conflicts_scenario(server: &Server, backend: &str) {
    let key = server.key_for("team");
    let key = Some(key.as_str());
    let remember = |body: Value| {
        let (status, remembered) = server.call("POST", "/v1/memories", key, Some(body));
        assert_eq!(status, 201, "{backend}: {remembered}");
        remembered
    };
    let list = |query: &str| {
        let (status, page) = server.call("GET", &format!("/v1/conflicts{query}"), key, None);
        assert_eq!(status, 200, "{backend} {query}: {page}");
        page
    };
    let (status, empty) = server.call("GET", "/v1/conflicts", key, None);
    assert_eq!((status, &empty["items"]), (200, &json!([])), "{empty}");
    let (_, doc) = server.call("GET", "/openapi.json", None, None);
    let operation = &doc["paths"]["/v1/conflicts"]["get"];
    let parameters: Vec<&str> = operation["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|parameter| parameter["name"].as_str())
        .collect();
    assert_eq!(
        parameters,
        ["namespace", "exact", "limit", "cursor"],
        "{operation}"
    );
    assert!(
        doc["components"]["schemas"]["ConflictPairView"]["properties"]["older"].is_object(),
        "{doc}"
    );

    // Two statements the rule detector flags, in the key's namespace and one under it.
    let paris = remember(json!({"text": "Alice lives in Paris", "kind": "semantic"}));
    let berlin = remember(json!({"text": "Alice lives in Berlin", "kind": "semantic"}));
    assert_eq!(berlin["conflicts"][0]["id"], paris["id"], "{berlin}");
    let monday = remember(json!({"text": "The review is on Monday", "namespace": "team/ops"}));
    let friday = remember(json!({"text": "The review is on Friday", "namespace": "team/ops"}));
    assert_eq!(friday["conflicts"][0]["id"], monday["id"], "{friday}");

    let all = list("");
    let pairs = all["items"].as_array().expect("items");
    assert_eq!(pairs.len(), 2, "{backend}: {all}");
    assert!(all.get("next_cursor").is_none(), "{all}");
    let alice = pairs
        .iter()
        .find(|pair| pair["namespace"] == "team")
        .expect("the pair of team");
    assert_eq!(alice["older"]["id"], paris["id"], "{all}");
    assert_eq!(alice["older"]["content"], "Alice lives in Paris", "{all}");
    assert_eq!(alice["newer"]["id"], berlin["id"], "{all}");
    assert_eq!(
        alice["newer"]["conflicts_with"],
        json!([paris["id"]]),
        "{all}"
    );

    // Pages, and the namespace alone.
    let first = list("?limit=1");
    assert_eq!(first["items"].as_array().map(Vec::len), Some(1), "{first}");
    let cursor = first["next_cursor"].as_str().expect("a second page");
    let second = list(&format!("?limit=1&cursor={cursor}"));
    assert_eq!(
        second["items"].as_array().map(Vec::len),
        Some(1),
        "{second}"
    );
    assert!(second.get("next_cursor").is_none(), "{second}");
    assert_ne!(first["items"][0], second["items"][0]);
    let exact = list("?namespace=team&exact=true");
    assert_eq!(exact["items"][0]["newer"]["id"], berlin["id"], "{exact}");
    assert_eq!(exact["items"].as_array().map(Vec::len), Some(1), "{exact}");
    let ops = list("?namespace=team/ops");
    assert_eq!(ops["items"][0]["older"]["id"], monday["id"], "{ops}");

    // Another tenant sees none of them, and may not ask for them.
    let other = server.key_for("team-2");
    let (status, theirs) = server.call("GET", "/v1/conflicts", Some(&other), None);
    assert_eq!((status, &theirs["items"]), (200, &json!([])), "{theirs}");
    for query in ["?namespace=team", "?namespace=team/ops"] {
        let (status, refused) =
            server.call("GET", &format!("/v1/conflicts{query}"), Some(&other), None);
        assert_eq!(status, 403, "{query}: {refused}");
        assert_eq!(refused["error"]["kind"], "forbidden", "{refused}");
    }

    // Bad paging is refused, naming the field.
    for (query, field) in [
        ("?limit=0", "limit"),
        ("?limit=501", "limit"),
        ("?limit=many", "limit"),
        ("?cursor=nowhere", "cursor"),
        ("?cursor=-1", "cursor"),
    ] {
        let (status, bad) = server.call("GET", &format!("/v1/conflicts{query}"), key, None);
        assert_eq!(status, 400, "{query}: {bad}");
        assert_eq!(bad["error"]["kind"], "invalid_input", "{query}: {bad}");
        assert_eq!(bad["error"]["field"], field, "{query}: {bad}");
    }

    // A settled pair leaves the list.
    let (status, settled) = server.call(
        "POST",
        &format!(
            "/v1/memories/{}/supersede",
            paris["id"].as_str().unwrap_or_default()
        ),
        key,
        Some(json!({"by": berlin["id"]})),
    );
    assert_eq!(status, 200, "{settled}");
    let left = list("");
    assert_eq!(left["items"].as_array().map(Vec::len), Some(1), "{left}");
    assert_eq!(left["items"][0]["namespace"], "team/ops", "{left}");
    // The first page's pair, settled, does not push the other off the second page (an
    // offset cursor would now point past the end).
    assert_eq!(first["items"][0]["namespace"], "team", "{first}");
    let after = list(&format!("?limit=1&cursor={cursor}"));
    assert_eq!(after["items"][0]["namespace"], "team/ops", "{after}");
    assert!(after.get("next_cursor").is_none(), "{after}");
}

#[test]
fn conflicts_from_the_command_line() {
    let dir = TempDir::new("conflicts-cli");
    let run = |args: &[&str]| {
        let mut all = vec!["-n", "user-9"];
        all.extend_from_slice(args);
        run_json(&dir, &all)
    };
    let (code, none) = run(&["conflicts"]);
    assert_eq!((code, &none["conflicts"]), (0, &json!([])), "{none}");
    let (_, paris) = run(&["remember", "Alice lives in Paris", "--kind", "semantic"]);
    let (_, berlin) = run(&["remember", "Alice lives in Berlin", "--kind", "semantic"]);
    assert_eq!(berlin["conflicts"][0]["id"], paris["id"], "{berlin}");
    let (code, listed) = run(&["conflicts"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(
        listed["conflicts"][0]["older"]["id"], paris["id"],
        "{listed}"
    );
    assert_eq!(
        listed["conflicts"][0]["newer"]["id"], berlin["id"],
        "{listed}"
    );
    let (_, elsewhere) = run_json(&dir, &["-n", "user-90", "conflicts"]);
    assert_eq!(elsewhere["conflicts"], json!([]), "{elsewhere}");
    let output = crate::support::run(&dir, &["-n", "user-9", "conflicts"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("Alice lives in Paris") && text.contains("Alice lives in Berlin"),
        "{text}"
    );
}
