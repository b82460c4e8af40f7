//! `import --format locomo|longmemeval` on tiny conversations written here (no benchmark
//! data in the repository): each conversation in its own namespace, every turn a memory
//! with its time, speaker and turn id, found by recall in its namespace only.

use serde_json::json;

use crate::support::{TempDir, run_json};

#[test]
fn locomo_conversations_import_each_into_its_namespace() {
    let dir = TempDir::new("locomo");
    let turns = [
        json!({"conv_id": "conv-1", "dia_id": "D1:1", "session": 1, "turn": 0,
            "date": "1:56 pm on 8 May, 2023", "timestamp": "2023-05-08T13:56:00",
            "speaker": "Ana", "text": "I adopted a greyhound called Comet", "blip_caption": null}),
        json!({"conv_id": "conv-1", "dia_id": "D1:2", "session": 1, "turn": 1,
            "date": "1:56 pm on 8 May, 2023", "timestamp": "2023-05-08T13:56:00",
            "speaker": "Ben", "text": "What a lovely name!", "blip_caption": "a dog on a sofa"}),
        json!({"conv_id": "conv-2", "dia_id": "D1:1", "session": 1, "turn": 0,
            "date": "9 June, 2023", "timestamp": "2023-06-09T10:00:00",
            "speaker": "Cy", "text": "My sister runs a bakery in Porto", "blip_caption": null}),
    ];
    let text: String = turns.iter().map(|turn| format!("{turn}\n")).collect();
    let path = dir.path().join("locomo.jsonl");
    std::fs::write(&path, text).expect("write the file");
    let path = path.to_string_lossy().into_owned();

    // Detected from the first line, like the other formats.
    let (code, report) = run_json(&dir, &["-n", "bench", "import", &path]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["format"], "locomo");
    assert_eq!(report["turns"], 3);
    assert_eq!(
        report["namespaces"],
        json!(["bench/conv-1", "bench/conv-2"])
    );

    let (_, found) = run_json(&dir, &["-n", "bench/conv-1", "recall", "greyhound Comet"]);
    let hit = &found["results"][0];
    assert_eq!(hit["id"], "D1:1", "{found}");
    assert_eq!(hit["namespace"], "bench/conv-1");
    assert!(
        hit["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("[8 May 2023] Ana: I adopted")),
        "{found}"
    );
    let (_, other) = run_json(&dir, &["-n", "bench/conv-2", "recall", "greyhound Comet"]);
    assert_eq!(other["results"], json!([]), "{other}");

    let (_, listed) = run_json(&dir, &["-n", "bench/conv-1", "export", "-o", "out.jsonl"]);
    assert_eq!(listed["exported"]["memories"], 2, "{listed}");
    let exported = std::fs::read_to_string(dir.path().join("out.jsonl")).expect("export");
    let second = exported
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|record| record["id"] == "D1:2")
        .expect("D1:2 exported");
    let text = serde_json::to_string(&second).unwrap_or_default();
    assert!(text.contains("2023-05-08T13:56:00"), "its time: {text}");
    assert!(text.contains("\"speaker\":\"Ben\""), "its speaker: {text}");
    assert!(
        text.contains("Ana: I adopted a greyhound"),
        "the previous turn as context: {text}"
    );
    let first = exported
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|record| record["id"] == "D1:1")
        .expect("D1:1 exported");
    let first = serde_json::to_string(&first).unwrap_or_default();
    assert!(
        first.contains("Ben: What a lovely name!"),
        "the next turn as context: {first}"
    );
    assert!(text.contains("shares an image: a dog on a sofa"), "{text}");

    // A bad line changes nothing.
    std::fs::write(
        dir.path().join("bad.jsonl"),
        format!("{}\n{{\"conv_id\": 3}}\n", turns[0]),
    )
    .expect("write");
    let (code, bad) = run_json(
        &dir,
        &["-n", "fresh", "import", "--format", "locomo", "bad.jsonl"],
    );
    assert_eq!(code, 3, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("line 2")),
        "{bad}"
    );
    let (_, stats) = run_json(&dir, &["-n", "fresh", "stats"]);
    assert_eq!(stats["total"], 0, "{stats}");
}

