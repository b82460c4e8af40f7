//! The row codec of the `memories` table: an item encoded for its row before the database
//! is touched, and a row read back and decoded into an item.

use chrono::{DateTime, Utc};
use memory_core::{Lineage, MemoryError, MemoryItem, MemoryKind, Namespace, Result};
use rusqlite::Row;

use crate::error::corrupt;
use crate::sql::{decode_tags, decode_time, encode_tags, encode_time};
use crate::terms::Analyzed;

/// The columns of a memory, in the order [`read_raw_at`] reads them.
pub(super) const COLUMNS: &str = "m.ns, m.id, m.content, m.kind, m.importance, m.metadata, m.tags, m.source, \
     m.credibility, m.created_at, m.updated_at, m.last_accessed, m.access_count, m.embedding, \
     m.fact_key, m.valid_from, m.valid_until, m.lineage";

/// An item encoded for its row, computed before the database is touched.
pub(super) struct Encoded {
    pub(super) ns: String,
    pub(super) id: String,
    pub(super) content: String,
    pub(super) kind: &'static str,
    pub(super) importance: f64,
    pub(super) metadata: String,
    pub(super) tags_json: String,
    pub(super) tags: Vec<String>,
    pub(super) source: Option<String>,
    pub(super) credibility: f64,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) last_accessed: Option<i64>,
    pub(super) access_count: i64,
    pub(super) embedding: Option<Vec<u8>>,
    pub(super) fact_key: Option<String>,
    pub(super) valid_from: Option<i64>,
    pub(super) valid_until: Option<i64>,
    /// `ended.at`, a column of its own so that time views filter in SQL.
    pub(super) ended_at: Option<i64>,
    /// [`Lineage::to_json`]: the end, superseded and conflicting ids; `None` without links.
    pub(super) lineage: Option<String>,
    /// The analyzed search fields, for the full-text index.
    pub(super) doc: Analyzed<2>,
}

/// The item's search fields ([`MemoryItem::search_fields`]: content with tags, context),
/// analyzed for the full-text index.
pub(super) fn analyze(item: &MemoryItem) -> Analyzed<2> {
    let fields = item.search_fields();
    Analyzed::new(fields.each_ref().map(|field| field.as_ref()))
}

pub(super) fn encode(item: MemoryItem) -> Result<Encoded> {
    item.validate()?;
    let access_count = i64::try_from(item.access_count)
        .map_err(|_| MemoryError::invalid("access_count", "larger than 2^63 - 1"))?;
    let last_accessed = encode_optional_time("last_accessed", item.last_accessed)?;
    let valid_from = encode_optional_time("valid_from", item.valid_from)?;
    let valid_until = encode_optional_time("valid_until", item.valid_until)?;
    let ended_at = encode_optional_time("ended", item.ended.as_ref().map(|ended| ended.at))?;
    let lineage = Lineage::to_json(&item);
    Ok(Encoded {
        valid_from,
        valid_until,
        ended_at,
        lineage,
        doc: analyze(&item),
        tags_json: encode_tags(&item.tags),
        tags: item
            .tags
            .iter()
            .map(|tag| tag.as_str().to_owned())
            .collect(),
        created_at: encode_time("created_at", item.created_at)?,
        updated_at: encode_time("updated_at", item.updated_at)?,
        last_accessed,
        access_count,
        kind: item.kind.as_str(),
        importance: f64::from(item.importance),
        credibility: f64::from(item.credibility),
        metadata: item.metadata.to_string(),
        embedding: item
            .embedding
            .map(|values| values.iter().flat_map(|v| v.to_le_bytes()).collect()),
        ns: item.namespace.as_str().to_owned(),
        fact_key: item.fact_key,
        id: item.id,
        content: item.content,
        source: item.source,
    })
}

fn encode_optional_time(field: &str, at: Option<DateTime<Utc>>) -> Result<Option<i64>> {
    at.map(|at| encode_time(field, at)).transpose()
}

