//! The HTTP API of `agent-memory serve`, end to end, on SQLite (and on PostgreSQL when
//! AGENT_MEMORY_TEST_POSTGRES_URL is set, each test in its own schema).

use proptest::prelude::*;
use serde_json::json;

use proptest::test_runner::{Config, TestRunner};

use crate::support::{
    ADMIN_KEY, DropSchema, Server, TempDir, backends, command, request, run_json,
};

#[test]
fn the_api_end_to_end() {
    let dir = TempDir::new("http");
    for (backend, store) in backends(&dir, "api") {
        let server = Server::start(&dir, &store, &[]);
        let _schema = DropSchema(store.clone());
        api_scenario(&server, &backend);
        assert_eq!(server.stop(), Some(0), "{backend}: a clean stop");
    }
}

fn api_scenario(server: &Server, backend: &str) {
    let (status, health) = server.call("GET", "/healthz", None, None);
    assert_eq!((status, &health["status"]), (200, &json!("ok")));
    assert_eq!(server.call("GET", "/readyz", None, None).0, 200);

    // No key, an unknown key, a tenant key on the admin routes.
    let (status, body) = server.call("POST", "/v1/recall", None, Some(json!({"query": "x"})));
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["kind"], "unauthorized");
    assert_eq!(
        server.call("GET", "/v1/stats", Some("am_nope"), None).0,
        401
    );
    let key = server.key_for("acme");
    assert_eq!(server.call("GET", "/v1/keys", Some(&key), None).0, 403);

    // Remember one, then a batch; a bad batch changes nothing.
    let (status, one) = server.call(
        "POST",
        "/v1/memories",
        Some(&key),
        Some(json!({"text": "The deploy runs on Tuesdays", "kind": "semantic", "tags": ["ops"]})),
    );
    assert_eq!(status, 201, "{backend}: {one}");
    assert_eq!(one["namespace"], "acme");
    let id = one["id"].as_str().expect("id").to_owned();
    let (status, batch) = server.call(
        "POST",
        "/v1/memories/batch",
        Some(&key),
        Some(json!({"memories": [
            {"text": "Alice owns the billing service", "namespace": "acme/team-a"},
            {"text": "Bob owns the search service"}
        ]})),
    );
    assert_eq!(status, 201, "{batch}");
    assert_eq!(batch["memories"].as_array().map(Vec::len), Some(2));
    let (status, refused) = server.call(
        "POST",
        "/v1/memories/batch",
        Some(&key),
        Some(json!({"memories": [{"text": "fine"}, {"text": "bad", "importance": 7}]})),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["kind"], "invalid_input");
    assert_eq!(refused["error"]["field"], "importance", "{refused}");

    // Recall with the breakdown, context, get, list with paging.
    let (status, found) = server.call(
        "POST",
        "/v1/recall",
        Some(&key),
        Some(json!({"query": "billing", "explain": true})),
    );
    assert_eq!(status, 200, "{found}");
    assert!(
        found["results"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Alice")),
        "{found}"
    );
    assert!(found["results"][0]["explanation"]["signals"].is_array());
    let (status, context) = server.call(
        "POST",
        "/v1/context",
        Some(&key),
        Some(json!({"query": "deploy day", "max_tokens": 100})),
    );
    assert_eq!(status, 200);
    assert!(
        context["context"]
            .as_str()
            .is_some_and(|c| c.contains("Tuesdays")),
        "{context}"
    );
    let (status, got) = server.call("GET", &format!("/v1/memories/{id}"), Some(&key), None);
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["tags"], json!(["ops"]));
    let (status, first) = server.call("GET", "/v1/memories?limit=2", Some(&key), None);
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["items"].as_array().map(Vec::len), Some(2));
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let (_, second) = server.call(
        "GET",
        &format!("/v1/memories?limit=2&cursor={cursor}"),
        Some(&key),
        None,
    );
    assert_eq!(
        second["items"].as_array().map(Vec::len),
        Some(1),
        "{second}"
    );
    assert!(second.get("next_cursor").is_none());

    // Another tenant's namespace is forbidden; a sibling with a common prefix too.
    for namespace in ["other", "acme-2"] {
        let (status, body) = server.call(
            "POST",
            "/v1/recall",
            Some(&key),
            Some(json!({"query": "billing", "namespace": namespace})),
        );
        assert_eq!(status, 403, "{namespace}: {body}");
        assert_eq!(body["error"]["kind"], "forbidden");
    }

    // Pages and the graph.
    let (status, page) = server.call(
        "PUT",
        "/v1/pages/runbook",
        Some(&key),
        Some(json!({"title": "Deploy runbook", "summary": "How to deploy", "tags": ["ops"]})),
    );
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        server.call("GET", "/v1/pages", Some(&key), None).1["items"][0]["id"],
        "runbook"
    );
    // What links here: a page citing the runbook is listed on it.
    let (status, citing) = server.call(
        "PUT",
        "/v1/pages/release",
        Some(&key),
        Some(json!({"title": "Release checklist", "references": ["runbook"]})),
    );
    assert_eq!(status, 200, "{citing}");
    let (status, runbook) = server.call("GET", "/v1/pages/runbook", Some(&key), None);
    assert_eq!(status, 200, "{runbook}");
    assert_eq!(runbook["referrers"], json!(["release"]), "{runbook}");
    assert_eq!(citing["referrers"], json!([]), "{citing}");
    // A page and an entity go to the namespace the query names, as their reads take it (the
    // writes had ignored it and used the key's own); one namespace written two ways is one.
    let (status, page) = server.call(
        "PUT",
        "/v1/pages/team-notes?namespace=acme/team",
        Some(&key),
        Some(json!({"title": "Team notes"})),
    );
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["namespace"], "acme/team", "{page}");
    let (status, entity) = server.call(
        "POST",
        "/v1/graph/entities?namespace=acme/team",
        Some(&key),
        Some(json!({"id": "team", "name": "Team", "entity_type": "group"})),
    );
    assert_eq!(status, 200, "{entity}");
    assert_eq!(entity["namespace"], "acme/team", "{entity}");
    let (status, same) = server.call(
        "PUT",
        "/v1/pages/team-notes?namespace=acme/team",
        Some(&key),
        Some(json!({"title": "Team notes", "namespace": "acme/team/"})),
    );
    assert_eq!(status, 200, "{same}");
    let (status, two) = server.call(
        "PUT",
        "/v1/pages/team-notes?namespace=acme/team",
        Some(&key),
        Some(json!({"title": "Team notes", "namespace": "acme/other"})),
    );
    assert_eq!(status, 400, "two namespaces are refused: {two}");
    for path in [
        "/v1/pages/team-notes?namespace=acme/team",
        "/v1/graph/entities/team?namespace=acme/team",
    ] {
        let (status, _) = server.call("DELETE", path, Some(&key), None);
        assert_eq!(status, 200, "{path}");
    }
    // The index a page at a time, by title: a page deleted between two pages does not push
    // the next one off (an offset would skip the release checklist).
    let (status, draft) = server.call(
        "PUT",
        "/v1/pages/draft",
        Some(&key),
        Some(json!({"title": "Draft notes"})),
    );
    assert_eq!(status, 200, "{draft}");
    let (_, first) = server.call("GET", "/v1/pages?limit=2", Some(&key), None);
    assert_eq!(first["items"][0]["id"], "runbook", "{first}");
    assert_eq!(first["items"][1]["id"], "draft", "{first}");
    let cursor = first["next_cursor"].as_str().expect("a next page");
    let (status, _) = server.call("DELETE", "/v1/pages/draft", Some(&key), None);
    assert_eq!(status, 200);
    let (_, rest) = server.call(
        "GET",
        &format!("/v1/pages?limit=2&cursor={cursor}"),
        Some(&key),
        None,
    );
    assert_eq!(rest["items"][0]["id"], "release", "{rest}");
    assert_eq!(rest["items"].as_array().map(Vec::len), Some(1), "{rest}");
    assert!(rest.get("next_cursor").is_none(), "{rest}");
    let (status, bad) = server.call("GET", "/v1/pages?cursor=2", Some(&key), None);
    assert_eq!(
        (status, &bad["error"]["field"]),
        (400, &json!("cursor")),
        "{bad}"
    );
    assert_eq!(
        server
            .call("DELETE", "/v1/pages/release", Some(&key), None)
            .0,
        200
    );
    let (_, runbook) = server.call("GET", "/v1/pages/runbook", Some(&key), None);
    assert_eq!(
        runbook["referrers"],
        json!([]),
        "a deleted page links nowhere: {runbook}"
    );
    for (id, name, attributes) in [
        ("alice", "Alice", json!({"team": "billing", "since": 2021})),
        ("billing", "Billing", json!({})),
    ] {
        let (status, body) = server.call(
            "POST",
            "/v1/graph/entities",
            Some(&key),
            Some(json!({"id": id, "name": name, "entity_type": "thing", "attributes": attributes})),
        );
        assert_eq!(status, 200, "{body}");
    }
    let (status, bad) = server.call(
        "POST",
        "/v1/graph/entities",
        Some(&key),
        Some(json!({"id": "x", "name": "X", "entity_type": "thing", "attributes": [1]})),
    );
    assert_eq!(status, 400, "attributes that are not an object: {bad}");
    assert_eq!(bad["error"]["field"], "attributes", "{bad}");
    let relation = json!({"source_id": "alice", "target_id": "billing", "relation_type": "owns",
                          "attributes": {"since": "2021-03"}});
    assert_eq!(
        server
            .call(
                "POST",
                "/v1/graph/relations",
                Some(&key),
                Some(relation.clone())
            )
            .0,
        200
    );
    let (status, bad) = server.call(
        "POST",
        "/v1/graph/relations",
        Some(&key),
        Some(json!({"source_id": "alice", "target_id": "nobody", "relation_type": "owns"})),
    );
    assert_eq!(status, 404, "a relation to a missing entity: {bad}");
    assert_eq!(bad["error"]["kind"], "not_found", "{bad}");
    let (_, detail) = server.call("GET", "/v1/graph/entities/alice", Some(&key), None);
    assert_eq!(detail["relations"][0]["target_id"], "billing", "{detail}");
    assert_eq!(
        detail["entity"]["attributes"],
        json!({"team": "billing", "since": 2021}),
        "{detail}"
    );
    assert_eq!(
        detail["relations"][0]["attributes"],
        json!({"since": "2021-03"}),
        "{detail}"
    );
    // The neighbourhood: the entities reached with the relations that lead there, and as text.
    let (status, related) = server.call(
        "GET",
        "/v1/graph/entities/alice/related?depth=1",
        Some(&key),
        None,
    );
    assert_eq!(status, 200, "{related}");
    assert_eq!(related["items"][0]["entity"]["id"], "billing", "{related}");
    assert_eq!(related["items"][0]["hops"], 1, "{related}");
    assert_eq!(
        related["items"][0]["path"][0]["attributes"],
        json!({"since": "2021-03"}),
        "{related}"
    );
    let context = related["context"].as_str().unwrap_or_default();
    assert!(
        context.contains("[thing] Alice (since: 2021; team: billing)")
            && context.contains("  -- owns (since: 2021-03) --> Billing"),
        "{related}"
    );
    for (query, status_wanted, field) in [
        (
            "/v1/graph/entities/alice/related?depth=9",
            400,
            Some("depth"),
        ),
        (
            "/v1/graph/entities/alice/related?limit=0",
            400,
            Some("limit"),
        ),
        ("/v1/graph/entities/nobody/related", 404, None),
    ] {
        let (status, body) = server.call("GET", query, Some(&key), None);
        assert_eq!(status, status_wanted, "{query}: {body}");
        if let Some(field) = field {
            assert_eq!(body["error"]["field"], field, "{body}");
        }
    }
    assert_eq!(
        server
            .call("GET", "/v1/graph/relations", Some(&key), None)
            .1["items"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        server
            .call(
                "POST",
                "/v1/graph/relations/delete",
                Some(&key),
                Some(relation.clone())
            )
            .0,
        200
    );
    assert_eq!(
        server
            .call(
                "POST",
                "/v1/graph/relations/delete",
                Some(&key),
                Some(relation)
            )
            .0,
        404
    );
    let (_, stats) = server.call("GET", "/v1/stats", Some(&key), None);
    assert_eq!(
        (
            stats["total"].as_u64(),
            stats["pages"].as_u64(),
            stats["entities"].as_u64()
        ),
        (Some(3), Some(1), Some(2)),
        "{stats}"
    );

    // Forget one, then by scope; not found after.
    assert_eq!(
        server
            .call("DELETE", &format!("/v1/memories/{id}"), Some(&key), None)
            .0,
        200
    );
    let (status, gone) = server.call("DELETE", &format!("/v1/memories/{id}"), Some(&key), None);
    assert_eq!(status, 404);
    assert_eq!(gone["error"]["kind"], "not_found");
    let (status, forgot) = server.call(
        "POST",
        "/v1/memories/forget",
        Some(&key),
        Some(json!({"namespace": "acme/team-a"})),
    );
    assert_eq!(
        (status, forgot["forgotten"].as_u64()),
        (200, Some(1)),
        "{forgot}"
    );

    // Malformed bodies are structured errors; so are unknown routes.
    let (status, body) = server.call("POST", "/v1/recall", Some(&key), Some(json!({"qery": "x"})));
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["kind"], "invalid_input");
    let (status, body) = server.raw("POST", "/v1/recall", Some(&key), Some("{not json"));
    assert_eq!(status, 400, "{body}");
    assert_eq!(server.call("GET", "/v1/nothing", Some(&key), None).0, 404);

    // Keys: list without secrets, revoke.
    let (_, keys) = server.call("GET", "/v1/keys", Some(ADMIN_KEY), None);
    let listed = keys["keys"].as_array().expect("keys");
    assert!(listed.iter().all(|k| k.get("key").is_none()));
    let key_id = listed
        .iter()
        .find(|k| k["namespace"] == "acme")
        .and_then(|k| k["id"].as_str())
        .expect("acme key")
        .to_owned();
    assert_eq!(
        server
            .call(
                "DELETE",
                &format!("/v1/keys/{key_id}"),
                Some(ADMIN_KEY),
                None
            )
            .0,
        200
    );
    assert_eq!(
        server.call("GET", "/v1/stats", Some(&key), None).0,
        401,
        "a revoked key"
    );

    // The OpenAPI document and the metrics.
    let (status, doc) = server.call("GET", "/openapi.json", None, None);
    assert_eq!(status, 200);
    assert!(doc["paths"]["/v1/recall"]["post"].is_object(), "{doc}");
    // Every operation that states its client errors states the server's too, in the same
    // error body.
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            // A path parameter is one the path names; every other is in the query.
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                let name = parameter["name"].as_str().expect("a parameter's name");
                assert_eq!(
                    parameter["in"] == "path",
                    path.contains(&format!("{{{name}}}")),
                    "{method} {path}: {parameter}"
                );
            }
            let responses = &operation["responses"];
            if responses.get("4XX").is_some() {
                assert_eq!(
                    responses["5XX"]["content"], responses["4XX"]["content"],
                    "{method} {path}"
                );
            }
        }
    }
    // The schema states the library's limits, so a request it admits is not refused for
    // its length (the entity's and the relation's had none).
    let schemas = &doc["components"]["schemas"];
    for (schema, field, most) in [
        ("EntityRequest", "name", 1024),
        ("EntityRequest", "entity_type", 128),
        ("EntityRequest", "description", 65536),
        ("RelationRequest", "relation_type", 128),
    ] {
        assert_eq!(
            schemas[schema]["properties"][field]["maxLength"], most,
            "{schema}.{field}: {}",
            schemas[schema]
        );
    }
    let (status, metrics) = server.raw("GET", "/metrics", None, None);
    assert_eq!(status, 200);
    assert!(
        metrics.contains(
            "agent_memory_http_requests_total{method=\"POST\",route=\"/v1/recall\",status=\"200\"}"
        ),
        "{metrics}"
    );
    assert!(metrics.contains("agent_memory_http_request_duration_seconds_bucket"));

    // A dialogue: each turn dated and linked to its neighbours; a bad turn changes nothing.
    let key = server.key_for("acme");
    let (status, refused) = server.call(
        "POST",
        "/v1/dialogue",
        Some(&key),
        Some(json!({"namespace": "acme/chat", "turns": [
            {"speaker": "user", "text": "fine"},
            {"speaker": "bot", "role": "robot", "text": "no"}
        ]})),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "role", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("turns[1]")),
        "{refused}"
    );
    let (status, chat) = server.call(
        "POST",
        "/v1/dialogue",
        Some(&key),
        Some(json!({"namespace": "acme/chat", "turns": [
            {"speaker": "user", "role": "user", "text": "How long have you been married?",
             "at": "2023-05-08T12:00:00Z", "session": "1", "id": "q"},
            {"speaker": "assistant", "role": "assistant", "text": "Five years this June!",
             "at": "2023-05-08T12:00:05Z", "session": "1", "id": "a"}
        ]})),
    );
    assert_eq!(status, 201, "{chat}");
    assert_eq!(chat["memories"].as_array().map(Vec::len), Some(2), "{chat}");
    let (status, answer) = server.call(
        "GET",
        "/v1/memories/a?namespace=acme/chat",
        Some(&key),
        None,
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["content"], "[8 May 2023] assistant: Five years this June!",
        "{answer}"
    );
    assert_eq!(answer["metadata"]["role"], "assistant", "{answer}");
    assert!(
        answer
            .to_string()
            .contains("user: How long have you been married?"),
        "the turn before it as context: {answer}"
    );
}