#[test]
fn a_turn_the_dialogue_would_refuse_fails_the_import_before_any_write() {
    let dir = TempDir::new("locomo-refused");
    let turn = |conv: &str, session: serde_json::Value, text: &str| {
        json!({"conv_id": conv, "dia_id": "D1:1", "session": session,
            "date": "8 May, 2023", "timestamp": "2023-05-08T13:56:00",
            "speaker": "Ana", "text": text})
    };
    let fine = turn("conv-1", json!(1), "I adopted a greyhound called Comet");
    // A session name over the dialogue's limit; a text within the content limit that its
    // date and speaker take past it. Each in the second conversation, after a good one.
    let cases = [
        (turn("conv-2", json!("s".repeat(300)), "hello"), "session"),
        (
            turn("conv-2", json!(1), &"a".repeat(1024 * 1024 - 4)),
            "text",
        ),
    ];
    for (index, (bad, field)) in cases.into_iter().enumerate() {
        let name = format!("bad{index}.jsonl");
        std::fs::write(dir.path().join(&name), format!("{fine}\n{bad}\n")).expect("write");
        let (code, report) = run_json(&dir, &["-n", "bench", "import", &name]);
        assert_eq!(code, 3, "{report}");
        let message = report["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(field) && message.contains("bench/conv-2"),
            "{report}"
        );
        let (_, stats) = run_json(&dir, &["-n", "bench", "stats"]);
        assert_eq!(stats["total"], 0, "nothing stored: {stats}");
    }
}

/// Conversation ids a namespace cannot hold as written stay apart: `conv 1` and `conv/1`,
/// `会话` and `对话` each get a namespace of their own, and no turn writes over another.
#[test]
fn conversations_whose_ids_clean_alike_stay_apart() {
    let dir = TempDir::new("locomo-alike");
    let lines: Vec<String> = ["conv 1", "conv/1", "会话", "对话"]
        .iter()
        .map(|conv| {
            json!({"conv_id": conv, "dia_id": "D1:1", "session": 1,
                "date": "8 May, 2023", "timestamp": "2023-05-08T13:56:00",
                "speaker": "Ana", "text": format!("said in {conv}")})
            .to_string()
        })
        .collect();
    std::fs::write(dir.path().join("alike.jsonl"), lines.join("\n")).expect("write");
    let (code, report) = run_json(&dir, &["-n", "bench", "import", "alike.jsonl"]);
    assert_eq!(code, 0, "{report}");
    let namespaces: Vec<&str> = report["namespaces"]
        .as_array()
        .map(|all| all.iter().filter_map(|n| n.as_str()).collect())
        .unwrap_or_default();
    let distinct: std::collections::BTreeSet<&str> = namespaces.iter().copied().collect();
    assert_eq!(distinct.len(), 4, "{report}");
    let (_, stats) = run_json(&dir, &["-n", "bench", "stats"]);
    assert_eq!(stats["total"], 4, "every turn kept: {stats}");
}

/// A LongMemEval file naming one question twice is refused before anything is written.
#[test]
fn a_question_named_twice_is_refused() {
    let dir = TempDir::new("longmemeval-twice");
    let question = json!({"question_id": "q1", "question_type": "single-session-user",
        "question": "Where?", "answer": "here", "question_date": "2023/06/23 (Fri) 07:31",
        "haystack_dates": ["2023/04/30 (Sun) 13:59"], "haystack_session_ids": ["a"],
        "haystack_sessions": [[{"role": "user", "content": "I live here"}]],
        "answer_session_ids": ["a"]});
    std::fs::write(
        dir.path().join("twice.json"),
        json!([question, question]).to_string(),
    )
    .expect("write");
    let (code, report) = run_json(
        &dir,
        &[
            "-n",
            "bench",
            "import",
            "twice.json",
            "--format",
            "longmemeval",
        ],
    );
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["error"]["field"], "input", "{report}");
    let (_, stats) = run_json(&dir, &["-n", "bench", "stats"]);
    assert_eq!(stats["total"], 0, "nothing stored: {stats}");
}

/// A LoCoMo turn id (its memory's id) named twice in one conversation refuses the file:
/// the second turn would replace the first.
#[test]
fn a_turn_named_twice_is_refused() {
    let dir = TempDir::new("locomo-twice");
    let turn = |text: &str| {
        json!({"conv_id": "c", "dia_id": "D1:1", "session": 1, "turn": 0,
            "date": "1:56 pm on 8 May, 2023", "timestamp": "2023-05-08T13:56:00",
            "speaker": "Ann", "text": text, "blip_caption": null})
        .to_string()
    };
    std::fs::write(
        dir.path().join("twice.jsonl"),
        format!("{}\n{}\n", turn("first"), turn("second")),
    )
    .expect("write");
    let (code, report) = run_json(
        &dir,
        &["-n", "bench", "import", "twice.jsonl", "--format", "locomo"],
    );
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["error"]["field"], "input", "{report}");
    assert!(
        report["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("twice")),
        "refused for the repeated id: {report}"
    );
    let (_, stats) = run_json(&dir, &["-n", "bench", "stats"]);
    assert_eq!(stats["total"], 0, "nothing stored: {stats}");
}

