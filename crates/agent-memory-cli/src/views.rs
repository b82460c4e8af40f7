//! The JSON shapes of records and results, shared by `--json`, the HTTP API and MCP, each
//! with its OpenAPI schema.

use agent_memory::{
    EndReason, Ended, GraphEntity, GraphRelation, KnowledgePage, MemoryItem, Outcome,
    PageIndexEntry, Remembered, RetrievalResult, RetrievalSource, ScoredItem,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How the text output marks a memory that has not ended but is past its `valid_until`
/// (`expired`): recall leaves it out, as it leaves out an ended one. One valid from a later
/// time (a plan) is recalled, and not marked.
pub(crate) fn validity_note(
    item: &MemoryItem,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<&'static str> {
    (item.ended.is_none() && item.valid_until.is_some_and(|until| until <= now))
        .then_some("expired")
}

/// A remembered memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct MemoryView {
    /// Its id, unique within its namespace.
    pub(crate) id: String,
    /// Its namespace.
    pub(crate) namespace: String,
    /// The text.
    pub(crate) content: String,
    /// `short_term`, `long_term`, `episodic` or `semantic`.
    pub(crate) kind: String,
    /// Importance in [0, 1].
    pub(crate) importance: f32,
    /// Tags (normalised: lowercase, dashes).
    pub(crate) tags: Vec<String>,
    /// Metadata, a JSON object: the caller's keys. The library's own (`_context`,
    /// `_pinned`, `_original`, `_decay`) are shown as `context`, `pinned` and `original`, or
    /// not at all (the decay state), so metadata read and sent back never carries them.
    #[schema(value_type = Object)]
    pub(crate) metadata: serde_json::Value,
    /// Pinned: never evicted, decayed or compressed. Shown only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) pinned: bool,
    /// A compressed memory's original text (the content is its short form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) original: Option<String>,
    /// Where it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) source: Option<String>,
    /// Text that situates it (searchable, not part of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<String>,
    /// When it was created (RFC 3339).
    pub(crate) created_at: String,
    /// When it last changed (RFC 3339).
    pub(crate) updated_at: String,
    /// How many times it was recalled.
    pub(crate) access_count: u64,
    /// How far its source is trusted, in [0, 1] (default 1).
    pub(crate) credibility: f32,
    /// The fact it states (`user.city`), if it states one: a newer memory with the same key
    /// supersedes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fact_key: Option<String>,
    /// From when the fact holds in the world (RFC 3339), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) valid_from: Option<String>,
    /// Until when the fact holds in the world (RFC 3339), if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) valid_until: Option<String>,
    /// When and why it stopped being believed; absent while it is current.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ended: Option<EndedView>,
    /// The memories it replaced (superseded or consolidated).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) supersedes: Vec<String>,
    /// The memories it was flagged as contradicting.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) conflicts_with: Vec<String>,
}

/// When and why a memory stopped being believed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct EndedView {
    /// When it ended (RFC 3339).
    pub(crate) at: String,
    /// `superseded` (a newer memory replaced it), `consolidated` (folded into a summary) or
    /// `retracted` (withdrawn without a replacement).
    pub(crate) kind: String,
    /// The memory that took its place: the one that superseded it, or the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) by: Option<String>,
    /// Why it was retracted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
}

impl From<&Ended> for EndedView {
    fn from(ended: &Ended) -> Self {
        let (kind, reason) = match &ended.reason {
            EndReason::Superseded { .. } => ("superseded", None),
            EndReason::Consolidated { .. } => ("consolidated", None),
            EndReason::Retracted { reason } => ("retracted", Some(reason.clone())),
        };
        Self {
            at: ended.at.to_rfc3339(),
            kind: kind.to_owned(),
            by: ended.successor().map(str::to_owned),
            reason,
        }
    }
}

/// A stored memory that a new one contradicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct ConflictView {
    /// The stored memory's id.
    pub(crate) id: String,
    /// Why they were found to contradict each other.
    pub(crate) reason: String,
}

/// Two current memories of one namespace flagged as contradicting each other, both as
/// stored: settle the pair by superseding one with the other, or by retracting one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct ConflictPairView {
    /// Their namespace.
    pub(crate) namespace: String,
    /// The memory that holds since earlier (by when it starts to hold, then when it was
    /// recorded).
    pub(crate) older: MemoryView,
    /// The memory that holds since later.
    pub(crate) newer: MemoryView,
}

