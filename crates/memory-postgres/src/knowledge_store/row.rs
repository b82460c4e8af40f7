//! The row codec of a knowledge page: a page encoded for the insert and update statements
//! (with its search columns), those statements, and a row decoded back into a page.

use memory_core::{KnowledgePage, Namespace, Result, Tag};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::error::corrupt;
use crate::sql::{IndexedTerms, decode_time, encode_time, index_terms, reject_nul};

pub(super) struct EncodedPage {
    pub(super) ns: String,
    pub(super) id: String,
    title: String,
    title_key: String,
    summary: String,
    content: String,
    tags: Vec<String>,
    /// The references as the page lists them.
    references: Vec<String>,
    /// Distinct references other than to the page itself: the rows of `page_refs`.
    refs: Vec<String>,
    created_at: i64,
    updated_at: i64,
    access_count: i64,
    last_accessed: Option<i64>,
    terms: Vec<String>,
    term_freqs: serde_json::Value,
    lengths: [i32; 4],
}

impl EncodedPage {
    /// The values of [`INSERT`], in its order.
    pub(super) fn insert_params(&self) -> [&(dyn ToSql + Sync); 19] {
        [
            &self.ns,
            &self.id,
            &self.title,
            &self.title_key,
            &self.summary,
            &self.content,
            &self.tags,
            &self.references,
            &self.created_at,
            &self.updated_at,
            &self.terms,
            &self.term_freqs,
            &self.lengths[0],
            &self.lengths[1],
            &self.lengths[2],
            &self.lengths[3],
            &self.refs,
            &self.access_count,
            &self.last_accessed,
        ]
    }

    /// The values of [`DELETE_OLD_REFS`] and [`INSERT_NEW_REFS`], in their order.
    pub(super) fn refs_params(&self) -> [&(dyn ToSql + Sync); 3] {
        [&self.ns, &self.id, &self.refs]
    }

    /// The values of [`UPDATE`], in its order.
    pub(super) fn update_params(&self) -> [&(dyn ToSql + Sync); 15] {
        [
            &self.ns,
            &self.id,
            &self.title,
            &self.title_key,
            &self.summary,
            &self.content,
            &self.tags,
            &self.references,
            &self.updated_at,
            &self.terms,
            &self.term_freqs,
            &self.lengths[0],
            &self.lengths[1],
            &self.lengths[2],
            &self.lengths[3],
        ]
    }
}

/// The search columns of a page: four fields, title, summary, tags, content.
pub(super) fn page_terms(title: &str, summary: &str, tags: &[&str], content: &str) -> IndexedTerms {
    index_terms(&[title, summary, &tags.join(" "), content])
}

pub(super) fn encode(page: KnowledgePage) -> Result<EncodedPage> {
    page.validate()?;
    reject_nul("title", &page.title)?;
    reject_nul("summary", &page.summary)?;
    reject_nul("content", &page.content)?;
    let tags: Vec<&str> = page.tags.iter().map(Tag::as_str).collect();
    let indexed = page_terms(&page.title, &page.summary, &tags, &page.content);
    // Distinct, without the page itself (validated: at most `MAX_REFERENCES`).
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut refs: Vec<String> = Vec::new();
    for reference in &page.references {
        if *reference != page.id && seen.insert(reference.as_str()) {
            refs.push(reference.clone());
        }
    }
    Ok(EncodedPage {
        lengths: [
            indexed.length(0),
            indexed.length(1),
            indexed.length(2),
            indexed.length(3),
        ],
        terms: indexed.terms,
        term_freqs: indexed.frequencies,
        title_key: page.title.to_lowercase(),
        tags: page
            .tags
            .iter()
            .map(|tag| tag.as_str().to_owned())
            .collect(),
        refs,
        created_at: encode_time("created_at", page.created_at)?,
        updated_at: encode_time("updated_at", page.updated_at)?,
        // validate() checked that the count fits.
        access_count: i64::try_from(page.access_count).unwrap_or(i64::MAX),
        last_accessed: page
            .last_accessed
            .map(|at| encode_time("last_accessed", at))
            .transpose()?,
        ns: page.namespace.as_str().to_owned(),
        id: page.id,
        title: page.title,
        summary: page.summary,
        content: page.content,
        references: page.references,
    })
}

