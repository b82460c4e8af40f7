//! The grammar of namespaces and ids in the OpenAPI document.
//!
//! The request types say a namespace is 1 to 512 characters and an id 1 to 256; the server
//! asks more of them ([`Namespace::parse`](agent_memory::Namespace::parse),
//! [`validate_id`](agent_memory::backend::validate_id)). [`Grammar`] writes that as a
//! `pattern` on every namespace and id a request takes, in bodies, queries and paths, so a
//! client that validates against the document sends what the server accepts. The patterns
//! live here once rather than on each of the many fields, and a test checks them against
//! the server's own checks.

use agent_memory::MAX_ID_LEN;
#[cfg(doc)]
use agent_memory::MAX_NAMESPACE_DEPTH;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{ArrayItems, Schema};
use utoipa::openapi::{OpenApi, RefOr};

use super::operations;

/// A namespace: segments of `A-Z a-z 0-9 - _ . : @` joined by `/`, at most
/// [`MAX_NAMESPACE_DEPTH`] (16) of them, with
/// an optional `/` before or after. The server also trims surrounding spaces; the pattern
/// leaves them out.
pub(crate) const NAMESPACE_PATTERN: &str = r"^/?[A-Za-z0-9._:@-]+(/[A-Za-z0-9._:@-]+){0,15}/?$";

/// An id: no control character, and something besides white space.
pub(crate) const ID_PATTERN: &str = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$";

/// The request properties that name a memory, page or entity by its id.
const ID_PROPERTIES: [&str; 4] = ["id", "by", "source_id", "target_id"];

/// Sets [`NAMESPACE_PATTERN`] and [`ID_PATTERN`] on the namespaces and ids of requests; the
/// ids of a consolidation are also 1 to 256 characters each and distinct.
#[derive(Debug)]
pub(crate) struct Grammar;

