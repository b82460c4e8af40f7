//! Facts that change, on the write path: duplicates merged, fact keys superseding, and
//! conflicts detected without an LLM.
//!
//! [`Memory::remember_with`](crate::Memory::remember_with) reconciles each new memory with
//! the memories of its namespace that resemble it most: the store's own full-text index is
//! asked for the best [`FactsConfig::candidates`] matches of the four terms of the new text
//! its namespace holds least often, among its eight longest (a BM25 self-match, never a
//! scan of the namespace), and those few are compared with the new one:
//!
//! 1. **Duplicates**: the same kind and a [`similarity`] of their analysed terms at least
//!    [`FactsConfig::duplicate_similarity`] (1.0 means the same terms), their contexts too
//!    when both have one. By default the new memory is merged into the stored one
//!    ([`DuplicatePolicy`]).
//! 2. **Fact keys**: a memory with the [fact key](memory_core::MemoryItem::fact_key) of a
//!    current memory supersedes it, unless its source is less credible.
//! 3. **Conflicts**: a [`ConflictDetector`] flags candidates that state something else about
//!    the same thing; [`ConflictPolicy`] decides what a flag does.
//!
//! Conversation messages ([`MemoryKind::ShortTerm`](memory_core::MemoryKind::ShortTerm)) are
//! events, not statements: they are stored as they come.

use std::cell::RefCell;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use foldhash::{HashSet, HashSetExt};
use memory_core::text::Analyzer;
use memory_core::{MemoryError, MemoryItem, Result};
use serde::{Deserialize, Serialize};

/// What `remember` does with text its namespace already holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuplicatePolicy {
    /// Store it again as a separate memory.
    KeepBoth,
    /// Keep one memory and count the repetition as a reinforcement: access count plus one,
    /// the larger importance and credibility, the tags of both, the later time as its last
    /// update.
    #[default]
    Merge,
    /// Refuse the write with [`MemoryError::AlreadyExists`] naming the stored memory.
    Reject,
}

/// What a detected conflict does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConflictPolicy {
    /// Link both memories ([`conflicts_with`](MemoryItem::conflicts_with)) and report it;
    /// recall ranks the older below the newer.
    #[default]
    Flag,
    /// The newer memory supersedes the older, as a fact key would (a less credible source
    /// never supersedes a more credible one: that pair is flagged instead).
    SupersedeOlder,
    /// Refuse the write with [`MemoryError::Conflict`].
    Reject,
}

/// How `remember` reconciles a new memory with the stored ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FactsConfig {
    /// What a duplicate does.
    pub duplicates: DuplicatePolicy,
    /// The [`similarity`] from which two memories are duplicates, in `(0, 1]`. Default 0.9:
    /// restatements with a changed stop word or word order merge, a changed value does not
    /// (one changed word in a ten-word statement is 9/11 ≈ 0.82).
    pub duplicate_similarity: f32,
    /// What a detected conflict does.
    pub conflicts: ConflictPolicy,
    /// How many of the most similar stored memories are compared with a new one (the
    /// search's `top_k`); 0 turns duplicate and conflict detection off. Default 4: a
    /// duplicate or a rival holds the new text's rarest terms and ranks at the top; 8 found
    /// no more conflicts on the generated changing-facts set and compared twice the texts
    /// per write.
    pub candidates: usize,
}

impl Default for FactsConfig {
    fn default() -> Self {
        Self {
            duplicates: DuplicatePolicy::Merge,
            duplicate_similarity: 0.9,
            conflicts: ConflictPolicy::Flag,
            candidates: 4,
        }
    }
}

impl FactsConfig {
    /// No reconciliation: every memory is stored as given (fact keys still supersede).
    pub fn off() -> Self {
        Self {
            duplicates: DuplicatePolicy::KeepBoth,
            candidates: 0,
            ..Self::default()
        }
    }

    /// Checks the fields.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `duplicate_similarity` outside `(0, 1]` or
    /// `candidates` over 100.
    pub fn validate(&self) -> Result<()> {
        if !(self.duplicate_similarity > 0.0 && self.duplicate_similarity <= 1.0) {
            return Err(MemoryError::invalid(
                "duplicate_similarity",
                "must be in (0, 1]",
            ));
        }
        if self.candidates > 100 {
            return Err(MemoryError::invalid("candidates", "at most 100"));
        }
        Ok(())
    }
}

