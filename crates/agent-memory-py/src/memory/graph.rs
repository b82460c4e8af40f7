//! The knowledge graph from Python: entities and relations as dicts, written and read
//! through the memory's graph (the same one recall's graph channel searches).

use std::sync::Arc;

use agent_memory::{EntityPosition, GraphEntity, GraphRelation, KnowledgeGraph, Namespace};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert::{from_json, to_json};
use crate::errors::{invalid, to_py_err};
use crate::runtime::block_on;

/// The `attributes` argument as JSON: `None` when it is absent or None.
pub(super) fn attributes(
    attributes: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<serde_json::Value>> {
    attributes
        .filter(|value| !value.is_none())
        .map(|value| to_json(value, "attributes"))
        .transpose()
}

/// Adds `entity`, or replaces the stored one with its id (its relations and access
/// statistics stay). More distinct tags than the graph keeps
/// (`TagConstraints::max_tags_per_entity`, 8 by default) are refused naming `tags`: the
/// store would drop the rest.
pub(super) fn put_entity(
    py: Python<'_>,
    graph: &Arc<dyn KnowledgeGraph>,
    entity: GraphEntity,
) -> PyResult<()> {
    let most = graph.tag_constraints().max_tags_per_entity;
    if entity.tags.len() > most {
        return Err(invalid(
            py,
            "tags",
            format!(
                "{} distinct tags: an entity keeps at most {most}",
                entity.tags.len()
            ),
        ));
    }
    let graph = Arc::clone(graph);
    block_on(py, async move {
        agent_memory::write_entity(graph.as_ref(), entity).await
    })
}

/// A record as a dict: its serde form (the export format's fields).
pub(super) fn as_dict<'py, T: serde::Serialize>(
    py: Python<'py>,
    record: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let value = serde_json::to_value(record)
        .map_err(|error| invalid(py, "record", format!("cannot be converted: {error}")))?;
    from_json(py, &value)
}

/// The position of an entity dict (its `namespace` and `id`), for the page after it.
pub(super) fn position(py: Python<'_>, last: &Bound<'_, PyDict>) -> PyResult<EntityPosition> {
    let text = |key: &str| -> PyResult<String> {
        last.get_item(key)?
            .and_then(|value| value.extract::<String>().ok())
            .ok_or_else(|| {
                invalid(
                    py,
                    "after",
                    format!("the last entity of a page, a dict with a text {key:?}"),
                )
            })
    };
    let namespace = Namespace::parse(&text("namespace")?).map_err(|error| to_py_err(py, error))?;
    EntityPosition::new(namespace, text("id")?).map_err(|error| to_py_err(py, error))
}

/// The relation `add_relation` stores.
pub(super) fn relation(
    py: Python<'_>,
    namespace: Namespace,
    source_id: &str,
    target_id: &str,
    relation_type: &str,
    weight: f32,
) -> PyResult<GraphRelation> {
    GraphRelation::new(namespace, source_id, target_id, relation_type, weight)
        .map_err(|error| to_py_err(py, error))
}

/// The entities `get_related` reaches, as dicts: `entity`, `hops`, `score` and `path`
/// (the relations followed, as dicts).
pub(super) fn related<'py>(
    py: Python<'py>,
    graph: &Arc<dyn KnowledgeGraph>,
    namespace: Namespace,
    id: &str,
    depth: usize,
) -> PyResult<Bound<'py, PyList>> {
    let graph = Arc::clone(graph);
    let id = id.to_owned();
    let found = block_on(py, async move {
        graph.get_related(&namespace, &id, depth).await
    })?;
    let list = PyList::empty(py);
    for scored in found {
        let dict = PyDict::new(py);
        dict.set_item("entity", as_dict(py, scored.entity.as_ref())?)?;
        dict.set_item("hops", scored.hops)?;
        dict.set_item("score", scored.score)?;
        let path = PyList::empty(py);
        for relation in &scored.path {
            path.append(as_dict(py, relation.as_ref())?)?;
        }
        dict.set_item("path", path)?;
        list.append(dict)?;
    }
    Ok(list)
}