/// A recall's metadata conditions keep the memories whose metadata holds them, compared as
/// JSON, and leave pages out; conditions that are not an object, or too many, are refused
/// by name.
/// Reads `path` three records a page, following each page's `next_cursor`, and calls
/// `between` after every page but the last; `describe` names each record read, in order.
fn read_pages(
    server: &Server,
    key: &str,
    path: &str,
    describe: impl Fn(&serde_json::Value) -> String,
    between: &mut dyn FnMut(),
) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(at) => format!("{path}?limit=3&cursor={at}"),
            None => format!("{path}?limit=3"),
        };
        let (status, page) = server.call("GET", &url, Some(key), None);
        assert_eq!(status, 200, "{url}: {page}");
        seen.extend(
            page["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(&describe),
        );
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() || seen.len() > 50 {
            return seen;
        }
        between();
    }
}

/// Asserts that each of `cursors` is refused by name on `path`.
fn refuses_cursors(server: &Server, key: &str, path: &str, cursors: &[&str]) {
    for bad in cursors {
        let (status, body) = server.call("GET", &format!("{path}?cursor={bad}"), Some(key), None);
        assert_eq!(status, 400, "{path} {bad}: {body}");
        assert_eq!(body["error"]["field"], "cursor", "{path} {bad}: {body}");
    }
}

