//! Memory items, their kinds, and the queries over them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::validate::{
    DEFAULT_MAX_CONTENT_BYTES, MAX_CONTEXT_BYTES, drop_json, new_id, validate_id, validate_len,
    validate_metadata, validate_tag_count, validate_text, validate_time, validate_unit,
};
use crate::vector::validate_embedding;
use crate::{Ended, MemoryError, Namespace, Result, Scope, Tag, TimeView};

mod position;
pub use position::{ListPosition, listing_order};

/// What kind of memory an item is, after the cognitive model of short- and long-term memory.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    /// Recent working context, such as the last turns of a conversation.
    ShortTerm,
    /// Durable knowledge kept across sessions.
    LongTerm,
    /// A particular event or experience ("yesterday the user said they have a cat").
    #[default]
    Episodic,
    /// A fact or concept ("Paris is the capital of France").
    Semantic,
}

impl MemoryKind {
    /// All kinds, in declaration order.
    pub const ALL: [MemoryKind; 4] = [
        MemoryKind::ShortTerm,
        MemoryKind::LongTerm,
        MemoryKind::Episodic,
        MemoryKind::Semantic,
    ];

    /// The snake_case name used in serialized records and SQL columns.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::ShortTerm => "short_term",
            MemoryKind::LongTerm => "long_term",
            MemoryKind::Episodic => "episodic",
            MemoryKind::Semantic => "semantic",
        }
    }

    /// Parses the name [`as_str`](Self::as_str) gives.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `kind` for any other text.
    pub fn parse(text: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| MemoryError::invalid("kind", format!("unknown memory kind {text:?}")))
    }
}

/// One remembered piece of text with its metadata. This is a persistence format.
///
/// Build one with [`MemoryItem::new`] and the `with_*` setters; backends call
/// [`validate`](Self::validate) on every write because the fields are public.
///
/// ```
/// use memory_core::{MemoryItem, MemoryKind, Namespace};
/// let item = MemoryItem::new(Namespace::parse("user-1")?, "likes Rust")?
///     .with_kind(MemoryKind::Semantic)
///     .with_importance(0.9)?
///     .with_tags(["Programming"])?;
/// assert_eq!(item.tags[0].as_str(), "programming");
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryItem {
    /// Unique within its namespace.
    pub id: String,
    /// The namespace the item belongs to; never the root.
    pub namespace: Namespace,
    /// The remembered text.
    pub content: String,
    /// What kind of memory this is.
    #[serde(default)]
    pub kind: MemoryKind,
    /// How much the item matters, in `[0, 1]`; decay lowers it over time.
    #[serde(default = "default_importance")]
    pub importance: f32,
    /// Free-form metadata, a JSON object (speaker, dia_id, role, ...).
    #[serde(default = "empty_object")]
    pub metadata: serde_json::Value,
    /// Retrieval tags, most relevant first.
    #[serde(default)]
    pub tags: Vec<Tag>,
    /// Where the memory came from (a URL, a tool, "user").
    #[serde(default)]
    pub source: Option<String>,
    /// How far the source is trusted, in `[0, 1]`.
    #[serde(default = "default_credibility")]
    pub credibility: f32,
    /// When it was first remembered.
    pub created_at: DateTime<Utc>,
    /// When it was last changed.
    pub updated_at: DateTime<Utc>,
    /// When it was last returned by a read or a recall.
    #[serde(default)]
    pub last_accessed: Option<DateTime<Utc>>,
    /// How many times it was returned by a recall.
    #[serde(default)]
    pub access_count: u64,
    /// An optional embedding vector, for the feature-gated embedding channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f32>>,
    /// The fact this memory states, as a normalised key naming a subject and an attribute
    /// (`"user.city"`, see [`normalize_fact_key`](crate::normalize_fact_key)). A newer memory
    /// with the same key supersedes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact_key: Option<String>,
    /// From when the fact holds in the world (open when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<DateTime<Utc>>,
    /// Until when the fact holds in the world, exclusive (open when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<DateTime<Utc>>,
    /// When and why the memory stopped being believed; `None` while it is current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
    /// The ids of the memories this one superseded, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
    /// The ids of memories found to state something else about the same thing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts_with: Vec<String>,
}

