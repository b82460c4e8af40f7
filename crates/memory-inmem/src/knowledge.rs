//! `InMemoryKnowledgeStore`: knowledge pages, their index, cross-references and BM25F search.

use std::collections::BTreeSet;

use foldhash::{HashMap, HashMapExt, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memory_core::search::PAGE_FIELD_WEIGHTS;
use memory_core::text::Analyzer;
use memory_core::{
    AccessEvent, KnowledgePage, KnowledgeStore, MemoryError, Namespace, PageHit, PageIndexEntry,
    PageMatchSignals, PageQuery, Result, Scope, Tag,
};

use crate::bm25::Bm25Index;
use crate::registry::{Registry, read, write};
use memory_core::{PageRuleBits, PageRuleKeywords, PageRuleText};

/// The default [`KnowledgeStore`]: pages per namespace with an inverted index (BM25F over
/// title, summary, tags and content), a title-ordered table of contents, and back-reference
/// sets for reference counts.
///
/// Costs, with `n` pages in the namespace: `add_page`, `update_page`, `delete_page`
/// `O(log n + terms + references)`; `get_page`, `reference_count` `O(1)`; `get_index`
/// `O(n)` (it returns all of them, in order, with no sort); `search`
/// `O(Σ postings of the query terms)` for the BM25F scores, then the match rules for about
/// the `k` best only (see `PageRuleKeywords`); `record_accesses` `O(1)` per event, under
/// the lock of each namespace it touches (taken once per namespace and batch).
///
/// Ranking: BM25F relevance, then boosted by the page match rules (kept as signals):
/// `× (1 + 0.5 title_prefix + 0.5 tag_exact + 0.25 summary_contains)`.
#[derive(Debug)]
pub struct InMemoryKnowledgeStore {
    registry: Registry<Shard>,
}

#[derive(Debug)]
struct Shard {
    /// page id -> its index slot, where the page is kept
    pages: HashMap<String, u32>,
    toc: BTreeSet<(String, String)>,
    /// page id -> ids of existing pages (other than itself) referencing it
    referrers: HashMap<String, HashSet<String>>,
    /// Per index slot, the page in it, with what the match rules read and how many pages
    /// reference it: a search reads its hits from their slots, without a lookup by id.
    slots: Vec<Option<SlotEntry>>,
    /// Per index slot, the bits that bound its page's rule boost (a free slot's are empty):
    /// contiguous, so a search turns away the pages that cannot make the cut without
    /// reading their entries.
    bits: Vec<SlotBits>,
    free_slots: Vec<u32>,
    /// How many pages carry each tag (a query whose keywords name none cannot match a tag).
    tag_counts: HashMap<Tag, usize>,
    index: Bm25Index<4>,
}

/// A page in its index slot, as a search reads it without looking it up by id.
#[derive(Debug)]
struct SlotEntry {
    /// Shared with the search hits that returned it; copied on write.
    page: Arc<KnowledgePage>,
    /// The title and summary as the match rules read them.
    rules: PageRuleText,
    /// The page's tags, beside its rule text (one read less than through `page`).
    tags: Vec<Tag>,
    /// How many other existing pages reference it: `referrers`' count for its id, kept
    /// with every change of those sets.
    referenced_by: usize,
}

/// What bounds the rule boost of the page in a slot, read without its entry.
#[derive(Clone, Copy, Debug, Default)]
struct SlotBits {
    /// The bits of its title and summary ([`PageRuleText::bits`]).
    rules: PageRuleBits,
    /// [`tag_bit`] of each of its tags: a page none of whose bits a query's keywords name
    /// cannot match a tag (and is weighed without reading its tags).
    tags: u64,
}

/// One bit among 64 for a tag, the same in every process (tags are short).
fn tag_bit(tag: &str) -> u64 {
    let hash = tag.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    1 << (hash >> 58)
}

impl Default for Shard {
    fn default() -> Self {
        Self {
            pages: HashMap::new(),
            toc: BTreeSet::new(),
            referrers: HashMap::new(),
            slots: Vec::new(),
            bits: Vec::new(),
            free_slots: Vec::new(),
            tag_counts: HashMap::new(),
            index: Bm25Index::new(Analyzer::default(), PAGE_FIELD_WEIGHTS),
        }
    }
}

fn toc_key(page: &KnowledgePage) -> (String, String) {
    (page.title.to_lowercase(), page.id.clone())
}

impl Shard {
    fn insert(&mut self, page: KnowledgePage) {
        self.remove(&page.id);
        let slot = match self.free_slots.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        let rules = PageRuleText::new(&page.title, &page.summary);
        let bits = SlotBits {
            rules: rules.bits(),
            tags: page
                .tags
                .iter()
                .fold(0, |bits, tag| bits | tag_bit(tag.as_str())),
        };
        let referenced_by = self.referrers.get(&page.id).map_or(0, HashSet::len);
        if self.bits.len() <= slot as usize {
            self.bits.resize(slot as usize + 1, SlotBits::default());
        }
        self.bits[slot as usize] = bits;
        for tag in &page.tags {
            *self.tag_counts.entry(tag.clone()).or_insert(0) += 1;
        }
        let [title, summary, tags, content] = page.search_fields();
        self.index
            .insert(slot, &page.id, [&title, &summary, &tags, &content]);
        self.toc.insert(toc_key(&page));
        for target in &page.references {
            if *target != page.id
                && self
                    .referrers
                    .entry(target.clone())
                    .or_default()
                    .insert(page.id.clone())
                && let Some(entry) = self.entry_mut(target)
            {
                entry.referenced_by += 1;
            }
        }
        self.pages.insert(page.id.clone(), slot);
        self.slots[slot as usize] = Some(SlotEntry {
            tags: page.tags.clone(),
            page: Arc::new(page),
            rules,
            referenced_by,
        });
    }

    /// The slot entry of page `id`.
    fn entry(&self, id: &str) -> Option<&SlotEntry> {
        let slot = *self.pages.get(id)?;
        self.slots.get(slot as usize)?.as_ref()
    }

    fn entry_mut(&mut self, id: &str) -> Option<&mut SlotEntry> {
        let slot = *self.pages.get(id)?;
        self.slots.get_mut(slot as usize)?.as_mut()
    }

    fn remove(&mut self, id: &str) -> Option<KnowledgePage> {
        let slot = self.pages.remove(id)?;
        let entry = self.slots.get_mut(slot as usize)?.take()?;
        self.toc.remove(&toc_key(&entry.page));
        self.index.remove(slot);
        if let Some(bits) = self.bits.get_mut(slot as usize) {
            *bits = SlotBits::default();
        }
        self.free_slots.push(slot);
        for tag in &entry.page.tags {
            if let Some(count) = self.tag_counts.get_mut(tag) {
                *count -= 1;
                if *count == 0 {
                    self.tag_counts.remove(tag);
                }
            }
        }
        for target in &entry.page.references {
            let Some(set) = self.referrers.get_mut(target) else {
                continue;
            };
            let removed = set.remove(id);
            if set.is_empty() {
                self.referrers.remove(target);
            }
            if removed && let Some(target) = self.entry_mut(target) {
                target.referenced_by = target.referenced_by.saturating_sub(1);
            }
        }
        Some(Arc::unwrap_or_clone(entry.page))
    }

    /// How many other existing pages reference page `id` (which need not exist).
    /// How many pages reference page `id`: 0 while it does not exist, as every backend
    /// answers (its referrers are told by `referrers` meanwhile).
    fn referenced_by(&self, id: &str) -> usize {
        self.entry(id).map_or(0, |entry| entry.referenced_by)
    }
}

impl InMemoryKnowledgeStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            registry: Registry::new(),
        }
    }
}