/// What `remember` did: the id the text lives under, and how it was reconciled with the
/// memories already stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct RememberedView {
    /// The id the text lives under: the new memory's, or the one it was merged into.
    pub(crate) id: String,
    /// Its namespace.
    pub(crate) namespace: String,
    /// `added` (stored as new), `merged` (a duplicate of memory `into`: nothing new was
    /// stored), `superseded` (stored, replacing the memories in `old`) or `outdated` (stored
    /// as history: the later version `by` replaces it at once).
    pub(crate) outcome: String,
    /// With `merged`: the memory it was merged into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) into: Option<String>,
    /// With `superseded`: the memories it replaced (ended, kept as history).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub(crate) old: Vec<String>,
    /// With `outdated`: the later version that replaces it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) by: Option<String>,
    /// The stored memories found to contradict it.
    pub(crate) conflicts: Vec<ConflictView>,
}

impl RememberedView {
    /// The view of what remembering in `namespace` did.
    pub(crate) fn new(namespace: &agent_memory::Namespace, remembered: &Remembered) -> Self {
        let mut view = Self {
            id: remembered.id.clone(),
            namespace: namespace.to_string(),
            outcome: String::new(),
            into: None,
            old: Vec::new(),
            by: None,
            conflicts: remembered
                .conflicts
                .iter()
                .map(|conflict| ConflictView {
                    id: conflict.id.clone(),
                    reason: conflict.reason.clone(),
                })
                .collect(),
        };
        view.outcome = match &remembered.outcome {
            Outcome::Added => "added",
            Outcome::Merged { into } => {
                view.into = Some(into.clone());
                "merged"
            }
            Outcome::Superseded { old } => {
                view.old.clone_from(old);
                "superseded"
            }
            Outcome::Outdated { by } => {
                view.by = Some(by.clone());
                "outdated"
            }
        }
        .to_owned();
        view
    }

    /// Whether a new memory was stored (not merged into an existing one).
    pub(crate) fn stored_new(&self) -> bool {
        self.outcome != "merged"
    }

    /// What happened, in words, when more than adding: for people reading a terminal.
    pub(crate) fn note(&self) -> Option<String> {
        let mut notes = Vec::new();
        if let Some(into) = &self.into {
            notes.push(format!("merged into {into}, which already said this"));
        }
        if !self.old.is_empty() {
            notes.push(format!("supersedes {}", self.old.join(", ")));
        }
        if let Some(by) = &self.by {
            notes.push(format!("stored as history: {by} is a later version"));
        }
        for conflict in &self.conflicts {
            notes.push(format!(
                "conflicts with {}: {}",
                conflict.id, conflict.reason
            ));
        }
        (!notes.is_empty()).then(|| notes.join("\n"))
    }
}

impl From<&MemoryItem> for MemoryView {
    fn from(item: &MemoryItem) -> Self {
        let context = item.context();
        let mut metadata = item.metadata.clone();
        if let Some(object) = metadata.as_object_mut() {
            for key in [
                agent_memory::CONTEXT_METADATA_KEY,
                agent_memory::PINNED_METADATA_KEY,
                agent_memory::ORIGINAL_METADATA_KEY,
                agent_memory::retrieve::DECAY_METADATA_KEY,
            ] {
                object.remove(key);
            }
        }
        Self {
            id: item.id.clone(),
            namespace: item.namespace.to_string(),
            content: item.content.clone(),
            kind: item.kind.as_str().to_owned(),
            importance: item.importance,
            tags: item.tags.iter().map(ToString::to_string).collect(),
            metadata,
            pinned: item.is_pinned(),
            original: item.is_compressed().then(|| item.original().to_owned()),
            source: item.source.clone(),
            context: (!context.is_empty()).then(|| context.to_owned()),
            created_at: item.created_at.to_rfc3339(),
            updated_at: item.updated_at.to_rfc3339(),
            access_count: item.access_count,
            credibility: item.credibility,
            fact_key: item.fact_key.clone(),
            valid_from: item.valid_from.map(|at| at.to_rfc3339()),
            valid_until: item.valid_until.map(|at| at.to_rfc3339()),
            ended: item.ended.as_ref().map(EndedView::from),
            supersedes: item.supersedes.clone(),
            conflicts_with: item.conflicts_with.clone(),
        }
    }
}

/// One signal of a score: its value and what it added to the score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct SignalView {
    /// The signal (relevance, recency, importance, ...).
    pub(crate) name: String,
    /// Its value in [0, 1].
    pub(crate) value: f32,
    /// Its weighted contribution to the score.
    pub(crate) contribution: f32,
}

/// Why a result scored what it did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct Explanation {
    /// The retrieval channels that found it.
    pub(crate) channels: Vec<String>,
    /// Every signal's value and contribution.
    pub(crate) signals: Vec<SignalView>,
}

/// One recall result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct RecallHit {
    /// What it is: `memory`, `page` or `entity`.
    pub(crate) source: String,
    /// Its id.
    pub(crate) id: String,
    /// Its namespace.
    pub(crate) namespace: String,
    /// Its text (a memory's content; a page's title and summary; an entity's name).
    pub(crate) text: String,
    /// Its score; higher is better.
    pub(crate) score: f32,
    /// A memory's fact key, if it states one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fact_key: Option<String>,
    /// When and why a memory stopped being believed: only ended memories shown by an
    /// `as_of` or `include_ended` recall carry it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ended: Option<EndedView>,
    /// The score breakdown, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) explanation: Option<Explanation>,
}

