//! The row codec of the `memories` table: an item encoded for its row (with its search
//! columns) before the database is touched, and a row decoded back into an item.

use memory_core::search::memory_content_field;
use memory_core::{Lineage, MemoryError, MemoryItem, MemoryKind, Namespace, Result};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::corrupt;
use crate::sql::{
    IndexedTerms, decode_time, encode_time, index_terms, reject_nul, reject_nul_json,
};

/// The columns of a memory, in the order [`decode`] reads them.
pub(super) const COLUMNS: &str = "m.ns, m.id, m.content, m.kind, m.importance, m.metadata, m.tags, m.source, \
     m.credibility, m.created_at, m.updated_at, m.last_accessed, m.access_count, m.embedding, \
     m.metadata_exact, m.fact_key, m.valid_from, m.valid_until, m.lineage";
/// How many columns [`COLUMNS`] selects.
pub(super) const COLUMN_COUNT: usize = 19;

/// An embedding as its column keeps it: each value's float4 bytes in network (big-endian)
/// order, as PostgreSQL's `float4send` writes them (schema version 6).
pub(super) fn pack_embedding(embedding: &[f32]) -> Vec<u8> {
    embedding
        .iter()
        .flat_map(|value| value.to_be_bytes())
        .collect()
}

/// The values of a packed embedding ([`pack_embedding`]) into `out`, which is cleared first
/// (a ranking pass reuses one buffer for every row).
///
/// # Errors
/// The problem, for bytes that are no whole number of values.
pub(super) fn unpack_embedding(
    bytes: &[u8],
    out: &mut Vec<f32>,
) -> std::result::Result<(), String> {
    let (values, rest) = bytes.as_chunks::<4>();
    if !rest.is_empty() {
        return Err(format!(
            "an embedding of {} bytes is no whole number of 4-byte values",
            bytes.len()
        ));
    }
    out.clear();
    out.extend(values.iter().map(|value| f32::from_be_bytes(*value)));
    Ok(())
}

/// An item encoded for its row, computed before the database is touched.
pub(super) struct Encoded {
    pub(super) ns: String,
    pub(super) id: String,
    pub(super) content: String,
    pub(super) kind: &'static str,
    pub(super) importance: f32,
    pub(super) metadata: serde_json::Value,
    /// The metadata's JSON text when `jsonb` would not give it back exactly (see
    /// [`exact_metadata`]).
    pub(super) metadata_exact: Option<String>,
    pub(super) tags: Vec<String>,
    pub(super) source: Option<String>,
    pub(super) credibility: f32,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) last_accessed: Option<i64>,
    pub(super) access_count: i64,
    /// The embedding packed by [`pack_embedding`].
    pub(super) embedding: Option<Vec<u8>>,
    pub(super) terms: Vec<String>,
    pub(super) term_freqs: serde_json::Value,
    pub(super) doc_len: i32,
    pub(super) context_len: i32,
    pub(super) fact_key: Option<String>,
    pub(super) valid_from: Option<i64>,
    pub(super) valid_until: Option<i64>,
    /// The time of [`MemoryItem::ended`], the column time views filter on.
    pub(super) ended_at: Option<i64>,
    /// [`Lineage::to_json`]: the end and the links, `None` when there are none.
    pub(super) lineage: Option<String>,
}

impl Encoded {
    /// The values of the columns `ns` to `lineage`, in the order of the upsert statement's
    /// columns.
    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 24] {
        [
            &self.ns,
            &self.id,
            &self.content,
            &self.kind,
            &self.importance,
            &self.metadata,
            &self.tags,
            &self.source,
            &self.credibility,
            &self.created_at,
            &self.updated_at,
            &self.last_accessed,
            &self.access_count,
            &self.embedding,
            &self.terms,
            &self.term_freqs,
            &self.doc_len,
            &self.context_len,
            &self.metadata_exact,
            &self.fact_key,
            &self.valid_from,
            &self.valid_until,
            &self.ended_at,
            &self.lineage,
        ]
    }
}

/// The search columns of a memory, two fields: content with tags and the fact key's words
/// ([`memory_content_field`], as every backend indexes them), then the context
/// ([`MemoryItem::context`], metadata [`CONTEXT_METADATA_KEY`](memory_core::CONTEXT_METADATA_KEY)).
pub(super) fn memory_terms<T: AsRef<str>>(
    content: &str,
    tags: &[T],
    fact_key: Option<&str>,
    context: &str,
) -> IndexedTerms {
    index_terms(&[&memory_content_field(content, tags, fact_key), context])
}

