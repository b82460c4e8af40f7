//! [`Memory::remember_many`]: many memories checked first, reconciled, and written in one
//! store call ([`MemoryStore::save_many`](memory_core::MemoryStore::save_many), one
//! transaction on the SQL backends).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use memory_core::{MemoryError, MemoryItem, MemoryKind, Namespace, Result, SearchHit, SearchQuery};
use tracing::Instrument;

use super::facts::merge_into;
use super::{Memory, Remember};
use crate::facts::{DuplicatePolicy, Outcome, Prepared, Remembered};

/// New memories whose searches for duplicates and rivals go to the store in one
/// [`search_many`](memory_core::MemoryStore::search_many) call: enough to pay a call's fixed
/// cost once for many, few enough that the hits held at once stay small (eight memories per
/// request by default).
const SEARCH_CHUNK: usize = 256;

/// Names the request of the batch an error is about: the field of an
/// [`MemoryError::InvalidInput`] gains the request's place (`requests[3].content`), and the
/// message of a refused duplicate or conflict ([`MemoryError::AlreadyExists`],
/// [`MemoryError::Conflict`]) opens with it (`requests[3]: memory m1 ...`); other errors
/// pass through.
fn at_index(index: usize, error: MemoryError) -> MemoryError {
    let place = format!("requests[{index}]");
    match error {
        MemoryError::InvalidInput { field, problem } => MemoryError::InvalidInput {
            field: format!("{place}.{field}"),
            problem,
        },
        MemoryError::AlreadyExists(message) if !message.starts_with(&place) => {
            MemoryError::AlreadyExists(format!("{place}: {message}"))
        }
        MemoryError::Conflict { message, source } if !message.starts_with(&place) => {
            MemoryError::Conflict {
                message: format!("{place}: {message}"),
                source,
            }
        }
        other => other,
    }
}

/// The key under which memories of one batch are compared as duplicates: their namespace,
/// and their distinct analysed terms in order (the same text, up to stop words, case,
/// inflection and word order).
fn duplicate_key(item: &MemoryItem) -> (Namespace, Vec<String>) {
    let mut terms = memory_core::text::Analyzer::default().query_terms(&item.content);
    terms.sort_unstable();
    (item.namespace.clone(), terms)
}

/// The writes of a batch, in order, each memory once (its latest version).
#[derive(Default)]
struct Writes {
    items: Vec<MemoryItem>,
    /// Where each `(namespace, id)` is in `items`.
    at: HashMap<(Namespace, String), usize>,
    /// Per duplicate key ([`duplicate_key`]), where in `items` the requests of the batch
    /// stored as new memories are.
    added: HashMap<(Namespace, Vec<String>), Vec<usize>>,
    /// The stored memories among `items`, each with the `updated_at` it was read with.
    read: HashMap<(Namespace, String), DateTime<Utc>>,
}

impl Writes {
    fn get_mut(&mut self, namespace: &Namespace, id: &str) -> Option<&mut MemoryItem> {
        let at = *self.at.get(&(namespace.clone(), id.to_owned()))?;
        self.items.get_mut(at)
    }

    /// The conditions of the batch's write: the index of each stored memory among `items`
    /// and the `updated_at` it was read with.
    fn expected(&self) -> Vec<(usize, DateTime<Utc>)> {
        self.items
            .iter()
            .enumerate()
            .filter_map(|(at, item)| {
                let read_at = self.read.get(&(item.namespace.clone(), item.id.clone()))?;
                Some((at, *read_at))
            })
            .collect()
    }

    /// Adds `item`, replacing an earlier version of it in the batch.
    fn put(&mut self, item: MemoryItem) {
        let key = (item.namespace.clone(), item.id.clone());
        match self.at.get(&key) {
            Some(&at) => self.items[at] = item,
            None => {
                self.at.insert(key, self.items.len());
                self.items.push(item);
            }
        }
    }
}