impl utoipa::Modify for Grammar {
    fn modify(&self, openapi: &mut OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            for (name, schema) in &mut components.schemas {
                if !name.ends_with("Request") {
                    continue;
                }
                let RefOr::T(Schema::Object(object)) = schema else {
                    continue;
                };
                for (property, schema) in object.properties.iter_mut() {
                    match (property.as_str(), schema) {
                        ("namespace", RefOr::T(Schema::Object(field))) => {
                            field.pattern = Some(NAMESPACE_PATTERN.to_owned());
                        }
                        (id, RefOr::T(Schema::Object(field))) if ID_PROPERTIES.contains(&id) => {
                            field.pattern = Some(ID_PATTERN.to_owned());
                        }
                        ("ids", RefOr::T(Schema::Array(array))) => {
                            array.unique_items = true;
                            if let ArrayItems::RefOrSchema(item) = &mut array.items
                                && let RefOr::T(Schema::Object(item)) = item.as_mut()
                            {
                                item.min_length = Some(1);
                                item.max_length = Some(MAX_ID_LEN);
                                item.pattern = Some(ID_PATTERN.to_owned());
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        for (path, item) in openapi.paths.paths.iter_mut() {
            // An API key's id is a digest's start, not a stored record's id.
            let record_ids = !path.starts_with("/v1/keys");
            for operation in operations(item) {
                parameters(operation, record_ids);
            }
        }
    }
}

/// Sets the patterns on an operation's `namespace` parameter and, with `record_ids`, on its
/// `id`.
fn parameters(operation: &mut Operation, record_ids: bool) {
    for parameter in operation.parameters.iter_mut().flatten() {
        let RefOr::T(parameter) = parameter else {
            continue;
        };
        let pattern = match parameter.name.as_str() {
            "namespace" => NAMESPACE_PATTERN,
            "id" if record_ids => ID_PATTERN,
            _ => continue,
        };
        if let Some(RefOr::T(Schema::Object(schema))) = parameter.schema.as_mut() {
            schema.pattern = Some(pattern.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_memory::Namespace;
    use agent_memory::backend::validate_id;
    use proptest::prelude::*;
    use regex::Regex;
    use utoipa::OpenApi;

    use super::*;
    use crate::serve::api::ApiDoc;

    /// Every string the namespace pattern accepts (within its 512 characters) is a namespace
    /// the server accepts, below the root.
    #[test]
    fn the_namespace_pattern_accepts_only_namespaces() {
        let pattern = Regex::new(NAMESPACE_PATTERN).unwrap();
        let texts = proptest::string::string_regex(r"[aZ09_.:@/ é\t-]{0,40}").unwrap();
        proptest!(|(text in texts)| {
            if pattern.is_match(&text) {
                let parsed = Namespace::parse(&text);
                prop_assert!(parsed.as_ref().is_ok_and(|ns| !ns.is_root()), "{text:?}: {parsed:?}");
            }
        });
        for good in ["acme", "acme/chat", "/a.b:c@d-e_f/", "u@example.com/notes"] {
            assert!(pattern.is_match(good), "{good}");
        }
        for bad in ["", "/", "a//b", "a b", " a", "é", "a\tb"] {
            assert!(!pattern.is_match(bad), "{bad}");
        }
        let deepest = vec!["s"; 16].join("/");
        assert!(pattern.is_match(&deepest));
        assert!(Namespace::parse(&deepest).is_ok());
        let deeper = vec!["s"; 17].join("/");
        assert!(!pattern.is_match(&deeper));
        assert!(Namespace::parse(&deeper).is_err());
    }

    /// Every string the id pattern accepts (within 256 bytes) is an id the server accepts,
    /// and the ids it refuses are those the server refuses.
    #[test]
    fn the_id_pattern_is_the_servers_check() {
        let pattern = Regex::new(ID_PATTERN).unwrap();
        let texts = proptest::string::string_regex(r"[a /\t\n\x7f\x{85}\xa0\x{3000}é🙂\x00]{0,12}")
            .unwrap();
        proptest!(|(text in texts)| {
            prop_assert_eq!(
                pattern.is_match(&text),
                validate_id("id", &text).is_ok(),
                "{:?}", text
            );
        });
    }

    /// The patterns are on every namespace and record id a request takes.
    #[test]
    fn every_namespace_and_id_of_a_request_carries_its_pattern() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let mut namespaces = 0;
        for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
            if !name.ends_with("Request") {
                continue;
            }
            for (property, field) in schema["properties"].as_object().into_iter().flatten() {
                if property == "namespace" {
                    namespaces += 1;
                    assert_eq!(field["pattern"], NAMESPACE_PATTERN, "{name}.{property}");
                }
                if ID_PROPERTIES.contains(&property.as_str()) {
                    assert_eq!(field["pattern"], ID_PATTERN, "{name}.{property}");
                }
            }
        }
        let ids = &doc["components"]["schemas"]["ConsolidateRequest"]["properties"]["ids"];
        assert_eq!(ids["uniqueItems"], true, "{ids}");
        assert_eq!(ids["items"]["pattern"], ID_PATTERN, "{ids}");
        assert_eq!(ids["items"]["maxLength"], MAX_ID_LEN, "{ids}");
        let mut parameters = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for operation in item.as_object().unwrap().values() {
                for parameter in operation["parameters"].as_array().into_iter().flatten() {
                    let expected = match parameter["name"].as_str() {
                        Some("namespace") => NAMESPACE_PATTERN,
                        Some("id") if !path.starts_with("/v1/keys") => ID_PATTERN,
                        _ => continue,
                    };
                    parameters += 1;
                    assert_eq!(
                        parameter["schema"]["pattern"], expected,
                        "{path}: {parameter}"
                    );
                }
            }
        }
        assert!(namespaces >= 10, "{namespaces} request namespaces");
        assert!(parameters >= 10, "{parameters} parameters");
    }
}
