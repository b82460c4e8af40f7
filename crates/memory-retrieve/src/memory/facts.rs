//! The [`Memory`] side of facts that change: reconciling a new memory with the stored ones
//! (see [`crate::facts`]), explicit supersession and retraction, history, conflicts, and
//! relations of single-valued types.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use memory_core::{
    EndReason, Ended, GraphRelation, KnowledgeGraphExt, MAX_REASON_LEN, MAX_TAGS, MemoryError,
    MemoryFilter, MemoryItem, MemoryKind, Namespace, Result, Scope, SearchHit, SearchQuery,
    TimeView, push_link,
};
use serde::{Deserialize, Serialize};

use super::Memory;
use crate::facts::{Conflict, ConflictPolicy, DuplicatePolicy, Outcome, Prepared, Remembered};

/// Most versions [`Memory::history`] follows.
pub const MAX_HISTORY: usize = 1024;

/// Two current memories of one namespace flagged as contradicting each other.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictPair {
    /// Their namespace.
    pub namespace: Namespace,
    /// The older memory (by when it starts to hold, then recording time, then id).
    pub older: String,
    /// The newer memory.
    pub newer: String,
}

/// The writes one `remember` makes, and what it reports.
pub(super) struct Plan {
    pub(super) writes: Vec<MemoryItem>,
    pub(super) remembered: Remembered,
    /// The stored memories among `writes` (every write but the new memory), each with the
    /// `updated_at` it was read with: the plan holds only if they are still as read
    /// ([`MemoryStore::save_many_if`](memory_core::MemoryStore::save_many_if)).
    pub(super) read: Vec<(String, DateTime<Utc>)>,
}

impl Plan {
    /// The conditions of the plan's write: the index of each stored memory among `writes`
    /// and the `updated_at` it was read with.
    pub(super) fn expected(&self) -> Vec<(usize, DateTime<Utc>)> {
        self.read
            .iter()
            .filter_map(|(id, read_at)| {
                let at = self.writes.iter().position(|write| write.id == *id)?;
                Some((at, *read_at))
            })
            .collect()
    }
}

/// How many of a new memory's terms its self-match search uses: the four its namespace
/// holds least often ([`SearchQuery::rarest`]). A rival differs in at most three words
/// ([`RuleConflictDetector::max_changed`](crate::RuleConflictDetector)) and a duplicate in
/// fewer, so either holds at least one of the four; the rarest terms single out the
/// memories that share the text, and their postings are the shortest, so the search costs
/// what a short query on rare words costs instead of one of up to 128 terms over the whole
/// namespace. Measured against five on the generated changing facts (`eval --facts`): the
/// same share of current facts on top, 1,923 true conflict flags against 1,930, 291 false
/// ones against 544; the same flags on the LoCoMo development conversations. Measured
/// against three (the default detector's rivals lack at most two of the new memory's
/// words, so each still holds one of three): `remember` into 100,000 generated memories
/// about a tenth faster, but 1,070 true conflict flags instead of 1,923 (20.7% of changes
/// flagged instead of 34.2%). A rival holding one term of three ranks below the memories
/// holding two of them, out of the few candidates: holding the terms is not enough, it must
/// also rank among the best.
const SELF_MATCH_TERMS: usize = 4;

/// How many of a new memory's terms the self-match search picks its
/// [`SELF_MATCH_TERMS`] rarest from: its longest (longer words are rarer). Each term weighed
/// costs the search a lookup of its document frequency. A rival shares all but three of the
/// statement's words, so any four of them still hold one it shares; a duplicate shares
/// nearly all. Measured on the generated changing facts (`eval --facts`) and both
/// development sets, 8, 16 and all the terms find the same rivals and duplicates. 16 costs
/// least: a larger pool holds rarer terms, whose postings are shorter. `remember` into
/// 100,000 generated memories (2,000 calls, counted by callgrind): 8 walks 989 postings and
/// scores 372 memories per search, 16 walks 285 and scores 180; per call 164,000 against
/// 129,000 instructions and 293 against 200 misses of a 1 MiB last-level cache; 32 gives
/// the same as 16 (the frequencies looked up cost what the shorter postings save).
const SELF_MATCH_POOL: usize = 16;

/// When a statement starts to hold, for ordering the versions of a fact.
fn start(item: &MemoryItem) -> (DateTime<Utc>, DateTime<Utc>, &str) {
    (
        item.valid_from.unwrap_or(item.created_at),
        item.created_at,
        &item.id,
    )
}

/// Ends `old` where `new` begins: `old` is superseded by `new` (recorded when `new` was),
/// its validity closed at `new`'s start, and `new` lists it.
fn supersede_with(old: &mut MemoryItem, new: &mut MemoryItem) {
    end_with(old, new);
    push_link(&mut new.supersedes, &old.id);
    // `new` may be stored too (`Memory::supersede`, a restored source).
    new.revise(new.updated_at);
}

