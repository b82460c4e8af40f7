//! Unit tests of the JSONL export and import.

use super::*;

fn ns(text: &str) -> Namespace {
    Namespace::parse(text).unwrap()
}

fn sample() -> (Header, Vec<Record>) {
    let at = DateTime::from_timestamp(1_700_000_000, 5).unwrap();
    let item = MemoryItem::new(ns("u/a"), "likes \"green\" tea\nand 状态管理")
        .unwrap()
        .with_id("m1")
        .unwrap()
        .with_tags(["Drinks"])
        .unwrap()
        .with_metadata(serde_json::json!({"speaker": "ann", "turn": 3.25}))
        .unwrap()
        .with_embedding(vec![0.1, -0.2])
        .unwrap()
        .with_created_at(at)
        .with_fact_key("ann.drink")
        .unwrap()
        .with_validity(Some(at), Some(at + chrono::Duration::days(3)))
        .unwrap();
    let mut item = item;
    item.ended = Some(crate::Ended {
        at,
        reason: crate::EndReason::Superseded { by: "m2".into() },
    });
    item.supersedes = vec!["m0".into()];
    item.conflicts_with = vec!["m9".into()];
    let stats = RecallStats {
        recall_count: 2,
        total_score: 1.5,
        last_recall_at: Some(at),
    };
    let mut page = KnowledgePage::new(ns("u/a"), "p", "Title")
        .unwrap()
        .with_references(["q"])
        .unwrap()
        .with_created_at(at);
    page.access_count = 4;
    page.last_accessed = Some(at + chrono::Duration::hours(1));
    let mut entity = GraphEntity::new(ns("u/b"), "e", "E", "thing")
        .unwrap()
        .with_tags(["x"])
        .unwrap()
        .with_attributes(serde_json::json!({"born": 1990, "city": "Lisbon"}))
        .unwrap()
        .with_created_at(Some(at));
    entity.access_count = 2;
    entity.last_accessed = Some(at + chrono::Duration::hours(2));
    let relation = GraphRelation::new(ns("u/b"), "e", "e", "self", 0.25)
        .unwrap()
        .with_validity(None, Some(at))
        .unwrap();
    let records = vec![
        Record::Memory(item),
        Record::RecallStats(RecallStatsRecord::new(ns("u/a"), "m1", stats)),
        Record::Page(page),
        Record::Entity(entity),
        Record::Relation(relation),
    ];
    let mut counts = RecordCounts::default();
    records.iter().for_each(|record| counts.add(record));
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        scope: ns("u").subtree(),
        exported_at: at,
        counts: Some(counts),
    };
    (header, records)
}

/// The file of a header and its records, a JSON line each.
fn encode(header: &Header, records: &[Record]) -> String {
    let mut out = serde_json::to_string(header).unwrap();
    out.push('\n');
    for record in records {
        out.push_str(&serde_json::to_string(record).unwrap());
        out.push('\n');
    }
    out
}

fn read(text: &str) -> Result<Dump> {
    read_jsonl(&mut text.as_bytes())
}

#[test]
fn round_trip_of_every_record_type() {
    let (header, records) = sample();
    let text = encode(&header, &records);
    assert_eq!(text.lines().count(), 6);
    assert!(text.starts_with("{\"format\":\"agent-memory-jsonl\",\"version\":2,"));
    assert!(
        text.lines()
            .nth(2)
            .unwrap()
            .starts_with("{\"type\":\"recall_stats\"")
    );
    for (line, field) in [
        (3, "\"access_count\":4"),
        (3, "\"last_accessed\":"),
        (4, "\"created_at\":"),
        (4, "\"access_count\":2"),
        (4, "\"attributes\":{\"born\":1990,\"city\":\"Lisbon\"}"),
    ] {
        assert!(
            text.lines().nth(line).unwrap().contains(field),
            "line {line} lacks {field}"
        );
    }
    let dump = read(&text).unwrap();
    assert_eq!(dump.header, header);
    assert_eq!(dump.records, records);
    // CRLF line endings and blank lines are accepted.
    let dump = read(&format!("\n{}\r\n\r\n", text.replace('\n', "\r\n"))).unwrap();
    assert_eq!(dump.records, records);
}

fn check_error(text: &str, kind: fn(&MemoryError) -> bool, needle: &str) {
    match read(text) {
        Err(error) => {
            assert!(kind(&error), "{text:?}: wrong kind {error:?}");
            assert!(
                error.to_string().contains(needle),
                "{text:?}: {error} lacks {needle:?}"
            );
        }
        Ok(dump) => panic!("{text:?} was accepted: {dump:?}"),
    }
}