impl RecallHit {
    /// The result as a hit, with its breakdown when `explain`.
    pub(crate) fn new(scored: &ScoredItem, explain: bool) -> Self {
        let (source, fact_key, ended) = match &scored.record {
            RetrievalSource::Memory(item) => (
                "memory",
                item.fact_key.clone(),
                item.ended.as_ref().map(EndedView::from),
            ),
            RetrievalSource::KnowledgePage(_) => ("page", None, None),
            RetrievalSource::GraphEntity(_) => ("entity", None, None),
        };
        let explanation = explain.then(|| Explanation {
            channels: scored
                .breakdown
                .channels
                .iter()
                .map(|channel| {
                    serde_json::to_value(channel)
                        .ok()
                        .and_then(|value| value.as_str().map(str::to_owned))
                        .unwrap_or_else(|| format!("{channel:?}"))
                })
                .collect(),
            signals: scored
                .breakdown
                .signals
                .iter()
                .map(|signal| SignalView {
                    name: signal.name.to_string(),
                    value: signal.value,
                    contribution: signal.contribution,
                })
                .collect(),
        });
        Self {
            source: source.to_owned(),
            id: scored.record.id().to_owned(),
            namespace: scored.record.namespace().to_string(),
            text: scored.record.text(),
            score: scored.score,
            fact_key,
            ended,
            explanation,
        }
    }
}

/// What a recall found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct RecallView {
    /// The query.
    pub(crate) query: String,
    /// The results, best first.
    pub(crate) results: Vec<RecallHit>,
    /// How many candidates were found before the cut.
    pub(crate) total_found: usize,
}

impl RecallView {
    /// The view of `result`.
    pub(crate) fn new(result: &RetrievalResult, explain: bool) -> Self {
        Self {
            query: result.query.clone(),
            results: result
                .items
                .iter()
                .map(|item| RecallHit::new(item, explain))
                .collect(),
            total_found: result.total_found,
        }
    }
}

/// A knowledge page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct PageView {
    /// Its id.
    pub(crate) id: String,
    /// Its namespace.
    pub(crate) namespace: String,
    /// The title.
    pub(crate) title: String,
    /// A short summary.
    pub(crate) summary: String,
    /// The body.
    pub(crate) content: String,
    /// Tags.
    pub(crate) tags: Vec<String>,
    /// Ids of pages it refers to.
    pub(crate) references: Vec<String>,
    /// Ids of the pages that refer to it, sorted (what links here): the first
    /// [`MAX_REFERRERS`] (the page index gives how many cite each page, `referenced_by`).
    pub(crate) referrers: Vec<String>,
    /// Whether more pages refer to it than `referrers` shows.
    #[serde(default)]
    pub(crate) referrers_truncated: bool,
    /// When it was created (RFC 3339).
    pub(crate) created_at: String,
    /// When it last changed (RFC 3339).
    pub(crate) updated_at: String,
}

/// The most relations shown with one entity: a tenant may give one entity any number
/// (relation types are free text), and a read of it stays the size of a page.
pub(crate) const MAX_ENTITY_RELATIONS: usize = 100;

/// The most referrers shown with one page: any number of pages may cite one (an index
/// page every page cites), and a read of it stays the size of a page.
pub(crate) const MAX_REFERRERS: usize = 100;

impl PageView {
    /// The page with the ids of the pages that refer to it, read as
    /// `KnowledgeStore::referrers_at_most(.., MAX_REFERRERS + 1)`: the first
    /// [`MAX_REFERRERS`] are kept, and one more says there are more.
    pub(crate) fn with_referrers(page: &KnowledgePage, mut referrers: Vec<String>) -> Self {
        let referrers_truncated = referrers.len() > MAX_REFERRERS;
        referrers.truncate(MAX_REFERRERS);
        Self {
            referrers,
            referrers_truncated,
            ..Self::from(page)
        }
    }
}

impl From<&KnowledgePage> for PageView {
    fn from(page: &KnowledgePage) -> Self {
        Self {
            id: page.id.clone(),
            namespace: page.namespace.to_string(),
            title: page.title.clone(),
            summary: page.summary.clone(),
            content: page.content.clone(),
            tags: page.tags.iter().map(ToString::to_string).collect(),
            references: page.references.clone(),
            referrers: Vec::new(),
            referrers_truncated: false,
            created_at: page.created_at.to_rfc3339(),
            updated_at: page.updated_at.to_rfc3339(),
        }
    }
}