/// Calls `first` the first time it is called, then nothing.
fn once(first: impl FnOnce()) -> impl FnMut() {
    let mut first = Some(first);
    move || {
        if let Some(first) = first.take() {
            first();
        }
    }
}

fn id_of(item: &serde_json::Value) -> String {
    item["id"].as_str().unwrap_or_default().to_owned()
}

/// A listing read a page at a time covers every memory once, even when memories are
/// added and forgotten between its pages; a cursor the server did not give is refused by
/// name.
#[test]
fn pages_of_a_listing_survive_writes_between_them() {
    let dir = TempDir::new("list-pages");
    for (backend, store) in backends(&dir, "pages") {
        let server = Server::start(&dir, &store, &[]);
        let _schema = DropSchema(store.clone());
        let key = server.key_for("acme");
        let texts: Vec<serde_json::Value> = (0..7)
            .map(|n| json!({"text": format!("note number {n}")}))
            .collect();
        let (status, body) = server.call(
            "POST",
            "/v1/memories/batch",
            Some(&key),
            Some(json!({ "memories": texts })),
        );
        assert_eq!(status, 201, "{backend}: {body}");
        let (_, whole) = server.call("GET", "/v1/memories?limit=100", Some(&key), None);
        let whole: Vec<String> = whole["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(id_of)
            .collect();
        assert_eq!(whole.len(), 7, "{backend}");

        // After the first page: the first memory is forgotten (an offset would now skip
        // one), and a new one is added (it comes last).
        let mut added = String::new();
        let seen = read_pages(
            &server,
            &key,
            "/v1/memories",
            id_of,
            &mut once(|| {
                let (status, _) = server.call(
                    "DELETE",
                    &format!("/v1/memories/{}", whole[0]),
                    Some(&key),
                    None,
                );
                assert_eq!(status, 200);
                let (status, body) = server.call(
                    "POST",
                    "/v1/memories",
                    Some(&key),
                    Some(json!({"text": "a note added between pages"})),
                );
                assert_eq!(status, 201, "{body}");
                added = id_of(&body);
            }),
        );
        let mut expected = whole.clone();
        expected.push(added);
        assert_eq!(seen, expected, "{backend}: every memory once, in order");
        refuses_cursors(&server, &key, "/v1/memories", &["3", "zz", "7b7d"]);
        assert_eq!(server.stop(), Some(0), "{backend}: a clean stop");
    }
}

/// The graph's entities and relations read a page at a time: every one once, in order,
/// with an entity removed and one added between pages; a cursor of another kind refused.
#[test]
fn pages_of_the_graph_survive_writes_between_them() {
    let dir = TempDir::new("graph-pages");
    for (backend, store) in backends(&dir, "gpages") {
        let server = Server::start(&dir, &store, &[]);
        let _schema = DropSchema(store.clone());
        let key = server.key_for("acme");
        let person = |id: &str| {
            let (status, body) = server.call(
                "POST",
                "/v1/graph/entities",
                Some(&key),
                Some(json!({"id": id, "name": id, "entity_type": "person"})),
            );
            assert_eq!(status, 200, "{body}");
        };
        for id in ["ann", "bea", "cal", "dov", "eli", "fay", "gus"] {
            person(id);
        }
        for (source, target) in [
            ("ann", "bea"),
            ("ann", "cal"),
            ("bea", "cal"),
            ("cal", "ann"),
        ] {
            for relation_type in ["knows", "helps"] {
                let (status, body) = server.call(
                    "POST",
                    "/v1/graph/relations",
                    Some(&key),
                    Some(json!({"source_id": source, "target_id": target,
                                "relation_type": relation_type})),
                );
                assert_eq!(status, 200, "{backend}: {body}");
            }
        }
        let relations = read_pages(
            &server,
            &key,
            "/v1/graph/relations",
            |r| {
                ["source_id", "relation_type", "target_id"]
                    .map(|field| r[field].as_str().unwrap_or_default())
                    .join(" ")
            },
            &mut || {},
        );
        assert_eq!(
            relations,
            [
                "ann helps bea",
                "ann helps cal",
                "ann knows bea",
                "ann knows cal",
                "bea helps cal",
                "bea knows cal",
                "cal helps ann",
                "cal knows ann",
            ],
            "{backend}"
        );
        // After the first page (ann, bea, cal): the first entity removed, one added.
        let entities = read_pages(
            &server,
            &key,
            "/v1/graph/entities",
            id_of,
            &mut once(|| {
                let (status, _) = server.call("DELETE", "/v1/graph/entities/ann", Some(&key), None);
                assert_eq!(status, 200);
                person("hal");
            }),
        );
        assert_eq!(
            entities,
            ["ann", "bea", "cal", "dov", "eli", "fay", "gus", "hal"],
            "{backend}: every entity once, in order"
        );
        // A memory listing's cursor names no entity.
        for text in ["one note", "another note"] {
            let (status, _) = server.call(
                "POST",
                "/v1/memories",
                Some(&key),
                Some(json!({ "text": text })),
            );
            assert_eq!(status, 201, "{backend}");
        }
        let (_, memories) = server.call("GET", "/v1/memories?limit=1", Some(&key), None);
        let wrong = memories["next_cursor"].as_str().expect("a memory cursor");
        refuses_cursors(&server, &key, "/v1/graph/entities", &["3", wrong]);
        refuses_cursors(&server, &key, "/v1/graph/relations", &["3", wrong]);
        assert_eq!(server.stop(), Some(0), "{backend}: a clean stop");
    }
}

#[test]
fn a_recall_keeps_the_memories_whose_metadata_matches() {
    let dir = TempDir::new("recall-metadata");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let server = Server::start(&dir, &store, &[]);
    let key = server.key_for("acme");
    for (text, metadata) in [
        (
            "Ann's invoice is due on Friday",
            json!({"user": "ann", "tier": 1}),
        ),
        (
            "Bob's invoice is due on Monday",
            json!({"user": "bob", "tier": "1"}),
        ),
    ] {
        let (status, body) = server.call(
            "POST",
            "/v1/memories",
            Some(&key),
            Some(json!({"text": text, "metadata": metadata})),
        );
        assert_eq!(status, 201, "{body}");
    }
    let (status, page) = server.call(
        "PUT",
        "/v1/pages/invoices",
        Some(&key),
        Some(json!({"title": "Invoices", "summary": "When an invoice is due"})),
    );
    assert_eq!(status, 200, "{page}");
    let recall =
        |body: serde_json::Value| server.call("POST", "/v1/recall", Some(&key), Some(body));
    let texts = |found: &serde_json::Value| -> Vec<String> {
        found["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|hit| hit["text"].as_str().map(str::to_owned))
            .collect()
    };
    let (status, all) = recall(json!({"query": "invoice due"}));
    assert_eq!(status, 200, "{all}");
    assert_eq!(texts(&all).len(), 3, "both memories and the page: {all}");
    for (metadata, expected) in [
        (
            json!({"user": "ann"}),
            vec!["Ann's invoice is due on Friday"],
        ),
        (json!({"tier": "1"}), vec!["Bob's invoice is due on Monday"]),
        (json!({"user": "ann", "tier": "1"}), vec![]),
        (json!({}), vec![]),
    ] {
        let (status, found) = recall(json!({"query": "invoice due", "metadata": metadata}));
        assert_eq!(status, 200, "{found}");
        if metadata == json!({}) {
            assert_eq!(texts(&found).len(), 3, "no condition: {found}");
        } else {
            assert_eq!(texts(&found), expected, "{metadata}: {found}");
        }
    }
    // The listing takes the same conditions, as a URL-encoded JSON object.
    let (status, listed) = server.call(
        "GET",
        "/v1/memories?metadata=%7B%22user%22%3A%22ann%22%7D",
        Some(&key),
        None,
    );
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["items"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    assert_eq!(listed["items"][0]["metadata"]["user"], "ann", "{listed}");
    let (status, refused) = server.call("GET", "/v1/memories?metadata=%5B1%5D", Some(&key), None);
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "metadata", "{refused}");
    let many: serde_json::Map<String, serde_json::Value> =
        (0..40).map(|n| (format!("k{n}"), json!(n))).collect();
    for bad in [
        json!(["user"]),
        json!("ann"),
        serde_json::Value::Object(many),
    ] {
        let (status, body) = recall(json!({"query": "invoice", "metadata": bad}));
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["field"], "metadata", "{body}");
    }
}

#[test]
fn limits_are_enforced() {
    let dir = TempDir::new("limits");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let server = Server::start(&dir, &store, &["--max-body-bytes", "1024"]);
    let key = server.key_for("acme");
    let big = "x".repeat(4096);
    let (status, body) = server.call(
        "POST",
        "/v1/memories",
        Some(&key),
        Some(json!({"text": big})),
    );
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["kind"], "payload_too_large");
    let (status, body) = server.call("GET", "/v1/memories?limit=100000", Some(&key), None);
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["field"], "limit");
}