impl Default for InMemoryKnowledgeStore {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl KnowledgeStore for InMemoryKnowledgeStore {
    async fn add_page(&self, page: KnowledgePage) -> Result<()> {
        page.validate()?;
        let shard = self.registry.get_or_create(&page.namespace);
        let mut shard = write(&shard);
        if shard.pages.contains_key(&page.id) {
            return Err(MemoryError::AlreadyExists(format!(
                "page {} in {}",
                page.id, page.namespace
            )));
        }
        shard.insert(page);
        Ok(())
    }

    async fn get_page(&self, namespace: &Namespace, id: &str) -> Result<Option<KnowledgePage>> {
        Ok(self.registry.get(namespace).and_then(|shard| {
            read(&shard)
                .entry(id)
                .map(|entry| KnowledgePage::clone(&entry.page))
        }))
    }

    /// Under the namespace's lock: the stored page is replaced at once.
    async fn put_page(&self, page: KnowledgePage) -> Result<()> {
        page.validate()?;
        let shard = self.registry.get_or_create(&page.namespace);
        write(&shard).insert(page);
        Ok(())
    }

    async fn update_page(&self, mut page: KnowledgePage) -> Result<()> {
        page.validate()?;
        let missing = || MemoryError::not_found("page", &page.namespace, &page.id);
        let shard = self.registry.get(&page.namespace).ok_or_else(missing)?;
        let mut shard = write(&shard);
        let Some(existing) = shard.entry(&page.id) else {
            return Err(missing());
        };
        // The store's bookkeeping is kept: creation time and access statistics.
        page.created_at = existing.page.created_at;
        page.access_count = existing.page.access_count;
        page.last_accessed = existing.page.last_accessed;
        shard.insert(page);
        Ok(())
    }

