//! The row codec of the graph's tables: an entity encoded for its row (tags normalised and
//! limited) before the database is touched, and entity and relation rows decoded back.

use memory_core::{Attributes, GraphEntity, GraphRelation, Namespace, Result, TagConstraints};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::corrupt;
use crate::knowledge_store::decode_tags;
use crate::sql::{decode_time, encode_time, reject_nul};

/// The columns of an entity, in the order [`decode_entity`] reads them.
pub(super) const COLUMNS: &str = "e.ns, e.id, e.name, e.entity_type, e.description, e.tags, \
     e.created_at, e.access_count, e.last_accessed, e.attributes";
/// The columns of a relation, in the order [`decode_relation`] reads them.
pub(super) const RELATION_COLUMNS: &str = "r.ns, r.source_id, r.target_id, r.relation_type, \
     r.weight, r.valid_from, r.valid_until, r.attributes";

/// An entity encoded for its row, computed before the database is touched.
pub(super) struct EncodedEntity {
    pub(super) ns: String,
    pub(super) id: String,
    pub(super) name: String,
    pub(super) name_key: String,
    pub(super) entity_type: String,
    pub(super) type_key: String,
    pub(super) description: String,
    pub(super) tags: Vec<String>,
    pub(super) created_at: Option<i64>,
    pub(super) access_count: i64,
    pub(super) last_accessed: Option<i64>,
    /// The attributes as JSON text; `None` when there are none.
    pub(super) attributes: Option<String>,
}

impl EncodedEntity {
    /// The values of the columns `ns` to `tags`, `created_at` and `attributes`, in the
    /// order of the update statement's parameters.
    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 10] {
        [
            &self.ns,
            &self.id,
            &self.name,
            &self.name_key,
            &self.entity_type,
            &self.type_key,
            &self.description,
            &self.tags,
            &self.created_at,
            &self.attributes,
        ]
    }

    /// The values of the columns `ns` to `tags`, `created_at`, the access statistics and
    /// `attributes`, in the order of the insert statement's parameters.
    pub(super) fn insert_params(&self) -> [&(dyn ToSql + Sync); 12] {
        [
            &self.ns,
            &self.id,
            &self.name,
            &self.name_key,
            &self.entity_type,
            &self.type_key,
            &self.description,
            &self.tags,
            &self.created_at,
            &self.access_count,
            &self.last_accessed,
            &self.attributes,
        ]
    }
}

/// Attributes as their column holds them: JSON text, `None` (NULL) when there are none.
pub(super) fn encode_attributes(attributes: &Attributes) -> Option<String> {
    (!attributes.is_empty()).then(|| serde_json::Value::Object(attributes.clone()).to_string())
}

/// Attributes read back from their column (`what` names the record for a corrupt value).
pub(super) fn decode_attributes(what: &str, text: Option<&str>) -> Result<Attributes> {
    match text {
        None => Ok(Attributes::new()),
        Some(text) => serde_json::from_str(text).map_err(|error| corrupt(what, error)),
    }
}

/// Validates an entity and encodes it for its row, its tags limited to `constraints`.
pub(super) fn encode(entity: GraphEntity, constraints: TagConstraints) -> Result<EncodedEntity> {
    entity.validate()?;
    reject_nul("name", &entity.name)?;
    reject_nul("entity_type", &entity.entity_type)?;
    reject_nul("description", &entity.description)?;
    let time = |field: &str, at: Option<chrono::DateTime<chrono::Utc>>| {
        at.map(|at| encode_time(field, at)).transpose()
    };
    Ok(EncodedEntity {
        created_at: time("created_at", entity.created_at)?,
        // validate() checked that the count fits.
        access_count: i64::try_from(entity.access_count).unwrap_or(i64::MAX),
        last_accessed: time("last_accessed", entity.last_accessed)?,
        attributes: encode_attributes(&entity.attributes),
        tags: constraints
            .limit(&entity.tags)
            .iter()
            .map(|tag| tag.as_str().to_owned())
            .collect(),
        ns: entity.namespace.as_str().to_owned(),
        id: entity.id,
        name_key: entity.name.to_lowercase(),
        name: entity.name,
        type_key: entity.entity_type.to_lowercase(),
        entity_type: entity.entity_type,
        description: entity.description,
    })
}

/// Decodes the entity in the columns `first..first + 10` of `row` ([`COLUMNS`]' order).
pub(super) fn decode_entity(row: &Row, first: usize) -> Result<GraphEntity> {
    let field = |error: tokio_postgres::Error| corrupt("an entity", error);
    let ns: String = row.try_get(first).map_err(field)?;
    let id: String = row.try_get(first + 1).map_err(field)?;
    let what = format!("entity {id} in {ns}");
    let tags: Vec<String> = row.try_get(first + 5).map_err(field)?;
    let created_at: Option<i64> = row.try_get(first + 6).map_err(field)?;
    let access_count: i64 = row.try_get(first + 7).map_err(field)?;
    let last_accessed: Option<i64> = row.try_get(first + 8).map_err(field)?;
    let attributes: Option<String> = row.try_get(first + 9).map_err(field)?;
    Ok(GraphEntity {
        attributes: decode_attributes(&what, attributes.as_deref())?,
        created_at: created_at.map(decode_time),
        access_count: u64::try_from(access_count).unwrap_or(0),
        last_accessed: last_accessed.map(decode_time),
        namespace: Namespace::parse(&ns).map_err(|error| corrupt(&what, error))?,
        tags: decode_tags(&what, &tags)?,
        name: row.try_get(first + 2).map_err(field)?,
        entity_type: row.try_get(first + 3).map_err(field)?,
        description: row.try_get(first + 4).map_err(field)?,
        id,
    })
}

/// Decodes the relation in the columns of [`RELATION_COLUMNS`].
pub(super) fn decode_relation(row: &Row) -> Result<GraphRelation> {
    let field = |error: tokio_postgres::Error| corrupt("a relation", error);
    let ns: String = row.try_get(0).map_err(field)?;
    let source_id: String = row.try_get(1).map_err(field)?;
    let target_id: String = row.try_get(2).map_err(field)?;
    let valid_from: Option<i64> = row.try_get(5).map_err(field)?;
    let valid_until: Option<i64> = row.try_get(6).map_err(field)?;
    let attributes: Option<String> = row.try_get(7).map_err(field)?;
    let what = format!("relation {source_id} -> {target_id} in {ns}");
    Ok(GraphRelation {
        attributes: decode_attributes(&what, attributes.as_deref())?,
        namespace: Namespace::parse(&ns).map_err(|error| {
            corrupt(
                format_args!("relation {source_id} -> {target_id} in {ns}"),
                error,
            )
        })?,
        relation_type: row.try_get(3).map_err(field)?,
        weight: row.try_get(4).map_err(field)?,
        valid_from: valid_from.map(decode_time),
        valid_until: valid_until.map(decode_time),
        source_id,
        target_id,
    })
}
