//! Knowledge-graph entities, relations, and traversal results.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::validate::{validate_id, validate_len, validate_text, validate_unit};
use crate::{MemoryError, Namespace, Result, Tag};

mod position;
pub use position::{EntityPosition, RelationPosition};

/// The attributes of an entity or a relation: what is known about it as keys and values,
/// a JSON object.
pub type Attributes = serde_json::Map<String, serde_json::Value>;

/// Attributes as one line for a prompt: `key: value` pairs joined by `; ` in key order, a
/// string as written and any other value as compact JSON (`born: 1990; city: Lisbon`).
/// Empty without attributes.
pub(crate) fn attribute_line(attributes: &Attributes) -> String {
    let mut line = String::new();
    for (key, value) in attributes {
        if !line.is_empty() {
            line.push_str("; ");
        }
        line.push_str(key);
        line.push_str(": ");
        match value {
            serde_json::Value::String(text) => line.push_str(text),
            other => line.push_str(&other.to_string()),
        }
    }
    line
}

/// `attributes` as a map, once checked; refused attributes are released without recursion
/// ([`drop_json`](crate::validate::drop_json)), however deep they are.
fn checked_attributes(attributes: serde_json::Value) -> Result<Attributes> {
    if let Err(error) = crate::validate::validate_json_object("attributes", &attributes, &[]) {
        crate::validate::drop_json(attributes);
        return Err(error);
    }
    match attributes {
        serde_json::Value::Object(map) => Ok(map),
        // validate_json_object refused every other value.
        other => {
            crate::validate::drop_json(other);
            Ok(Attributes::new())
        }
    }
}

/// Default for [`TagConstraints::max_tags_per_entity`].
pub const DEFAULT_MAX_TAGS_PER_ENTITY: usize = 8;

/// An entity (node) of the knowledge graph. This is a persistence format.
///
/// Tags are retrieval anchors, most relevant first; reuse existing tags
/// ([`find_tags`](crate::KnowledgeGraph::find_tags)) before creating new ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphEntity {
    /// Unique within its namespace.
    pub id: String,
    /// The namespace the entity belongs to; never the root.
    pub namespace: Namespace,
    /// Display name, matched by case-insensitive prefix.
    pub name: String,
    /// `person`, `concept`, `project`, ...; matched exactly (case-insensitive).
    pub entity_type: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Retrieval tags, most relevant first.
    #[serde(default)]
    pub tags: Vec<Tag>,
    /// What is known about the entity as keys and values (`{"born": 1990, "city":
    /// "Lisbon"}`), a JSON object within the limits of a memory's metadata
    /// ([`MAX_METADATA_BYTES`](crate::MAX_METADATA_BYTES),
    /// [`MAX_METADATA_DEPTH`](crate::MAX_METADATA_DEPTH)). Stored and returned as given;
    /// not searched (the name, type, description and tags are). Written only when not
    /// empty.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub attributes: Attributes,
    /// When the entity was added: set to now by [`GraphEntity::new`], kept by
    /// [`update_entity`](crate::KnowledgeGraph::update_entity) when the stored entity has
    /// one. `None` means unknown: an entity exported before entities had a creation time, or
    /// stored by a graph that kept none. A knowledge lifecycle policy never expires an entity
    /// by TTL when it has neither a creation time nor a recorded access (it cannot tell how
    /// old it is), but counts it against a capacity, where it ranks as the least recently
    /// active. The Unix epoch would have been the other choice, and would have expired every
    /// old entity at the first maintenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// How many times a recall returned the entity, counted by
    /// [`KnowledgeGraph::record_accesses`](crate::KnowledgeGraph::record_accesses). Graphs
    /// keep it across `update_entity` and `set_entity_tags`; `add_entity` (and so an import
    /// of a new entity) stores the value given. Written only when not zero.
    #[serde(default, skip_serializing_if = "crate::knowledge::is_zero")]
    pub access_count: u64,
    /// When a recall last returned the entity (the latest access recorded); `None` when
    /// never. Kept across updates like [`access_count`](Self::access_count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_accessed: Option<DateTime<Utc>>,
}