/// Ends `old` where `new` begins, as superseded by it (`new` unchanged). `old`'s
/// `updated_at` moves on ([`MemoryItem::revise`]), so an edit made from a copy read before
/// does not bring it back ([`MemoryStore::update_if`](memory_core::MemoryStore::update_if)).
///
/// Its validity never closes before it began (its `valid_from`, else its creation): a
/// successor that began earlier (an explicit `supersede` by an older memory) leaves it a
/// validity of no length, not one that ends before it starts.
fn end_with(old: &mut MemoryItem, new: &MemoryItem) {
    old.revise(old.updated_at);
    let begins = new.valid_from.unwrap_or(new.created_at);
    let until = old.valid_until.map_or(begins, |until| until.min(begins));
    old.valid_until = Some(not_before_start(until, old));
    old.ended = Some(Ended {
        at: new.created_at.max(old.created_at),
        reason: EndReason::Superseded { by: new.id.clone() },
    });
}

/// `at`, or `item`'s start (its `valid_from`, else its creation) when that is later: where
/// [`end_with`] closes a validity.
fn not_before_start(at: DateTime<Utc>, item: &MemoryItem) -> DateTime<Utc> {
    at.max(item.valid_from.unwrap_or(item.created_at))
}

/// What [`Memory::forget`] deletes and what it brings back.
pub(super) struct Forgetting {
    /// The memories forgotten, every version of their facts, and every summary one of them
    /// was consolidated into (and the summaries those were consolidated into), each with
    /// the `updated_at` it was read with: they are deleted only if still as read.
    pub(super) doomed: Vec<(String, DateTime<Utc>)>,
    /// What comes back once they are gone ([`Memory::restoration`]): the other sources of
    /// the summaries that go, and the versions such a summary superseded, as read.
    pub(super) returning: Vec<MemoryItem>,
    /// Where a summary that goes had closed the validity of a version it superseded (its
    /// start): that version's `valid_until` is opened again when it still ends there.
    pub(super) cuts: HashMap<String, DateTime<Utc>>,
}

/// Records on the new memory that it contradicts `old`. The link is kept on the memory
/// written later only: flagging never rewrites a stored memory, so it cannot undo a
/// concurrent update of it (recall and [`Memory::conflicts`] read the link from either
/// end).
fn link_conflict(new: &mut MemoryItem, old: &MemoryItem) {
    push_link(&mut new.conflicts_with, &old.id);
}

/// Whether the fact keys of a stored duplicate `old` and a repetition `new` let `new` merge
/// into it: the same key, or `new` without one (it restates `old`, whatever `old` is the
/// fact of). A keyed `new` never merges into a memory without its key: it is that fact's
/// new version, and settles the key (the current version ends) as any version does. Given
/// the key by a merge instead, the old memory kept its own start and the fact two current
/// versions. Nor does a keyed `new` from a more credible source merge: it is a new version
/// too, which settles the key against every current version (a less credible restatement,
/// flagged beside the version it contradicted, raised by a merge to the credibility of that
/// version, had left both current).
pub(super) fn keys_allow_merge(old: &MemoryItem, new: &MemoryItem) -> bool {
    new.fact_key.is_none() || (old.fact_key == new.fact_key && new.credibility <= old.credibility)
}

/// The stored duplicate `old` reinforced by a repetition `new` (whose key, if any, is
/// `old`'s: [`keys_allow_merge`]).
fn merge(old: &MemoryItem, new: &MemoryItem) -> MemoryItem {
    let mut merged = old.clone();
    merge_into(&mut merged, new);
    merged
}

/// [`merge`] in place, as a batch merges into a memory it writes: one more access, the
/// larger importance and credibility, `new`'s tags added, its source when `old` has none,
/// and its pin. A merge that raises the importance restarts its decay from the new value
/// (as a recall does), or the next decay pass would compute it from the old one. `new`'s
/// vector, when the memory has none or one of another length (written before an embedder
/// was set, or under another model), takes its place: the texts say the same, and without
/// it the memory stayed out of search by meaning until a `reembed`.
pub(super) fn merge_into(old: &mut MemoryItem, new: &MemoryItem) {
    if let Some(vector) = &new.embedding
        && old
            .embedding
            .as_ref()
            .is_none_or(|stored| stored.len() != vector.len())
    {
        old.embedding = Some(vector.clone());
    }
    old.access_count = old
        .access_count
        .saturating_add(1)
        .min(memory_core::MAX_ACCESS_COUNT);
    if new.importance > old.importance {
        old.importance = new.importance;
        if old
            .metadata
            .get(crate::eviction::DECAY_METADATA_KEY)
            .is_some()
        {
            let since = new.created_at.max(old.created_at);
            crate::eviction::restart_decay(old, new.importance, since);
        }
    }
    old.credibility = old.credibility.max(new.credibility);
    for tag in &new.tags {
        if old.tags.len() < MAX_TAGS && !old.tags.contains(tag) {
            old.tags.push(tag.clone());
        }
    }
    let read_at = old.updated_at;
    old.updated_at = old.updated_at.max(new.created_at);
    // Moved on even when `new` is dated earlier (a replayed turn): an edit made from a copy
    // read before the merge must not undo it.
    old.revise(read_at);
    if old.source.is_none() {
        old.source.clone_from(&new.source);
    }
    if new.is_pinned()
        && let Some(metadata) = old.metadata.as_object_mut()
    {
        metadata.insert(
            memory_core::PINNED_METADATA_KEY.to_owned(),
            serde_json::Value::Bool(true),
        );
    }
}