/// What `remember` did with a new memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Stored as a new memory.
    Added,
    /// A duplicate of a stored memory, merged into it: nothing new was stored.
    Merged {
        /// The memory it was merged into.
        into: String,
    },
    /// Stored, and it replaced these memories (now ended, kept as history).
    Superseded {
        /// The memories it superseded.
        old: Vec<String>,
    },
    /// Stored as history: a version of the same fact that starts later was stored already,
    /// so the new one is superseded by it at once (a replay of older statements).
    Outdated {
        /// The later version that supersedes it.
        by: String,
    },
}

/// A stored memory that a new one contradicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conflict {
    /// The stored memory's id.
    pub id: String,
    /// Why the detector flagged it.
    pub reason: String,
}

/// The result of [`Memory::remember_with`](crate::Memory::remember_with).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Remembered {
    /// The id the text lives under: the new memory's, or the one it was merged into.
    pub id: String,
    /// What happened.
    pub outcome: Outcome,
    /// The stored memories found to contradict it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
}

/// Decides which stored memories a new one contradicts. The default is
/// [`RuleConflictDetector`]; an LLM judge can implement it too.
#[async_trait]
pub trait ConflictDetector: Send + Sync + Debug {
    /// The candidates (the stored memories most similar to `new`, best first, duplicates
    /// and memories of the same fact key already set apart) that `new` contradicts.
    ///
    /// # Errors
    /// Whatever the detector's backend reports; the write fails with it and stores nothing.
    async fn detect(
        &self,
        new: &MemoryItem,
        candidates: &[Arc<MemoryItem>],
    ) -> Result<Vec<Conflict>>;
}

/// The similarity of two texts: the Jaccard index of their sets of analysed terms (stems,
/// stop words dropped), in `[0, 1]`; 1 for the same terms, whatever their order. Two texts
/// without a searchable term are similar (1) only when both are empty of terms.
pub fn similarity(a: &str, b: &str) -> f32 {
    let mut vocabulary = Vocabulary;
    jaccard(&vocabulary.terms(a), &vocabulary.terms(b))
}

/// Words whose keys each thread remembers before its cache is emptied.
const KEY_CACHE_WORDS: usize = 1 << 15;

/// A word's comparison key (see [`key_of`]) as the comparisons hold it: a 64-bit hash of the
/// key's text. Two different keys share a hash with a chance of about one in 2^64 per pair,
/// and the hasher's seed is drawn once per process, so no text can be written to make two
/// words collide; sets of hashes are compared without reading a string or touching a
/// shared count, which is most of what comparing a new memory with its candidates costs.
type Key = u64;

/// The process's hasher of keys and words: one random seed per process, so every thread
/// (and a write resumed on another thread) hashes alike.
fn hash_of(text: &str) -> u64 {
    static STATE: std::sync::OnceLock<foldhash::quality::RandomState> = std::sync::OnceLock::new();
    std::hash::BuildHasher::hash_one(STATE.get_or_init(Default::default), text)
}

/// The [`Key`] of a key's text. Its lowest bit is set for a negation (one of
/// [`NEGATIONS`]), so a reader of keys counts negations without comparing strings.
fn key_hash(key: &str) -> Key {
    (hash_of(key) & !1) | Key::from(NEGATIONS.contains(&key))
}

/// A cached key: its hash, and its text (for the new memory's search terms).
type CachedKey = Option<(Key, Box<str>)>;

/// A [`Hasher`](std::hash::Hasher) for keys that are hashes already.
#[derive(Default)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// Slots of [`KeyCache::recent`].
const RECENT_WORDS: usize = 512;

/// The cache of keys, by the hash of the word as written ([`hash_of`]): a lookup reads the
/// table and not a stored copy of the word, which is where the time of a lookup in a large
/// cache went. Two words of a thread's cache share a hash with a chance of about one in
/// 2^49 (2^15 words against 2^64 hashes): then one is read with the other's key.
#[derive(Default)]
struct KeyCache {
    words: std::collections::HashMap<u64, CachedKey, std::hash::BuildHasherDefault<Prehashed>>,
    /// The keys of the words read last, by their hash, in slots of the hash's low bits (8
    /// KiB, so they stay in the processor's nearest cache): a write reads its own text and
    /// each candidate's once to find duplicates and again to find conflicts.
    recent: Vec<(u64, Option<Key>)>,
}

