//! The row codec of the graph's tables: an entity encoded for its row (tags normalised and
//! limited) before the database is touched, and entity and relation rows decoded back.

use chrono::{DateTime, Utc};
use memory_core::{GraphEntity, GraphRelation, Namespace, Result, TagConstraints};
use rusqlite::{Connection, Row, params_from_iter};

use crate::error::{Context, corrupt};
use crate::sql::{Sql, decode_tags, decode_time, encode_tags, encode_time};

/// The columns of an entity, in the order [`read_entity`] reads them.
pub(super) const COLUMNS: &str = "e.ns, e.id, e.name, e.entity_type, e.description, e.tags, \
     e.created_at, e.access_count, e.last_accessed, e.attributes";
/// The columns of a relation, in the order [`read_relation`] reads them.
pub(super) const RELATION_COLUMNS: &str = "r.ns, r.source_id, r.target_id, r.relation_type, r.weight, r.valid_from, r.valid_until, \
     r.attributes";

/// An entity encoded for its row, computed before the database is touched.
pub(super) struct EncodedEntity {
    pub(super) ns: String,
    pub(super) id: String,
    pub(super) name: String,
    pub(super) name_key: String,
    pub(super) entity_type: String,
    pub(super) type_key: String,
    pub(super) description: String,
    pub(super) tags_json: String,
    pub(super) tags: Vec<String>,
    pub(super) created_at: Option<i64>,
    pub(super) access_count: i64,
    pub(super) last_accessed: Option<i64>,
    /// The attributes as JSON text; `None` when there are none.
    pub(super) attributes: Option<String>,
}

/// Attributes as their column holds them: JSON text, `None` (NULL) when there are none.
pub(super) fn encode_attributes(attributes: &memory_core::Attributes) -> Option<String> {
    (!attributes.is_empty()).then(|| serde_json::Value::Object(attributes.clone()).to_string())
}

/// An entity checked and encoded for its row, its tags limited to the graph's constraints.
pub(super) fn encode(entity: GraphEntity, constraints: TagConstraints) -> Result<EncodedEntity> {
    entity.validate()?;
    let tags = constraints.limit(&entity.tags);
    let time =
        |field: &str, at: Option<DateTime<Utc>>| at.map(|at| encode_time(field, at)).transpose();
    Ok(EncodedEntity {
        created_at: time("created_at", entity.created_at)?,
        // validate() checked that the count fits.
        access_count: i64::try_from(entity.access_count).unwrap_or(i64::MAX),
        last_accessed: time("last_accessed", entity.last_accessed)?,
        attributes: encode_attributes(&entity.attributes),
        ns: entity.namespace.as_str().to_owned(),
        id: entity.id,
        name_key: entity.name.to_lowercase(),
        name: entity.name,
        type_key: entity.entity_type.to_lowercase(),
        entity_type: entity.entity_type,
        description: entity.description,
        tags_json: encode_tags(&tags),
        tags: tags.iter().map(|tag| tag.as_str().to_owned()).collect(),
    })
}

/// An entity's row as read, before decoding.
pub(super) struct RawEntity {
    pub(super) ns: String,
    pub(super) id: String,
    pub(super) name: String,
    pub(super) entity_type: String,
    pub(super) description: String,
    pub(super) tags: String,
    pub(super) created_at: Option<i64>,
    pub(super) access_count: i64,
    pub(super) last_accessed: Option<i64>,
    pub(super) attributes: Option<String>,
}

/// Reads the columns of [`COLUMNS`] from a row.
pub(super) fn read_entity(row: &Row<'_>) -> rusqlite::Result<RawEntity> {
    Ok(RawEntity {
        ns: row.get(0)?,
        id: row.get(1)?,
        name: row.get(2)?,
        entity_type: row.get(3)?,
        description: row.get(4)?,
        tags: row.get(5)?,
        created_at: row.get(6)?,
        access_count: row.get(7)?,
        last_accessed: row.get(8)?,
        attributes: row.get(9)?,
    })
}

/// The entity a row holds.
pub(super) fn decode_entity(raw: RawEntity) -> Result<GraphEntity> {
    let what = format!("entity {} in {}", raw.id, raw.ns);
    Ok(GraphEntity {
        namespace: Namespace::parse(&raw.ns).map_err(|error| corrupt(&what, error))?,
        tags: decode_tags(&what, &raw.tags)?,
        id: raw.id,
        name: raw.name,
        entity_type: raw.entity_type,
        description: raw.description,
        attributes: match raw.attributes.as_deref() {
            None => serde_json::Map::new(),
            Some(text) => serde_json::from_str(text).map_err(|error| corrupt(&what, error))?,
        },
        created_at: raw.created_at.map(decode_time),
        access_count: u64::try_from(raw.access_count).unwrap_or(0),
        last_accessed: raw.last_accessed.map(decode_time),
    })
}

/// A relation's row as read, before decoding.
pub(super) struct RawRelation {
    pub(super) ns: String,
    pub(super) source_id: String,
    pub(super) target_id: String,
    pub(super) relation_type: String,
    pub(super) weight: f64,
    pub(super) valid_from: Option<i64>,
    pub(super) valid_until: Option<i64>,
    pub(super) attributes: Option<String>,
}

/// Reads the columns of [`RELATION_COLUMNS`] from a row.
pub(super) fn read_relation(row: &Row<'_>) -> rusqlite::Result<RawRelation> {
    Ok(RawRelation {
        ns: row.get(0)?,
        source_id: row.get(1)?,
        target_id: row.get(2)?,
        relation_type: row.get(3)?,
        weight: row.get(4)?,
        valid_from: row.get(5)?,
        valid_until: row.get(6)?,
        attributes: row.get(7)?,
    })
}

/// The relation a row holds.
pub(super) fn decode_relation(
    RawRelation {
        ns,
        source_id,
        target_id,
        relation_type,
        weight,
        valid_from,
        valid_until,
        attributes,
    }: RawRelation,
) -> Result<GraphRelation> {
    let what = || format!("relation {source_id} -> {target_id} in {ns}");
    Ok(GraphRelation {
        namespace: Namespace::parse(&ns).map_err(|error| corrupt(what(), error))?,
        attributes: match attributes.as_deref() {
            None => memory_core::Attributes::new(),
            Some(text) => serde_json::from_str(text).map_err(|error| corrupt(what(), error))?,
        },
        source_id,
        target_id,
        relation_type,
        weight: weight as f32,
        valid_from: valid_from.map(decode_time),
        valid_until: valid_until.map(decode_time),
    })
}

/// The entities `sql` selects (its columns [`COLUMNS`]).
pub(super) fn query_entities(
    connection: &Connection,
    sql: &Sql,
    what: &str,
) -> Result<Vec<GraphEntity>> {
    let rows = connection
        .prepare_cached(&sql.text)
        .and_then(|mut statement| {
            statement
                .query_map(params_from_iter(sql.params.iter()), read_entity)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .context(|| what.to_owned())?;
    rows.into_iter().map(decode_entity).collect()
}

/// The relations `sql` selects (its columns [`RELATION_COLUMNS`]).
pub(super) fn query_relations(
    connection: &Connection,
    sql: &Sql,
    what: &str,
) -> Result<Vec<GraphRelation>> {
    let rows = connection
        .prepare_cached(&sql.text)
        .and_then(|mut statement| {
            statement
                .query_map(params_from_iter(sql.params.iter()), read_relation)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .context(|| what.to_owned())?;
    rows.into_iter().map(decode_relation).collect()
}
