//! The OpenAPI links: from a response that returns a record to the operations on it.
//!
//! A remember answers with the memory's id and namespace; [`Links`] says that they are the
//! `id` and `namespace` of `GET /v1/memories/{id}` and the other operations on a memory,
//! and the same for a dialogue's and a batch's first memory, a consolidation's summary, a
//! page and an entity. Clients and generators read the links to chain calls, and the
//! end-to-end check's stateful phase follows them, so the operations on one record are
//! exercised on records that exist, not only on ids that are not found.

use utoipa::openapi::link::{Link, LinkBuilder};
use utoipa::openapi::{OpenApi, RefOr};

use super::operations;

/// A response that returns a record: its operation, its statuses, and where its body holds
/// the record's id and namespace (a JSON pointer to the object holding both).
struct Source {
    operation: &'static str,
    statuses: &'static [&'static str],
    at: &'static str,
    targets: &'static [Target],
}

/// An operation on a record: its operation id and whether it takes the namespace as a
/// query parameter (otherwise the namespace is in its body, which the link leaves to the
/// caller: the key's prefix when the body names none).
struct Target {
    operation: &'static str,
    namespace_in_query: bool,
}

const fn query(operation: &'static str) -> Target {
    Target {
        operation,
        namespace_in_query: true,
    }
}

const fn body(operation: &'static str) -> Target {
    Target {
        operation,
        namespace_in_query: false,
    }
}

/// The operations on one memory.
const MEMORY: &[Target] = &[
    query("get_memory"),
    query("history"),
    query("forget_memory"),
    body("update_memory"),
    body("put_memory"),
    body("retract"),
    body("supersede"),
];

const SOURCES: &[Source] = &[
    Source {
        operation: "remember",
        statuses: &["200", "201"],
        at: "",
        targets: MEMORY,
    },
    Source {
        operation: "consolidate",
        statuses: &["201"],
        at: "/summary",
        targets: MEMORY,
    },
    Source {
        operation: "put_page",
        statuses: &["200"],
        at: "",
        targets: &[query("get_page"), query("delete_page")],
    },
    Source {
        operation: "put_entity",
        statuses: &["200"],
        at: "",
        targets: &[
            query("get_entity"),
            query("related_entities"),
            query("delete_entity"),
        ],
    },
];

/// Adds the links of [`SOURCES`] to their responses.
#[derive(Debug)]
pub(crate) struct Links;

impl utoipa::Modify for Links {
    fn modify(&self, openapi: &mut OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for operation in operations(item) {
                let Some(source) = SOURCES
                    .iter()
                    .find(|source| operation.operation_id.as_deref() == Some(source.operation))
                else {
                    continue;
                };
                for status in source.statuses {
                    let Some(RefOr::T(response)) = operation.responses.responses.get_mut(*status)
                    else {
                        continue;
                    };
                    for target in source.targets {
                        response
                            .links
                            .insert(target.operation.to_owned(), RefOr::T(link(source, target)));
                    }
                }
            }
        }
    }
}

fn link(source: &Source, target: &Target) -> Link {
    let mut link = LinkBuilder::new()
        .operation_id(target.operation)
        .parameter("id", format!("$response.body#{}/id", source.at));
    if target.namespace_in_query {
        link = link.parameter(
            "namespace",
            format!("$response.body#{}/namespace", source.at),
        );
    }
    link.description(format!(
        "The record {} returned, by its id{}.",
        source.operation,
        if target.namespace_in_query {
            " and namespace"
        } else {
            " (the namespace: the body's, the key's prefix by default)"
        }
    ))
    .build()
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use utoipa::OpenApi;

    use crate::serve::api::ApiDoc;

    /// Follows a `$ref` to its schema in the document.
    fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(reference) => doc
                .pointer(reference.trim_start_matches('#'))
                .unwrap_or(&Value::Null),
            None => schema,
        }
    }

    /// The schema a JSON pointer into a body of `schema` reaches (properties and array items).
    fn schema_at<'a>(doc: &'a Value, mut schema: &'a Value, pointer: &str) -> &'a Value {
        for step in pointer.split('/').skip(1) {
            schema = resolve(doc, schema);
            schema = if step.chars().all(|c| c.is_ascii_digit()) {
                &schema["items"]
            } else {
                &schema["properties"][step]
            };
        }
        resolve(doc, schema)
    }

    /// Every link names an operation of the document, passes it parameters it takes, and
    /// reads them from fields the response's schema has.
    #[test]
    fn every_link_leads_to_an_operation_with_what_it_takes() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let mut operations = std::collections::HashMap::new();
        for item in doc["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                if let Some(id) = operation["operationId"].as_str() {
                    operations.insert(id.to_owned(), operation);
                }
            }
        }
        let mut links = 0;
        for source in super::SOURCES {
            let operation = operations[source.operation];
            for status in source.statuses {
                let response = &operation["responses"][*status];
                let body = &response["content"]["application/json"]["schema"];
                assert!(body.is_object(), "{} {status}", source.operation);
                for (name, link) in response["links"].as_object().unwrap() {
                    links += 1;
                    let target = operations[link["operationId"].as_str().unwrap()];
                    assert_eq!(name, link["operationId"].as_str().unwrap());
                    let taken: Vec<&str> = target["parameters"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|parameter| parameter["name"].as_str())
                        .collect();
                    for (parameter, expression) in link["parameters"].as_object().unwrap() {
                        assert!(taken.contains(&parameter.as_str()), "{name}: {parameter}");
                        let pointer = expression
                            .as_str()
                            .unwrap()
                            .strip_prefix("$response.body#")
                            .unwrap();
                        let field = schema_at(&doc, body, pointer);
                        assert_eq!(
                            field["type"], "string",
                            "{} {status} → {name}: {pointer} is {field}",
                            source.operation
                        );
                    }
                }
            }
        }
        assert_eq!(
            links,
            super::SOURCES
                .iter()
                .map(|source| source.statuses.len() * source.targets.len())
                .sum::<usize>()
        );
    }
}