/// Inserts a new page and its references in one statement; returns no row when the id is
/// taken. (The references' foreign key is checked at the end of the statement, after the page
/// row exists.)
pub(super) const INSERT: &str = "WITH page AS (INSERT INTO {s}.pages (ns, id, title, title_key, summary, \
     content, tags, refs, created_at, updated_at, terms, term_freqs, title_len, summary_len, \
     tags_len, content_len, access_count, last_accessed) VALUES ($1::text, $2::text, $3::text, \
     $4::text, $5::text, $6::text, $7::text[], $8::text[], $9::bigint, $10::bigint, \
     $11::text[], $12::jsonb, $13::integer, $14::integer, $15::integer, $16::integer, \
     $18::bigint, $19::bigint) \
     ON CONFLICT (ns, id) DO NOTHING RETURNING ns, id), \
     refs AS (INSERT INTO {s}.page_refs (ns, source_id, target_id) \
     SELECT page.ns, page.id, target FROM page, unnest($17::text[]) AS target) \
     SELECT count(*) FROM page";

/// Replaces an existing page's fields (keeping `created_at` and the access statistics);
/// returns no row when the page is missing. Its references follow in statements of their
/// own ([`DELETE_OLD_REFS`], [`INSERT_NEW_REFS`]), in the same transaction.
pub(super) const UPDATE: &str = "UPDATE {s}.pages SET title = $3::text, title_key = $4::text, \
     summary = $5::text, content = $6::text, tags = $7::text[], refs = $8::text[], \
     updated_at = $9::bigint, terms = $10::text[], term_freqs = $11::jsonb, \
     title_len = $12::integer, summary_len = $13::integer, tags_len = $14::integer, \
     content_len = $15::integer \
     WHERE ns = $1::text AND id = $2::text RETURNING 1";

/// [`UPDATE`] only when the stored `updated_at` is still `$16`.
pub(super) const UPDATE_IF: &str = "UPDATE {s}.pages SET title = $3::text, \
     title_key = $4::text, summary = $5::text, content = $6::text, tags = $7::text[], \
     refs = $8::text[], updated_at = $9::bigint, terms = $10::text[], term_freqs = $11::jsonb, \
     title_len = $12::integer, summary_len = $13::integer, tags_len = $14::integer, \
     content_len = $15::integer \
     WHERE ns = $1::text AND id = $2::text AND updated_at = $16::bigint RETURNING 1";

/// The references of page `$2` in `$1` that it no longer lists (`$3`). A statement of its
/// own, after the page's row is updated (and so locked): it reads the references as they
/// are once every other write of the page has committed. As one statement with the update,
/// it read them as they were when that statement began, and left those a concurrent write
/// had added while it waited for the row.
pub(super) const DELETE_OLD_REFS: &str = "DELETE FROM {s}.page_refs \
     WHERE ns = $1::text AND source_id = $2::text AND NOT target_id = ANY($3::text[])";

/// The references of page `$2` in `$1` it lists (`$3`) and does not have yet.
pub(super) const INSERT_NEW_REFS: &str = "INSERT INTO {s}.page_refs (ns, source_id, target_id) \
     SELECT $1::text, $2::text, target FROM unnest($3::text[]) AS target ON CONFLICT DO NOTHING";

pub(super) fn decode(row: &Row) -> Result<KnowledgePage> {
    let ns: String = row.try_get(0).map_err(|error| corrupt("a page", error))?;
    let id: String = row
        .try_get(1)
        .map_err(|error| corrupt(format_args!("a page in {ns}"), error))?;
    let what = format!("page {id} in {ns}");
    let field = |error: tokio_postgres::Error| corrupt(&what, error);
    let tags: Vec<String> = row.try_get(5).map_err(field)?;
    Ok(KnowledgePage {
        namespace: Namespace::parse(&ns).map_err(|error| corrupt(&what, error))?,
        tags: decode_tags(&what, &tags)?,
        title: row.try_get(2).map_err(field)?,
        summary: row.try_get(3).map_err(field)?,
        content: row.try_get(4).map_err(field)?,
        references: row.try_get(6).map_err(field)?,
        created_at: decode_time(row.try_get(7).map_err(field)?),
        updated_at: decode_time(row.try_get(8).map_err(field)?),
        access_count: u64::try_from(row.try_get::<_, i64>(9).map_err(field)?).unwrap_or(0),
        last_accessed: row
            .try_get::<_, Option<i64>>(10)
            .map_err(field)?
            .map(decode_time),
        id,
    })
}

/// Stored tags of `what`, validated again.
pub(crate) fn decode_tags(what: &str, tags: &[String]) -> Result<Vec<Tag>> {
    tags.iter()
        .map(|tag| Tag::new(tag))
        .collect::<Result<_>>()
        .map_err(|error| corrupt(what, error))
}