thread_local! {
    /// The keys of words as written, across writes: a new memory is compared with a few
    /// candidates, and a namespace's statements repeat their words, so most words are
    /// looked up instead of analysed.
    static KEYS: RefCell<KeyCache> = RefCell::new(KeyCache::default());
}

/// The analysed keys of words (see [`key_of`]), from a per-thread cache.
#[derive(Default)]
pub(crate) struct Vocabulary;

/// The per-thread cache of keys, borrowed for the reading of one text ([`Vocabulary::with`]);
/// without it (the cache is borrowed already) every word is analysed.
struct Keys<'a> {
    cache: Option<&'a mut KeyCache>,
}

impl Keys<'_> {
    /// The key of a word as written (see [`key_of`]), hashed.
    fn key(&mut self, raw: &str) -> Option<Key> {
        let Some(cache) = self.cache.as_deref_mut() else {
            return key_of(raw).map(|key| key_hash(&key));
        };
        let word = hash_of(raw);
        if let Some((tag, key)) = cache.recent.get(word as usize % RECENT_WORDS)
            && *tag == word
            && word != 0
        {
            return *key;
        }
        look_up(cache, raw, word, |_, _| ())
    }

    /// [`key`](Self::key), also handing the key's hash and text to `text`.
    fn key_with_text(&mut self, raw: &str, text: impl FnOnce(Key, &str)) -> Option<Key> {
        let Some(cache) = self.cache.as_deref_mut() else {
            let key = key_of(raw)?;
            let hash = key_hash(&key);
            text(hash, &key);
            return Some(hash);
        };
        look_up(cache, raw, hash_of(raw), text)
    }
}

/// The key of `raw`, whose hash is `word`, from `cache` (analysed and added when missing),
/// handing its hash and text to `text`; the table of recent words is updated.
fn look_up(
    cache: &mut KeyCache,
    raw: &str,
    word: u64,
    text: impl FnOnce(Key, &str),
) -> Option<Key> {
    let cached = match cache.words.get(&word) {
        Some(cached) => cached,
        None => {
            let cached: CachedKey = key_of(raw).map(|key| (key_hash(&key), key.into_boxed_str()));
            if cache.words.len() >= KEY_CACHE_WORDS {
                cache.words.clear();
            }
            cache.words.entry(word).or_insert(cached)
        }
    };
    let hash = cached.as_ref().map(|(hash, key)| {
        text(*hash, key);
        *hash
    });
    if cache.recent.is_empty() {
        cache.recent = vec![(0, None); RECENT_WORDS];
    }
    cache.recent[word as usize % RECENT_WORDS] = (word, hash);
    hash
}

/// Calls `visit` with each word of `text` as written (a run of letters, digits and
/// apostrophes), until it returns `false`.
fn for_each_raw_word<'t>(text: &'t str, mut visit: impl FnMut(&'t str) -> bool) {
    for_each_gap_and_word(text, |_, word| visit(word));
}

/// Calls `visit` with each word of `text` as written and what comes between it and the word
/// before (or the start of the text), until it returns `false`. ASCII text is read byte by
/// byte.
fn for_each_gap_and_word<'t>(text: &'t str, mut visit: impl FnMut(&'t str, &'t str) -> bool) {
    if text.is_ascii() {
        let bytes = text.as_bytes();
        let is_word = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'\'';
        let mut at = 0;
        while at < bytes.len() {
            let gap = at;
            while at < bytes.len() && !is_word(bytes[at]) {
                at += 1;
            }
            let begin = at;
            while at < bytes.len() && is_word(bytes[at]) {
                at += 1;
            }
            if begin < at && !visit(&text[gap..begin], &text[begin..at]) {
                return;
            }
        }
        return;
    }
    let mut rest = text;
    while let Some(begin) = rest.find(is_word_char) {
        let gap = &rest[..begin];
        rest = &rest[begin..];
        let end = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        if !visit(gap, word) {
            return;
        }
    }
}

/// Whether `text` holds a character written without spaces between words.
fn has_cjk(text: &str) -> bool {
    !text.is_ascii() && text.chars().any(memory_core::text::is_cjk)
}

/// The distinct keys of a text, and how many of its words are negations.
pub(crate) struct Terms {
    keys: HashSet<Key>,
    negations: usize,
}