pub(super) fn encode(item: MemoryItem) -> Result<Encoded> {
    item.validate()?;
    reject_nul("content", &item.content)?;
    if let Some(source) = &item.source {
        reject_nul("source", source)?;
    }
    reject_nul_json("metadata", &item.metadata)?;
    let access_count = i64::try_from(item.access_count)
        .map_err(|_| MemoryError::invalid("access_count", "larger than 2^63 - 1"))?;
    let last_accessed = encode_optional_time("last_accessed", item.last_accessed)?;
    let indexed = memory_terms(
        &item.content,
        &item.tags,
        item.fact_key.as_deref(),
        item.context(),
    );
    let metadata_exact = exact_metadata(&item.metadata);
    let lineage = Lineage::to_json(&item);
    Ok(Encoded {
        metadata_exact,
        valid_from: encode_optional_time("valid_from", item.valid_from)?,
        valid_until: encode_optional_time("valid_until", item.valid_until)?,
        ended_at: encode_optional_time("ended", item.ended.as_ref().map(|ended| ended.at))?,
        lineage,
        fact_key: item.fact_key,
        doc_len: indexed.length(0),
        context_len: indexed.length(1),
        terms: indexed.terms,
        term_freqs: indexed.frequencies,
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
        // -0.0 is stored as 0.0 by every backend (SQLite's REAL cannot keep the sign).
        importance: item.importance + 0.0,
        credibility: item.credibility + 0.0,
        metadata: item.metadata,
        embedding: item.embedding.as_deref().map(pack_embedding),
        ns: item.namespace.as_str().to_owned(),
        id: item.id,
        content: item.content,
        source: item.source,
    })
}

pub(super) fn decode(row: &Row) -> Result<MemoryItem> {
    let ns: String = row.try_get(0).map_err(|error| corrupt("a memory", error))?;
    let id: String = row
        .try_get(1)
        .map_err(|error| corrupt(format_args!("a memory in {ns}"), error))?;
    let what = format!("memory {id} in {ns}");
    let field = |error: tokio_postgres::Error| corrupt(&what, error);
    let kind: String = row.try_get(3).map_err(field)?;
    let tags: Vec<String> = row.try_get(6).map_err(field)?;
    let access_count: i64 = row.try_get(12).map_err(field)?;
    let last_accessed: Option<i64> = row.try_get(11).map_err(field)?;
    let valid_from: Option<i64> = row.try_get(16).map_err(field)?;
    let valid_until: Option<i64> = row.try_get(17).map_err(field)?;
    let lineage: Option<String> = row.try_get(18).map_err(field)?;
    let mut item = MemoryItem {
        namespace: Namespace::parse(&ns).map_err(|error| corrupt(&what, error))?,
        kind: MemoryKind::parse(&kind).map_err(|error| corrupt(&what, error))?,
        tags: tags
            .iter()
            .map(|tag| memory_core::Tag::new(tag))
            .collect::<Result<_>>()
            .map_err(|error| corrupt(&what, error))?,
        content: row.try_get(2).map_err(field)?,
        importance: row.try_get(4).map_err(field)?,
        metadata: match row.try_get::<_, Option<String>>(14).map_err(field)? {
            Some(text) => serde_json::from_str(&text).map_err(|error| corrupt(&what, error))?,
            None => row.try_get(5).map_err(field)?,
        },
        source: row.try_get(7).map_err(field)?,
        credibility: row.try_get(8).map_err(field)?,
        created_at: decode_time(row.try_get(9).map_err(field)?),
        updated_at: decode_time(row.try_get(10).map_err(field)?),
        last_accessed: last_accessed.map(decode_time),
        access_count: u64::try_from(access_count).unwrap_or(0),
        embedding: match row.try_get::<_, Option<&[u8]>>(13).map_err(field)? {
            Some(bytes) => {
                let mut embedding = Vec::new();
                unpack_embedding(bytes, &mut embedding).map_err(|error| corrupt(&what, error))?;
                Some(embedding)
            }
            None => None,
        },
        fact_key: row.try_get(15).map_err(field)?,
        valid_from: valid_from.map(decode_time),
        valid_until: valid_until.map(decode_time),
        ended: None,
        supersedes: Vec::new(),
        conflicts_with: Vec::new(),
        id,
    };
    Lineage::apply_json(&mut item, lineage.as_deref()).map_err(|error| corrupt(&what, error))?;
    Ok(item)
}

/// [`encode_time`] of a time that may be absent.
fn encode_optional_time(
    field: &str,
    at: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<Option<i64>> {
    at.map(|at| encode_time(field, at)).transpose()
}

/// The metadata's JSON text when the `jsonb` column cannot give it back exactly, `None`
/// otherwise (almost always). `jsonb` keeps numbers as `numeric`: it has no negative zero,
/// so a `-0.0` would read back as `0.0`, and it writes a float given with an exponent in
/// plain digits, so `1.7e18` would read back as the integer `1700000000000000000` (another
/// JSON value, which a metadata condition of `1.7e18` no longer matches). Filters still read
/// the `jsonb` column, where each pair compares equal as it does in Rust.
pub(super) fn exact_metadata(metadata: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let mut stack = vec![metadata];
    while let Some(value) = stack.pop() {
        match value {
            Value::Number(number) => {
                if number.is_f64()
                    && (number
                        .as_f64()
                        .is_some_and(|x| x == 0.0 && x.is_sign_negative())
                        || number.to_string().contains(['e', 'E']))
                {
                    return Some(metadata.to_string());
                }
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(fields) => stack.extend(fields.values()),
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    None
}