impl Memory {
    /// Decides what storing `item` writes: the item itself, and the stored memories it
    /// supersedes or conflicts with; or only the duplicate it merges into.
    pub(super) async fn reconcile(
        &self,
        item: MemoryItem,
        now: DateTime<Utc>,
        keep_apart: bool,
    ) -> Result<Plan> {
        self.reconcile_found(item, now, None, keep_apart).await
    }

    /// The search [`reconcile`](Self::reconcile) makes for `item`'s duplicates and rivals,
    /// with `item` prepared for the comparison; `None` when it makes none (a message, no
    /// candidates asked for, no searchable term).
    pub(super) fn candidate_search(
        &self,
        item: &MemoryItem,
        now: DateTime<Utc>,
    ) -> Option<(Prepared, SearchQuery)> {
        if item.kind == MemoryKind::ShortTerm || self.facts.candidates == 0 {
            return None;
        }
        let mut prepared = Prepared::of(item, SELF_MATCH_POOL);
        let terms = prepared.take_search_terms();
        if terms.is_empty() {
            return None;
        }
        let namespace = &item.namespace;
        let query = SearchQuery::new(namespace.exact(), String::new(), self.facts.candidates)
            .with_filter(MemoryFilter::new(namespace.exact()).with_view(TimeView::Current(now)))
            .with_terms(terms)
            .with_rarest(SELF_MATCH_TERMS);
        Some((prepared, query))
    }

    /// [`reconcile`](Self::reconcile), given what its search found when the caller made it
    /// already (a batch makes its searches together): `item` prepared, and the hits.
    pub(super) async fn reconcile_found(
        &self,
        mut item: MemoryItem,
        now: DateTime<Utc>,
        found: Option<(Prepared, Vec<SearchHit>)>,
        keep_apart: bool,
    ) -> Result<Plan> {
        let added = |item: MemoryItem, outcome: Outcome, conflicts: Vec<Conflict>| Plan {
            remembered: Remembered {
                id: item.id.clone(),
                outcome,
                conflicts,
            },
            writes: vec![item],
            read: Vec::new(),
        };
        if item.kind == MemoryKind::ShortTerm {
            return Ok(added(item, Outcome::Added, Vec::new()));
        }
        let namespace = item.namespace.clone();
        let config = &self.facts;
        // Without candidates (or searchable terms) there is nothing to compare with.
        let found = match found {
            Some(found) => Some(found),
            None => match self.candidate_search(&item, now) {
                Some((prepared, mut query)) => {
                    let hits = self.store.search(&query).await;
                    // The store is done with the terms: their strings serve the next search.
                    if let Some(mut terms) = query.terms.take()
                        && let Some(terms) = std::sync::Arc::get_mut(&mut terms)
                    {
                        crate::facts::recycle_terms(terms.iter_mut().map(std::mem::take));
                    }
                    Some((prepared, hits?))
                }
                None => None,
            },
        };
        let (mut prepared, hits) = match found {
            Some((prepared, hits)) => (Some(prepared), hits),
            None => (None, Vec::new()),
        };
        let candidates: Vec<Arc<MemoryItem>> = hits
            .into_iter()
            .map(|hit| hit.item)
            .filter(|old| old.id != item.id && old.kind != MemoryKind::ShortTerm)
            .collect();
        if config.duplicates != DuplicatePolicy::KeepBoth
            && !keep_apart
            && let Some(prepared) = prepared.as_mut()
            && let Some(duplicate) = candidates
                .iter()
                .find(|old| prepared.duplicates(&item, old, config) && keys_allow_merge(old, &item))
        {
            if config.duplicates == DuplicatePolicy::Reject {
                return Err(MemoryError::AlreadyExists(format!(
                    "memory {} in {namespace} already holds this text",
                    duplicate.id
                )));
            }
            let merged = merge(duplicate, &item);
            return Ok(Plan {
                remembered: Remembered {
                    id: merged.id.clone(),
                    outcome: Outcome::Merged {
                        into: merged.id.clone(),
                    },
                    conflicts: Vec::new(),
                },
                writes: vec![merged],
                read: vec![(duplicate.id.clone(), duplicate.updated_at)],
            });
        }

        let mut settled = Settlement::default();
        if let Some(key) = item.fact_key.clone() {
            // Boxed: the listings of a fact's versions would otherwise make every write's
            // future (moved several times per `remember`) larger by their state.
            Box::pin(self.settle_key(&mut item, key, now, &mut settled)).await?;
        }
        let Settlement {
            mut touched,
            mut handled,
            mut superseded,
            mut outdated_by,
            mut conflicts,
            read,
        } = settled;
        // Conflicts among the most similar memories (those of another fact key state
        // another fact; those of this key were settled above).
        handled.extend(touched.iter().map(|old| old.id.clone()));
        let rivals: Vec<Arc<MemoryItem>> = candidates
            .iter()
            .filter(|old| {
                !handled.contains(old.id.as_str())
                    && (old.fact_key.is_none() || item.fact_key.is_none())
            })
            .cloned()
            .collect();
        let detected = if rivals.is_empty() {
            Vec::new()
        } else {
            self.detector.detect(&item, &rivals).await?
        };
        for conflict in detected {
            let Some(old) = rivals.iter().find(|old| old.id == conflict.id) else {
                continue;
            };
            let mut old = (**old).clone();
            match config.conflicts {
                ConflictPolicy::Reject => {
                    return Err(MemoryError::Conflict {
                        message: format!(
                            "memory {} in {namespace} contradicts the new one: {}",
                            old.id, conflict.reason
                        ),
                        source: None,
                    });
                }
                ConflictPolicy::Flag => {
                    link_conflict(&mut item, &old);
                    conflicts.push(conflict);
                }
                ConflictPolicy::SupersedeOlder => {
                    let settled = self.settle(&mut item, &mut old, &conflict.reason);
                    if settled.changes_old() {
                        touched.push(old);
                    }
                    settled.apply(&mut superseded, &mut outdated_by, &mut conflicts);
                }
            }
        }
        let outcome = match (outdated_by, superseded.is_empty()) {
            (Some(by), _) => Outcome::Outdated { by },
            (None, false) => Outcome::Superseded { old: superseded },
            (None, true) => Outcome::Added,
        };
        let mut plan = added(item, outcome, conflicts);
        // Every stored memory it rewrites was read as a candidate or as a version of its
        // fact.
        plan.read = touched
            .iter()
            .filter_map(|old| {
                let read_at = read.get(&old.id).copied().or_else(|| {
                    candidates
                        .iter()
                        .find(|candidate| candidate.id == old.id)
                        .map(|candidate| candidate.updated_at)
                })?;
                Some((old.id.clone(), read_at))
            })
            .collect();
        plan.writes.extend(touched);
        Ok(plan)
    }