/// A body declared (`Content-Length`) larger than `--max-body-bytes` is refused at once with
/// 413, on the API and on `/mcp`, without the server reading it or telling the client to send
/// it (`100 Continue`), and the connection is closed: before, the server waited for the body
/// until its deadline (504) or read the limit's worth of it first.
#[test]
fn a_body_declared_too_large_is_refused_before_it_is_read() {
    use std::io::Write;
    let dir = TempDir::new("declared-length");
    let store = vec!["--store".to_owned(), "memory:".to_owned()];
    let server = Server::start(&dir, &store, &["--no-auth", "--max-body-bytes", "1024"]);
    for path in ["/v1/memories", "/mcp"] {
        for expect in ["", "Expect: 100-continue\r\n"] {
            let mut stream = std::net::TcpStream::connect(&server.address).expect("connect");
            // One byte of the 3,000,000 declared is sent: the rest never comes.
            stream
                .write_all(
                    format!(
                        "POST {path} HTTP/1.1\r\nHost: localhost\r\n\
                         Content-Type: application/json\r\n\
                         Accept: application/json, text/event-stream\r\n\
                         Content-Length: 3000000\r\n{expect}\r\n"
                    )
                    .as_bytes(),
                )
                .expect("a head");
            let answered = read_until_closed(&mut stream, std::time::Duration::from_secs(10))
                .unwrap_or_else(|kept| {
                    panic!(
                        "{path} {expect:?}: answered and closed at once, not kept waiting: {}",
                        String::from_utf8_lossy(&kept)
                    )
                });
            let answered = String::from_utf8_lossy(&answered);
            assert!(
                answered.starts_with("HTTP/1.1 413"),
                "{path} {expect:?}: {answered}"
            );
            assert!(
                answered.contains("\"payload_too_large\""),
                "{path} {expect:?}: {answered}"
            );
            assert!(!answered.contains("100 Continue"), "{path}: {answered}");
        }
    }
    // A body within the limit still goes through.
    let (status, body) = server.call(
        "POST",
        "/v1/memories",
        None,
        Some(json!({"text": "small", "namespace": "acme"})),
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(server.stop(), Some(0));
}

/// `no_auth = true` in the configuration file is overridden by `AGENT_MEMORY_NO_AUTH` and
/// by `--no-auth=BOOL` either way (flags, then the environment, then the file); a value
/// that is no boolean is refused, naming the variable.
#[test]
fn no_auth_follows_flag_then_environment_then_file() {
    let dir = TempDir::new("no-auth-precedence");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let config = dir.path().join("config").join("agent-memory");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("config.toml"), "no_auth = true\n").expect("write");
    for (env, flags, open) in [
        (None, &[][..], true),
        (Some("false"), &[][..], false),
        (Some("0"), &[][..], false),
        (Some("No"), &[][..], false),
        (None, &["--no-auth=false"][..], false),
        (Some("false"), &["--no-auth"][..], true),
        (Some("yes"), &["--no-auth=off"][..], false),
    ] {
        let env: Vec<(&str, &str)> = env
            .map(|value| ("AGENT_MEMORY_NO_AUTH", value))
            .into_iter()
            .collect();
        let server = Server::start_with_env(&dir, &store, flags, &env);
        let (status, text) = server.raw("GET", "/v1/memories", None, None);
        let expected = if open { 200 } else { 401 };
        assert_eq!(status, expected, "{env:?} {flags:?}: {text}");
    }
    let output = command(&dir)
        .env("AGENT_MEMORY_NO_AUTH", "maybe")
        .args(&store)
        .args(["--json", "serve", "--listen", "127.0.0.1:0"])
        .output()
        .expect("serve");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let refused: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("AGENT_MEMORY_NO_AUTH"), "{refused}");
    assert!(message.contains("true or false"), "{refused}");
    // The file's `no_auth` still listens on loopback only.
    let (code, refused) = run_json(&dir, &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(code, 3, "{refused}");
    assert_eq!(refused["error"]["field"], "no_auth", "{refused}");
}

/// Without keys, the server answers only requests addressed to an IP address or to
/// localhost: a page whose domain is made to resolve to it (DNS rebinding) is refused, on
/// the API and on MCP alike. With keys, any name may address it.
#[test]
fn a_server_without_keys_refuses_other_hosts() {
    let dir = TempDir::new("hosts");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let open = Server::start(&dir, &store, &["--no-auth"]);
    let port = open
        .address
        .rsplit_once(':')
        .map(|(_, port)| port)
        .unwrap_or_default();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "LOCALHOST".to_owned(),
        format!("[::1]:{port}"),
        "192.168.1.20".to_owned(),
    ] {
        let (status, _, text) =
            open.raw_with_headers("GET", "/v1/memories", None, &[("Host", host.clone())], None);
        assert_eq!(status, 200, "{host}: {text}");
    }
    for host in [
        format!("attacker.example:{port}"),
        "localhost.attacker.example".to_owned(),
        "127.0.0.1.nip.io".to_owned(),
    ] {
        for path in ["/v1/memories", "/mcp"] {
            let (status, _, text) =
                open.raw_with_headers("GET", path, None, &[("Host", host.clone())], None);
            assert_eq!(status, 403, "{host} {path}: {text}");
            let refused: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            assert_eq!(refused["error"]["kind"], "forbidden", "{refused}");
        }
    }
    // A Host that is not text, a second Host naming another host, or a request target
    // naming one, is refused too: each was let through.
    let refusal = |head: &[u8]| {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(&open.address).expect("connect");
        stream.write_all(head).expect("a request");
        let answered = read_until_closed(&mut stream, std::time::Duration::from_secs(10))
            .expect("answered and closed");
        String::from_utf8_lossy(&answered).into_owned()
    };
    for (head, status, kind) in [
        (
            &b"GET /v1/memories HTTP/1.1\r\nHost: \xffattacker.example\r\nConnection: close\r\n\r\n"[..],
            "403",
            "forbidden",
        ),
        (
            b"GET /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
            "400",
            "invalid_input",
        ),
        (
            b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
            "400",
            "invalid_input",
        ),
        (
            b"GET http://attacker.example/v1/memories HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            "403",
            "forbidden",
        ),
    ] {
        let answered = refusal(head);
        assert!(
            answered.starts_with(&format!("HTTP/1.1 {status}")),
            "{}: {answered}",
            String::from_utf8_lossy(head)
        );
        assert!(answered.contains(&format!("\"{kind}\"")), "{answered}");
    }
    assert!(
        refusal(b"GET http://127.0.0.1/v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .starts_with("HTTP/1.1 200")
    );
    drop(open);
    let keyed = Server::start(&dir, &store, &[]);
    let key = keyed.key_for("acme");
    let (status, _, text) = keyed.raw_with_headers(
        "GET",
        "/v1/memories",
        Some(&key),
        &[("Host", "memory.internal.example".to_owned())],
        None,
    );
    assert_eq!(status, 200, "{text}");
}

