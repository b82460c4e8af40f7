//! Knowledge pages (the LLM-wiki model) and their browsable index.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::validate::{
    DEFAULT_MAX_CONTENT_BYTES, validate_id, validate_len, validate_tag_count, validate_text,
    validate_time,
};
use crate::{Namespace, Result, Scope, Tag};

pub use self::rules::{
    PageMatchSignals, PageRuleBits, PageRuleKeywords, PageRuleText, page_rule_keywords,
};

mod rules;

/// Longest page title accepted, in bytes.
pub const MAX_TITLE_BYTES: usize = 1024;
/// Longest page summary accepted, in bytes.
pub const MAX_SUMMARY_BYTES: usize = 16 * 1024;

/// Most cross-references one page holds (distinct page ids).
pub const MAX_REFERENCES: usize = 1_000;

/// A knowledge page: a titled, summarised, tagged piece of compiled knowledge with
/// cross-references to other pages of the same namespace. This is a persistence format.
///
/// ```
/// use memory_core::{KnowledgePage, Namespace};
/// let page = KnowledgePage::new(Namespace::parse("kb")?, "langgraph", "LangGraph")?
///     .with_summary("A graph framework for agents")
///     .with_tags(["Agent Framework"])?
///     .with_references(["state-graph"])?;
/// assert_eq!(page.tags[0].as_str(), "agent-framework");
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnowledgePage {
    /// Unique within its namespace.
    pub id: String,
    /// The namespace the page belongs to; never the root.
    pub namespace: Namespace,
    /// The title (required).
    pub title: String,
    /// A short summary (may be empty).
    #[serde(default)]
    pub summary: String,
    /// The body (may be empty).
    #[serde(default)]
    pub content: String,
    /// Retrieval tags, most relevant first.
    #[serde(default)]
    pub tags: Vec<Tag>,
    /// Ids of pages this page refers to, in the same namespace. A reference to a page that
    /// does not exist (yet) is allowed and counts once that page exists.
    #[serde(default)]
    pub references: Vec<String>,
    /// When the page was created.
    pub created_at: DateTime<Utc>,
    /// When the page was last changed.
    pub updated_at: DateTime<Utc>,
    /// How many times a recall returned the page, counted by
    /// [`KnowledgeStore::record_accesses`](crate::KnowledgeStore::record_accesses). Stores
    /// keep it across [`update_page`](crate::KnowledgeStore::update_page); `add_page` (and so
    /// an import) stores the value given. Written only when not zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub access_count: u64,
    /// When a recall last returned the page (the latest access recorded); `None` when never.
    /// Kept across updates like [`access_count`](Self::access_count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_accessed: Option<DateTime<Utc>>,
}

/// Whether a count is zero, for `skip_serializing_if`.
pub(crate) fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// The largest access count a record may hold: every backend stores counts as signed
/// 64-bit integers. A count reinforced past it stays at it.
pub const MAX_ACCESS_COUNT: u64 = i64::MAX as u64;

/// Checks an access count: every backend stores counts as signed 64-bit integers.
pub(crate) fn validate_access_count(count: u64) -> Result<()> {
    if count > MAX_ACCESS_COUNT {
        return Err(crate::MemoryError::invalid(
            "access_count",
            format!("{count} is larger than 2^63 - 1"),
        ));
    }
    Ok(())
}

fn too_many_references() -> crate::MemoryError {
    crate::MemoryError::invalid(
        "references",
        format!("more than {MAX_REFERENCES} distinct page ids"),
    )
}

impl KnowledgePage {
    /// A page with a title and nothing else, created now.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) for a bad id,
    /// namespace or title.
    pub fn new(
        namespace: Namespace,
        id: impl Into<String>,
        title: impl Into<String>,
    ) -> Result<Self> {
        let now = Utc::now();
        let page = Self {
            id: id.into(),
            namespace,
            title: title.into(),
            summary: String::new(),
            content: String::new(),
            tags: Vec::new(),
            references: Vec::new(),
            created_at: now,
            updated_at: now,
            access_count: 0,
            last_accessed: None,
        };
        page.validate()?;
        Ok(page)
    }

