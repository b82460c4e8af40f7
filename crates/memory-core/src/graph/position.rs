//! Places in the orders the graph's listings return entities and relations in, for reading
//! a large graph a page at a time
//! ([`list_entities_after`](crate::KnowledgeGraph::list_entities_after),
//! [`list_relations_after`](crate::KnowledgeGraph::list_relations_after)).

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::validate::{validate_id, validate_text};
use crate::{GraphEntity, GraphRelation, Namespace, Result};

/// Where an entity stands in [`list_entities`](crate::KnowledgeGraph::list_entities)'
/// order: by namespace, then id (byte order). The next page of a listing starts after the
/// last entity of the page before.
///
/// ```
/// use memory_core::{EntityPosition, GraphEntity, Namespace};
/// let ns = Namespace::parse("kb")?;
/// let last = GraphEntity::new(ns.clone(), "ana", "Ana", "person")?;
/// let position = EntityPosition::of(&last);
/// let next = GraphEntity::new(ns, "bob", "Bob", "person")?;
/// assert!(position.precedes(&next) && !position.precedes(&last));
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawEntityPosition")]
pub struct EntityPosition {
    namespace: Namespace,
    id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntityPosition {
    namespace: Namespace,
    id: String,
}

impl TryFrom<RawEntityPosition> for EntityPosition {
    type Error = crate::MemoryError;

    fn try_from(raw: RawEntityPosition) -> Result<Self> {
        Self::new(raw.namespace, raw.id)
    }
}

impl EntityPosition {
    /// The position of `entity`.
    pub fn of(entity: &GraphEntity) -> Self {
        Self {
            namespace: entity.namespace.clone(),
            id: entity.id.clone(),
        }
    }

    /// The position an entity with this id in this namespace would have (it need not
    /// exist).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) naming `after` when
    /// the id could not be an entity's.
    pub fn new(namespace: Namespace, id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        validate_id("after", &id)?;
        Ok(Self { namespace, id })
    }

    /// The namespace of the position.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// The id of the position.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The position's key within its namespace, as the listing orders it: the id.
    pub fn key(&self) -> [&str; 1] {
        [&self.id]
    }

    /// Whether `entity` comes after this position.
    pub fn precedes(&self, entity: &GraphEntity) -> bool {
        (entity.namespace.as_str(), entity.id.as_str()) > (self.namespace.as_str(), &self.id)
    }
}

/// Where a relation stands in [`list_relations`](crate::KnowledgeGraph::list_relations)'
/// order: by namespace, source, relation type, then target (byte order).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawRelationPosition")]
pub struct RelationPosition {
    namespace: Namespace,
    source_id: String,
    relation_type: String,
    target_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRelationPosition {
    namespace: Namespace,
    source_id: String,
    relation_type: String,
    target_id: String,
}

impl TryFrom<RawRelationPosition> for RelationPosition {
    type Error = crate::MemoryError;

    fn try_from(raw: RawRelationPosition) -> Result<Self> {
        Self::new(
            raw.namespace,
            raw.source_id,
            raw.relation_type,
            raw.target_id,
        )
    }
}

impl RelationPosition {
    /// The position of `relation`.
    pub fn of(relation: &GraphRelation) -> Self {
        Self {
            namespace: relation.namespace.clone(),
            source_id: relation.source_id.clone(),
            relation_type: relation.relation_type.clone(),
            target_id: relation.target_id.clone(),
        }
    }

    /// The position a relation of this type between these entities would have (it need not
    /// exist).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) naming `after` when
    /// an id or the type could not be a relation's.
    pub fn new(
        namespace: Namespace,
        source_id: impl Into<String>,
        relation_type: impl Into<String>,
        target_id: impl Into<String>,
    ) -> Result<Self> {
        let (source_id, relation_type, target_id) =
            (source_id.into(), relation_type.into(), target_id.into());
        validate_id("after", &source_id)?;
        validate_id("after", &target_id)?;
        validate_text("after", &relation_type, 128)?;
        Ok(Self {
            namespace,
            source_id,
            relation_type,
            target_id,
        })
    }

    /// The namespace of the position.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// The source id of the position.
    pub fn source_id(&self) -> &str {
        &self.source_id
    }

    /// The relation type of the position.
    pub fn relation_type(&self) -> &str {
        &self.relation_type
    }

    /// The target id of the position.
    pub fn target_id(&self) -> &str {
        &self.target_id
    }

    /// The position's key within its namespace, as the listing orders it: source, relation
    /// type, target.
    pub fn key(&self) -> [&str; 3] {
        [&self.source_id, &self.relation_type, &self.target_id]
    }

    /// Whether `relation` comes after this position.
    pub fn precedes(&self, relation: &GraphRelation) -> bool {
        let key = |ns: &Namespace, source: &str, kind: &str, target: &str| -> Ordering {
            (ns.as_str(), source, kind, target).cmp(&(
                self.namespace.as_str(),
                self.source_id.as_str(),
                self.relation_type.as_str(),
                self.target_id.as_str(),
            ))
        };
        key(
            &relation.namespace,
            &relation.source_id,
            &relation.relation_type,
            &relation.target_id,
        ) == Ordering::Greater
    }
}