/// A connection that never finishes its request does not hold a stop: the server waits for
/// the requests in flight, within their deadline and a second more, then stops (with the
/// statistics written).
#[test]
fn a_stop_is_not_held_by_an_unfinished_request() {
    use std::io::Write;
    let dir = TempDir::new("stalled");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let server = Server::start(&dir, &store, &["--request-timeout-ms", "300"]);
    let mut stalled = std::net::TcpStream::connect(&server.address).expect("connect");
    stalled
        .write_all(b"GET /v1/memories HTTP/1.1\r\nHost: localhost\r\n")
        .expect("half a request");
    stalled.flush().expect("flush");
    let (stopped, code) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = stopped.send(server.stop());
    });
    let code = code
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the server stops though a request never ended");
    assert_eq!(code, Some(0));
    drop(stalled);
}

/// Reads what the server sends on `stream` until it closes it, within `patience`: `Ok` with
/// the bytes when it closed, `Err` with them when it kept it open.
fn read_until_closed(
    stream: &mut std::net::TcpStream,
    patience: std::time::Duration,
) -> Result<Vec<u8>, Vec<u8>> {
    use std::io::Read;
    stream
        .set_read_timeout(Some(patience))
        .expect("read timeout");
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return Ok(received),
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {
                return Ok(received);
            }
            Err(_) => return Err(received),
        }
    }
}

/// A request's head must arrive within the request deadline: a connection sending its
/// headers and never ending them, one sending nothing, and one kept alive after its request
/// and then silent are each closed, not held open for ever.
#[test]
fn a_request_head_must_arrive_within_the_deadline() {
    use std::io::Write;
    let dir = TempDir::new("slow-head");
    let store = vec!["--store".to_owned(), "memory:".to_owned()];
    let server = Server::start(&dir, &store, &["--no-auth", "--request-timeout-ms", "300"]);
    let patience = std::time::Duration::from_secs(20);
    let mut unfinished = std::net::TcpStream::connect(&server.address).expect("connect");
    unfinished
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: a")
        .expect("half a head");
    let mut silent = std::net::TcpStream::connect(&server.address).expect("connect");
    let mut kept = std::net::TcpStream::connect(&server.address).expect("connect");
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("a request");
    assert!(
        read_until_closed(&mut unfinished, patience).is_ok(),
        "a head that never ends is cut off"
    );
    assert!(
        read_until_closed(&mut silent, patience).is_ok(),
        "a connection that sends nothing is closed"
    );
    let answered =
        read_until_closed(&mut kept, patience).expect("an idle kept-alive connection is closed");
    assert!(
        answered.starts_with(b"HTTP/1.1 200"),
        "the request before the silence was answered: {}",
        String::from_utf8_lossy(&answered)
    );
    assert_eq!(server.stop(), Some(0));
}

/// The body of a request to `/mcp` must arrive within the request deadline too: one sent in
/// part and then never finished gets a `timeout` answer, and its connection is let go.
#[test]
fn an_mcp_request_body_must_arrive_within_the_deadline() {
    use std::io::Write;
    let dir = TempDir::new("slow-mcp-body");
    let store = vec!["--store".to_owned(), "memory:".to_owned()];
    let server = Server::start(&dir, &store, &["--no-auth", "--request-timeout-ms", "300"]);
    let mut unfinished = std::net::TcpStream::connect(&server.address).expect("connect");
    unfinished
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
              Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
        )
        .expect("part of a request");
    let answered = read_until_closed(&mut unfinished, std::time::Duration::from_secs(20))
        .expect("the unfinished request is answered and its connection closed");
    let answered = String::from_utf8_lossy(&answered);
    assert!(answered.starts_with("HTTP/1.1 504"), "{answered}");
    assert!(answered.contains("\"timeout\""), "{answered}");
    assert_eq!(server.stop(), Some(0));
}

/// Past `--max-connections`, a new connection waits until one closes, then is served.
#[test]
fn connections_past_the_limit_wait_for_one_to_close() {
    use std::io::Write;
    let dir = TempDir::new("max-connections");
    let store = vec!["--store".to_owned(), "memory:".to_owned()];
    let server = Server::start(&dir, &store, &["--no-auth", "--max-connections", "2"]);
    let request = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";
    // Two connections, each answered once and kept alive: both are open on the server.
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut stream = std::net::TcpStream::connect(&server.address).expect("connect");
        stream.write_all(request).expect("a request");
        let answered = read_until_closed(&mut stream, std::time::Duration::from_millis(500))
            .expect_err("kept alive");
        assert!(answered.starts_with(b"HTTP/1.1 200"));
        open.push(stream);
    }
    let mut third = std::net::TcpStream::connect(&server.address).expect("connect");
    third.write_all(request).expect("a request");
    let waiting = read_until_closed(&mut third, std::time::Duration::from_millis(500))
        .expect_err("kept open");
    assert!(
        waiting.is_empty(),
        "a third connection is not served while two are open"
    );
    drop(open.pop());
    let served =
        read_until_closed(&mut third, std::time::Duration::from_secs(2)).expect_err("kept alive");
    assert!(
        served.starts_with(b"HTTP/1.1 200"),
        "served once one closed: {}",
        String::from_utf8_lossy(&served)
    );
    drop(open);
    drop(third);
    assert_eq!(server.stop(), Some(0));
}

/// The connection limit, the request deadline and the body limit are checked when the server
/// starts, and a server without keys refuses to listen past loopback.
#[test]
fn the_connection_limits_are_checked() {
    let dir = TempDir::new("limits-checked");
    for (flag, value, field) in [
        ("--max-connections", "0", "max_connections"),
        ("--max-connections", "100001", "max_connections"),
        ("--request-timeout-ms", "0", "request_timeout_ms"),
        ("--max-body-bytes", "0", "max_body_bytes"),
    ] {
        let (code, refused) = run_json(
            &dir,
            &["serve", "--no-auth", flag, value, "--listen", "127.0.0.1:0"],
        );
        assert_eq!(code, 3, "{flag} {value}: {refused}");
        assert_eq!(refused["error"]["field"], field, "{refused}");
    }
    // A server without keys listens on loopback only, refused before its store is made
    // (the limits' refusals above come before it too).
    let (code, refused) = run_json(&dir, &["serve", "--no-auth", "--listen", "0.0.0.0:0"]);
    assert_eq!(code, 3, "{refused}");
    assert_eq!(refused["error"]["field"], "no_auth", "{refused}");
    assert!(!dir.path().join("store.db").exists());
}

/// A stop sent as soon as the server says it listens is graceful: the signal handlers are
/// in place before it says so.
#[test]
fn a_stop_right_after_the_start_is_graceful() {
    let dir = TempDir::new("quick-stop");
    let store = vec!["--store".to_owned(), "memory:".to_owned()];
    for _ in 0..5 {
        let server = Server::start(&dir, &store, &["--no-auth"]);
        assert_eq!(server.stop(), Some(0));
    }
}

/// The store arguments of a SQLite file in `dir` and of the in-memory store.
fn sqlite_and_memory(dir: &TempDir) -> [Vec<String>; 2] {
    [
        vec![
            "--store".to_owned(),
            dir.path().join("s.db").to_string_lossy().into_owned(),
        ],
        vec!["--store".to_owned(), "memory:".to_owned()],
    ]
}