    /// Sets the summary.
    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = summary.into();
        self
    }

    /// Sets the content.
    pub fn with_content(mut self, content: impl Into<String>) -> Self {
        self.content = content.into();
        self
    }

    /// Sets the tags, normalising them.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) naming `tag`.
    pub fn with_tags<I, S>(mut self, tags: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.tags = Tag::normalize_all(tags)?;
        Ok(self)
    }

    /// Sets the cross-references (ids of other pages), dropping duplicates.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) naming `references`
    /// for a bad id or more than [`MAX_REFERENCES`] distinct ones.
    pub fn with_references<I, S>(mut self, references: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut out: Vec<String> = Vec::new();
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        for reference in references {
            let reference = reference.into();
            validate_id("references", &reference)?;
            if !seen.contains(&reference) {
                if out.len() == MAX_REFERENCES {
                    return Err(too_many_references());
                }
                seen.insert(reference.clone());
                out.push(reference);
            }
        }
        self.references = out;
        Ok(self)
    }

    /// Sets creation and update time.
    pub fn with_created_at(mut self, at: DateTime<Utc>) -> Self {
        self.created_at = at;
        self.updated_at = at;
        self
    }

    /// Moves `updated_at` at least a nanosecond past `read_at`, the `updated_at` of the copy
    /// this version was made from (left where it is when already later), within the stored
    /// range ([`storable_time`](crate::storable_time)), as
    /// [`MemoryItem::revise`](crate::MemoryItem::revise) does: a second edit made from the
    /// same copy then finds the page changed
    /// ([`KnowledgeStore::update_page_if`](crate::KnowledgeStore::update_page_if)), even
    /// within one tick of the clock or when the copy was written by a process whose clock
    /// runs ahead. At the last storable nanosecond (year 2262: only a page imported with
    /// that time) the time cannot move, and edits from such a copy are last-write-wins.
    pub fn revise(&mut self, read_at: DateTime<Utc>) {
        let next = read_at
            .checked_add_signed(chrono::TimeDelta::nanoseconds(1))
            .unwrap_or(read_at);
        self.updated_at = crate::storable_time(self.updated_at.max(next));
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) naming the first bad
    /// field (`id`, `namespace`, `title`, `summary`, `content`, `tags`, `created_at`,
    /// `updated_at`, `last_accessed`, `access_count`, `references`).
    pub fn validate(&self) -> Result<()> {
        validate_id("id", &self.id)?;
        self.namespace.require_record_namespace()?;
        validate_text("title", &self.title, MAX_TITLE_BYTES)?;
        validate_len("summary", &self.summary, MAX_SUMMARY_BYTES)?;
        validate_len("content", &self.content, DEFAULT_MAX_CONTENT_BYTES)?;
        validate_tag_count(&self.tags)?;
        validate_time("created_at", self.created_at)?;
        validate_time("updated_at", self.updated_at)?;
        if let Some(at) = self.last_accessed {
            validate_time("last_accessed", at)?;
        }
        validate_access_count(self.access_count)?;
        if self.references.len() > MAX_REFERENCES {
            return Err(too_many_references());
        }
        for reference in &self.references {
            validate_id("references", reference)?;
        }
        Ok(())
    }

    /// When the page was last in use: the later of its last change and its last access.
    /// Knowledge lifecycle policies expire a page by this time and, among pages accessed
    /// equally often, evict the least recently active first.
    pub fn last_active(&self) -> DateTime<Utc> {
        self.last_accessed
            .map_or(self.updated_at, |at| at.max(self.updated_at))
    }

    /// The page's entry in the index, with `referenced_by` back-references.
    pub fn index_entry(&self, referenced_by: usize) -> PageIndexEntry {
        PageIndexEntry {
            id: self.id.clone(),
            namespace: self.namespace.clone(),
            title: self.title.clone(),
            summary: self.summary.clone(),
            tags: self.tags.clone(),
            updated_at: self.updated_at,
            referenced_by,
        }
    }
}