impl Vocabulary {
    /// Runs `read` with the cache of keys borrowed once (not once per word).
    fn with<R>(&mut self, read: impl FnOnce(&mut Keys<'_>) -> R) -> R {
        KEYS.with(|cell| match cell.try_borrow_mut() {
            Ok(mut cache) => read(&mut Keys {
                cache: Some(&mut cache),
            }),
            Err(_) => read(&mut Keys { cache: None }),
        })
    }

    /// The distinct keys of `text`. Text with CJK characters is read by the analyzer whole
    /// (it splits such runs into bigrams, which words of a statement are not).
    fn terms(&mut self, text: &str) -> HashSet<Key> {
        self.terms_with_text(text, |_, _| ()).keys
    }

    /// [`terms`](Self::terms) and the count of negations, handing each distinct key's hash
    /// and text to `each` once.
    fn terms_with_text(&mut self, text: &str, mut each: impl FnMut(Key, &str)) -> Terms {
        let mut keys = HashSet::with_capacity(text.len() / 6);
        let mut negations = 0;
        if has_cjk(text) {
            Analyzer::default().for_each_term(text, |term| {
                let hash = key_hash(term);
                if keys.insert(hash) {
                    each(hash, term);
                }
            });
            for_each_raw_word(text, |word| {
                negations += usize::from(is_negation(word));
                true
            });
            return Terms { keys, negations };
        }
        self.with(|cache| {
            for_each_raw_word(text, |raw| {
                let key = cache.key_with_text(raw, |hash, key| {
                    if keys.insert(hash) {
                        each(hash, key);
                    }
                });
                negations += usize::from(key.is_some_and(is_negation_key));
                true
            });
        });
        Terms { keys, negations }
    }

    /// Whether `text`'s terms have a Jaccard index of at least `threshold` with `terms`;
    /// stops reading as soon as too many of its terms are missing from `terms`. `shared` is
    /// scratch space, emptied first.
    fn at_least(
        &mut self,
        terms: &HashSet<Key>,
        text: &str,
        threshold: f32,
        shared: &mut HashSet<Key>,
    ) -> bool {
        if has_cjk(text) {
            return jaccard(terms, &self.terms(text)) >= threshold;
        }
        // |U| - |I| <= (1 - t) |U| and |U| >= |terms|, so more than this many terms of
        // `text` outside `terms` already fails, whatever follows.
        let allowed = ((1.0 - threshold) / threshold * terms.len() as f32).floor() as usize;
        shared.clear();
        let mut extra: Vec<Key> = Vec::with_capacity(allowed + 1);
        let mut within = true;
        self.with(|keys| {
            for_each_raw_word(text, |raw| {
                let Some(key) = keys.key(raw) else {
                    return true;
                };
                if terms.contains(&key) {
                    shared.insert(key);
                } else if !extra.contains(&key) {
                    extra.push(key);
                    within = extra.len() <= allowed;
                }
                within
            });
        });
        let union = terms.len() + extra.len();
        within && (union == 0 || shared.len() as f32 >= threshold * union as f32)
    }
}

fn jaccard<T: Eq + std::hash::Hash>(a: &HashSet<T>, b: &HashSet<T>) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = a.intersection(b).count();
    shared as f32 / (a.len() + b.len() - shared) as f32
}

/// Whether `word` (as written) is one of [`NEGATIONS`], whatever its case and apostrophe.
fn is_negation(word: &str) -> bool {
    word.len() <= 8
        && NEGATIONS.iter().any(|negation| {
            negation.len() == word.len()
                && negation
                    .chars()
                    .zip(word.chars())
                    .all(|(n, w)| n == w.to_ascii_lowercase() || (n == '\'' && w == '’'))
        })
}

/// Whether `key` is the key of a negation (see [`key_hash`]).
fn is_negation_key(key: Key) -> bool {
    key & 1 == 1
}

/// A new memory prepared once for comparison with every candidate: its terms, its
/// context's terms and its negations, with the vocabulary of the write.
pub(crate) struct Prepared {
    vocabulary: Vocabulary,
    content: HashSet<Key>,
    context: Option<HashSet<Key>>,
    negations: usize,
    /// Scratch space for the comparisons.
    shared: HashSet<Key>,
    /// The terms to search its repeats and rivals with (see [`Prepared::of`]).
    search: Vec<String>,
}