/// A page written with `if_updated_at` replaces only the page as it was read: of two edits
/// from one copy, the second gets 409 and the first stays; a page that is not there gets
/// 404 and is not created; a time that is not RFC 3339 is refused by name.
#[test]
fn a_page_edit_from_an_old_copy_is_refused() {
    let dir = TempDir::new("page-precondition");
    for store in sqlite_and_memory(&dir) {
        let server = Server::start(&dir, &store, &[]);
        let key = server.key_for("acme");
        let put = |body: serde_json::Value| {
            server.call("PUT", "/v1/pages/runbook", Some(&key), Some(body))
        };
        let (status, read) = put(json!({"title": "Runbook", "content": "deploy on Tuesdays"}));
        assert_eq!(status, 200, "{read}");
        let read_at = read["updated_at"].clone();
        let (status, first) = put(
            json!({"title": "Runbook", "content": "deploy on Thursdays", "if_updated_at": read_at}),
        );
        assert_eq!(status, 200, "{first}");
        assert_ne!(first["updated_at"], read_at);
        let (status, refused) = put(
            json!({"title": "Runbook", "content": "deploy on Fridays", "if_updated_at": read_at}),
        );
        assert_eq!(status, 409, "{refused}");
        assert_eq!(refused["error"]["kind"], "conflict", "{refused}");
        let (_, now) = server.call("GET", "/v1/pages/runbook", Some(&key), None);
        assert_eq!(now["content"], "deploy on Thursdays", "{now}");
        // From the copy now stored, it is written.
        let (status, second) = put(
            json!({"title": "Runbook", "content": "deploy on Fridays", "if_updated_at": now["updated_at"]}),
        );
        assert_eq!(status, 200, "{second}");
        let (status, missing) = server.call(
            "PUT",
            "/v1/pages/nowhere",
            Some(&key),
            Some(json!({"title": "Nowhere", "if_updated_at": read_at})),
        );
        assert_eq!(status, 404, "{missing}");
        let (status, _) = server.call("GET", "/v1/pages/nowhere", Some(&key), None);
        assert_eq!(status, 404);
        let (status, refused) = put(json!({"title": "Runbook", "if_updated_at": "Tuesday"}));
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["field"], "if_updated_at", "{refused}");
        server.stop();
    }
}

/// A page read shows the first hundred pages citing it, in id order, and says when more
/// cite it; on both stores.
#[test]
fn a_page_read_shows_a_page_of_its_referrers() {
    let dir = TempDir::new("page-referrers");
    for store in sqlite_and_memory(&dir) {
        let server = Server::start(&dir, &store, &[]);
        let key = server.key_for("acme");
        let (status, index) = server.call(
            "PUT",
            "/v1/pages/index",
            Some(&key),
            Some(json!({"title": "Index"})),
        );
        assert_eq!(status, 200, "{index}");
        for n in 0..102 {
            let (status, body) = server.call(
                "PUT",
                &format!("/v1/pages/p{n:03}"),
                Some(&key),
                Some(json!({"title": format!("Page {n}"), "references": ["index"]})),
            );
            assert_eq!(status, 200, "{body}");
        }
        let (status, index) = server.call("GET", "/v1/pages/index", Some(&key), None);
        assert_eq!(status, 200, "{index}");
        let shown = index["referrers"].as_array().expect("referrers");
        assert_eq!(shown.len(), 100, "{index}");
        assert_eq!(shown[0], "p000");
        assert_eq!(shown[99], "p099");
        assert_eq!(index["referrers_truncated"], true, "{index}");
        let (_, cited_once) = server.call("GET", "/v1/pages/p000", Some(&key), None);
        assert_eq!(cited_once["referrers_truncated"], false, "{cited_once}");
        server.stop();
    }
}

/// An entity read shows a page of its relations, and says when it has more; more tags
/// than an entity keeps are refused by name; a write answers with the entity as stored.
#[test]
fn an_entity_read_shows_a_page_of_its_relations() {
    let dir = TempDir::new("entity-relations");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let server = Server::start(&dir, &store, &[]);
    let key = server.key_for("acme");
    for id in ["hub", "spoke"] {
        let (status, body) = server.call(
            "POST",
            "/v1/graph/entities",
            Some(&key),
            Some(json!({"id": id, "name": id, "entity_type": "thing"})),
        );
        assert_eq!(status, 200, "{body}");
    }
    for n in 0..105 {
        let (status, body) = server.call(
            "POST",
            "/v1/graph/relations",
            Some(&key),
            Some(json!({"source_id": "hub", "target_id": "spoke", "relation_type": format!("r{n:03}")})),
        );
        assert_eq!(status, 200, "{body}");
    }
    let (status, detail) = server.call("GET", "/v1/graph/entities/hub", Some(&key), None);
    assert_eq!(status, 200, "{detail}");
    let shown = detail["relations"].as_array().expect("relations");
    assert_eq!(shown.len(), 100, "{detail}");
    assert_eq!(shown[0]["relation_type"], "r000");
    assert_eq!(shown[99]["relation_type"], "r099");
    assert_eq!(detail["relations_truncated"], true);
    let (_, detail) = server.call("GET", "/v1/graph/entities/spoke", Some(&key), None);
    assert_eq!(detail["relations_truncated"], true);
    // A deletion names the relation by its ends and type; its weight and attributes are
    // ignored, not checked.
    let (status, body) = server.call(
        "POST",
        "/v1/graph/relations/delete",
        Some(&key),
        Some(
            json!({"source_id": "hub", "target_id": "spoke", "relation_type": "r000",
                    "weight": 2, "attributes": [1]}),
        ),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["forgotten"], 1, "{body}");
    // An entity keeps eight tags: more are refused by name, not dropped; a write answers
    // with the entity as stored.
    let tags: Vec<String> = (0..12).map(|n| format!("t{n:02}")).collect();
    let (status, refused) = server.call(
        "POST",
        "/v1/graph/entities",
        Some(&key),
        Some(json!({"id": "tagged", "name": "tagged", "entity_type": "thing", "tags": tags})),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "tags", "{refused}");
    let (status, _) = server.call("GET", "/v1/graph/entities/tagged", Some(&key), None);
    assert_eq!(status, 404);
    let (status, written) = server.call(
        "POST",
        "/v1/graph/entities",
        Some(&key),
        Some(
            json!({"id": "tagged", "name": "tagged", "entity_type": "thing",
            "tags": ["Graph DB", "graph-db", "ops"]}),
        ),
    );
    assert_eq!(status, 200, "{written}");
    let (_, read) = server.call("GET", "/v1/graph/entities/tagged", Some(&key), None);
    assert_eq!(written["tags"], json!(["graph-db", "ops"]), "{written}");
    assert_eq!(written["tags"], read["entity"]["tags"], "{read}");
}