/// One line of the browsable table of contents (the wiki's `index.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageIndexEntry {
    /// The page id.
    pub id: String,
    /// The page's namespace.
    pub namespace: Namespace,
    /// The title.
    pub title: String,
    /// The summary.
    pub summary: String,
    /// The tags.
    pub tags: Vec<Tag>,
    /// When the page last changed.
    pub updated_at: DateTime<Utc>,
    /// How many other existing pages of the namespace reference this one.
    pub referenced_by: usize,
}

/// A search over knowledge pages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageQuery {
    /// The namespaces covered.
    pub scope: Scope,
    /// The user's text; never interpreted as query syntax.
    pub text: String,
    /// Only pages carrying every one of these tags.
    #[serde(default)]
    pub tags: Vec<Tag>,
    /// How many hits to return at most.
    pub top_k: usize,
    /// The text's analysed terms when the caller analysed it already; `None` means
    /// "analyse `text`".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<std::sync::Arc<[String]>>,
    /// The keywords of the page match rules when the caller chose them already; `None`
    /// means [`page_rule_keywords`] of `text`. A recall leaves it `None`: the rules read the
    /// query's words as written, whatever keyword extractor the retriever has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keywords: Option<Vec<String>>,
}

impl PageQuery {
    /// The terms to search with: [`terms`](Self::terms) when set, each once and at most
    /// [`MAX_QUERY_TERMS`](crate::text::MAX_QUERY_TERMS)
    /// ([`Analyzer::searched_terms`](crate::text::Analyzer::searched_terms)), else
    /// [`Analyzer::query_terms`](crate::text::Analyzer::query_terms) of the text.
    pub fn analysed_terms(&self) -> std::borrow::Cow<'_, [String]> {
        match &self.terms {
            Some(terms) => crate::text::Analyzer::searched_terms(terms),
            None => {
                std::borrow::Cow::Owned(crate::text::Analyzer::default().query_terms(&self.text))
            }
        }
    }

    /// The keywords of the page match rules: [`keywords`](Self::keywords) when set, else
    /// [`page_rule_keywords`] of the text.
    pub fn rule_keywords(&self) -> std::borrow::Cow<'_, [String]> {
        match &self.keywords {
            Some(keywords) => std::borrow::Cow::Borrowed(keywords),
            None => std::borrow::Cow::Owned(page_rule_keywords(&self.text)),
        }
    }

    /// This query with its terms analysed already.
    /// Shared, not copied: every channel of a recall searches with the same terms.
    pub fn with_terms(mut self, terms: impl Into<std::sync::Arc<[String]>>) -> Self {
        self.terms = Some(terms.into());
        self
    }

    /// This query with the page match rules' keywords chosen already.
    pub fn with_keywords(mut self, keywords: Vec<String>) -> Self {
        self.keywords = Some(keywords);
        self
    }

    /// The best `top_k` pages in `scope` for `text`.
    pub fn new(scope: impl Into<Scope>, text: impl Into<String>, top_k: usize) -> Self {
        Self {
            scope: scope.into(),
            text: text.into(),
            tags: Vec::new(),
            top_k,
            terms: None,
            keywords: None,
        }
    }
}