    /// Settles `item` against the stored versions of its fact `key` (see
    /// [`reconcile`](Self::reconcile)): each current version it supersedes or that outranks
    /// it, and its place in the history when a later version is stored already.
    async fn settle_key(
        &self,
        item: &mut MemoryItem,
        key: String,
        now: DateTime<Utc>,
        settlement: &mut Settlement,
    ) -> Result<()> {
        let Settlement {
            touched,
            handled,
            superseded,
            outdated_by,
            conflicts,
            read,
        } = settlement;
        let namespace = &item.namespace;
        let mut filter = MemoryFilter::new(namespace.exact()).with_view(TimeView::Current(now));
        filter.fact_key = Some(key);
        let mut outdated = false;
        for mut old in self.store.list(&filter).await? {
            if old.id == item.id {
                continue;
            }
            read.insert(old.id.clone(), old.updated_at);
            if item.credibility >= old.credibility && start(item) < start(&old) {
                // A later version exists: settled below against the whole history.
                outdated = true;
                handled.insert(old.id.clone());
                continue;
            }
            let settled = self.settle(item, &mut old, "a more credible memory states this fact");
            if settled.changes_old() {
                touched.push(old);
            } else {
                handled.insert(old.id.clone());
            }
            settled.apply(superseded, outdated_by, conflicts);
        }
        if !outdated {
            return Ok(());
        }
        // An older statement arrived late: it takes its place in the history, between the
        // version that held before it (which now holds only until it begins) and the one
        // that followed (which supersedes it at once).
        filter.view = TimeView::All;
        let versions: Vec<MemoryItem> = self
            .store
            .list(&filter)
            .await?
            .into_iter()
            .inspect(|version| {
                read.entry(version.id.clone()).or_insert(version.updated_at);
            })
            .filter(|version| {
                version.id != item.id
                    && !touched.iter().any(|old| old.id == version.id)
                    // A retracted or consolidated version keeps its ending: the history is
                    // of the versions that held, one after another.
                    && version
                        .ended
                        .as_ref()
                        .is_none_or(|ended| ended.superseded_by().is_some())
            })
            .collect();
        let mut before: Option<MemoryItem> = None;
        let mut after: Option<MemoryItem> = None;
        for version in versions {
            if start(&version) < start(item) {
                if before.as_ref().is_none_or(|b| start(b) < start(&version)) {
                    before = Some(version);
                }
            } else if after.as_ref().is_none_or(|a| start(&version) < start(a)) {
                after = Some(version);
            }
        }
        if let Some(mut after) = after {
            if after.ended.is_none() && after.credibility < item.credibility {
                // The version that followed is current and less credible: it does not end
                // this one, and the two are flagged, as `settle` flags a less credible
                // later statement.
                link_conflict(item, &after);
                conflicts.push(Conflict {
                    id: after.id.clone(),
                    reason: "a less credible memory states this fact later".to_owned(),
                });
                handled.insert(after.id.clone());
            } else {
                supersede_with(item, &mut after);
                *outdated_by = Some(after.id.clone());
                touched.push(after);
            }
        }
        if let Some(mut before) = before {
            let begins = item.valid_from.unwrap_or(item.created_at);
            if before.valid_until.is_none_or(|until| until > begins) {
                supersede_with(&mut before, item);
                touched.push(before);
            }
        }
        Ok(())
    }