    /// Compared and replaced under the shard's write lock.
    async fn update_page_if(
        &self,
        mut page: KnowledgePage,
        read_at: DateTime<Utc>,
    ) -> Result<bool> {
        page.validate()?;
        let Some(shard) = self.registry.get(&page.namespace) else {
            return Ok(false);
        };
        let mut shard = write(&shard);
        let Some(existing) = shard.entry(&page.id) else {
            return Ok(false);
        };
        if existing.page.updated_at != read_at {
            return Ok(false);
        }
        page.created_at = existing.page.created_at;
        page.access_count = existing.page.access_count;
        page.last_accessed = existing.page.last_accessed;
        shard.insert(page);
        Ok(true)
    }

    async fn delete_page(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        Ok(self
            .registry
            .get(namespace)
            .is_some_and(|shard| write(&shard).remove(id).is_some()))
    }

    async fn search(&self, query: &PageQuery) -> Result<Vec<PageHit>> {
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        let shards = self.registry.shards(&query.scope);
        if shards.is_empty() {
            return Ok(Vec::new());
        }
        let keywords = query.rule_keywords();
        let rules = PageRuleKeywords::new(&keywords);
        // The bits of the tags the keywords name (as the tag rule reads a keyword).
        let keyword_tag_bits = keywords
            .iter()
            .filter_map(|keyword| Tag::new(keyword).ok())
            .fold(0, |bits, tag| bits | tag_bit(tag.as_str()));
        // Each shard's best k, as hits built under its lock (a reference count per page):
        // the best k of them all are the result.
        let mut hits: Vec<(PageHit, &Namespace)> = Vec::new();
        let mut terms: Option<std::borrow::Cow<'_, [String]>> = None;
        for (namespace, shard) in &shards {
            let shard = read(shard);
            let terms: &[String] = terms.get_or_insert_with(|| query.analysed_terms());
            if terms.is_empty() {
                return Ok(Vec::new());
            }
            // The largest boost a page of this shard can get: no keyword names a tag any
            // page carries, no tag can match (and none is compared).
            let rules = rules.with_tags_carried(|tag: &Tag| shard.tag_counts.contains_key(tag));
            let max_boost = PageMatchSignals {
                title_prefix: true,
                tag_exact: rules.names_a_tag(|_| true),
                summary_contains: true,
            }
            .boost();
            let slot_entry = |slot: u32| shard.slots.get(slot as usize).and_then(Option::as_ref);
            // The same pruned BM25F walk as a memory search, with bounds scaled by the largest
            // boost: the match rules' boost is worked out only for pages that can make the cut.
            // Every slot the index walks holds a page (a freed slot has no postings), so a
            // query without a tag filter accepts a page without reading its entry.
            let local = shard.index.top_k_weighted(
                terms,
                query.top_k,
                max_boost,
                |slot| {
                    query.tags.is_empty()
                        || slot_entry(slot).is_some_and(|entry| {
                            query.tags.iter().all(|tag| entry.tags.contains(tag))
                        })
                },
                |slot, score, needed| {
                    let bits = shard.bits.get(slot as usize).copied().unwrap_or_default();
                    let tag_may_match = bits.tags & keyword_tag_bits != 0;
                    // Turned away on its bits when even its largest boost falls short.
                    if score * rules.max_boost(&bits.rules, tag_may_match) < needed {
                        return None;
                    }
                    match slot_entry(slot) {
                        Some(entry) => {
                            let tags: &[Tag] = if tag_may_match { &entry.tags } else { &[] };
                            rules.weigh(&entry.rules, tags, score, needed)
                        }
                        None => Some(score),
                    }
                },
                |slot| slot_entry(slot).map(|entry| entry.page.id.as_str()),
            );
            for (score, slot) in local {
                let Some(entry) = slot_entry(slot) else {
                    continue;
                };
                hits.push((
                    PageHit {
                        // The rules as the search applied them, from the text kept for them.
                        signals: rules.signals(&entry.rules, &entry.tags),
                        referenced_by: entry.referenced_by,
                        page: Arc::clone(&entry.page),
                        score,
                    },
                    namespace,
                ));
            }
        }
        // Highest score first, then namespace and id, as each shard ranked its own.
        hits.sort_by(|(a, a_ns), (b, b_ns)| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a_ns.cmp(b_ns))
                .then_with(|| a.page.id.cmp(&b.page.id))
        });
        hits.truncate(query.top_k);
        Ok(hits.into_iter().map(|(hit, _)| hit).collect())
    }

    async fn get_index(&self, scope: &Scope) -> Result<Vec<PageIndexEntry>> {
        let mut out = Vec::new();
        for (_, shard) in self.registry.shards(scope) {
            let shard = read(&shard);
            for (_, id) in &shard.toc {
                if let Some(entry) = shard.entry(id) {
                    out.push(entry.page.index_entry(entry.referenced_by));
                }
            }
        }
        Ok(out)
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut removed = 0;
        for (_, shard) in self.registry.shards(scope) {
            let mut shard = write(&shard);
            removed += shard.pages.len();
            *shard = Shard::default();
        }
        Ok(removed)
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        Ok(self
            .registry
            .shards(scope)
            .into_iter()
            .filter(|(_, shard)| !read(shard).pages.is_empty())
            .map(|(namespace, _)| namespace)
            .collect())
    }

    async fn referrers(&self, namespace: &Namespace, id: &str) -> Result<Vec<String>> {
        self.referrers_at_most(namespace, id, usize::MAX).await
    }

    /// The smallest `limit` ids selected before any is copied: a linear pass over the
    /// citing pages, and a sort of the page kept.
    async fn referrers_at_most(
        &self,
        namespace: &Namespace,
        id: &str,
        limit: usize,
    ) -> Result<Vec<String>> {
        let Some(shard) = self.registry.get(namespace) else {
            return Ok(Vec::new());
        };
        let shard = read(&shard);
        let Some(set) = shard.referrers.get(id) else {
            return Ok(Vec::new());
        };
        let mut ids: Vec<&String> = set.iter().collect();
        if ids.len() > limit {
            if limit == 0 {
                return Ok(Vec::new());
            }
            ids.select_nth_unstable(limit - 1);
            ids.truncate(limit);
        }
        ids.sort_unstable();
        Ok(ids.into_iter().cloned().collect())
    }

    async fn reference_count(&self, namespace: &Namespace, id: &str) -> Result<usize> {
        Ok(self
            .registry
            .get(namespace)
            .map_or(0, |shard| read(&shard).referenced_by(id)))
    }

    /// Applies the batch namespace by namespace, each under its lock: a read in another
    /// namespace may see one namespace's accesses before another's.
    async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
        let mut tallies = AccessEvent::tally(events)?;
        tallies.sort_by(|a, b| a.namespace.cmp(b.namespace));
        for group in tallies.chunk_by(|a, b| a.namespace == b.namespace) {
            let Some(shard) = self.registry.get(group[0].namespace) else {
                continue;
            };
            let mut shard = write(&shard);
            for tally in group {
                if let Some(entry) = shard.entry_mut(tally.id) {
                    let page = Arc::make_mut(&mut entry.page);
                    tally.apply(&mut page.access_count, &mut page.last_accessed);
                }
            }
        }
        Ok(())
    }

    async fn list_pages(&self, scope: &Scope) -> Result<Vec<KnowledgePage>> {
        let mut out = Vec::new();
        for (_, shard) in self.registry.shards(scope) {
            let shard = read(&shard);
            out.extend(
                shard
                    .toc
                    .iter()
                    .filter_map(|(_, id)| shard.entry(id))
                    .map(|entry| KnowledgePage::clone(&entry.page)),
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }

        /// A word of a skewed vocabulary: `w0` most often; `w1` starts `w10` to `w19`.
        fn word(&mut self) -> String {
            let a = self.below(60);
            format!("w{}", a.min(self.below(60)))
        }

        fn text(&mut self, words: usize) -> String {
            (0..words)
                .map(|_| self.word())
                .collect::<Vec<_>>()
                .join(" ")
        }
    }

    /// The count of referrers kept in each page's slot (what search hits, the index and
    /// `reference_count` report) equals the count made from scratch over the pages, through
    /// adds, updates that change references, deletes and re-adds, with references to
    /// missing pages, to the page itself, and repeated.
    #[tokio::test]
    async fn kept_reference_counts_equal_the_counts_made_from_scratch() {
        let store = InMemoryKnowledgeStore::new();
        let ns = Namespace::parse("wiki").unwrap();
        let mut rng = Rng(0xC0FFEE);
        let id = |i: usize| format!("p{i}");
        for step in 0..600 {
            let i = rng.below(40);
            let references: Vec<String> = (0..rng.below(5)).map(|_| id(rng.below(50))).collect();
            let page = KnowledgePage::new(ns.clone(), id(i), format!("w{} page", i))
                .unwrap()
                .with_content("w1 w2")
                .with_references(references)
                .unwrap();
            match rng.below(3) {
                0 => {
                    store.delete_page(&ns, &id(i)).await.unwrap();
                }
                1 if store.get_page(&ns, &id(i)).await.unwrap().is_some() => {
                    store.update_page(page).await.unwrap();
                }
                _ => {
                    let _ = store.add_page(page).await;
                }
            }
            let pages = store.list_pages(&ns.exact()).await.unwrap();
            let counted = |target: &str| {
                pages
                    .iter()
                    .filter(|page| page.id != target && page.references.iter().any(|r| r == target))
                    .count()
            };
            for page in &pages {
                let kept = store.reference_count(&ns, &page.id).await.unwrap();
                assert_eq!(kept, counted(&page.id), "step {step}: {}", page.id);
            }
            for entry in store.get_index(&ns.exact()).await.unwrap() {
                assert_eq!(entry.referenced_by, counted(&entry.id), "step {step}");
            }
            let query = PageQuery::new(ns.exact(), "page", 50);
            for hit in store.search(&query).await.unwrap() {
                assert_eq!(hit.referenced_by, counted(&hit.page.id), "step {step}");
            }
            // A page not stored counts no reference (as on every backend); its referrers
            // are told by `referrers`.
            assert_eq!(store.reference_count(&ns, "p45").await.unwrap(), 0);
            let mut citing: Vec<String> = pages
                .iter()
                .filter(|page| page.id != "p45" && page.references.iter().any(|r| r == "p45"))
                .map(|page| page.id.clone())
                .collect();
            citing.sort();
            assert_eq!(store.referrers(&ns, "p45").await.unwrap(), citing);
            for limit in [0, 1, 3, citing.len(), citing.len() + 1] {
                let first = &citing[..limit.min(citing.len())];
                let read = store.referrers_at_most(&ns, "p45", limit).await.unwrap();
                assert_eq!(read, first, "step {step}, limit {limit}");
            }
        }
    }

    /// Search against every match scored and boosted, sorted by score then id, with and
    /// without a tag filter, for k from 1 to 40, after slots were freed and reused; the hits'
    /// signals are the match rules computed from the page itself.
    #[tokio::test]
    async fn search_equals_every_match_scored_and_boosted() {
        let store = InMemoryKnowledgeStore::new();
        let ns = Namespace::parse("wiki").unwrap();
        let mut rng = Rng(0x5EED);
        for i in 0..1500 {
            let title_words = 1 + rng.below(4);
            let tags: Vec<String> = (0..1 + rng.below(2))
                .map(|_| format!("w{}", rng.below(25)))
                .collect();
            let page = KnowledgePage::new(ns.clone(), format!("p{i:04}"), rng.text(title_words))
                .unwrap()
                .with_summary({
                    let words = 3 + rng.below(8);
                    rng.text(words)
                })
                .with_content({
                    let words = 10 + rng.below(30);
                    rng.text(words)
                })
                .with_tags(tags)
                .unwrap();
            store.add_page(page).await.unwrap();
        }
        // Slots reused: some pages deleted, others added in their place.
        for i in (0..1500).step_by(7) {
            assert!(store.delete_page(&ns, &format!("p{i:04}")).await.unwrap());
        }
        for i in 0..100 {
            let page = KnowledgePage::new(ns.clone(), format!("q{i:03}"), rng.text(2))
                .unwrap()
                .with_content(rng.text(12))
                .with_tags([format!("w{}", rng.below(25))])
                .unwrap();
            store.add_page(page).await.unwrap();
        }
        for round in 0..120 {
            let words = 1 + rng.below(3);
            let text = rng.text(words);
            let k = [1, 3, 10, 40][round % 4];
            let mut query = PageQuery::new(ns.exact(), text.as_str(), k);
            if round % 5 == 0 {
                query.tags = vec![Tag::new(&format!("w{}", rng.below(25))).unwrap()];
            }
            let expected: Vec<(String, f32)> = {
                let shard = store.registry.get(&ns).unwrap();
                let shard = read(&shard);
                let keywords = query.rule_keywords();
                let rules = PageRuleKeywords::new(&keywords);
                let terms = query.analysed_terms().into_owned();
                let mut all: Vec<(f32, String)> = Vec::new();
                shard.index.score_terms(&terms, |slot, score| {
                    let entry = shard.slots[slot as usize].as_ref().unwrap();
                    if query.tags.iter().all(|tag| entry.tags.contains(tag)) {
                        let boost = rules.signals(&entry.rules, &entry.tags).boost();
                        all.push((score * boost, entry.page.id.clone()));
                    }
                });
                all.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                all.into_iter()
                    .take(k)
                    .map(|(score, id)| (id, score))
                    .collect()
            };
            let got: Vec<(String, f32)> = store
                .search(&query)
                .await
                .unwrap()
                .into_iter()
                .map(|hit| {
                    let keywords = query.rule_keywords();
                    let page = &hit.page;
                    let signals = PageMatchSignals::compute(
                        &page.title,
                        &page.summary,
                        &page.tags,
                        &keywords,
                    );
                    assert_eq!(hit.signals, signals, "round {round}: {}", page.id);
                    (hit.page.id.clone(), hit.score)
                })
                .collect();
            assert_eq!(got, expected, "round {round}: {text:?}, k {k}");
        }
    }
}