/// One page search result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageHit {
    /// The page, shared: backends that keep pages in memory hand out a reference count
    /// instead of a copy, so a search costs no clone of the text.
    pub page: std::sync::Arc<KnowledgePage>,
    /// The backend's relevance (BM25F or similar), higher is better, not normalised.
    pub score: f32,
    /// Which match rules held.
    pub signals: PageMatchSignals,
    /// How many pages of the namespace reference this one.
    pub referenced_by: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A revision is later than the copy it was made from, by a nanosecond when the clock
    /// has not moved, and stays within the stored range however late the copy claims to be.
    #[test]
    fn a_revision_is_later_than_its_copy() {
        let at = DateTime::from_timestamp(1_700_000_000, 5).unwrap();
        let mut page = KnowledgePage::new(Namespace::parse("kb").unwrap(), "p", "Title")
            .unwrap()
            .with_created_at(at);
        page.revise(at);
        assert_eq!(page.updated_at, at + chrono::TimeDelta::nanoseconds(1));
        let later = at + chrono::TimeDelta::seconds(9);
        page.updated_at = later;
        page.revise(at);
        assert_eq!(page.updated_at, later, "a later time stays");
        let far = DateTime::parse_from_rfc3339("9999-12-31T23:59:59Z")
            .unwrap()
            .with_timezone(&Utc);
        page.revise(far);
        assert_eq!(page.updated_at, crate::storable_time(far));
        assert!(page.validate().is_ok());
    }

    #[test]
    fn references_are_bounded_and_deduplicated() {
        let page = KnowledgePage::new(Namespace::parse("kb").unwrap(), "p", "Title").unwrap();
        let ids: Vec<String> = (0..MAX_REFERENCES).map(|i| format!("r{i}")).collect();
        // Repeats count once: the limit is on distinct ids.
        let repeated = ids.iter().chain(ids.iter()).cloned();
        let full = page.clone().with_references(repeated).unwrap();
        assert_eq!(full.references, ids);
        assert!(full.validate().is_ok());
        let over = ids.iter().cloned().chain(["one more".to_owned()]);
        let error = page.clone().with_references(over).unwrap_err();
        assert!(
            matches!(&error, crate::MemoryError::InvalidInput { field, .. } if field == "references"),
            "{error}"
        );
        // A page built field by field is refused by `validate`, which every store calls.
        let mut built = full;
        built.references.push("one more".to_owned());
        assert!(matches!(
            built.validate(),
            Err(crate::MemoryError::InvalidInput { field, .. }) if field == "references"
        ));
    }

    #[test]
    fn validation_and_serde() {
        let ns = Namespace::parse("kb").unwrap();
        assert!(KnowledgePage::new(ns.clone(), "", "t").is_err());
        assert!(KnowledgePage::new(ns.clone(), "p", " ").is_err());
        assert!(KnowledgePage::new(Namespace::root(), "p", "t").is_err());
        let page = KnowledgePage::new(ns.clone(), "p", "Title").unwrap();
        assert!(page.clone().with_references(["", "x"]).is_err());
        let page = page
            .with_summary("s")
            .with_content("c")
            .with_tags(["A B"])
            .unwrap()
            .with_references(["q", "q", "r"])
            .unwrap();
        assert_eq!(page.references, ["q", "r"]);
        let back: KnowledgePage =
            serde_json::from_str(&serde_json::to_string(&page).unwrap()).unwrap();
        assert_eq!(back, page);
        let entry = page.index_entry(2);
        let back: PageIndexEntry =
            serde_json::from_str(&serde_json::to_string(&entry).unwrap()).unwrap();
        assert_eq!(back, entry);
        let mut bad = page.clone();
        bad.summary = "x".repeat(MAX_SUMMARY_BYTES + 1);
        assert!(bad.validate().unwrap_err().to_string().contains("summary"));
        // The title's bound, at it and past it.
        let mut long = page.clone();
        long.title = "é".repeat(MAX_TITLE_BYTES / 2);
        long.validate().unwrap();
        long.title.push('x');
        assert!(
            matches!(long.validate(), Err(crate::MemoryError::InvalidInput { field, .. }) if field == "title")
        );
        // Access statistics: written only when set, read back, defaults when absent.
        let json = serde_json::to_string(&page).unwrap();
        assert!(!json.contains("access_count") && !json.contains("last_accessed"));
        assert_eq!(page.last_active(), page.updated_at);
        let mut used = page.clone();
        used.access_count = 3;
        used.last_accessed = Some(page.updated_at + chrono::Duration::days(2));
        let back: KnowledgePage =
            serde_json::from_str(&serde_json::to_string(&used).unwrap()).unwrap();
        assert_eq!(back, used);
        assert_eq!(
            used.last_active(),
            page.updated_at + chrono::Duration::days(2)
        );
        used.access_count = u64::MAX;
        assert!(
            used.validate()
                .unwrap_err()
                .to_string()
                .contains("access_count")
        );
    }
}