impl GraphEntity {
    /// A new entity.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `id`, `namespace`, `name` or `entity_type`.
    pub fn new(
        namespace: Namespace,
        id: impl Into<String>,
        name: impl Into<String>,
        entity_type: impl Into<String>,
    ) -> Result<Self> {
        let entity = Self {
            id: id.into(),
            namespace,
            name: name.into(),
            entity_type: entity_type.into(),
            description: String::new(),
            tags: Vec::new(),
            attributes: Attributes::new(),
            created_at: Some(Utc::now()),
            access_count: 0,
            last_accessed: None,
        };
        entity.validate()?;
        Ok(entity)
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the tags, normalising them (truncation to the store's limit happens on write).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `tag`.
    pub fn with_tags<I, S>(mut self, tags: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.tags = Tag::normalize_all(tags)?;
        Ok(self)
    }

    /// Sets the attributes from a JSON object.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `attributes` when `attributes` is not an object
    /// or exceeds the limits of [`attributes`](Self::attributes).
    pub fn with_attributes(mut self, attributes: serde_json::Value) -> Result<Self> {
        self.attributes = checked_attributes(attributes)?;
        Ok(self)
    }

    /// The attributes as one line for a prompt: `key: value` pairs joined by `; ` in key
    /// order, a string as written and any other value as compact JSON (`born: 1990; city:
    /// Lisbon`). Empty without attributes.
    pub fn attribute_line(&self) -> String {
        attribute_line(&self.attributes)
    }

    /// Sets the creation time (`None`: unknown).
    pub fn with_created_at(mut self, at: Option<DateTime<Utc>>) -> Self {
        self.created_at = at;
        self
    }

    /// When the entity was last in use: the later of its creation and its last access;
    /// `None` when neither is known. Knowledge lifecycle policies expire an entity by this
    /// time (never when it is `None`) and, among entities accessed equally often, evict the
    /// least recently active first (`None` first).
    pub fn last_active(&self) -> Option<DateTime<Utc>> {
        self.created_at.max(self.last_accessed)
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        validate_id("id", &self.id)?;
        self.namespace.require_record_namespace()?;
        validate_text("name", &self.name, 1024)?;
        validate_text("entity_type", &self.entity_type, 128)?;
        validate_len("description", &self.description, 64 * 1024)?;
        crate::validate::validate_attributes(&self.attributes)?;
        if let Some(at) = self.created_at {
            crate::validate::validate_time("created_at", at)?;
        }
        if let Some(at) = self.last_accessed {
            crate::validate::validate_time("last_accessed", at)?;
        }
        crate::knowledge::validate_access_count(self.access_count)
    }
}

/// A directed, typed, weighted relation (edge) between two entities of one namespace.
/// This is a persistence format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphRelation {
    /// The namespace of both endpoints.
    pub namespace: Namespace,
    /// The source entity id.
    pub source_id: String,
    /// The target entity id.
    pub target_id: String,
    /// `works_on`, `part_of`, `related_to`, ...
    pub relation_type: String,
    /// Strength in `[0, 1]`.
    pub weight: f32,
    /// From when the relation holds in the world (open when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<DateTime<Utc>>,
    /// Until when it holds, exclusive (open when `None`). A relation of a single-valued type
    /// is closed here when a newer one from the same source replaces it
    /// ([`KnowledgeGraphExt::relate`](crate::KnowledgeGraphExt::relate)); traversals follow
    /// only relations current at the time they run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<DateTime<Utc>>,
    /// What is known about the relation as keys and values (`{"since": 2019, "role":
    /// "lead"}`), with the limits of an entity's
    /// [attributes](GraphEntity::attributes). Adding the relation again replaces them, as
    /// it does the weight. Written only when not empty.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub attributes: Attributes,
}

impl GraphRelation {
    /// A new relation.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `source_id`, `target_id`, `relation_type` or
    /// `weight` (NaN, infinite or outside `[0, 1]`).
    pub fn new(
        namespace: Namespace,
        source_id: impl Into<String>,
        target_id: impl Into<String>,
        relation_type: impl Into<String>,
        weight: f32,
    ) -> Result<Self> {
        let relation = Self {
            namespace,
            source_id: source_id.into(),
            target_id: target_id.into(),
            relation_type: relation_type.into(),
            weight,
            valid_from: None,
            valid_until: None,
            attributes: Attributes::new(),
        };
        relation.validate()?;
        Ok(relation)
    }