/// Metadata key of a memory's *context*: text that situates it (for a dialogue turn, the
/// message it answers). Full-text search indexes it as a second field with weight
/// [`CONTEXT_FIELD_WEIGHT`](crate::CONTEXT_FIELD_WEIGHT), so "How long have you been married?" finds the answer "Five years
/// already!", but it is not part of the content. Keys starting with `_` are reserved.
pub const CONTEXT_METADATA_KEY: &str = "_context";

/// Metadata key holding a compressed memory's original text: the compressed text replaces
/// the content (what is searched and shown), and the original stays here, returned by
/// [`MemoryItem::original`]. Its size counts against the content limit, not the metadata
/// limit.
pub const ORIGINAL_METADATA_KEY: &str = "_original";

/// Metadata key that pins a memory (`true`): a pinned memory is never evicted, decayed or
/// compressed by maintenance; only `forget` removes it.
pub const PINNED_METADATA_KEY: &str = "_pinned";

fn default_importance() -> f32 {
    0.5
}

fn default_credibility() -> f32 {
    1.0
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

impl MemoryItem {
    /// A new episodic item with a fresh id, importance 0.5, credibility 1 and the current time.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] for the root namespace or empty or oversized content.
    pub fn new(namespace: Namespace, content: impl Into<String>) -> Result<Self> {
        let now = Utc::now();
        let item = Self {
            id: new_id(),
            namespace,
            content: content.into(),
            kind: MemoryKind::default(),
            importance: default_importance(),
            metadata: empty_object(),
            tags: Vec::new(),
            source: None,
            credibility: default_credibility(),
            created_at: now,
            updated_at: now,
            last_accessed: None,
            access_count: 0,
            embedding: None,
            fact_key: None,
            valid_from: None,
            valid_until: None,
            ended: None,
            supersedes: Vec::new(),
            conflicts_with: Vec::new(),
        };
        item.validate()?;
        Ok(item)
    }

    /// Sets the id.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `id`.
    pub fn with_id(mut self, id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        validate_id("id", &id)?;
        self.id = id;
        Ok(self)
    }

    /// Sets the kind.
    pub fn with_kind(mut self, kind: MemoryKind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets the importance.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `importance` unless it is finite and in `[0, 1]`.
    pub fn with_importance(mut self, importance: f32) -> Result<Self> {
        validate_unit("importance", importance)?;
        // -0.0 becomes 0.0: no backend keeps the sign of a zero weight.
        self.importance = importance + 0.0;
        Ok(self)
    }

    /// Sets the credibility.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `credibility` unless it is finite and in `[0, 1]`.
    pub fn with_credibility(mut self, credibility: f32) -> Result<Self> {
        validate_unit("credibility", credibility)?;
        self.credibility = credibility + 0.0;
        Ok(self)
    }

    /// Sets the metadata. The reserved keys the item holds (those starting with `_`: its
    /// context, pin, compressed original, decay state) are kept unless `metadata` names
    /// them, so replacing a memory's metadata (an edit) does not unpin it, drop its context
    /// or lose its original text.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `metadata` unless it is a JSON object within the
    /// limits of [`validate_metadata`] (the kept keys included).
    pub fn with_metadata(mut self, mut metadata: serde_json::Value) -> Result<Self> {
        if let (Some(new), Some(old)) = (metadata.as_object_mut(), self.metadata.as_object_mut()) {
            for (key, value) in std::mem::take(old) {
                if key.starts_with('_') && !new.contains_key(&key) {
                    new.insert(key, value);
                }
            }
        }
        if let Err(error) = validate_metadata(&metadata) {
            drop_json(metadata);
            return Err(error);
        }
        self.metadata = metadata;
        Ok(self)
    }

    /// Sets the tags, normalising them.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `tag` for a tag that cannot be normalised.
    pub fn with_tags<I, S>(mut self, tags: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.tags = Tag::normalize_all(tags)?;
        Ok(self)
    }

    /// Sets the source.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Sets creation and update time (for imports and replays of old conversations).
    pub fn with_created_at(mut self, at: DateTime<Utc>) -> Self {
        self.created_at = at;
        self.updated_at = at;
        self
    }

    /// The item as an edit made from a copy read with `updated_at` `read_at` writes it:
    /// `updated_at` at least a nanosecond after `read_at` (and left where it is when already
    /// later), so the next [`update_if`](crate::MemoryStore::update_if) made from the same
    /// copy finds it changed. Every write that rewrites a stored memory moves it so (an
    /// edit, a pin, a supersession, a merge, a consolidation); a nanosecond moves no recency
    /// a memory is ranked by, and an edit of the text through `Memory::update` sets
    /// `updated_at` to its own time. Within the stored range
    /// ([`storable_time`](crate::storable_time)): at its last nanosecond, the time cannot
    /// move and edits are last-write-wins.
    pub fn revised(mut self, read_at: DateTime<Utc>) -> Self {
        self.revise(read_at);
        self
    }

    /// [`revised`](Self::revised) in place.
    pub fn revise(&mut self, read_at: DateTime<Utc>) {
        let next = read_at
            .checked_add_signed(chrono::TimeDelta::nanoseconds(1))
            .unwrap_or(read_at);
        self.updated_at = crate::storable_time(self.updated_at.max(next));
    }

    /// Sets the fact key, normalised ([`normalize_fact_key`](crate::normalize_fact_key)).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `fact_key`.
    pub fn with_fact_key(mut self, key: &str) -> Result<Self> {
        self.fact_key = Some(crate::normalize_fact_key(key)?);
        Ok(self)
    }

    /// Sets when the fact holds in the world; either end may be open.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `valid_from` or `valid_until` for a time outside
    /// the storable range or an interval that ends before it starts.
    pub fn with_validity(
        mut self,
        from: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    ) -> Result<Self> {
        self.valid_from = from;
        self.valid_until = until;
        crate::fact::validate_fact_fields(&self)?;
        Ok(self)
    }

    /// Whether the memory is still believed (not superseded or retracted).
    pub fn is_current(&self) -> bool {
        self.ended.is_none()
    }

    /// Sets the embedding.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `embedding` for an empty vector or a non-finite value.
    pub fn with_embedding(mut self, embedding: Vec<f32>) -> Result<Self> {
        validate_embedding(&embedding)?;
        self.embedding = Some(embedding);
        Ok(self)
    }

    /// Checks every field: id, namespace, content (non-empty, at most 1 MiB, no NUL),
    /// importance and credibility in `[0, 1]`, at most [`MAX_TAGS`](crate::MAX_TAGS) tags, metadata within the
    /// limits of [`validate_metadata`] and a context of at most [`MAX_CONTEXT_BYTES`], times
    /// within the storable range, embedding finite.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        validate_id("id", &self.id)?;
        self.namespace.require_record_namespace()?;
        validate_text("content", &self.content, DEFAULT_MAX_CONTENT_BYTES)?;
        validate_unit("importance", self.importance)?;
        validate_unit("credibility", self.credibility)?;
        validate_tag_count(&self.tags)?;
        crate::knowledge::validate_access_count(self.access_count)?;
        validate_metadata(&self.metadata)?;
        if let Some(original) = self.metadata.get(ORIGINAL_METADATA_KEY) {
            let original = original
                .as_str()
                .ok_or_else(|| MemoryError::invalid("metadata", "_original must be text"))?;
            validate_len("original", original, DEFAULT_MAX_CONTENT_BYTES)?;
        }
        validate_len("context", self.context(), MAX_CONTEXT_BYTES)?;
        validate_time("created_at", self.created_at)?;
        validate_time("updated_at", self.updated_at)?;
        if let Some(at) = self.last_accessed {
            validate_time("last_accessed", at)?;
        }
        if let Some(source) = &self.source {
            validate_len("source", source, 4096)?;
        }
        if let Some(embedding) = &self.embedding {
            validate_embedding(embedding)?;
        }
        crate::fact::validate_fact_fields(self)
    }

    /// The indexed context ([`CONTEXT_METADATA_KEY`]), empty when there is none.
    pub fn context(&self) -> &str {
        self.metadata
            .get(CONTEXT_METADATA_KEY)
            .and_then(|value| value.as_str())
            .unwrap_or("")
    }

    /// Sets the context ([`CONTEXT_METADATA_KEY`]).
    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        if let Some(object) = self.metadata.as_object_mut() {
            object.insert(
                CONTEXT_METADATA_KEY.to_owned(),
                serde_json::Value::String(context.into()),
            );
        }
        self
    }

    /// Whether the memory was compressed ([`MemoryItem::compressed`]).
    pub fn is_compressed(&self) -> bool {
        self.metadata.get(ORIGINAL_METADATA_KEY).is_some()
    }

    /// The original text of a compressed memory, or the content of one that is not.
    pub fn original(&self) -> &str {
        self.metadata
            .get(ORIGINAL_METADATA_KEY)
            .and_then(serde_json::Value::as_str)
            .unwrap_or(&self.content)
    }

    /// The memory compressed to `text`: `text` becomes the content (searched and shown) and
    /// the original is kept ([`ORIGINAL_METADATA_KEY`]). Compressing again keeps the first
    /// original.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `content` for empty or oversized text.
    pub fn compressed(mut self, text: impl Into<String>) -> Result<Self> {
        let text = text.into();
        validate_text("content", &text, DEFAULT_MAX_CONTENT_BYTES)?;
        if !self.is_compressed()
            && let Some(object) = self.metadata.as_object_mut()
        {
            let original = std::mem::take(&mut self.content);
            object.insert(
                ORIGINAL_METADATA_KEY.to_owned(),
                serde_json::Value::String(original),
            );
        }
        self.content = text;
        Ok(self)
    }

    /// Whether the memory is pinned ([`PINNED_METADATA_KEY`]).
    pub fn is_pinned(&self) -> bool {
        self.metadata
            .get(PINNED_METADATA_KEY)
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false)
    }

    /// Pins the memory, or unpins it ([`PINNED_METADATA_KEY`]).
    pub fn with_pinned(mut self, pinned: bool) -> Self {
        if let Some(object) = self.metadata.as_object_mut() {
            if pinned {
                object.insert(
                    PINNED_METADATA_KEY.to_owned(),
                    serde_json::Value::Bool(true),
                );
            } else {
                object.remove(PINNED_METADATA_KEY);
            }
        }
        self
    }

    /// The metadata value under `key`, if the metadata has it.
    pub fn metadata_value(&self, key: &str) -> Option<&serde_json::Value> {
        self.metadata.get(key)
    }
}

