//! What the arguments of `agent_memory.Memory` mean: where it keeps its records (the
//! `store` argument), settings given as dicts over the defaults, tags, metadata and the
//! turns of a dialogue.

use std::path::PathBuf;

use agent_memory::retrieve::Turn;
use agent_memory::{MemoryItem, StoreLocation, Tag};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::convert::{from_python, to_json, to_time};
use crate::errors::{invalid, to_py_err};
use crate::results::Record;

/// Where a `Memory` keeps its records, from the `store` argument: `None` (in memory), a
/// store string read as the `agent-memory` command reads `--store`
/// ([`StoreLocation::parse`]), or an `os.PathLike` naming a SQLite file.
pub(super) fn location(store: Option<&Bound<'_, PyAny>>) -> PyResult<StoreLocation> {
    let Some(store) = store.filter(|store| !store.is_none()) else {
        return Ok(StoreLocation::InMemory);
    };
    if let Ok(text) = store.cast::<PyString>() {
        let text = text.to_str()?;
        // "" failed deep in SQLite, and "  " made a file named by its blanks.
        if text.trim().is_empty() {
            return Err(invalid(
                store.py(),
                "store",
                "is empty: give a path, a postgres:// URL or \":memory:\" (or None)",
            ));
        }
        return Ok(StoreLocation::parse(text));
    }
    // An os.PathLike: a SQLite file.
    store
        .extract::<PathBuf>()
        .map(StoreLocation::Sqlite)
        .map_err(|_| {
            invalid(
                store.py(),
                "store",
                "expected a path, a postgres:// URL or \":memory:\"",
            )
        })
}