    /// Sets the attributes from a JSON object.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `attributes` when `attributes` is not an object
    /// or exceeds the limits of [`attributes`](Self::attributes).
    pub fn with_attributes(mut self, attributes: serde_json::Value) -> Result<Self> {
        self.attributes = checked_attributes(attributes)?;
        Ok(self)
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        self.namespace.require_record_namespace()?;
        validate_id("source_id", &self.source_id)?;
        validate_id("target_id", &self.target_id)?;
        validate_text("relation_type", &self.relation_type, 128)?;
        validate_unit("weight", self.weight)?;
        crate::validate::validate_attributes(&self.attributes)?;
        crate::fact::validate_validity(self.valid_from, self.valid_until)
    }

    /// Sets when the relation holds in the world; either end may be open.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `valid_from`
    /// or `valid_until`.
    pub fn with_validity(
        mut self,
        from: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    ) -> Result<Self> {
        self.valid_from = from;
        self.valid_until = until;
        self.validate()?;
        Ok(self)
    }

    /// Whether the relation holds at `at`: `valid_from <= at < valid_until`, open ends
    /// unbounded.
    pub fn holds_at(&self, at: DateTime<Utc>) -> bool {
        self.valid_from.is_none_or(|from| from <= at) && self.valid_until.is_none_or(|u| u > at)
    }

    /// Whether the relation is current at `now`: not closed by then (`valid_until > now` or
    /// open). A relation announced for later is current, as for memories.
    pub fn is_current_at(&self, now: DateTime<Utc>) -> bool {
        self.valid_until.is_none_or(|until| until > now)
    }
}

/// An entity reached by a traversal, with how it was reached.
///
/// The entity and the path's relations are shared (`Arc`): a traversal reaching hundreds of
/// entities over paths that share their first hops hands out references to what the graph
/// holds instead of copying every entity and relation. Serialized as plain values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoredEntity {
    /// The reached entity.
    pub entity: Arc<GraphEntity>,
    /// Hops from the start (1 for a direct neighbour).
    pub hops: usize,
    /// The relations walked from the start to this entity, in order. Relations are followed
    /// in both directions; each keeps its stored direction.
    pub path: Vec<Arc<GraphRelation>>,
    /// Graph distance score: `1 / (1 + hops)` times the product of the path's weights.
    pub score: f32,
}

/// How many tags an entity may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TagConstraints {
    /// Tags beyond this count are dropped on write (the first ones are kept). Default 8.
    pub max_tags_per_entity: usize,
}

impl Default for TagConstraints {
    fn default() -> Self {
        Self {
            max_tags_per_entity: DEFAULT_MAX_TAGS_PER_ENTITY,
        }
    }
}

impl TagConstraints {
    /// Constraints with a custom limit.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `max_tags_per_entity` for zero.
    pub fn new(max_tags_per_entity: usize) -> Result<Self> {
        if max_tags_per_entity == 0 {
            return Err(MemoryError::invalid(
                "max_tags_per_entity",
                "must be at least 1",
            ));
        }
        Ok(Self {
            max_tags_per_entity,
        })
    }

    /// The tags an entity keeps: duplicates dropped (the first kept), then at most
    /// `max_tags_per_entity`, in their order. Every backend stores exactly these.
    pub fn limit<'a>(&self, tags: impl IntoIterator<Item = &'a Tag>) -> Vec<Tag> {
        let max = self.max_tags_per_entity;
        let mut kept: Vec<Tag> = Vec::new();
        for tag in tags {
            if kept.len() >= max {
                break;
            }
            if !kept.contains(tag) {
                kept.push(tag.clone());
            }
        }
        kept
    }
}