/// A line of the page index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct PageIndexView {
    /// Its id.
    pub(crate) id: String,
    /// Its namespace.
    pub(crate) namespace: String,
    /// The title.
    pub(crate) title: String,
    /// The summary.
    pub(crate) summary: String,
    /// Tags.
    pub(crate) tags: Vec<String>,
    /// How many pages refer to it.
    pub(crate) referenced_by: usize,
}

impl From<&PageIndexEntry> for PageIndexView {
    fn from(entry: &PageIndexEntry) -> Self {
        Self {
            id: entry.id.clone(),
            namespace: entry.namespace.to_string(),
            title: entry.title.clone(),
            summary: entry.summary.clone(),
            tags: entry.tags.iter().map(ToString::to_string).collect(),
            referenced_by: entry.referenced_by,
        }
    }
}

/// A knowledge-graph entity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct EntityView {
    /// Its id, unique within its namespace.
    pub(crate) id: String,
    /// Its namespace.
    pub(crate) namespace: String,
    /// Its display name.
    pub(crate) name: String,
    /// Its type (person, project, ...).
    pub(crate) entity_type: String,
    /// A description.
    pub(crate) description: String,
    /// Tags.
    pub(crate) tags: Vec<String>,
    /// What is known about it as keys and values; absent when nothing is.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    #[schema(value_type = Object)]
    pub(crate) attributes: serde_json::Map<String, serde_json::Value>,
}

impl From<&GraphEntity> for EntityView {
    fn from(entity: &GraphEntity) -> Self {
        Self {
            id: entity.id.clone(),
            namespace: entity.namespace.to_string(),
            name: entity.name.clone(),
            entity_type: entity.entity_type.clone(),
            description: entity.description.clone(),
            tags: entity.tags.iter().map(ToString::to_string).collect(),
            attributes: entity.attributes.clone(),
        }
    }
}

/// A directed, typed, weighted relation between two entities of one namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub(crate) struct RelationView {
    /// Its namespace.
    pub(crate) namespace: String,
    /// The source entity's id.
    pub(crate) source_id: String,
    /// The target entity's id.
    pub(crate) target_id: String,
    /// The relation type (works_at, knows, ...).
    pub(crate) relation_type: String,
    /// Its weight in [0, 1].
    pub(crate) weight: f32,
    /// What is known about it as keys and values; absent when nothing is.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    #[schema(value_type = Object)]
    pub(crate) attributes: serde_json::Map<String, serde_json::Value>,
}

impl From<&GraphRelation> for RelationView {
    fn from(relation: &GraphRelation) -> Self {
        Self {
            namespace: relation.namespace.to_string(),
            source_id: relation.source_id.clone(),
            target_id: relation.target_id.clone(),
            relation_type: relation.relation_type.clone(),
            weight: relation.weight,
            attributes: relation.attributes.clone(),
        }
    }
}

/// Counts of a namespace and those under it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StatsView {
    /// Memories: the current ones and the history.
    pub(crate) total: usize,
    /// Current memories (not ended, not past their `valid_until`): what a recall can find.
    pub(crate) current: usize,
    /// Memories per kind.
    pub(crate) per_kind: std::collections::BTreeMap<String, usize>,
    /// Memories per namespace.
    pub(crate) per_namespace: std::collections::BTreeMap<String, usize>,
    /// Mean accesses per memory (recalls, and duplicates merged into it).
    pub(crate) mean_access: f64,
    /// Compressed memories (their originals kept).
    pub(crate) compressed: usize,
    /// The share of memories that are compressed, in [0, 1].
    pub(crate) compression_rate: f64,
    /// Memories returned by at least one recall.
    pub(crate) recalled: usize,
    /// The mean relevance recalls returned memories with, in [0, 1]; absent before the
    /// first recall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mean_recall_score: Option<f64>,
    /// The largest namespace's share of the per-namespace capacity, when one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) capacity_use: Option<f64>,
    /// Knowledge pages.
    pub(crate) pages: usize,
    /// Graph entities.
    pub(crate) entities: usize,
}

impl StatsView {
    /// The view of `stats`, as `GET /v1/stats` and `agent-memory --json stats` show it.
    pub(crate) fn new(stats: agent_memory::MemoryStats) -> Self {
        Self {
            total: stats.total,
            current: stats.current,
            per_kind: stats
                .per_kind
                .iter()
                .map(|(kind, count)| (kind.as_str().to_owned(), *count))
                .collect(),
            per_namespace: stats.per_namespace,
            mean_access: stats.mean_access,
            compressed: stats.compressed,
            compression_rate: stats.compression_rate,
            recalled: stats.recalled,
            mean_recall_score: stats.mean_recall_score,
            capacity_use: stats.capacity_use,
            pages: stats.pages,
            entities: stats.entities,
        }
    }
}