/// Which items a [`list`](crate::MemoryStore::list), [`search`](crate::MemoryStore::search)
/// or count covers. Results are always inside [`scope`](Self::scope).
///
/// ```
/// use memory_core::{MemoryFilter, MemoryKind, Namespace};
/// let filter = MemoryFilter::new(Namespace::parse("user-1")?.subtree())
///     .with_kinds([MemoryKind::Semantic])
///     .with_limit(10);
/// assert_eq!(filter.limit, Some(10));
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryFilter {
    /// The namespaces covered.
    pub scope: Scope,
    /// Only items whose id starts with this prefix (for ids that encode a kind or a source).
    #[serde(default)]
    pub id_prefix: Option<String>,
    /// Only items created at or after this time.
    #[serde(default)]
    pub since: Option<DateTime<Utc>>,
    /// Only items created before this time.
    #[serde(default)]
    pub until: Option<DateTime<Utc>>,
    /// Only items of these kinds (empty: any kind).
    #[serde(default)]
    pub kinds: Vec<MemoryKind>,
    /// Only items carrying every one of these tags.
    #[serde(default)]
    pub tags: Vec<Tag>,
    /// Only items whose metadata has each of these keys with exactly this value.
    #[serde(default)]
    pub metadata: Vec<(String, serde_json::Value)>,
    /// At most this many results.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Newest first instead of oldest first.
    #[serde(default)]
    pub newest_first: bool,
    /// Which records by time: every one (the default), the current ones, or those held true
    /// at a time (see [`TimeView`]).
    #[serde(default)]
    pub view: TimeView,
    /// Only items with this (normalised) fact key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact_key: Option<String>,
    /// Only items after this position in the listing's order (oldest first, or newest first
    /// with [`newest_first`](Self::newest_first)): the next page of a listing, from the
    /// last item of the page before ([`ListPosition`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<ListPosition>,
}