impl Memory {
    /// Remembers many memories with one store write: every request is checked before
    /// anything is stored, each is reconciled with the stored memories as
    /// [`remember_with`](Self::remember_with) reconciles one, and all the writes go to the
    /// store in one [`save_many`](memory_core::MemoryStore::save_many) (one transaction on
    /// SQLite and PostgreSQL, so the batch is stored wholly or not at all, with one commit
    /// and one sync). Returns what happened to each request, in order.
    ///
    /// Reconciliation within the batch: a request is compared with the memories stored
    /// before the call (duplicates, conflicts and fact keys, as one `remember` does), and
    /// with the earlier requests of the batch only for duplicates of the same text (the same
    /// analysed terms in one namespace, confirmed as `remember` confirms a duplicate): it
    /// then merges into the earlier one. Near-duplicates and conflicts between requests of
    /// one batch are not looked for, and two requests stating the same fact key in one
    /// namespace are refused (remember the versions of one fact in order, one call each, so
    /// each supersedes the one before). When two requests change the same stored memory,
    /// merges into it add up; otherwise the later change is the one written.
    ///
    /// With an eviction policy, each request counts as one write to its namespace, counted
    /// together once the batch is stored: one pass at most per namespace written (and
    /// what writes made meanwhile ask for), which leaves it within the capacity.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the request and field (`requests[3].content`) for
    /// the first invalid request, `requests[j].id` for an id an earlier request of the batch
    /// names in the same namespace or for an id naming a stored memory that is part of a
    /// fact's history ([`Remember::id`]), or `requests[j].fact_key` for a fact key an earlier
    /// request of the batch states in the same namespace;
    /// [`MemoryError::AlreadyExists`] or [`MemoryError::Conflict`] naming the request
    /// (`requests[3]: ...`) when the [`FactsConfig`](crate::FactsConfig) rejects a
    /// duplicate or conflict; store errors.
    /// Nothing is stored when it fails.
    pub async fn remember_many(&self, requests: Vec<Remember>) -> Result<Vec<Remembered>> {
        let span = tracing::debug_span!("remember_many", count = requests.len());
        self.remember_batch(requests).instrument(span).await
    }