impl Prepared {
    /// `item` prepared, with the terms to search its repeats and rivals with: its
    /// `search_terms` longest distinct terms (longer words are rarer, so the rarest are among
    /// them), longest first, then in alphabetical order (a set's order would vary from run
    /// to run, and a search restricted to the rarest terms breaks ties by position). They
    /// are the keys the comparison reads, which are the analyzer's terms except for negations
    /// (stop words to the index, so no memory holds them and a rarest-terms search passes
    /// them over).
    pub(crate) fn of(item: &MemoryItem, search_terms: usize) -> Self {
        let mut vocabulary = Vocabulary;
        let context = item.context();
        // The distinct keys' text in one buffer; only the chosen ones become strings.
        let mut buffer = String::with_capacity(item.content.len());
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(item.content.len() / 6 + 1);
        let Terms {
            keys: content,
            negations,
        } = vocabulary.terms_with_text(&item.content, |_, key| {
            spans.push((buffer.len(), buffer.len() + key.len()));
            buffer.push_str(key);
        });
        let text = |(begin, end): &(usize, usize)| &buffer[*begin..*end];
        let order = |a: &(usize, usize), b: &(usize, usize)| {
            (b.1 - b.0)
                .cmp(&(a.1 - a.0))
                .then_with(|| text(a).cmp(text(b)))
        };
        if spans.len() > search_terms {
            if search_terms == 0 {
                spans.clear();
            } else {
                spans.select_nth_unstable_by(search_terms - 1, order);
                spans.truncate(search_terms);
            }
        }
        spans.sort_unstable_by(order);
        let search = spans.iter().map(|span| text(span).to_owned()).collect();
        Self {
            content,
            context: (!context.is_empty()).then(|| vocabulary.terms(context)),
            negations,
            shared: HashSet::new(),
            vocabulary,
            search,
        }
    }

    /// Takes the terms to search the new memory's repeats and rivals with (see
    /// [`Prepared::of`]).
    pub(crate) fn take_search_terms(&mut self) -> Vec<String> {
        std::mem::take(&mut self.search)
    }

    /// Whether `new` (prepared as `self`) duplicates `old` under `config`: the same kind,
    /// the same negations, similar content, and similar contexts when both have one (a
    /// message is a different event in another context).
    pub(crate) fn duplicates(
        &mut self,
        new: &MemoryItem,
        old: &MemoryItem,
        config: &FactsConfig,
    ) -> bool {
        let threshold = config.duplicate_similarity;
        new.kind == old.kind
            && self
                .vocabulary
                .at_least(&self.content, &old.content, threshold, &mut self.shared)
            && self
                .vocabulary
                .terms_with_text(&old.content, |_, _| ())
                .negations
                == self.negations
            && match &self.context {
                Some(context) if !old.context().is_empty() => {
                    self.vocabulary
                        .at_least(context, old.context(), threshold, &mut self.shared)
                }
                _ => true,
            }
    }
}

/// The deterministic conflict detector: two statements conflict when they say nearly the
/// same words and differ only in a value: a number or a date, a negation, or one named
/// value (a capitalised word that is not the first of its sentence).
///
/// Words are compared as the shared analyzer stems them, without its stop words (negations
/// are kept); a transcript line's date note and speaker label are not part of the
/// statement. A pair is considered only when both texts have from
/// [`min_words`](Self::min_words) to [`max_words`](Self::max_words) words (long passages
/// restate and hedge too much for word differences to mean a contradiction), at most [`max_changed`](Self::max_changed) words
/// differ on each side, and they share at least as many words as either side changed.
/// Then they conflict when one negates what the other states (nothing else changed but one
/// word), or when one value replaces one value (a name of two words changing is another
/// subject) with at most one other word changed, unless a value both share comes after the
/// changed one in both (then the change is whom the statement is about).
#[derive(Clone, Debug, PartialEq)]
pub struct RuleConflictDetector {
    /// Shortest text compared, in words (stop words included). Default 3: greetings and
    /// exclamations ("Bye Joanna!") state no fact.
    pub min_words: usize,
    /// Longest text compared, in words. Default 40.
    pub max_words: usize,
    /// Most differing words on each side. Default 3.
    pub max_changed: usize,
}

impl Default for RuleConflictDetector {
    fn default() -> Self {
        Self {
            min_words: 3,
            max_words: 40,
            max_changed: 3,
        }
    }
}