impl MemoryFilter {
    /// Everything in `scope`, oldest first.
    pub fn new(scope: impl Into<Scope>) -> Self {
        Self {
            scope: scope.into(),
            id_prefix: None,
            since: None,
            until: None,
            kinds: Vec::new(),
            tags: Vec::new(),
            metadata: Vec::new(),
            limit: None,
            newest_first: false,
            view: TimeView::All,
            fact_key: None,
            after: None,
        }
    }

    /// Only the records `view` admits.
    pub fn with_view(mut self, view: TimeView) -> Self {
        self.view = view;
        self
    }

    /// Only items stating the fact `key` (normalised first).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `fact_key`.
    pub fn with_fact_key(mut self, key: &str) -> Result<Self> {
        self.fact_key = Some(crate::normalize_fact_key(key)?);
        Ok(self)
    }

    /// Only ids with this prefix.
    pub fn with_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.id_prefix = Some(prefix.into());
        self
    }

    /// Only items created in `[since, until)`; either end may be open.
    pub fn with_time_range(
        mut self,
        since: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    ) -> Self {
        self.since = since;
        self.until = until;
        self
    }

    /// Only these kinds.
    pub fn with_kinds(mut self, kinds: impl IntoIterator<Item = MemoryKind>) -> Self {
        self.kinds = kinds.into_iter().collect();
        self
    }

    /// Only items with all of these tags.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `tag` for a tag that cannot be normalised.
    pub fn with_tags<I, S>(mut self, tags: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.tags = Tag::normalize_all(tags)?;
        Ok(self)
    }

    /// Only items whose metadata holds `key` equal to `value`.
    pub fn with_metadata(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.metadata.push((key.into(), value));
        self
    }

    /// At most `limit` results.
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Newest first.
    pub fn newest_first(mut self) -> Self {
        self.newest_first = true;
        self
    }

    /// Only items after `position` in the listing's order: the page that follows the one
    /// `position`'s item ended (see [`ListPosition`]).
    pub fn after(mut self, position: ListPosition) -> Self {
        self.after = Some(position);
        self
    }

    /// Whether `item` passes every condition except the limit. Backends that cannot push a
    /// condition down to their index use this as the final check.
    pub fn matches(&self, item: &MemoryItem) -> bool {
        self.scope.contains(&item.namespace) && self.matches_within_scope(item)
    }

    /// Whether `item` satisfies every condition but the scope: for a backend that read it
    /// from a namespace the scope contains already (the namespace need not be compared
    /// again for every candidate).
    pub fn matches_within_scope(&self, item: &MemoryItem) -> bool {
        self.view.admits(item)
            && self
                .id_prefix
                .as_ref()
                .is_none_or(|prefix| item.id.starts_with(prefix.as_str()))
            && self.since.is_none_or(|since| item.created_at >= since)
            && self.until.is_none_or(|until| item.created_at < until)
            && (self.kinds.is_empty() || self.kinds.contains(&item.kind))
            && self.tags.iter().all(|tag| item.tags.contains(tag))
            && self
                .metadata
                .iter()
                .all(|(key, value)| item.metadata.get(key.as_str()) == Some(value))
            && self
                .fact_key
                .as_ref()
                .is_none_or(|key| item.fact_key.as_ref() == Some(key))
            && self
                .after
                .as_ref()
                .is_none_or(|after| after.precedes(item, self.newest_first))
    }

    /// Whether the filter asks for nothing beyond its scope but kinds and a time view: no id
    /// prefix, tags, metadata, fact key, creation-time range or list position. Such a filter admits most of
    /// a namespace and is decided by a memory's kind, end and validity alone, so a backend
    /// can settle it without reading each item.
    pub fn only_kinds_and_view(&self) -> bool {
        self.id_prefix.is_none()
            && self.tags.is_empty()
            && self.metadata.is_empty()
            && self.fact_key.is_none()
            && self.since.is_none()
            && self.until.is_none()
            && self.after.is_none()
    }

    /// Whether the filter restricts anything beyond scope and time (then an index on time
    /// alone may have to look past `limit` entries).
    pub fn has_attribute_conditions(&self) -> bool {
        self.id_prefix.is_some()
            || !self.kinds.is_empty()
            || !self.tags.is_empty()
            || !self.metadata.is_empty()
            || self.view != TimeView::All
            || self.fact_key.is_some()
    }
}