/// Every error is JSON in the API's shape, naming the field at fault where there is one:
/// a body's field of the wrong type, an unknown or a missing field, a path segment that is
/// not UTF-8, a method a route does not take. The
/// `Bearer` scheme is read in any case, and a method outside the standard ones is counted
/// under one label in the metrics.
#[test]
fn errors_are_json_and_name_their_field() {
    let dir = TempDir::new("errors");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let server = Server::start(&dir, &store, &[]);
    let key = server.key_for("acme");
    for (body, field) in [
        (json!({"text": "a", "importance": "high"}), "importance"),
        (json!({"txt": "a"}), "txt"),
        (json!({"importance": 0.5}), "text"),
        // The memory's `content` is the `text` the request sends.
        (json!({"text": ""}), "text"),
        (json!({"text": " \n "}), "text"),
    ] {
        let (status, refused) = server.call("POST", "/v1/memories", Some(&key), Some(body));
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["kind"], "invalid_input", "{refused}");
        assert_eq!(refused["error"]["field"], field, "{refused}");
    }
    let (status, refused) = server.call(
        "POST",
        "/v1/memories/batch",
        Some(&key),
        Some(json!({"memories": [{"text": "a"}, {"text": ""}]})),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "text", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|message| message.starts_with("memories[1]: invalid input: text: ")),
        "{refused}"
    );
    // Text that is not JSON where a field's value begins names that field.
    for (body, field) in [
        (r#"{"text": "a\ud800b"}"#, "text"),
        (r#"{"text": "a", "importance": 1e400}"#, "importance"),
        (r#"{"text": "a", "#, "body"),
    ] {
        let (status, text) = server.raw("POST", "/v1/memories", Some(&key), Some(body));
        let refused: serde_json::Value = serde_json::from_str(&text).expect("a JSON error");
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["field"], field, "{body}: {refused}");
    }
    let (status, refused) = server.call("GET", "/v1/memories/%FF", Some(&key), None);
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["kind"], "invalid_input", "{refused}");
    let (status, head, text) =
        server.raw_with_headers("PATCH", "/v1/memories", Some(&key), &[], None);
    assert_eq!(status, 405, "{text}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let refused: serde_json::Value = serde_json::from_str(&text).expect("a JSON error");
    assert_eq!(refused["error"]["kind"], "usage", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("method") && message.contains("GET") && message.contains("POST"),
        "the methods the route takes are named: {refused}"
    );
    let (status, head, text) =
        server.raw_with_headers("DELETE", "/v1/recall", Some(&key), &[], None);
    assert_eq!(status, 405, "{text}");
    assert!(head.to_ascii_lowercase().contains("allow: post"), "{head}");
    let refused: serde_json::Value = serde_json::from_str(&text).expect("a JSON error");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|message| message.ends_with("it takes POST")),
        "{refused}"
    );
    // A body not declared as JSON: 415, saying which header to send.
    let (status, _, text) = server.raw_with_headers(
        "POST",
        "/v1/memories",
        Some(&key),
        &[("Content-Type", "text/plain".to_owned())],
        Some(r#"{"text": "a"}"#),
    );
    assert_eq!(status, 415, "{text}");
    let refused: serde_json::Value = serde_json::from_str(&text).expect("a JSON error");
    assert_eq!(
        refused["error"]["kind"], "unsupported_media_type",
        "{refused}"
    );
    assert!(
        refused["error"]["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("application/json")),
        "{refused}"
    );
    // The scheme in lower case.
    let (status, _, text) = server.raw_with_headers(
        "GET",
        "/v1/memories",
        None,
        &[("Authorization", format!("bearer {key}"))],
        None,
    );
    assert_eq!(status, 200, "{text}");
    // A write on one memory takes its namespace from the query string as the reads do,
    // and refuses a request naming two.
    let (status, stored) = server.call(
        "POST",
        "/v1/memories",
        Some(&key),
        Some(json!({"text": "the b team prefers tea", "namespace": "acme/b"})),
    );
    assert_eq!(status, 201, "{stored}");
    let id = stored["id"].as_str().expect("an id").to_owned();
    let (status, changed) = server.call(
        "PATCH",
        &format!("/v1/memories/{id}?namespace=acme/b"),
        Some(&key),
        Some(json!({"content": "the b team prefers coffee"})),
    );
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["content"], "the b team prefers coffee", "{changed}");
    // The new text under the name a remember gives it.
    let (status, changed) = server.call(
        "PATCH",
        &format!("/v1/memories/{id}?namespace=acme/b"),
        Some(&key),
        Some(json!({"text": "the b team prefers green tea"})),
    );
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        changed["content"], "the b team prefers green tea",
        "{changed}"
    );
    let (status, refused) = server.call(
        "PATCH",
        &format!("/v1/memories/{id}?namespace=acme/b"),
        Some(&key),
        Some(json!({"content": "x", "namespace": "acme/c"})),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "namespace", "{refused}");
    let (status, retracted) = server.call(
        "POST",
        &format!("/v1/memories/{id}/retract?namespace=acme/b"),
        Some(&key),
        Some(json!({"reason": "asked"})),
    );
    assert_eq!(status, 200, "{retracted}");
    let invented = "A".repeat(2_000);
    let (status, _) = server.raw(&invented, "/v1/memories", Some(&key), None);
    assert!(status >= 400, "{status}");
    let (status, metrics) = server.raw("GET", "/metrics", None, None);
    assert_eq!(status, 200);
    assert!(
        !metrics.contains(&invented),
        "the method is counted as sent"
    );
    assert!(metrics.contains("method=\"OTHER\""), "{metrics}");
}

/// A batch of memories or of dialogue turns with one bad among them is refused whole, by
/// the bad one's index and field, with nothing of it stored: the limits checked only by the
/// store (a context's, a source's, the date a dialogue adds to a turn's text) are checked
/// before the first write. Metadata near its limit with a context beside it is accepted:
/// the context has a limit of its own.
#[test]
fn a_bad_item_refuses_its_whole_batch() {
    let dir = TempDir::new("batch");
    let store = vec![
        "--store".to_owned(),
        dir.path().join("s.db").to_string_lossy().into_owned(),
    ];
    let server = Server::start(&dir, &store, &[]);
    let key = server.key_for("acme");
    let with = |mut item: serde_json::Value, namespace: &str| {
        item["namespace"] = namespace.into();
        item
    };
    let stored = |namespace: &str| {
        let (status, page) = server.call(
            "GET",
            &format!("/v1/memories?namespace={namespace}"),
            Some(&key),
            None,
        );
        assert_eq!(status, 200, "{page}");
        page["items"].as_array().map_or(0, Vec::len)
    };
    for (namespace, second, field) in [
        (
            "acme/context",
            json!({"text": "b", "context": "c".repeat(70_000)}),
            "context",
        ),
        (
            "acme/source",
            json!({"text": "b", "source": "s".repeat(5_000)}),
            "source",
        ),
    ] {
        let (status, refused) = server.call(
            "POST",
            "/v1/memories/batch",
            Some(&key),
            Some(json!({"memories": [{"text": "a", "namespace": namespace}, with(second, namespace)]})),
        );
        assert_eq!(status, 400, "{refused}");
        assert_eq!(refused["error"]["field"], field, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("memories[1]") && !m.contains("stored")),
            "{refused}"
        );
        assert_eq!(stored(namespace), 0, "{namespace}: nothing stored");
    }
    let metadata = json!({"notes": "m".repeat(250 * 1024)});
    let (status, accepted) = server.call(
        "POST",
        "/v1/memories/batch",
        Some(&key),
        Some(json!({"memories": [
            {"text": "a", "namespace": "acme/near", "metadata": metadata,
             "context": "c".repeat(60 * 1024)}
        ]})),
    );
    assert_eq!(status, 201, "{accepted}");
    assert_eq!(stored("acme/near"), 1);

    // A turn whose text fits the content limit only without the date the dialogue adds.
    let (status, refused) = server.call(
        "POST",
        "/v1/dialogue",
        Some(&key),
        Some(json!({"namespace": "acme/chat", "turns": [
            {"speaker": "user", "text": "hi"},
            {"speaker": "a", "text": "x".repeat(1_048_573)}
        ]})),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "text", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("turns[1]") && !m.contains("stored")),
        "{refused}"
    );
    assert_eq!(stored("acme/chat"), 0, "no turn stored");

    // One id twice in a batch or a dialogue: the later would have replaced the earlier,
    // both answered as stored.
    let (status, refused) = server.call(
        "POST",
        "/v1/memories/batch",
        Some(&key),
        Some(json!({"memories": [
            {"text": "batch one kiwi", "id": "dup", "namespace": "acme/ids"},
            {"text": "batch two mango", "id": "dup", "namespace": "acme/ids"}
        ]})),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "id", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("memories[1]") && m.contains("memories[0]")),
        "{refused}"
    );
    assert_eq!(stored("acme/ids"), 0, "nothing stored");
    let (status, refused) = server.call(
        "POST",
        "/v1/dialogue",
        Some(&key),
        Some(json!({"namespace": "acme/ids", "turns": [
            {"speaker": "user", "text": "hi", "id": "t1"},
            {"speaker": "agent", "text": "hello", "id": "t2"},
            {"speaker": "user", "text": "again", "id": "t1"}
        ]})),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "id", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("turns[2]") && m.contains("turns[0]")),
        "{refused}"
    );
    assert_eq!(stored("acme/ids"), 0, "no turn stored");
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn recalls_on_reader_connections_see_every_write_and_keep_their_statistics() {
    for readers in ["0", "3"] {
        let dir = TempDir::new("readers");
        let store = vec![
            "--store".to_owned(),
            dir.path().join("store.db").to_string_lossy().into_owned(),
        ];
        let server = Server::start(&dir, &store, &["--sqlite-readers", readers]);
        let key = server.key_for("acme");
        for index in 0..6 {
            let text = format!("Ticket {index} is assigned to marigold{index}");
            let (status, body) = server.call(
                "POST",
                "/v1/memories",
                Some(&key),
                Some(json!({"text": text})),
            );
            assert_eq!(status, 201, "{body}");
            // At once, whichever connection answers.
            let (status, found) = server.call(
                "POST",
                "/v1/recall",
                Some(&key),
                Some(json!({"query": format!("marigold{index}")})),
            );
            assert_eq!(status, 200, "{found}");
            assert_eq!(
                found["results"][0]["text"], text,
                "readers {readers}: {found}"
            );
        }
        assert_eq!(server.stop(), Some(0), "readers {readers}");
        // The recall statistics of every connection were written at the stop.
        let (code, stats) = crate::support::run_json(&dir, &["-n", "acme", "stats"]);
        assert_eq!(code, 0, "{stats}");
        assert!(
            stats["mean_access"]
                .as_f64()
                .is_some_and(|mean| mean >= 1.0),
            "readers {readers}: {stats}"
        );
    }
}