/// Words that turn a statement into its opposite.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't",
    "won't", "can't", "cannot", "nobody", "nothing", "neither", "nor",
];

/// Month names in order, then day names (the enricher reads the first twelve as months).
pub(crate) const MONTHS_AND_DAYS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "yesterday",
    "today",
    "tomorrow",
];

/// One word of a statement: its comparison key (the analyzer's stem, or the negation
/// itself; `None` for a stop word), whether it names a value, and the word as written.
#[derive(Debug)]
struct Word<'t> {
    key: Option<Key>,
    value: bool,
    raw: &'t str,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '\'' || c == '’'
}

/// `text` without what introduces a transcript line rather than states something: a
/// leading bracketed or parenthesised note (`[3 May 2023]`) and a speaker label (`Ann:`,
/// `Ann Lee:`, up to three words before a colon).
fn statement(text: &str) -> &str {
    let mut rest = text.trim_start();
    for (open, close) in [('[', ']'), ('(', ')')] {
        if rest.starts_with(open)
            && let Some(end) = rest.find(close)
        {
            rest = rest[end + close.len_utf8()..].trim_start();
        }
    }
    // A label ends within 48 bytes: the colon is looked for there only.
    let head = &rest.as_bytes()[..rest.len().min(49)];
    if let Some(colon) = head.iter().position(|&byte| byte == b':')
        && rest[..colon].split_whitespace().count() <= 3
        && rest[..colon]
            .chars()
            .all(|c| is_word_char(c) || c.is_whitespace() || c == '.')
        && !rest[..colon].chars().any(|c| c.is_ascii_digit())
    {
        rest = rest[colon + 1..].trim_start();
    }
    rest
}

/// The comparison key of a word as written: the negation itself, else the analyzer's
/// stem (`None` for a stop word).
fn key_of(raw: &str) -> Option<String> {
    if is_negation(raw) {
        return Some(raw.to_lowercase().replace('’', "'"));
    }
    let mut key = None;
    Analyzer::default().for_each_term(raw, |term| {
        if key.is_none() {
            key = Some(term.to_owned());
        }
    });
    key
}

/// Calls `visit` with each word of `text`'s statement (see [`statement`]; runs of letters,
/// digits and apostrophes) and whether it names a value (a number, a month or day, or a
/// capitalised word that does not start a sentence), until `visit` returns `false`.
fn for_each_word<'t>(text: &'t str, mut visit: impl FnMut(&'t str, bool) -> bool) {
    let mut sentence_start = true;
    for_each_gap_and_word(statement(text), |gap, raw| {
        if gap.contains(['.', '!', '?', '\n']) {
            sentence_start = true;
        }
        let numeric = raw.bytes().any(|byte| byte.is_ascii_digit());
        let capitalised = raw.chars().next().is_some_and(char::is_uppercase);
        let value = numeric
            || MONTHS_AND_DAYS
                .iter()
                .any(|name| raw.eq_ignore_ascii_case(name))
            || (capitalised && !sentence_start && raw != "I");
        sentence_start = false;
        visit(raw, value)
    });
}

/// How many words `text`'s statement has (as [`for_each_word`] reads them), counting no
/// further than `limit + 1`: enough to know it is too long, without a key looked up.
fn word_count(text: &str, limit: usize) -> usize {
    let mut count = 0;
    for_each_raw_word(statement(text), |_| {
        count += 1;
        count <= limit
    });
    count
}

/// The words of `text`'s statement with their keys, at most `limit + 1` of them (enough to
/// know the text is too long).
fn words<'t>(text: &'t str, limit: usize, vocabulary: &mut Vocabulary) -> Vec<Word<'t>> {
    let mut out = Vec::new();
    vocabulary.with(|keys| {
        for_each_word(text, |raw, value| {
            out.push(Word {
                key: keys.key(raw),
                value,
                raw,
            });
            out.len() <= limit
        });
    });
    out
}

impl RuleConflictDetector {
    /// Why `new` contradicts `old`, if it does.
    pub fn explain(&self, new: &str, old: &str) -> Option<String> {
        let mut vocabulary = Vocabulary;
        let new_words = words(new, self.max_words, &mut vocabulary);
        if !(self.min_words..=self.max_words).contains(&new_words.len()) {
            return None;
        }
        self.explain_words(&new_words, &keys_of(&new_words), old, &mut vocabulary)
    }