/// A full-text search over memory items.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchQuery {
    /// The user's text; never interpreted as query syntax.
    pub text: String,
    /// Conditions every hit satisfies (its `limit` is ignored; use [`top_k`](Self::top_k)).
    pub filter: MemoryFilter,
    /// How many hits to return at most.
    pub top_k: usize,
    /// The text's analysed terms when the caller analysed it already (a recall analyses its
    /// query once for every channel and backend); `None` means "analyse `text`".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<std::sync::Arc<[String]>>,
    /// Search with only this many of the terms: in each namespace, those the fewest of its
    /// memories hold ([`rarest_terms`](crate::search::rarest_terms)); `None` searches with
    /// all. For finding the memories that share most of a text's words (its repeats and
    /// near-repeats hold its rare words too) at the cost of a short query instead of one
    /// with every word of the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rarest: Option<usize>,
    /// Ask the backend to tell each hit's [`in_own_words`](SearchHit::in_own_words). A
    /// backend that knows it at no cost (SQLite and PostgreSQL score each field) tells it
    /// unasked; the in-memory store looks it up only when asked, a few hundred
    /// instructions per hit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_words: bool,
}

impl SearchQuery {
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

    /// This query with its terms analysed already (see [`terms`](Self::terms)).
    /// Shared, not copied: every channel of a recall searches with the same terms.
    pub fn with_terms(mut self, terms: impl Into<std::sync::Arc<[String]>>) -> Self {
        self.terms = Some(terms.into());
        self
    }