    async fn remember_batch(&self, requests: Vec<Remember>) -> Result<Vec<Remembered>> {
        let now = self.clock.now();
        let mut items = Vec::with_capacity(requests.len());
        Remember::check_ids(&requests, "requests")
            .map_err(|(index, error)| at_index(index, error))?;
        let mut keys: HashMap<(Namespace, String), usize> = HashMap::new();
        let named: Vec<bool> = requests
            .iter()
            .map(|request| request.id.is_some())
            .collect();
        let keep_apart: Vec<bool> = requests.iter().map(|request| request.keep_apart).collect();
        for (index, request) in requests.into_iter().enumerate() {
            let item = self
                .item_of(request, now)
                .map_err(|error| at_index(index, error))?;
            if let Some(key) = &item.fact_key
                && let Some(earlier) = keys.insert((item.namespace.clone(), key.clone()), index)
            {
                return Err(MemoryError::invalid(
                    &format!("requests[{index}].fact_key"),
                    format!(
                        "requests[{earlier}] states fact {key} in {} too; remember the versions \
                         of one fact in separate calls",
                        item.namespace
                    ),
                ));
            }
            items.push(item);
        }
        if let Some(embedder) = self.retriever.embedder() {
            // One embed_batch call for the whole batch: a provider over HTTP sends a few
            // requests instead of one per memory.
            let missing: Vec<usize> = (0..items.len())
                .filter(|&index| items[index].embedding.is_none())
                .collect();
            let texts: Vec<&str> = missing
                .iter()
                .map(|&index| items[index].content.as_str())
                .collect();
            let vectors = crate::embedding::embed_batch_checked(&**embedder, &texts).await?;
            let mut vectors = vectors.into_iter();
            let mut embedded = Vec::with_capacity(items.len());
            for (index, mut item) in items.into_iter().enumerate() {
                if item.embedding.is_none()
                    && let Some(vector) = vectors.next()
                {
                    item = item
                        .with_embedding(vector)
                        .map_err(|error| at_index(index, error))?;
                }
                embedded.push(item);
            }
            items = embedded;
        }

        let namespaces: Vec<Namespace> = items.iter().map(|item| item.namespace.clone()).collect();
        // The stored memories the batch changes are written only if they are still as its
        // reconciliation read them; when another write came between, the batch is
        // reconciled again on what is stored then.
        let mut committed = None;
        for _ in 0..super::EDIT_ATTEMPTS {
            let (reads, unchanged) = self.read_replaced(&items, &named).await?;
            let planned: Vec<(usize, MemoryItem)> = items
                .iter()
                .cloned()
                .enumerate()
                .filter(|(index, _)| !unchanged.contains(index))
                .collect();
            let (mut writes, planned) = self.plan_batch(planned, &keep_apart, now).await?;
            for (key, read_at) in reads {
                writes.read.entry(key).or_insert(read_at);
            }
            // The requests that change nothing answered in their places.
            let mut planned = planned.into_iter();
            let remembered: Vec<Remembered> = (0..items.len())
                .filter_map(|index| {
                    if unchanged.contains(&index) {
                        Some(super::unchanged(&items[index].id))
                    } else {
                        planned.next()
                    }
                })
                .collect();
            let expected = writes.expected();
            if writes.items.is_empty() {
                committed = Some(remembered);
                break;
            }
            if expected.is_empty() {
                self.store.save_many(writes.items).await?;
                committed = Some(remembered);
                break;
            }
            if self.store.save_many_if(writes.items, &expected).await? {
                committed = Some(remembered);
                break;
            }
        }
        let Some(remembered) = committed else {
            return Err(MemoryError::Conflict {
                message: format!(
                    "the memories the batch reconciles with were changed by other writes at \
                     each of {} attempts; nothing was written",
                    super::EDIT_ATTEMPTS
                ),
                source: None,
            });
        };
        // The batch is committed: what follows never turns it into an error.
        if let Some(enrichment) = &self.enrichment {
            for (namespace, done) in namespaces.iter().zip(&remembered) {
                enrichment.enqueue(namespace, &done.id).await;
            }
        }
        // Counted once per namespace, as an import's writes are: one pass at most for a
        // batch, where counting each request alone ran one per sixteenth of the capacity
        // (and one full pass per `check_interval` requests) inside a single call.
        let mut written: Vec<(&Namespace, usize)> = Vec::new();
        let mut at: HashMap<&Namespace, usize> = HashMap::new();
        for namespace in &namespaces {
            match at.get(namespace) {
                Some(&index) => written[index].1 += 1,
                None => {
                    at.insert(namespace, written.len());
                    written.push((namespace, 1));
                }
            }
        }
        for (namespace, count) in written {
            self.keep_within_capacity(namespace, count).await;
        }
        Ok(remembered)
    }