#[test]
fn bad_input_is_an_error_naming_the_line() {
    let (header, records) = sample();
    let good = encode(&header, &records);
    let lines: Vec<&str> = good.lines().collect();
    let invalid = |e: &MemoryError| matches!(e, MemoryError::InvalidInput { .. });
    let serialization = |e: &MemoryError| matches!(e, MemoryError::Serialization { .. });
    check_error("", invalid, "empty");
    check_error("   \n\n", invalid, "empty");
    check_error("not json\n", invalid, "line 1");
    check_error("{\"format\":\"other\",\"version\":1}\n", invalid, "line 1");
    check_error(
        &good.replacen("\"version\":2", "\"version\":3", 1),
        invalid,
        "version 3",
    );
    check_error(
        &good.replacen("\"version\":2", "\"version\":0", 1),
        invalid,
        "version 0",
    );
    check_error(
        "{\"format\":\"agent-memory-jsonl\",\"version\":1}\n",
        serialization,
        "line 1",
    );
    let with_line = |index: usize, replacement: &str| {
        let mut changed = lines.clone();
        changed[index] = replacement;
        changed.join("\n")
    };
    check_error(&with_line(3, "{\"type\":\"page\""), serialization, "line 4");
    check_error(&with_line(3, "[1,2]"), serialization, "line 4");
    check_error(
        &with_line(3, "{\"type\":\"spaceship\"}"),
        serialization,
        "line 4",
    );
    check_error(&with_line(3, "{\"id\":\"p\"}"), serialization, "line 4");
    // serde's reason says what is wrong.
    check_error(
        &with_line(3, "{\"type\":\"spaceship\"}"),
        serialization,
        "unknown variant `spaceship`",
    );
    let blank_title = lines[3].replace("\"title\":\"Title\"", "\"title\":\"  \"");
    check_error(&with_line(3, &blank_title), invalid, "line 4: title");
    let huge_count = lines[3].replace("\"access_count\":4", "\"access_count\":9223372036854775808");
    check_error(&with_line(3, &huge_count), invalid, "line 4: access_count");
    let far_access = lines[4].replace("\"created_at\":\"2023", "\"created_at\":\"3023");
    check_error(&with_line(4, &far_access), invalid, "line 5: created_at");
    let bad_weight = lines[5].replace("0.25", "7.5");
    check_error(&with_line(5, &bad_weight), invalid, "line 6: weight");
    let outside = lines[4].replace("\"u/b\"", "\"elsewhere\"");
    check_error(
        &with_line(4, &outside),
        invalid,
        "line 5: namespace elsewhere",
    );
    let bad_namespace = lines[4].replace("\"u/b\"", "\"u//b\"");
    check_error(&with_line(4, &bad_namespace), serialization, "line 5");
    let truncated = lines[..4].join("\n");
    check_error(&truncated, invalid, "truncated");
    // The counts read as words, not as a Rust structure.
    check_error(
        &truncated,
        invalid,
        "announces 1 memory, 1 recall statistics, 1 page, 1 entity, 1 relation but the \
         input holds 1 memory, 1 recall statistics, 1 page, 0 entities, 0 relations",
    );
    let mut not_utf8 = good.clone().into_bytes();
    not_utf8.extend_from_slice(b"\xff\xfe\n");
    match read_jsonl(&mut not_utf8.as_slice()) {
        Err(error) => assert!(
            error.to_string().contains("line 7: not valid UTF-8"),
            "{error}"
        ),
        Ok(_) => panic!("invalid UTF-8 accepted"),
    }
}

#[test]
fn overlong_lines_are_refused() {
    let (header, records) = sample();
    let text = encode(&header, &records);
    let error = read_numbered(&mut text.as_bytes(), 64).unwrap_err();
    assert!(
        matches!(error, MemoryError::LimitExceeded(ref m) if m.contains("line 1")),
        "{error}"
    );
    assert!(read_numbered(&mut text.as_bytes(), 4096).is_ok());
}

#[test]
fn header_without_counts_skips_the_check() {
    let (mut header, records) = sample();
    header.counts = None;
    let text = encode(&header, &records);
    assert!(!text.lines().next().unwrap().contains("counts"));
    let dump = read(&text.lines().take(3).collect::<Vec<_>>().join("\n")).unwrap();
    assert_eq!(dump.records.len(), 2);
}