    /// This query restricted to its `n` rarest terms in each namespace (see
    /// [`rarest`](Self::rarest)).
    pub fn with_rarest(mut self, n: usize) -> Self {
        self.rarest = Some(n);
        self
    }

    /// This query asking the backend to tell where each hit's terms are (see
    /// [`own_words`](Self::own_words)).
    pub fn with_own_words(mut self) -> Self {
        self.own_words = true;
        self
    }

    /// The best `top_k` items in `scope` for `text`.
    pub fn new(scope: impl Into<Scope>, text: impl Into<String>, top_k: usize) -> Self {
        Self {
            text: text.into(),
            filter: MemoryFilter::new(scope),
            top_k,
            terms: None,
            rarest: None,
            own_words: false,
        }
    }

    /// Replaces the filter.
    pub fn with_filter(mut self, filter: MemoryFilter) -> Self {
        self.filter = filter;
        self
    }
}

/// One full-text search result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The matching item, shared: backends that keep items in memory hand out a reference
    /// count instead of a copy, so a search costs no clone of the text.
    pub item: std::sync::Arc<MemoryItem>,
    /// The backend's relevance (BM25 or similar), higher is better, not normalised.
    pub score: f32,
    /// Whether one of the terms the hit was scored by is in its own words: the first field
    /// of [`MEMORY_FIELD_WEIGHTS`](crate::search::MEMORY_FIELD_WEIGHTS) (its content, tags
    /// and fact key), and not only in the context indexed beside it. `None` when the
    /// backend does not tell (a similarity search, a store that does not score by field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_own_words: Option<bool>,
}

impl SearchHit {
    /// A hit of `score` whose backend tells nothing of where its terms are
    /// ([`in_own_words`](Self::in_own_words) `None`).
    pub fn new(item: std::sync::Arc<MemoryItem>, score: f32) -> Self {
        Self {
            item,
            score,
            in_own_words: None,
        }
    }

    /// The hit, telling whether a term it was scored by is in its own words.
    #[must_use]
    pub fn with_own_words(mut self, in_own_words: bool) -> Self {
        self.in_own_words = Some(in_own_words);
        self
    }

    /// The order of ranked hits: higher score first (`total_cmp`, so NaN cannot break the
    /// sort), then id, then namespace. For `sort_by`.
    pub fn best_first(a: &SearchHit, b: &SearchHit) -> std::cmp::Ordering {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.item.id.cmp(&b.item.id))
            .then_with(|| a.item.namespace.cmp(&b.item.namespace))
    }
}

#[cfg(test)]
mod tests;