    /// [`explain`](Self::explain) with the new statement's words and their keys read once.
    fn explain_words(
        &self,
        new_words: &[Word<'_>],
        a: &HashSet<Key>,
        old: &str,
        vocabulary: &mut Vocabulary,
    ) -> Option<String> {
        // Read the old statement, and stop as soon as too many words differ: most
        // candidates are not restatements.
        let mut old_words: Vec<Word> = Vec::with_capacity(16);
        let mut unmatched: Vec<Key> = Vec::with_capacity(self.max_changed + 1);
        let mut too_different = false;
        vocabulary.with(|keys| {
            for_each_word(old, |raw, value| {
                let key = keys.key(raw);
                if let Some(key) = key
                    && !a.contains(&key)
                    && !unmatched.contains(&key)
                {
                    unmatched.push(key);
                }
                old_words.push(Word { key, value, raw });
                too_different =
                    unmatched.len() > self.max_changed || old_words.len() > self.max_words;
                !too_different
            });
        });
        if too_different || old_words.len() < self.min_words {
            return None;
        }
        let b = keys_of(&old_words);
        let shared = a.intersection(&b).count();
        let only_new: Vec<Key> = a.difference(&b).copied().collect();
        let only_old: Vec<Key> = b.difference(a).copied().collect();
        let changed = only_new.len().max(only_old.len());
        if changed == 0 || changed > self.max_changed || shared < changed {
            return None;
        }
        let negation = |list: &[Key]| list.iter().any(|key| is_negation_key(*key));
        if negation(&only_new) != negation(&only_old) && only_new.len() + only_old.len() <= 2 {
            return Some("one statement negates the other".to_owned());
        }
        // The first position of a value word with this key.
        let value_at = |list: &[Word<'_>], key: Key| {
            list.iter()
                .position(|word| word.value && word.key == Some(key))
        };
        let new_values: Vec<usize> = only_new
            .iter()
            .filter_map(|key| value_at(new_words, *key))
            .collect();
        let old_values: Vec<usize> = only_old
            .iter()
            .filter_map(|key| value_at(&old_words, *key))
            .collect();
        let plain = only_new.len() - new_values.len() + only_old.len() - old_values.len();
        // One value for another (a name of several words is several changes: another
        // subject, not another value), and at most one other word.
        let ([new_at], [old_at]) = (&new_values[..], &old_values[..]) else {
            return None;
        };
        if plain > 1 {
            return None;
        }
        // A named value both statements share after the changed one means the change is
        // whom the statement is about ("Hugo lives in Lisbon" / "Chloe lives in Lisbon").
        let about_another = a.intersection(&b).any(|key| {
            matches!(
                (value_at(new_words, *key), value_at(&old_words, *key)),
                (Some(n), Some(o)) if n > *new_at && o > *old_at
            )
        });
        if about_another {
            return None;
        }
        Some(format!(
            "the same statement with another value: {:?} became {:?}",
            old_words[*old_at].raw, new_words[*new_at].raw
        ))
    }
}

/// The distinct keys of `words`.
fn keys_of(words: &[Word<'_>]) -> HashSet<Key> {
    words.iter().filter_map(|word| word.key).collect()
}

#[async_trait]
impl ConflictDetector for RuleConflictDetector {
    async fn detect(
        &self,
        new: &MemoryItem,
        candidates: &[Arc<MemoryItem>],
    ) -> Result<Vec<Conflict>> {
        // A new statement of the right length only, counted before any word is looked up.
        if !(self.min_words..=self.max_words).contains(&word_count(&new.content, self.max_words)) {
            return Ok(Vec::new());
        }
        let mut vocabulary = Vocabulary;
        let new_words = words(&new.content, self.max_words, &mut vocabulary);
        let new_keys = keys_of(&new_words);
        // A candidate's length is checked as it is read: most stop at their first few
        // words, when too many differ.
        Ok(candidates
            .iter()
            .filter_map(|old| {
                self.explain_words(&new_words, &new_keys, &old.content, &mut vocabulary)
                    .map(|reason| Conflict {
                        id: old.id.clone(),
                        reason,
                    })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similarity_is_term_overlap() {
        assert_eq!(similarity("The user likes tea", "the user LIKES tea!"), 1.0);
        assert_eq!(similarity("likes tea", "tea, likes"), 1.0);
        assert!(similarity("the user likes green tea", "the user likes black coffee") < 0.5);
        assert_eq!(similarity("", "..."), 1.0);
        assert_eq!(similarity("tea", ""), 0.0);
    }

    #[test]
    fn ascii_and_unicode_text_split_into_the_same_words() {
        fn split(text: &str) -> Vec<(String, String)> {
            let mut out = Vec::new();
            for_each_gap_and_word(text, |gap, word| {
                out.push((gap.to_owned(), word.to_owned()));
                true
            });
            out
        }
        for text in [
            "The user lives in Berlin.",
            "  [3 May 2023] Ann: don't stop -- it's 9am!\nNext line",
            "",
            "...",
            "trailing word",
        ] {
            // A non-ASCII word at the end sends the text down the general path.
            let mut unicode = split(&format!("{text} é"));
            assert_eq!(unicode.pop().map(|(_, word)| word), Some("é".to_owned()));
            assert_eq!(split(text), unicode, "{text:?}");
        }
        let mut count = 0;
        for_each_raw_word("one two three four", |_| {
            count += 1;
            count < 2
        });
        assert_eq!(count, 2, "reading stops when the visitor says so");
        assert_eq!(word_count("Ann: one two three four five", 3), 4);
    }

    #[test]
    fn a_conflict_names_the_values_as_written() {
        let reason = RuleConflictDetector::default()
            .explain("The user lives in Berlin.", "The user lives in Paris.")
            .unwrap_or_default();
        assert!(reason.contains("\"Paris\" became \"Berlin\""), "{reason}");
    }

    #[test]
    fn keys_mark_negations_and_hash_alike_on_every_thread() {
        assert!(is_negation_key(key_hash("not")));
        assert!(is_negation_key(key_hash("don't")));
        assert!(!is_negation_key(key_hash("berlin")));
        let here = key_hash("berlin");
        let there = std::thread::spawn(|| key_hash("berlin"))
            .join()
            .unwrap_or_default();
        assert_eq!(here, there);
        let mut vocabulary = Vocabulary;
        let terms = vocabulary.terms_with_text("I do not eat meat, NOT ever.", |_, _| ());
        assert_eq!(terms.negations, 2);
    }

    #[test]
    fn values_numbers_dates_and_negations_conflict() {
        let detector = RuleConflictDetector::default();
        for (new, old) in [
            ("The user lives in Berlin.", "The user lives in Paris."),
            ("My flight leaves at 9am", "My flight leaves at 7am"),
            ("The meeting is on Friday", "The meeting is on Monday"),
            ("Alice does not eat meat", "Alice eats meat"),
            ("The team has 12 engineers", "The team has 9 engineers"),
            (
                "[8 May 2023] Ann: Alice moved to Berlin",
                "[1 May 2023] Ann: Alice moved to Paris",
            ),
        ] {
            assert!(
                detector.explain(new, old).is_some(),
                "{new:?} vs {old:?} should conflict"
            );
        }
    }

    #[test]
    fn different_topics_and_restatements_do_not_conflict() {
        let detector = RuleConflictDetector::default();
        for (new, old) in [
            ("The user lives in Berlin.", "The user lives in Berlin."),
            (
                "The user lives in Berlin",
                "The user loves Berlin techno clubs",
            ),
            ("Paris is lovely in spring.", "Berlin is lovely in spring."),
            ("I went hiking with Mel", "I went swimming yesterday"),
            ("Thanks!", "Thanks, Mel!"),
            (
                "These days Hugo K. is living in Lisbon",
                "These days Chloe L. is living in Lisbon",
            ),
            (
                "These days Hugo is living in Lisbon",
                "These days Chloe is living in Lisbon",
            ),
            (
                "[3 May 2023] Ann: Can't wait too!",
                "[4 May 2023] Bob: Agreed!",
            ),
            (
                "[3 May 2023] Ann: Bye Joanna!",
                "[5 May 2023] Ann: Bye Nate!",
            ),
            ("The user likes green tea", "The user likes black tea"),
        ] {
            assert_eq!(
                detector.explain(new, old),
                None,
                "{new:?} vs {old:?} should not conflict"
            );
        }
        let long = "word ".repeat(60);
        assert_eq!(detector.explain(&long, &long.replace("word", "Word")), None);
    }
}
