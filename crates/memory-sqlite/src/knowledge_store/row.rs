//! The row codec of the `pages` table: a page encoded for its row before the database is
//! touched, and a row read back and decoded into a page.

use memory_core::{KnowledgePage, Namespace, Result};
use rusqlite::Row;

use crate::error::corrupt;
use crate::sql::{
    decode_strings, decode_tags, decode_time, encode_strings, encode_tags, encode_time,
};
use crate::terms::Analyzed;

/// The columns of a page, in the order [`read_raw`] reads them.
pub(super) const COLUMNS: &str = "p.ns, p.id, p.title, p.summary, p.content, p.tags, p.refs, \
     p.created_at, p.updated_at, p.access_count, p.last_accessed";
/// How many columns [`COLUMNS`] selects.
pub(super) const COLUMN_COUNT: usize = 11;

/// A page encoded for its row, computed before the database is touched.
pub(super) struct EncodedPage {
    pub(super) ns: String,
    pub(super) id: String,
    pub(super) title: String,
    pub(super) title_key: String,
    pub(super) summary: String,
    pub(super) content: String,
    pub(super) tags_json: String,
    pub(super) refs_json: String,
    /// References other than to the page itself.
    pub(super) refs: Vec<String>,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) access_count: i64,
    pub(super) last_accessed: Option<i64>,
    /// The analyzed search fields, for the full-text index.
    pub(super) doc: Analyzed<4>,
}

/// The page's search fields ([`KnowledgePage::search_fields`]: title, summary, tags,
/// content), analyzed for the full-text index.
pub(super) fn analyze(page: &KnowledgePage) -> Analyzed<4> {
    let fields = page.search_fields();
    Analyzed::new(fields.each_ref().map(|field| field.as_ref()))
}

pub(super) fn encode(page: KnowledgePage) -> Result<EncodedPage> {
    page.validate()?;
    // Distinct, without the page itself (validated: at most `MAX_REFERENCES`).
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut refs: Vec<String> = Vec::new();
    for reference in &page.references {
        if *reference != page.id && seen.insert(reference.as_str()) {
            refs.push(reference.clone());
        }
    }
    Ok(EncodedPage {
        doc: analyze(&page),
        title_key: page.title.to_lowercase(),
        tags_json: encode_tags(&page.tags),
        refs_json: encode_strings(&page.references),
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
    })
}

/// The row of a page as read, before decoding.
pub(super) struct RawPage {
    ns: String,
    id: String,
    title: String,
    summary: String,
    content: String,
    tags: String,
    refs: String,
    created_at: i64,
    updated_at: i64,
    access_count: i64,
    last_accessed: Option<i64>,
}

/// Reads the [`COLUMNS`].
pub(super) fn read_raw(row: &Row<'_>) -> rusqlite::Result<RawPage> {
    read_raw_at(row, 0)
}

/// Reads the [`COLUMNS`] starting at column `at`.
pub(super) fn read_raw_at(row: &Row<'_>, at: usize) -> rusqlite::Result<RawPage> {
    Ok(RawPage {
        ns: row.get(at)?,
        id: row.get(at + 1)?,
        title: row.get(at + 2)?,
        summary: row.get(at + 3)?,
        content: row.get(at + 4)?,
        tags: row.get(at + 5)?,
        refs: row.get(at + 6)?,
        created_at: row.get(at + 7)?,
        updated_at: row.get(at + 8)?,
        access_count: row.get(at + 9)?,
        last_accessed: row.get(at + 10)?,
    })
}

impl RawPage {
    pub(super) fn into_page(self) -> Result<KnowledgePage> {
        let what = format!("page {} in {}", self.id, self.ns);
        Ok(KnowledgePage {
            namespace: Namespace::parse(&self.ns).map_err(|error| corrupt(&what, error))?,
            tags: decode_tags(&what, &self.tags)?,
            references: decode_strings(&format_args!("references of {what}"), &self.refs)?,
            id: self.id,
            title: self.title,
            summary: self.summary,
            content: self.content,
            created_at: decode_time(self.created_at),
            updated_at: decode_time(self.updated_at),
            access_count: u64::try_from(self.access_count).unwrap_or(0),
            last_accessed: self.last_accessed.map(decode_time),
        })
    }
}
