//! What the arguments of `agent_memory.Memory` mean: where it keeps its records (the
//! `store` argument), settings given as dicts over the defaults, tags and metadata.

use std::path::PathBuf;

use agent_memory::{MemoryItem, Tag};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert::{from_python, to_json};
use crate::errors::{invalid, to_py_err};
use crate::results::Record;

/// Where a `Memory` keeps its records, from the `store` argument.
pub(super) enum Location {
    InMemory,
    Sqlite(PathBuf),
    Postgres(String),
}

impl Location {
    pub(super) fn parse(store: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(store) = store.filter(|store| !store.is_none()) else {
            return Ok(Location::InMemory);
        };
        if let Ok(text) = store.cast::<PyString>() {
            let text = text.to_str()?;
            return Ok(if matches!(text, ":memory:" | "memory:") {
                Location::InMemory
            } else if text.starts_with("postgres://") || text.starts_with("postgresql://") {
                Location::Postgres(text.to_owned())
            } else {
                let path = text
                    .strip_prefix("sqlite://")
                    .or_else(|| text.strip_prefix("sqlite:"))
                    .unwrap_or(text);
                Location::Sqlite(PathBuf::from(path))
            });
        }
        // An os.PathLike: a SQLite file.
        store
            .extract::<PathBuf>()
            .map(Location::Sqlite)
            .map_err(|_| {
                invalid(
                    store.py(),
                    "store",
                    "expected a path, a postgres:// URL or \":memory:\"",
                )
            })
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Location::InMemory => ":memory:".into(),
            Location::Sqlite(path) => path.display().to_string(),
            // The URL may hold a password: show the server only.
            Location::Postgres(url) => {
                let host = url.rsplit('@').next().unwrap_or(url);
                let host = host.split_once("://").map_or(host, |(_, rest)| rest);
                format!("postgres://…@{host}")
            }
        }
    }
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
        (Some(defaults), serde_json::Value::Object(given)) => defaults.extend(given),
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
        Some(value) => to_json(value, "metadata"),
    }
}

/// Items as the Python records a method returns.
pub(super) fn records(items: Vec<MemoryItem>) -> Vec<Record> {
    items.into_iter().map(Record::new).collect()
}