#[test]
fn longmemeval_haystacks_import_each_into_its_namespace() {
    let dir = TempDir::new("longmemeval");
    let questions = json!([
        {"question_id": "q1", "question_type": "knowledge-update",
         "question": "Where do I keep my sneakers?", "answer": "in the closet",
         "question_date": "2023/06/23 (Fri) 07:31",
         "haystack_dates": ["2023/04/30 (Sun) 13:59", "2023/05/02 (Tue) 05:35"],
         "haystack_session_ids": ["a", "b"],
         "haystack_sessions": [
            [{"role": "user", "content": "I keep my old sneakers under the bed"},
             {"role": "assistant", "content": "Good to know."}],
            [{"role": "user", "content": "I moved my sneakers to a shoe rack in the closet", "has_answer": true}]
         ],
         "answer_session_ids": ["b"]},
        {"question_id": "q2_abs", "question_type": "single-session-user",
         "question": "What is my cat's name?", "answer": "none",
         "question_date": "2023/06/23 (Fri) 07:31",
         "haystack_dates": ["2023/05/01 (Mon) 09:00"],
         "haystack_session_ids": ["c"],
         "haystack_sessions": [[{"role": "user", "content": "I have a parrot named Kiwi"}]],
         "answer_session_ids": []}
    ]);
    std::fs::write(dir.path().join("lme.json"), questions.to_string()).expect("write");
    let (code, report) = run_json(&dir, &["-n", "lme", "import", "lme.json"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["format"], "longmemeval");
    assert_eq!(report["turns"], 4);
    assert_eq!(report["namespaces"], json!(["lme/q1", "lme/q2_abs"]));
    let (_, found) = run_json(
        &dir,
        &["-n", "lme/q1", "recall", "sneakers shoe rack closet"],
    );
    assert_eq!(found["results"][0]["id"], "s1:0", "{found}");
    assert!(
        found["results"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("[2 May 2023] user: I moved")),
        "{found}"
    );
    run_json(&dir, &["-n", "lme/q1", "export", "-o", "q1.jsonl"]);
    let exported = std::fs::read_to_string(dir.path().join("q1.jsonl")).expect("export");
    let reply = exported
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|record| record["id"] == "s0:1")
        .expect("s0:1 exported");
    let reply = serde_json::to_string(&reply).unwrap_or_default();
    assert!(
        reply.contains("\"role\":\"assistant\""),
        "its role: {reply}"
    );
    let (_, parrot) = run_json(&dir, &["-n", "lme/q1", "recall", "parrot Kiwi"]);
    assert_eq!(parrot["results"], json!([]), "another haystack: {parrot}");

    std::fs::write(dir.path().join("bad.json"), "[{\"question_id\": \"x\"}]").expect("write");
    let (code, bad) = run_json(
        &dir,
        &[
            "-n",
            "lme2",
            "import",
            "--format",
            "longmemeval",
            "bad.json",
        ],
    );
    assert_eq!(code, 3, "{bad}");
}

/// Every line-based format reads a line only up to the native format's limit and refuses a
/// longer one by its number, without holding the rest; blank lines before the first
/// record keep their place in the numbering.
#[test]
fn import_reads_lines_within_the_limit_and_numbers_them_as_the_file_does() {
    let dir = TempDir::new("import-lines");
    let long = vec![b'a'; agent_memory::transfer::MAX_LINE_BYTES + 10];
    std::fs::write(dir.path().join("long.jsonl"), &long).expect("write");
    drop(long);
    for format in [
        None,
        Some("mcp-memory"),
        Some("locomo"),
        Some("agent-memory"),
    ] {
        let mut args = vec!["-n", "lines", "import"];
        if let Some(format) = format {
            args.extend(["--format", format]);
        }
        args.push("long.jsonl");
        let (code, refused) = run_json(&dir, &args);
        assert_eq!(code, 3, "{format:?}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("line 1") && message.contains("longer than"),
            "{format:?}: {refused}"
        );
    }
    std::fs::write(
        dir.path().join("blank.jsonl"),
        concat!(
            "\n",
            "  \n",
            r#"{"type":"entity","name":"Ada","entityType":"person","observations":[]}"#,
            "\n",
            "not json\n"
        ),
    )
    .expect("write");
    let (code, refused) = run_json(&dir, &["-n", "lines", "import", "blank.jsonl"]);
    assert_eq!(code, 3, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("line 4")),
        "{refused}"
    );
    let (_, stats) = run_json(&dir, &["-n", "lines", "stats"]);
    assert_eq!(stats["total"], 0, "{stats}");
    assert_eq!(stats["entities"], 0, "{stats}");
}