    /// What the batch writes, each request reconciled with the stored memories and the
    /// requests before it, and what happened to each request.
    async fn plan_batch(
        &self,
        items: Vec<(usize, MemoryItem)>,
        keep_apart: &[bool],
        now: DateTime<Utc>,
    ) -> Result<(Writes, Vec<Remembered>)> {
        let mut writes = Writes::default();
        let mut remembered = Vec::with_capacity(items.len());
        // The searches for duplicates and rivals go to the store a chunk at a time
        // (`search_many`: one transaction and one thread switch on SQLite instead of one per
        // memory); none sees the batch, which is written at the end. Each item keeps its
        // request's position, which errors name.
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            let chunk: Vec<(usize, MemoryItem)> = items.by_ref().take(SEARCH_CHUNK).collect();
            let mut prepared: Vec<Option<Prepared>> = Vec::with_capacity(chunk.len());
            let mut queries: Vec<SearchQuery> = Vec::new();
            for (_, item) in &chunk {
                match self.candidate_search(item, now) {
                    Some((item_prepared, query)) => {
                        prepared.push(Some(item_prepared));
                        queries.push(query);
                    }
                    None => prepared.push(None),
                }
            }
            let mut results = if queries.is_empty() {
                Vec::new()
            } else {
                self.store.search_many(&queries).await?
            }
            .into_iter();
            for ((index, item), prepared) in chunk.into_iter().zip(prepared) {
                let found = prepared.map(|prepared| (prepared, results.next().unwrap_or_default()));
                let apart = keep_apart.get(index).copied().unwrap_or_default();
                self.reconcile_in_batch(
                    index,
                    item,
                    found,
                    (now, apart),
                    &mut writes,
                    &mut remembered,
                )
                .await?;
            }
        }
        Ok((writes, remembered))
    }

    /// Reconciles the batch's request `index` with the stored memories (what its search
    /// `found`) and with the requests before it, adding the outcome to `remembered` and the
    /// writes to `writes`.
    async fn reconcile_in_batch(
        &self,
        index: usize,
        item: MemoryItem,
        mut found: Option<(Prepared, Vec<SearchHit>)>,
        (now, keep_apart): (DateTime<Utc>, bool),
        writes: &mut Writes,
        remembered: &mut Vec<Remembered>,
    ) -> Result<()> {
        // As `remember` merges only the duplicates its search finds, so does the batch. A
        // request kept apart merges into none, but a later one may merge into it, as a
        // later `remember` would find it stored.
        let merge_in_batch =
            self.facts.duplicates != DuplicatePolicy::KeepBoth && self.facts.candidates > 0;
        if self.facts.candidates == 0 && item.fact_key.is_none() {
            // Nothing to reconcile: stored as it is, as `remember` would store it.
            remembered.push(Remembered {
                id: item.id.clone(),
                outcome: Outcome::Added,
                conflicts: Vec::new(),
            });
            writes.put(item);
            return Ok(());
        }
        // The duplicate key of a request that may merge into an earlier one of the batch.
        let key = if merge_in_batch && item.kind != MemoryKind::ShortTerm {
            let key = duplicate_key(&item);
            let earlier = writes
                .added
                .get(&key)
                .filter(|_| !keep_apart)
                .and_then(|earlier| {
                    let mut fresh;
                    let prepared = match found.as_mut() {
                        Some((prepared, _)) => prepared,
                        None => {
                            fresh = Prepared::of(&item, 0);
                            &mut fresh
                        }
                    };
                    earlier.iter().copied().find(|&at| {
                        let old: &MemoryItem = &writes.items[at];
                        prepared.duplicates(&item, old, &self.facts)
                            && super::facts::keys_allow_merge(old, &item)
                    })
                });
            if let Some(at) = earlier {
                if self.facts.duplicates == DuplicatePolicy::Reject {
                    return Err(MemoryError::AlreadyExists(format!(
                        "requests[{index}] repeats the text of memory {} in {}",
                        writes.items[at].id, item.namespace
                    )));
                }
                merge_into(&mut writes.items[at], &item);
                let into = writes.items[at].id.clone();
                remembered.push(Remembered {
                    id: into.clone(),
                    outcome: Outcome::Merged { into },
                    conflicts: Vec::new(),
                });
                return Ok(());
            }
            Some(key)
        } else {
            None
        };
        let new = item.clone();
        let plan = self
            .reconcile_found(item, now, found, keep_apart)
            .await
            .map_err(|error| at_index(index, error))?;
        self.apply_plan(plan, &new, writes, remembered);
        if let Some(key) = key
            && matches!(
                remembered.last().map(|r| &r.outcome),
                Some(Outcome::Added | Outcome::Superseded { .. } | Outcome::Outdated { .. })
            )
            && let Some(&at) = writes.at.get(&(new.namespace.clone(), new.id.clone()))
        {
            writes.added.entry(key).or_default().push(at);
        }
        Ok(())
    }

    /// Adds a request's plan to the batch's writes: a merge into a memory the batch already
    /// changes is applied to that version, unless the batch ended it (an earlier request
    /// superseded it): the request is then stored as a memory of its own, as it would be
    /// after that request one call at a time (no current memory holds its text).
    fn apply_plan(
        &self,
        plan: super::facts::Plan,
        new: &MemoryItem,
        writes: &mut Writes,
        remembered: &mut Vec<Remembered>,
    ) {
        if let Outcome::Merged { into } = &plan.remembered.outcome
            && let Some(pending) = writes.get_mut(&new.namespace, into)
        {
            if pending.ended.is_none() {
                merge_into(pending, new);
            } else {
                writes.put(new.clone());
                remembered.push(Remembered {
                    id: new.id.clone(),
                    outcome: Outcome::Added,
                    conflicts: Vec::new(),
                });
                return;
            }
        } else {
            for (id, read_at) in plan.read {
                writes
                    .read
                    .entry((new.namespace.clone(), id))
                    .or_insert(read_at);
            }
            for write in plan.writes {
                writes.put(write);
            }
        }
        remembered.push(plan.remembered);
    }

    /// Reads the stored memories the requests that name an id (`named`) would replace:
    /// one in a fact's history refuses the batch naming the first such request
    /// ([`Remember::id`]), unless the request says what it says; any other is written over
    /// only if still as read. Returns those reads, and the positions of the requests that
    /// change nothing (the same memory sent again).
    async fn read_replaced(
        &self,
        items: &[MemoryItem],
        named: &[bool],
    ) -> Result<(
        HashMap<(Namespace, String), DateTime<Utc>>,
        std::collections::BTreeSet<usize>,
    )> {
        let mut wanted: HashMap<&Namespace, Vec<String>> = HashMap::new();
        let mut index_of: HashMap<(&Namespace, &str), usize> = HashMap::new();
        for (index, item) in items.iter().enumerate() {
            if named.get(index).copied().unwrap_or(false) {
                wanted
                    .entry(&item.namespace)
                    .or_default()
                    .push(item.id.clone());
                index_of.insert((&item.namespace, item.id.as_str()), index);
            }
        }
        let mut reads = HashMap::new();
        let mut unchanged = std::collections::BTreeSet::new();
        let mut refused: Option<(usize, MemoryError)> = None;
        for (namespace, ids) in wanted {
            for stored in self.store.get_many(namespace, &ids).await? {
                let Some(&index) = index_of.get(&(namespace, stored.id.as_str())) else {
                    continue;
                };
                match super::replacing(&stored, &items[index]) {
                    Ok(super::Replacing::Over(read_at)) => {
                        reads.insert((stored.namespace.clone(), stored.id.clone()), read_at);
                    }
                    Ok(super::Replacing::Unchanged) => {
                        unchanged.insert(index);
                    }
                    // The first request refused, whatever order the reads came in.
                    Err(error) if refused.as_ref().is_none_or(|(first, _)| index < *first) => {
                        refused = Some((index, error));
                    }
                    Err(_) => {}
                }
            }
        }
        match refused {
            Some((index, error)) => Err(at_index(index, error)),
            None => Ok((reads, unchanged)),
        }
    }

    /// The memory a request asks for, checked (without its embedding), created `now`
    /// unless the request gives a time; [`remember_with`](Self::remember_with) and
    /// [`remember_many`](Self::remember_many) both build theirs here.
    pub(super) fn item_of(&self, mut request: Remember, now: DateTime<Utc>) -> Result<MemoryItem> {
        // Metadata first: a refused value may be nested too deep to drop recursively.
        let metadata = std::mem::take(&mut request.metadata);
        if let Err(error) = memory_core::backend::validate_metadata(&metadata) {
            memory_core::backend::drop_json(metadata);
            return Err(error);
        }
        let mut item = MemoryItem::new(request.namespace, request.text)?
            .with_kind(request.kind)
            .with_importance(request.importance)?
            .with_tags(request.tags)?
            .with_metadata(metadata)?
            .with_created_at(request.created_at.unwrap_or(now));
        if let Some(id) = request.id {
            item = item.with_id(id)?;
        }
        if let Some(source) = request.source {
            item = item.with_source(source);
        }
        if let Some(context) = request.context.filter(|c| !c.trim().is_empty()) {
            item = item.with_context(context);
        }
        if request.pinned {
            item = item.with_pinned(true);
        }
        if let Some(key) = &request.fact_key {
            item = item.with_fact_key(key)?;
        }
        if request.valid_from.is_some() || request.valid_until.is_some() {
            item = item.with_validity(request.valid_from, request.valid_until)?;
        }
        if let Some(credibility) = request.credibility {
            item = item.with_credibility(credibility)?;
        }
        // The limits no step above checks (the context's, the source's), so a refused
        // request is refused here, before anything of a batch is written.
        item.validate()?;
        Ok(item)
    }

    /// Checks `request` as [`remember_with`](Self::remember_with) does before it writes,
    /// without writing anything: for a caller that accepts several requests together and
    /// refuses them all when one is bad.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the field, as `remember_with` would return it.
    pub fn check(&self, request: &Remember) -> Result<()> {
        self.item_of(request.clone(), self.clock.now()).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;
    use memory_core::{MemoryError, MemoryFilter, MemoryStore, Namespace, TimeView};

    use super::*;

    fn user() -> Namespace {
        Namespace::parse("user-1").unwrap()
    }

    async fn count(memory: &Memory) -> usize {
        memory.store().count(&user().subtree()).await.unwrap()
    }

    #[tokio::test]
    async fn a_batch_is_stored_in_order_with_an_outcome_each() {
        let memory = Memory::in_memory();
        let texts = [
            "The user owns a red bicycle",
            "The user plays the cello",
            "Lunch was pasta",
        ];
        let done = memory
            .remember_many(
                texts
                    .iter()
                    .enumerate()
                    .map(|(at, text)| Remember::new(user(), *text).id(format!("m{at}")))
                    .collect(),
            )
            .await
            .unwrap();
        let ids: Vec<&str> = done.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["m0", "m1", "m2"]);
        assert!(done.iter().all(|r| r.outcome == Outcome::Added));
        let stored = memory.store().get(&user(), "m1").await.unwrap().unwrap();
        assert_eq!(stored.content, texts[1]);
        assert!(memory.remember_many(Vec::new()).await.unwrap().is_empty());
    }

    /// A filler text sharing no word with any other: four made-up words from `i`.
    fn filler(i: usize) -> String {
        let word = |n: usize| {
            let mut n = n;
            let mut out = String::from("z");
            for _ in 0..3 {
                out.push(char::from(b'a' + (n % 26) as u8));
                n /= 26;
            }
            out
        };
        format!(
            "{} {} {} {}",
            word(4 * i),
            word(4 * i + 1),
            word(4 * i + 2),
            word(4 * i + 3)
        )
    }

    #[tokio::test]
    async fn a_batch_longer_than_a_search_chunk_is_reconciled_in_every_chunk() {
        let memory = Memory::in_memory();
        for (id, text) in [
            ("old-dup", "The office wifi password is tangerine"),
            ("old-phone", "Ava's phone number is 555-0100"),
        ] {
            memory
                .remember_with(Remember::new(user(), text).id(id))
                .await
                .unwrap();
        }
        let requests: Vec<Remember> = (0..2 * SEARCH_CHUNK + 100)
            .map(|i| {
                let text = match i {
                    _ if i == SEARCH_CHUNK + 14 => "Ava's phone number is 555-0199".to_owned(),
                    _ if i == SEARCH_CHUNK + 44 => {
                        "the office WiFi password is tangerine!".to_owned()
                    }
                    _ if i == 2 * SEARCH_CHUNK + 50 => filler(5),
                    _ => filler(i),
                };
                Remember::new(user(), text).id(format!("m{i}"))
            })
            .collect();
        let done = memory.remember_many(requests).await.unwrap();
        assert_eq!(done.len(), 2 * SEARCH_CHUNK + 100);
        let conflicted = &done[SEARCH_CHUNK + 14];
        assert_eq!(conflicted.outcome, Outcome::Added);
        assert_eq!(
            conflicted
                .conflicts
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>(),
            ["old-phone"],
            "a rival stored before the batch is found from the second chunk"
        );
        assert_eq!(
            done[SEARCH_CHUNK + 44].outcome,
            Outcome::Merged {
                into: "old-dup".to_owned()
            },
            "a stored duplicate is found from the second chunk"
        );
        assert_eq!(
            done[2 * SEARCH_CHUNK + 50].outcome,
            Outcome::Merged {
                into: "m5".to_owned()
            },
            "a duplicate of a request in an earlier chunk merges into it"
        );
        let added = done.iter().filter(|r| r.outcome == Outcome::Added).count();
        assert_eq!(added, 2 * SEARCH_CHUNK + 100 - 2);
        assert_eq!(count(&memory).await, 2 + added);
    }

    #[tokio::test]
    async fn one_invalid_request_fails_the_batch_naming_it_and_stores_nothing() {
        let memory = Memory::in_memory();
        let requests = vec![
            Remember::new(user(), "fine"),
            Remember::new(user(), "also fine"),
            Remember::new(user(), "   "),
        ];
        let error = memory.remember_many(requests).await.unwrap_err();
        assert_eq!(error.field(), Some("requests[2].content"), "{error}");
        let bad_importance = vec![
            Remember::new(user(), "fine"),
            Remember::new(user(), "fine too").importance(7.0),
        ];
        let error = memory.remember_many(bad_importance).await.unwrap_err();
        assert_eq!(error.field(), Some("requests[1].importance"), "{error}");
        assert_eq!(count(&memory).await, 0);
    }

    /// A batch refused by a `Reject` policy names the request refused, for a duplicate or
    /// rival stored before the batch as for one of the batch's own, and stores nothing.
    #[tokio::test]
    async fn a_rejected_request_is_named_and_nothing_is_stored() {
        let memory = Memory::builder()
            .facts(crate::FactsConfig {
                duplicates: crate::DuplicatePolicy::Reject,
                conflicts: crate::ConflictPolicy::Reject,
                ..crate::FactsConfig::default()
            })
            .build()
            .unwrap();
        for (id, text) in [
            ("cat", "The user's cat is called Miso"),
            ("phone", "Ava's phone number is 555-0100"),
        ] {
            memory
                .remember_with(Remember::new(user(), text).id(id))
                .await
                .unwrap();
        }
        let batch = |text: &str| {
            vec![
                Remember::new(user(), "The user drinks green tea every morning"),
                Remember::new(user(), text.to_owned()),
            ]
        };
        let error = memory
            .remember_many(batch("the user's cat is called Miso"))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, MemoryError::AlreadyExists(message) if message.starts_with("requests[1]: ")),
            "{error}"
        );
        let error = memory
            .remember_many(batch("Ava's phone number is 555-0199"))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, MemoryError::Conflict { message, .. } if message.starts_with("requests[1]: ")),
            "{error}"
        );
        let error = memory
            .remember_many(vec![
                Remember::new(user(), "The user drinks green tea every morning"),
                Remember::new(user(), "the user drinks green tea every morning"),
            ])
            .await
            .unwrap_err();
        assert!(
            matches!(&error, MemoryError::AlreadyExists(message) if message.starts_with("requests[1] repeats")),
            "{error}"
        );
        assert_eq!(count(&memory).await, 2, "a refused batch stores nothing");
    }

    #[tokio::test]
    async fn repeated_text_merges_into_the_earlier_request_or_the_stored_memory() {
        let memory = Memory::in_memory();
        memory
            .remember_with(Remember::new(user(), "The user's cat is called Miso").id("stored"))
            .await
            .unwrap();
        let done = memory
            .remember_many(vec![
                Remember::new(user(), "The user drinks green tea every morning").id("tea"),
                Remember::new(user(), "the user drinks green tea every morning").id("again"),
                Remember::new(user(), "The user's cat is called Miso").id("cat-1"),
                Remember::new(user(), "The user's cat is called Miso!").id("cat-2"),
            ])
            .await
            .unwrap();
        let into = |at: usize| match &done[at].outcome {
            Outcome::Merged { into } => into.clone(),
            other => panic!("request {at}: {other:?}"),
        };
        assert_eq!(done[0].outcome, Outcome::Added);
        assert_eq!(into(1), "tea");
        assert_eq!(into(2), "stored");
        assert_eq!(into(3), "stored");
        assert_eq!(count(&memory).await, 2);
        // Both merges into the stored memory count.
        let stored = memory
            .store()
            .get(&user(), "stored")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.access_count, 2);
        let tea = memory.store().get(&user(), "tea").await.unwrap().unwrap();
        assert_eq!(tea.access_count, 1);
    }

    /// Without duplicate detection (`candidates` 0), a repeated text is stored twice, as two
    /// `remember` calls would store it.
    #[tokio::test]
    async fn without_detection_every_request_is_stored() {
        let facts = crate::FactsConfig {
            candidates: 0,
            ..crate::FactsConfig::default()
        };
        let memory = Memory::builder().facts(facts).build().unwrap();
        let done = memory
            .remember_many(vec![
                Remember::new(user(), "The user drinks green tea"),
                Remember::new(user(), "The user drinks green tea"),
            ])
            .await
            .unwrap();
        assert!(done.iter().all(|r| r.outcome == Outcome::Added));
        assert_ne!(done[0].id, done[1].id);
        assert_eq!(count(&memory).await, 2);
    }

    #[tokio::test]
    async fn a_batch_names_each_id_once_in_a_namespace() {
        let memory = Memory::in_memory();
        let other = Namespace::parse("user-2").unwrap();
        let repeated = memory
            .remember_many(vec![
                Remember::new(user(), "batch one kiwi").id("dup"),
                Remember::new(other.clone(), "another tenant's kiwi").id("dup"),
                Remember::new(user(), "batch two mango").id("dup"),
            ])
            .await
            .unwrap_err();
        assert!(matches!(repeated, MemoryError::InvalidInput { .. }));
        assert_eq!(repeated.field(), Some("requests[2].id"), "{repeated}");
        assert!(repeated.to_string().contains("requests[0]"), "{repeated}");
        assert_eq!(count(&memory).await, 0, "nothing stored");
        assert_eq!(memory.store().count(&other.subtree()).await.unwrap(), 0);
        // One id in two namespaces is two memories.
        let done = memory
            .remember_many(vec![
                Remember::new(user(), "batch one kiwi").id("dup"),
                Remember::new(other.clone(), "another tenant's kiwi").id("dup"),
            ])
            .await
            .unwrap();
        assert!(done.iter().all(|r| r.outcome == Outcome::Added));
        assert_eq!(count(&memory).await, 1);
        assert_eq!(memory.store().count(&other.subtree()).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn fact_keys_supersede_stored_versions_and_may_not_repeat_in_a_batch() {
        let memory = Memory::in_memory();
        let t0 = Utc::now() - Duration::days(2);
        memory
            .remember_with(
                Remember::new(user(), "The user lives in Paris")
                    .id("paris")
                    .fact_key("user.city")
                    .created_at(t0),
            )
            .await
            .unwrap();
        let repeated = memory
            .remember_many(vec![
                Remember::new(user(), "The user lives in Lisbon").fact_key("user.city"),
                Remember::new(user(), "Unrelated note"),
                Remember::new(user(), "The user lives in Porto").fact_key("User.City"),
            ])
            .await
            .unwrap_err();
        assert_eq!(repeated.field(), Some("requests[2].fact_key"), "{repeated}");
        assert!(matches!(repeated, MemoryError::InvalidInput { .. }));
        assert_eq!(count(&memory).await, 1);

        let done = memory
            .remember_many(vec![
                Remember::new(user(), "The user lives in Lisbon")
                    .id("lisbon")
                    .fact_key("user.city")
                    .created_at(t0 + Duration::days(1)),
                Remember::new(user(), "The user lives in Lisbon with a dog")
                    .fact_key("user.pet")
                    .created_at(t0 + Duration::days(1)),
            ])
            .await
            .unwrap();
        assert_eq!(
            done[0].outcome,
            Outcome::Superseded {
                old: vec!["paris".to_owned()]
            }
        );
        let current = memory
            .store()
            .list(
                &MemoryFilter::new(user().exact())
                    .with_fact_key("user.city")
                    .unwrap()
                    .with_view(TimeView::Current(Utc::now())),
            )
            .await
            .unwrap();
        let ids: Vec<&str> = current.iter().map(|item| item.id.as_str()).collect();
        assert_eq!(ids, ["lisbon"]);
    }
}