#[tokio::test]
async fn export_without_stores_is_a_header_and_imports_to_nothing() {
    let mut out = Vec::new();
    let counts = export_jsonl(&Scope::all(), None, None, None, &mut out)
        .await
        .unwrap();
    assert_eq!(counts.total(), 0);
    let report = import_jsonl(&mut out.as_slice(), None, None, None)
        .await
        .unwrap();
    assert_eq!(report, ImportReport::default());
    let (header, records) = sample();
    let text = encode(&header, &records);
    let report = import_jsonl(&mut text.as_bytes(), None, None, None)
        .await
        .unwrap();
    assert_eq!(report.imported.total(), 0);
    assert_eq!(report.skipped, header.counts.unwrap());
}

/// A version-1 file, as the release before facts wrote it, still reads: its records have
/// no fact fields, which read as none, and its pages and entities no access statistics or
/// entity creation time, which read as never accessed and unknown.
#[test]
fn version_1_files_still_read() {
    let text = "{\"format\":\"agent-memory-jsonl\",\"version\":1,\"scope\":{\"namespace\":\"u\",\"descendants\":true},\"exported_at\":\"2026-01-02T03:04:05Z\",\"counts\":{\"memories\":1,\"recall_stats\":0,\"pages\":1,\"entities\":1,\"relations\":0}}\n\
        {\"type\":\"memory\",\"id\":\"m1\",\"namespace\":\"u\",\"content\":\"likes tea\",\"kind\":\"semantic\",\"importance\":0.5,\"metadata\":{},\"tags\":[],\"source\":null,\"credibility\":1.0,\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\",\"last_accessed\":null,\"access_count\":0}\n\
        {\"type\":\"page\",\"id\":\"p\",\"namespace\":\"u\",\"title\":\"Tea\",\"summary\":\"\",\"content\":\"\",\"tags\":[],\"references\":[],\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\"}\n\
        {\"type\":\"entity\",\"id\":\"e\",\"namespace\":\"u\",\"name\":\"Tea\",\"entity_type\":\"drink\",\"description\":\"\",\"tags\":[]}\n";
    let dump = read(text).unwrap();
    assert_eq!(dump.header.version, 1);
    let Record::Memory(item) = &dump.records[0] else {
        panic!("{:?}", dump.records)
    };
    assert_eq!(item.content, "likes tea");
    assert!(item.fact_key.is_none() && item.ended.is_none() && item.supersedes.is_empty());
    let Record::Page(page) = &dump.records[1] else {
        panic!("{:?}", dump.records)
    };
    assert_eq!((page.access_count, page.last_accessed), (0, None));
    let Record::Entity(entity) = &dump.records[2] else {
        panic!("{:?}", dump.records)
    };
    assert_eq!(
        (entity.created_at, entity.access_count, entity.last_accessed),
        (None, 0, None)
    );
    assert_eq!(entity.last_active(), None);
}

/// The spool of an export: in a file of the temporary directory, removed once copied out or
/// dropped; in memory where no file can be made. Either way the lines come out as put.
#[test]
fn the_spool_keeps_its_lines_and_leaves_no_file() {
    let dir = std::env::temp_dir().join(format!("agent-memory-spool-{}", crate::new_id()));
    std::fs::create_dir(&dir).unwrap();
    let files = |dir: &std::path::Path| std::fs::read_dir(dir).map_or(0, |entries| entries.count());
    let (_, records) = sample();
    // On Unix the spool's file has no name once open: nothing to see, nothing left behind.
    let named = usize::from(!cfg!(unix));
    for (place, in_a_file) in [(dir.clone(), true), (dir.join("missing"), false)] {
        let mut spool = Spool::create_in(&place);
        assert_eq!(matches!(spool.sink, Sink::File(..)), in_a_file);
        for record in &records {
            spool.put(record).unwrap();
        }
        let visible = if in_a_file { named } else { 0 };
        assert_eq!(files(&place), visible, "{}", place.display());
        let mut out = Vec::new();
        spool.copy_to(&mut out).unwrap();
        assert_eq!(files(&place), 0, "copied out, the file is gone");
        let lines: Vec<Record> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines, records);
        assert_eq!(spool.counts.total(), records.len());
    }
    let mut dropped = Spool::create_in(&dir);
    dropped.put(&records[0]).unwrap();
    assert_eq!(files(&dir), named);
    drop(dropped);
    assert_eq!(files(&dir), 0, "an export that fails leaves no file");
    std::fs::remove_dir(&dir).unwrap();
}