/// Settings given as a dict over the defaults: the fields it names replace the default's.
pub(super) fn over_default<T>(value: &Bound<'_, PyAny>, field: &str) -> PyResult<T>
where
    T: Default + serde::Serialize + serde::de::DeserializeOwned,
{
    let mut merged =
        serde_json::to_value(T::default()).map_err(|error| invalid(value.py(), field, error))?;
    let given = to_json(value, field)?;
    match (merged.as_object_mut(), given) {
        (Some(defaults), serde_json::Value::Object(given)) => {
            // A key that is no setting (a typo) is refused, not dropped.
            if let Some(unknown) = given.keys().find(|key| !defaults.contains_key(*key)) {
                let known: Vec<&str> = defaults.keys().map(String::as_str).collect();
                return Err(invalid(
                    value.py(),
                    field,
                    format!(
                        "unknown setting {unknown:?}; the settings are {}",
                        known.join(", ")
                    ),
                ));
            }
            defaults.extend(given);
        }
        _ => return Err(invalid(value.py(), field, "expected a dict")),
    }
    serde_json::from_value(merged).map_err(|error| invalid(value.py(), field, error))
}

/// A tagged setting (`{"policy": ...}`, `{"strategy": ...}`) given as a dict, or as the tag
/// alone when the variant has no fields.
pub(super) fn tagged<T: serde::de::DeserializeOwned>(
    value: &Bound<'_, PyAny>,
    tag: &str,
    field: &str,
) -> PyResult<T> {
    if let Ok(name) = value.cast::<PyString>() {
        let json = serde_json::json!({ tag: name.to_str()? });
        return serde_json::from_value(json).map_err(|error| invalid(value.py(), field, error));
    }
    from_python(value, field)
}

/// The `tags` argument, normalized, without duplicates; a bad tag or too many raise the
/// library's invalid-input error.
pub(super) fn tags(py: Python<'_>, tags: Option<Vec<String>>) -> PyResult<Vec<Tag>> {
    Tag::normalize_all(tags.unwrap_or_default()).map_err(|error| to_py_err(py, error))
}

/// The `metadata` argument as JSON; `None` is an empty object.
pub(super) fn metadata(value: Option<&Bound<'_, PyAny>>) -> PyResult<serde_json::Value> {
    match value.filter(|value| !value.is_none()) {
        None => Ok(serde_json::json!({})),
        Some(value) => user_metadata(value, "metadata"),
    }
}

/// Metadata a caller writes, as JSON, refused (naming `field`) when it holds a key the
/// library reserves for itself: a record never shows them in `metadata` (they are its
/// `context`, `pinned` and `original`, and the decay state), so a caller's value under one
/// could only change those attributes behind their setters.
pub(super) fn user_metadata(value: &Bound<'_, PyAny>, field: &str) -> PyResult<serde_json::Value> {
    let json = to_json(value, field)?;
    if let Some(key) = json
        .as_object()
        .and_then(|object| object.keys().find(|key| crate::results::is_reserved(key)))
    {
        return Err(invalid(
            value.py(),
            field,
            format!(
                "the key {key} is the library's own (the record's context, pin, original or \
                 decay state): set those through their arguments"
            ),
        ));
    }
    Ok(json)
}

/// The `metadata` conditions of a listing or a recall (each key's value required exactly),
/// in the dict's order.
pub(super) fn conditions(
    py: Python<'_>,
    metadata: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(String, serde_json::Value)>> {
    let mut out = Vec::new();
    // Over a copy, which converting a value cannot change (see `to_json`).
    let metadata = metadata.map(|metadata| metadata.copy()).transpose()?;
    for (key, value) in metadata.iter().flat_map(|metadata| metadata.iter()) {
        let key: String = key
            .extract()
            .map_err(|_| invalid(py, "metadata", "dictionary keys must be strings"))?;
        out.push((key, to_json(&value, "metadata")?));
    }
    Ok(out)
}

/// Items as the Python records a method returns.
pub(super) fn records(items: Vec<MemoryItem>) -> Vec<Record> {
    items.into_iter().map(Record::new).collect()
}

/// The keys a turn of `remember_dialogue` may have.
const TURN_KEYS: [&str; 8] = [
    "text", "speaker", "role", "session", "at", "id", "source", "metadata",
];

/// Turn `position` of `remember_dialogue`'s list: a dict with `text` (required),
/// `speaker`, `role`, `session` (a string or a number), `at`, `id`, `source` and
/// `metadata`. A refused value names its field as `turns[position].name`.
pub(super) fn turn_of(py: Python<'_>, position: usize, turn: &Bound<'_, PyAny>) -> PyResult<Turn> {
    let field = |name: &str| format!("turns[{position}].{name}");
    let turn = turn
        .cast::<PyDict>()
        .map_err(|_| invalid(py, &format!("turns[{position}]"), "must be a dict"))?;
    // A key misspelt ("sesion") would be dropped without a word, as the settings' dicts
    // refuse theirs.
    for key in turn.keys() {
        let name: String = key
            .extract()
            .map_err(|_| invalid(py, &format!("turns[{position}]"), "keys must be strings"))?;
        if !TURN_KEYS.contains(&name.as_str()) {
            return Err(invalid(
                py,
                &field(&name),
                format!("is not a key of a turn (one of {})", TURN_KEYS.join(", ")),
            ));
        }
    }
    let text: String = match turn.get_item("text")? {
        Some(text) => text
            .extract()
            .map_err(|_| invalid(py, &field("text"), "must be a string"))?,
        None => return Err(invalid(py, &field("text"), "is missing")),
    };
    let string = |name: &str| -> PyResult<Option<String>> {
        match turn.get_item(name)? {
            None => Ok(None),
            Some(value) if value.is_none() => Ok(None),
            Some(value) => {
                // A session may be numbered (a bool is no number: True is not session 1).
                if !value.is_instance_of::<pyo3::types::PyBool>()
                    && let Ok(number) = value.extract::<i64>()
                {
                    return Ok(Some(number.to_string()));
                }
                value
                    .extract::<String>()
                    .map(Some)
                    .map_err(|_| invalid(py, &field(name), "must be a string"))
            }
        }
    };
    let mut line = Turn::new(string("speaker")?.unwrap_or_default(), text);
    if let Some(role) = string("role")? {
        let role = agent_memory::Role::parse(&role).ok_or_else(|| {
            invalid(
                py,
                &field("role"),
                format!("{role:?} is not user, assistant, system or tool"),
            )
        })?;
        line = line.role(role);
    }
    if let Some(session) = string("session")? {
        line = line.session(session);
    }
    if let Some(at) = turn.get_item("at")?.filter(|at| !at.is_none()) {
        line = line.at(to_time(&at, &field("at"))?);
    }
    if let Some(id) = string("id")? {
        line = line.id(id);
    }
    if let Some(source) = string("source")? {
        line = line.source(source);
    }
    if let Some(metadata) = turn.get_item("metadata")?.filter(|m| !m.is_none()) {
        line = line.metadata(user_metadata(&metadata, &field("metadata"))?);
    }
    Ok(line)
}