    /// Settles two statements of one fact: the later one supersedes the earlier, unless the
    /// later one's source is less credible (then both are flagged as conflicting).
    fn settle(&self, new: &mut MemoryItem, old: &mut MemoryItem, reason: &str) -> Settled {
        if new.credibility < old.credibility {
            link_conflict(new, old);
            return Settled::Conflict(Conflict {
                id: old.id.clone(),
                reason: reason.to_owned(),
            });
        }
        if start(new) >= start(old) {
            supersede_with(old, new);
            Settled::Superseded(old.id.clone())
        } else {
            supersede_with(new, old);
            Settled::Outdated(old.id.clone())
        }
    }

    /// Ends `old` and makes `new` its successor, as a fact key would: `old` leaves default
    /// recall, its validity ends where `new`'s begins, and both stay in the history.
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] for a missing memory; [`MemoryError::InvalidInput`] naming
    /// `new` when both ids are the same, when `new` has ended, or when `new` already
    /// supersedes [`MAX_FACT_LINKS`](memory_core::MAX_FACT_LINKS) memories, or `old` when it
    /// already ended; [`MemoryError::Conflict`] when other writes changed one of the two at each of
    /// eight attempts.
    pub async fn supersede(&self, namespace: &Namespace, old: &str, new: &str) -> Result<()> {
        if old == new {
            return Err(MemoryError::invalid(
                "new",
                "a memory cannot supersede itself",
            ));
        }
        for _ in 0..super::EDIT_ATTEMPTS {
            let mut old_item = self.require(namespace, old).await?;
            let mut new_item = self.require(namespace, new).await?;
            if old_item.ended.is_some() {
                return Err(MemoryError::invalid(
                    "old",
                    format!("memory {old} already ended"),
                ));
            }
            // An ended memory replaces nothing: the fact would be left with no current version.
            if new_item.ended.is_some() {
                return Err(MemoryError::invalid(
                    "new",
                    format!("memory {new} has ended and cannot replace another"),
                ));
            }
            // A further link would push the oldest out of `supersedes`, and that predecessor
            // would then name a successor that no longer names it (evicting or forgetting
            // the successor would leave it pointing at nothing).
            if new_item.supersedes.len() >= memory_core::MAX_FACT_LINKS {
                return Err(MemoryError::invalid(
                    "new",
                    format!(
                        "memory {new} already supersedes {} memories, the most one memory links",
                        new_item.supersedes.len()
                    ),
                ));
            }
            let expected = [(0, old_item.updated_at), (1, new_item.updated_at)];
            supersede_with(&mut old_item, &mut new_item);
            // Both written only if both are as read ([`Memory::update`]).
            if self
                .store
                .save_many_if(vec![old_item, new_item], &expected)
                .await?
            {
                return Ok(());
            }
        }
        Err(super::edit_conflict(namespace, old))
    }

    /// Withdraws a memory without a replacement: it leaves default recall and stays in the
    /// history, with `reason` and the time. A version it superseded stays ended (it was
    /// replaced then; whether it holds again is not known): the fact has no current version
    /// until another is remembered. To say the earlier value holds again, remember it again
    /// (with the fact key): it becomes the current version, and the history keeps both.
    /// ([`forget`](Self::forget) deletes every version, the earlier one too.)
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] for a missing memory; [`MemoryError::InvalidInput`] naming
    /// `reason` when it is longer than [`MAX_REASON_LEN`], or `id` when it already ended;
    /// [`MemoryError::Conflict`] when other writes changed the memory at each of eight
    /// attempts; store errors.
    pub async fn retract(&self, namespace: &Namespace, id: &str, reason: &str) -> Result<()> {
        memory_core::backend::validate_len("reason", reason, MAX_REASON_LEN)?;
        for _ in 0..super::EDIT_ATTEMPTS {
            let mut item = self.require(namespace, id).await?;
            if item.ended.is_some() {
                return Err(MemoryError::invalid(
                    "id",
                    format!("memory {id} already ended"),
                ));
            }
            let read_at = item.updated_at;
            item.ended = Some(Ended {
                at: self.clock.now().max(item.created_at),
                reason: EndReason::Retracted {
                    reason: reason.to_owned(),
                },
            });
            // Written only over the copy read, as every edit ([`Memory::update`]).
            if self.store.update_if(item.revised(read_at), read_at).await? {
                return Ok(());
            }
        }
        Err(super::edit_conflict(namespace, id))
    }

    /// Every version of the fact memory `id` states, in order (by when each starts to hold,
    /// then when it was recorded): the memories linked to it by supersession, and those
    /// with its fact key. Each carries how it ended ([`MemoryItem::ended`]): what replaced
    /// it and when, or why it was retracted. At most [`MAX_HISTORY`] versions: of a fact key
    /// with more, its current versions and the latest recorded.
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] for a missing memory; store errors.
    pub async fn history(&self, namespace: &Namespace, id: &str) -> Result<Vec<MemoryItem>> {
        let first = self.require(namespace, id).await?;
        let mut seen: HashSet<String> = HashSet::from([first.id.clone()]);
        let mut keys: HashSet<String> = HashSet::new();
        let mut queue: VecDeque<MemoryItem> = VecDeque::from([first]);
        let mut versions: Vec<MemoryItem> = Vec::new();
        while let Some(item) = queue.pop_front() {
            let mut next: Vec<String> = item.supersedes.clone();
            if let Some(by) = item.ended.as_ref().and_then(Ended::successor) {
                next.push(by.to_owned());
            }
            if let Some(key) = &item.fact_key
                && keys.insert(key.clone())
            {
                // When a fact has had more versions than are read: the current ones first
                // (a statement recorded late about an earlier time is not one), then the
                // latest recorded.
                let mut current = MemoryFilter::new(namespace.exact())
                    .with_view(TimeView::Current(self.clock.now()))
                    .with_limit(MAX_HISTORY);
                current.fact_key = Some(key.clone());
                let mut latest = MemoryFilter::new(namespace.exact())
                    .with_limit(MAX_HISTORY)
                    .newest_first();
                latest.fact_key = Some(key.clone());
                for filter in [current, latest] {
                    for version in self.store.list(&filter).await? {
                        if seen.len() < MAX_HISTORY && seen.insert(version.id.clone()) {
                            queue.push_back(version);
                        }
                    }
                }
            }
            next.retain(|id| !seen.contains(id));
            next.sort_unstable();
            next.dedup();
            next.truncate(MAX_HISTORY.saturating_sub(seen.len()));
            seen.extend(next.iter().cloned());
            // A memory it names as ended by it is a version only where that memory confirms
            // it (as `forgetting` reads links): a source restored to current when its
            // summary was forgotten is no version of anything.
            let successor = item.ended.as_ref().and_then(Ended::successor);
            queue.extend(
                self.store
                    .get_many(namespace, &next)
                    .await?
                    .into_iter()
                    .filter(|linked| {
                        Some(linked.id.as_str()) == successor
                            || linked.ended.as_ref().and_then(Ended::successor)
                                == Some(item.id.as_str())
                    }),
            );
            versions.push(item);
        }
        versions.sort_by(|a, b| start(a).cmp(&start(b)));
        Ok(versions)
    }

    /// What forgetting `roots` deletes: them and the versions of their facts (linked by
    /// supersession or sharing a fact key), and the summaries any of those was consolidated
    /// into, since a summary holds their text (and the summaries such a summary was
    /// consolidated into in turn). A summary reached so goes for the text it holds, not as
    /// a version of their fact: the walk does not go on to what superseded it or to its
    /// own versions, and what it ended comes back (its other sources, and a version it
    /// superseded), as before it was made. Unlike [`history`](Self::history) the walk does
    /// not follow a summary to its other sources: they are other memories.
    ///
    /// A link is followed backwards only where the older memory confirms it: a memory a
    /// doomed one names in [`supersedes`](MemoryItem::supersedes) is a version of its fact
    /// when it was superseded by it, a source when it was consolidated into it, and neither
    /// otherwise (a source brought back already, whose summary still names it). What a
    /// summary is so never depends on its metadata. Every version of a fact key is read,
    /// however many.
    pub(super) async fn forgetting(
        &self,
        namespace: &Namespace,
        roots: Vec<MemoryItem>,
    ) -> Result<Forgetting> {
        // Each memory reached, with whether it was reached only as a holder of text (a
        // summary reached from one of its sources). One reached as a version after it was
        // walked as a holder is walked again as a version (once at most), so whether a
        // summary goes as a version never depends on the order of the walk.
        let mut reached: HashMap<String, bool> =
            roots.iter().map(|root| (root.id.clone(), false)).collect();
        let reach =
            |reached: &mut HashMap<String, bool>, id: &str, holder: bool| match reached.get(id) {
                None => {
                    reached.insert(id.to_owned(), holder);
                    true
                }
                Some(true) if !holder => {
                    reached.insert(id.to_owned(), false);
                    true
                }
                Some(_) => false,
            };
        let mut keys: HashSet<String> = HashSet::new();
        let mut queue: VecDeque<(MemoryItem, bool)> =
            roots.into_iter().map(|root| (root, false)).collect();
        let mut returning: Vec<MemoryItem> = Vec::new();
        let mut cuts: HashMap<String, DateTime<Utc>> = HashMap::new();
        let mut doomed: Vec<(String, DateTime<Utc>)> = Vec::new();
        while let Some((item, holder)) = queue.pop_front() {
            if holder && reached.get(&item.id) == Some(&false) {
                // Reached again as a version meanwhile: walked as one when that comes up.
                continue;
            }
            // Forwards: the summary it was consolidated into holds its text; what
            // superseded a version of the fact is one too.
            let mut next: Vec<(String, bool)> = Vec::new();
            match item.ended.as_ref().map(|ended| &ended.reason) {
                Some(EndReason::Consolidated { into }) if reach(&mut reached, into, true) => {
                    next.push((into.clone(), true));
                }
                Some(EndReason::Superseded { by }) if !holder && reach(&mut reached, by, false) => {
                    next.push((by.clone(), false));
                }
                _ => {}
            }
            if !holder
                && let Some(key) = &item.fact_key
                && keys.insert(key.clone())
            {
                let mut filter = MemoryFilter::new(namespace.exact());
                filter.fact_key = Some(key.clone());
                for version in self.store.list(&filter).await? {
                    if reach(&mut reached, &version.id, false) {
                        queue.push_back((version, false));
                    }
                }
            }
            // Backwards, where the older memory confirms the link.
            let linked: Vec<String> = item
                .supersedes
                .iter()
                .filter(|id| reached.get(*id) != Some(&false))
                .cloned()
                .collect();
            if !linked.is_empty() {
                for old in self.store.get_many(namespace, &linked).await? {
                    match old.ended.as_ref().map(|ended| &ended.reason) {
                        Some(EndReason::Superseded { by }) if *by == item.id => {
                            if holder {
                                cuts.insert(
                                    old.id.clone(),
                                    item.valid_from.unwrap_or(item.created_at),
                                );
                                returning.push(old);
                            } else if reach(&mut reached, &old.id, false) {
                                queue.push_back((old, false));
                            }
                        }
                        Some(EndReason::Consolidated { into }) if *into == item.id => {
                            returning.push(old);
                        }
                        _ => {}
                    }
                }
            }
            if !next.is_empty() {
                let ids: Vec<String> = next.iter().map(|(id, _)| id.clone()).collect();
                for found in self.store.get_many(namespace, &ids).await? {
                    let holds = next.iter().any(|(id, holds)| *holds && *id == found.id);
                    queue.push_back((found, holds));
                }
            }
            doomed.push((item.id, item.updated_at));
        }
        // A memory walked twice (as a holder, then as a version) is deleted once.
        let mut once: HashSet<String> = HashSet::new();
        doomed.retain(|(id, _)| once.insert(id.clone()));
        let gone: HashSet<&str> = doomed.iter().map(|(id, _)| id.as_str()).collect();
        let mut back: HashSet<String> = HashSet::new();
        returning.retain(|item| !gone.contains(item.id.as_str()) && back.insert(item.id.clone()));
        Ok(Forgetting {
            doomed,
            returning,
            cuts,
        })
    }

    /// The writes that bring `returning` back once what ended them is gone: each current
    /// again, reconciled with the current version of its fact when it has a key (the later
    /// start holds, and the two are linked both ways), in the order they start. Returns the
    /// writes and, for each stored memory among them, its index and the `updated_at` it
    /// was read with: they are written only if still as read.
    pub(super) async fn restoration(
        &self,
        namespace: &Namespace,
        mut returning: Vec<MemoryItem>,
        cuts: &HashMap<String, DateTime<Utc>>,
    ) -> Result<(Vec<MemoryItem>, Vec<(usize, DateTime<Utc>)>)> {
        returning.sort_by(|a, b| start(a).cmp(&start(b)));
        let mut restored: Vec<MemoryItem> = Vec::new();
        let mut read: Vec<(usize, DateTime<Utc>)> = Vec::new();
        // Each key's current version among the writes, once read or written.
        let mut current_of: HashMap<String, usize> = HashMap::new();
        for mut item in returning {
            let item_read = item.updated_at;
            item.ended = None;
            // The validity the summary closed, opened again (as `end_with` closed it).
            if let Some(&begins) = cuts.get(&item.id)
                && item.valid_until == Some(not_before_start(begins, &item))
            {
                item.valid_until = None;
            }
            item.revise(item.updated_at);
            let mut now_current = true;
            if let Some(key) = item.fact_key.clone() {
                let at = match current_of.get(&key) {
                    Some(&at) => Some(at),
                    None => {
                        let mut filter = MemoryFilter::new(namespace.exact())
                            .with_view(TimeView::Current(self.clock.now()));
                        filter.fact_key = Some(key.clone());
                        match self.store.list(&filter).await?.into_iter().next() {
                            Some(current) => {
                                read.push((restored.len(), current.updated_at));
                                restored.push(current);
                                Some(restored.len() - 1)
                            }
                            None => None,
                        }
                    }
                };
                if let Some(at) = at
                    && let Some(current) = restored.get_mut(at)
                {
                    // The later start holds, as when the two were remembered. A current
                    // version that names as many memories as one memory links ends the
                    // returning one without naming it (`push_link` would drop another).
                    if start(current) >= start(&item) {
                        if current.supersedes.len() < memory_core::MAX_FACT_LINKS {
                            supersede_with(&mut item, current);
                        } else {
                            end_with(&mut item, current);
                        }
                        now_current = false;
                    } else {
                        supersede_with(current, &mut item);
                    }
                }
                if now_current {
                    current_of.insert(key, restored.len());
                } else if let Some(at) = at {
                    current_of.entry(key).or_insert(at);
                }
            }
            read.push((restored.len(), item_read));
            restored.push(item);
        }
        Ok((restored, read))
    }

    /// The pairs of current memories in `scope` flagged as contradicting each other: the
    /// consistency check that [`maintain`](Self::maintain) counts. Reads every memory of the
    /// scope, as maintenance does.
    ///
    /// # Errors
    /// Store errors.
    pub async fn conflicts(&self, scope: &Scope) -> Result<Vec<ConflictPair>> {
        let now = self.clock.now();
        let mut pairs = Vec::new();
        for namespace in self.store.list_namespaces(scope).await? {
            let items = self
                .store
                .list(&MemoryFilter::new(namespace.exact()).with_view(TimeView::Current(now)))
                .await?;
            let current: std::collections::HashMap<&str, &MemoryItem> =
                items.iter().map(|item| (item.id.as_str(), item)).collect();
            let mut seen: HashSet<(&str, &str)> = HashSet::new();
            for item in &items {
                for rival in &item.conflicts_with {
                    let Some(other) = current.get(rival.as_str()) else {
                        continue;
                    };
                    let (older, newer) = if start(item) < start(other) {
                        (item, *other)
                    } else {
                        (*other, item)
                    };
                    if seen.insert((older.id.as_str(), newer.id.as_str())) {
                        pairs.push(ConflictPair {
                            namespace: namespace.clone(),
                            older: older.id.clone(),
                            newer: newer.id.clone(),
                        });
                    }
                }
            }
        }
        Ok(pairs)
    }

    /// Adds a graph relation at the clock's time; a relation of a type declared
    /// single-valued ([`MemoryBuilder::single_valued_relations`](super::MemoryBuilder::single_valued_relations))
    /// closes the current one of that type from the same source. Returns the closed
    /// relations.
    ///
    /// # Errors
    /// As [`KnowledgeGraphExt::relate`].
    pub async fn relate(&self, relation: GraphRelation) -> Result<Vec<GraphRelation>> {
        let single = self.single_valued.contains(&relation.relation_type);
        self.graph.relate(relation, single, self.clock.now()).await
    }

    async fn require(&self, namespace: &Namespace, id: &str) -> Result<MemoryItem> {
        self.store
            .get(namespace, id)
            .await?
            .ok_or_else(|| MemoryError::not_found("memory", namespace, id))
    }
}