/// The result of a multi-hop relation query.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MultiHopResult {
    /// Ids of the entities at the end of the relation chain, sorted.
    pub results: Vec<String>,
    /// Every complete path from the start to a result, one relation per hop.
    pub paths: Vec<Vec<GraphRelation>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_distinct_and_limited() {
        let tags = Tag::normalize_all(["a", "b", "a", "c"]).unwrap();
        let limit = |max| {
            TagConstraints {
                max_tags_per_entity: max,
            }
            .limit(&tags)
            .into_iter()
            .map(|tag| tag.as_str().to_owned())
            .collect::<Vec<_>>()
        };
        assert_eq!(limit(2), ["a", "b"]);
        assert_eq!(limit(8), ["a", "b", "c"]);
    }

    #[test]
    fn graph_positions_order_like_the_listings_and_are_checked() {
        let a = Namespace::parse("kb/a").unwrap();
        let b = Namespace::parse("kb/b").unwrap();
        let position = EntityPosition::new(a.clone(), "m").unwrap();
        let at = |ns: &Namespace, id: &str| GraphEntity::new(ns.clone(), id, "x", "t").unwrap();
        assert!(position.precedes(&at(&a, "n")) && position.precedes(&at(&b, "a")));
        assert!(!position.precedes(&at(&a, "m")) && !position.precedes(&at(&a, "l")));
        let relation = |source: &str, kind: &str, target: &str| {
            GraphRelation::new(a.clone(), source, target, kind, 0.5).unwrap()
        };
        let knows = RelationPosition::of(&relation("m", "knows", "m"));
        assert!(knows.precedes(&relation("m", "knows", "n")));
        assert!(knows.precedes(&relation("m", "likes", "a")));
        assert!(!knows.precedes(&relation("m", "helps", "z")));
        assert!(!knows.precedes(&relation("m", "knows", "m")));
        for bad in ["", "a\u{0}"] {
            assert!(EntityPosition::new(a.clone(), bad).is_err());
            assert!(RelationPosition::new(a.clone(), bad, "knows", "m").is_err());
            assert!(RelationPosition::new(a.clone(), "m", "knows", bad).is_err());
        }
        assert!(RelationPosition::new(a.clone(), "m", " ", "m").is_err());
        let json = serde_json::to_string(&knows).unwrap();
        assert_eq!(
            serde_json::from_str::<RelationPosition>(&json).unwrap(),
            knows
        );
        let json = serde_json::to_string(&position).unwrap();
        assert_eq!(
            serde_json::from_str::<EntityPosition>(&json).unwrap(),
            position
        );
        // Another kind's position is not this one's.
        assert!(
            serde_json::from_str::<EntityPosition>(&serde_json::to_string(&knows).unwrap())
                .is_err()
        );
        assert!(serde_json::from_str::<EntityPosition>(&json.replace("\"m\"", "\"\"")).is_err());
    }
    #[test]
    fn validation_and_serde() {
        let ns = Namespace::parse("g").unwrap();
        assert!(GraphEntity::new(ns.clone(), "", "n", "t").is_err());
        assert!(GraphEntity::new(ns.clone(), "e", " ", "t").is_err());
        assert!(GraphEntity::new(ns.clone(), "e", "n", "").is_err());
        let entity = GraphEntity::new(ns.clone(), "e", "LangGraph", "framework")
            .unwrap()
            .with_tags(["Agent Framework"])
            .unwrap();
        let back: GraphEntity =
            serde_json::from_str(&serde_json::to_string(&entity).unwrap()).unwrap();
        assert_eq!(back, entity);
        assert!(
            entity.created_at.is_some(),
            "new entities know when they were made"
        );
        assert_eq!(entity.last_active(), entity.created_at);
        let mut old: GraphEntity =
            serde_json::from_str(r#"{"id":"e","namespace":"g","name":"N","entity_type":"t"}"#)
                .unwrap();
        assert_eq!(
            (old.created_at, old.access_count, old.last_accessed),
            (None, 0, None)
        );
        assert_eq!(old.last_active(), None);
        assert!(!serde_json::to_string(&old).unwrap().contains("created_at"));
        let at = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        old.last_accessed = Some(at);
        assert_eq!(old.last_active(), Some(at));
        old.access_count = u64::MAX;
        assert!(
            old.validate()
                .unwrap_err()
                .to_string()
                .contains("access_count")
        );
        for weight in [f32::NAN, f32::INFINITY, -0.5, 1.5] {
            let error = GraphRelation::new(ns.clone(), "a", "b", "r", weight).unwrap_err();
            assert!(error.to_string().contains("weight"));
        }
        assert!(GraphRelation::new(ns.clone(), "", "b", "r", 0.5).is_err());
        let relation = GraphRelation::new(ns, "a", "b", "uses", 0.5).unwrap();
        let back: GraphRelation =
            serde_json::from_str(&serde_json::to_string(&relation).unwrap()).unwrap();
        assert_eq!(back, relation);
        assert!(TagConstraints::new(0).is_err());
        assert_eq!(TagConstraints::default().max_tags_per_entity, 8);
    }
}