/// The row of a memory as read, before decoding.
pub(super) struct Raw {
    pub(super) ns: String,
    pub(super) id: String,
    pub(super) content: String,
    pub(super) kind: String,
    pub(super) importance: f64,
    pub(super) metadata: String,
    pub(super) tags: String,
    pub(super) source: Option<String>,
    pub(super) credibility: f64,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) last_accessed: Option<i64>,
    pub(super) access_count: i64,
    pub(super) embedding: Option<Vec<u8>>,
    pub(super) fact_key: Option<String>,
    pub(super) valid_from: Option<i64>,
    pub(super) valid_until: Option<i64>,
    pub(super) lineage: Option<String>,
}

pub(super) fn read_raw(row: &Row<'_>) -> rusqlite::Result<Raw> {
    read_raw_at(row, 0)
}

/// Reads the [`COLUMNS`] starting at column `at`.
pub(super) fn read_raw_at(row: &Row<'_>, at: usize) -> rusqlite::Result<Raw> {
    Ok(Raw {
        ns: row.get(at)?,
        id: row.get(at + 1)?,
        content: row.get(at + 2)?,
        kind: row.get(at + 3)?,
        importance: row.get(at + 4)?,
        metadata: row.get(at + 5)?,
        tags: row.get(at + 6)?,
        source: row.get(at + 7)?,
        credibility: row.get(at + 8)?,
        created_at: row.get(at + 9)?,
        updated_at: row.get(at + 10)?,
        last_accessed: row.get(at + 11)?,
        access_count: row.get(at + 12)?,
        embedding: row.get(at + 13)?,
        fact_key: row.get(at + 14)?,
        valid_from: row.get(at + 15)?,
        valid_until: row.get(at + 16)?,
        lineage: row.get(at + 17)?,
    })
}

/// `memory <id> in <namespace>`, for messages: formatted only when one is written.
struct Label<'a>(&'a str, &'a str);

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "memory {} in {}", self.0, self.1)
    }
}

impl Raw {
    pub(super) fn into_item(self) -> Result<MemoryItem> {
        let what = Label(&self.id, &self.ns);
        let namespace = Namespace::parse(&self.ns).map_err(|error| corrupt(&what, error))?;
        let kind = MemoryKind::parse(&self.kind).map_err(|error| corrupt(&what, error))?;
        let metadata: serde_json::Value = serde_json::from_str(&self.metadata)
            .map_err(|error| corrupt(format_args!("metadata of {what}"), error))?;
        let tags = decode_tags(&what, &self.tags)?;
        let embedding = match self.embedding {
            None => None,
            Some(bytes) => {
                if bytes.len() % 4 != 0 {
                    return Err(corrupt(
                        format_args!("embedding of {what}"),
                        "length is not a multiple of 4",
                    ));
                }
                Some(
                    bytes
                        .chunks_exact(4)
                        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
                        .collect(),
                )
            }
        };
        let mut item = MemoryItem {
            id: self.id,
            namespace,
            content: self.content,
            kind,
            importance: self.importance as f32,
            metadata,
            tags,
            source: self.source,
            credibility: self.credibility as f32,
            created_at: decode_time(self.created_at),
            updated_at: decode_time(self.updated_at),
            last_accessed: self.last_accessed.map(decode_time),
            access_count: u64::try_from(self.access_count).unwrap_or(0),
            embedding,
            fact_key: self.fact_key,
            valid_from: self.valid_from.map(decode_time),
            valid_until: self.valid_until.map(decode_time),
            ended: None,
            supersedes: Vec::new(),
            conflicts_with: Vec::new(),
        };
        Lineage::apply_json(&mut item, self.lineage.as_deref()).map_err(|error| {
            let what = Label(&item.id, item.namespace.as_str());
            corrupt(format_args!("lineage of {what}"), error)
        })?;
        Ok(item)
    }
}