#[test]
fn a_stop_loses_no_acknowledged_write() {
    let dir = TempDir::new("shutdown");
    let db = dir.path().join("s.db").to_string_lossy().into_owned();
    let store = vec!["--store".to_owned(), db.clone()];
    let server = Server::start(&dir, &store, &[]);
    let key = server.key_for("acme");
    let writer = {
        let address = server.address.clone();
        let key = key.clone();
        std::thread::spawn(move || {
            let mut acknowledged = 0u64;
            for index in 0..100_000 {
                let body = json!({"text": format!("memory number {index}")}).to_string();
                match request(&address, "POST", "/v1/memories", Some(&key), Some(&body)) {
                    Some((201, _)) => acknowledged += 1,
                    _ => break,
                }
            }
            acknowledged
        })
    };
    // Let some writes land, then stop in the middle of the stream.
    while server.call("GET", "/v1/stats", Some(&key), None).1["total"]
        .as_u64()
        .unwrap_or(0)
        < 20
    {
        std::thread::yield_now();
    }
    assert_eq!(server.stop(), Some(0));
    let acknowledged: u64 = writer.join().expect("writer");
    let output = command(&dir)
        .args(["--store", &db, "-n", "acme", "--json", "stats"])
        .output()
        .expect("stats");
    let stats: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let stored = stats["total"].as_u64().expect("total");
    assert!(
        stored >= acknowledged,
        "acknowledged {acknowledged}, stored {stored}"
    );
    assert!(
        stored <= acknowledged + 1,
        "at most the write in flight: {acknowledged} vs {stored}"
    );
}

/// A server whose log reader died (its stderr closed) still answers every request: a log
/// line that cannot be written is dropped, not reported with a panic that took the answer
/// of a write already stored.
#[test]
fn a_closed_log_pipe_costs_no_answer() {
    let dir = TempDir::new("closed-logs");
    let db = dir.path().join("l.db").to_string_lossy().into_owned();
    let store = vec!["--store".to_owned(), db.clone()];
    let server = Server::start_then_close_logs(&dir, &store);
    for index in 0..3 {
        let (status, body) = server.call(
            "POST",
            "/v1/memories",
            Some(ADMIN_KEY),
            Some(
                json!({"namespace": "logs", "text": format!("written with no log reader {index}")}),
            ),
        );
        assert_eq!(status, 201, "{body}");
    }
    assert_eq!(server.call("GET", "/healthz", None, None).0, 200);
    assert_eq!(server.stop(), Some(0), "a graceful stop");
    let output = command(&dir)
        .args(["--store", &db, "-n", "logs", "--json", "stats"])
        .output()
        .expect("stats");
    let stats: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(stats["total"], 3, "each write answered was stored, once");
}

/// A key scoped to one tenant never sees another tenant's records, whatever the names
/// (prefixes of each other, as segments or as strings, included) and wherever under its
/// prefix the other writes: recall, lists of memories and entities, stats and reads by id,
/// on SQLite and (when AGENT_MEMORY_TEST_POSTGRES_URL is set) PostgreSQL.
#[test]
fn a_key_never_sees_another_tenants_records() {
    let dir = TempDir::new("isolation");
    for (backend, store) in backends(&dir, "isolation") {
        let server = Server::start(&dir, &store, &[]);
        let _schema = DropSchema(store.clone());
        let cases = if backend == "sqlite" { 16 } else { 8 };
        isolation_property(&server, cases);
        assert_eq!(server.stop(), Some(0), "{backend}: a clean stop");
    }
}

/// A tenant prefix: short names that are often prefixes of each other as strings
/// (`a`, `ab`, `ab-1`) or as segments (`ab`, `ab/x`).
fn prefix() -> impl Strategy<Value = String> {
    ("(a|ab|abc|b)(-[12])?", prop::option::of("(x|xy)")).prop_map(|(base, child)| match child {
        Some(child) => format!("{base}/{child}"),
        None => base,
    })
}

fn isolation_property(server: &Server, cases: u32) {
    let strategy = (
        prefix(),
        prefix(),
        prop::option::of("(x|team|y/z)"),
        "[a-z]{6,10}",
    );
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let outcome = runner.run(&strategy, |(writer, reader, sub, word)| {
        let writer_key = server.key_for(&writer);
        let reader_key = server.key_for(&reader);
        let namespace = match sub {
            Some(sub) => format!("{writer}/{sub}"),
            None => writer.clone(),
        };
        let text = format!("secret {word} of {namespace}");
        let (status, body) = server.call(
            "POST",
            "/v1/memories",
            Some(&writer_key),
            Some(json!({"text": text, "namespace": namespace})),
        );
        prop_assert!(status == 201 || status == 200, "{}", body);
        let id = body["id"].as_str().unwrap_or_default().to_owned();
        let (status, body) = server.call(
            "POST",
            "/v1/graph/entities",
            Some(&writer_key),
            Some(json!({"id": word, "name": format!("secret {word}"), "entity_type": "thing", "namespace": namespace})),
        );
        prop_assert_eq!(status, 200, "{}", body);
        let under = |seen: &str| seen == reader || seen.starts_with(&format!("{reader}/"));
        let covered = under(&namespace);

        let (_, found) = server.call(
            "POST",
            "/v1/recall",
            Some(&reader_key),
            Some(json!({"query": format!("secret {word}"), "include_ended": true})),
        );
        let (_, listed) = server.call("GET", "/v1/memories?limit=500", Some(&reader_key), None);
        let (_, entities) = server.call(
            "GET",
            "/v1/graph/entities?limit=500",
            Some(&reader_key),
            None,
        );
        let hits = found["results"].as_array().into_iter().flatten();
        let items = listed["items"].as_array().into_iter().flatten();
        let nodes = entities["items"].as_array().into_iter().flatten();
        for record in hits.chain(items).chain(nodes) {
            let seen = record["namespace"].as_str().unwrap_or_default();
            prop_assert!(under(seen), "{} saw {}", reader, record);
        }
        let (_, stats) = server.call("GET", "/v1/stats", Some(&reader_key), None);
        for seen in stats["per_namespace"].as_object().into_iter().flatten().map(|(k, _)| k) {
            prop_assert!(under(seen), "{} counted {}", reader, seen);
        }
        for path in [
            format!("/v1/memories/{id}?namespace={namespace}"),
            format!("/v1/memories/{id}/history?namespace={namespace}"),
            format!("/v1/graph/entities/{word}?namespace={namespace}"),
            format!("/v1/conflicts?namespace={namespace}"),
        ] {
            let (status, body) = server.call("GET", &path, Some(&reader_key), None);
            prop_assert_eq!(status, if covered { 200 } else { 403 }, "{} {}", path, body);
        }
        let (status, _) = server.call(
            "POST",
            "/v1/recall",
            Some(&reader_key),
            Some(json!({"query": word, "namespace": namespace})),
        );
        prop_assert_eq!(status, if covered { 200 } else { 403 });
        if !covered {
            // Nor can it change or end what it cannot see.
            let (status, _) = server.call(
                "PATCH",
                &format!("/v1/memories/{id}"),
                Some(&reader_key),
                Some(json!({"namespace": namespace, "importance": 0.1})),
            );
            prop_assert_eq!(status, 403);
            let (status, _) = server.call(
                "POST",
                &format!("/v1/memories/{id}/retract"),
                Some(&reader_key),
                Some(json!({"namespace": namespace})),
            );
            prop_assert_eq!(status, 403);
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