/// How [`Memory::settle`] settled a pair.
/// What reconciling a new memory settled with the stored ones so far.
#[derive(Default)]
struct Settlement {
    /// Stored memories it changed, to be written with it.
    touched: Vec<MemoryItem>,
    /// Stored memories already settled, which the detector passes over.
    handled: HashSet<String>,
    /// The memories it supersedes.
    superseded: Vec<String>,
    /// The later version that supersedes it at once, if any.
    outdated_by: Option<String>,
    /// The stored memories it conflicts with.
    conflicts: Vec<Conflict>,
    /// Each stored version of its fact listed, with the `updated_at` it was read with.
    read: HashMap<String, DateTime<Utc>>,
}

enum Settled {
    Superseded(String),
    Outdated(String),
    Conflict(Conflict),
}

impl Settled {
    /// Whether settling changed the stored memory (it must be written back).
    fn changes_old(&self) -> bool {
        !matches!(self, Settled::Conflict(_))
    }

    fn apply(
        self,
        superseded: &mut Vec<String>,
        outdated_by: &mut Option<String>,
        conflicts: &mut Vec<Conflict>,
    ) {
        match self {
            Settled::Superseded(id) => superseded.push(id),
            Settled::Outdated(id) => {
                outdated_by.get_or_insert(id);
            }
            Settled::Conflict(conflict) => conflicts.push(conflict),
        }
    }
}
