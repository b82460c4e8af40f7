//! The comparison keys of words: each word's analysed key (the analyzer's stem, or a
//! negation itself) as a 64-bit hash, read through a per-thread cache, and a new memory
//! prepared once for comparison with its candidates.

use std::cell::RefCell;

use foldhash::{HashSet, HashSetExt};
use memory_core::MemoryItem;
use memory_core::text::{Analyzer, InlineStr};

use super::FactsConfig;

/// Words whose keys each thread remembers before its cache is emptied.
const KEY_CACHE_WORDS: usize = 1 << 15;

/// A word's comparison key (see [`key_of`]) as the comparisons hold it: a 64-bit hash of the
/// key's text. Two different keys share a hash with a chance of about one in 2^64 per pair,
/// and the hasher's seed is drawn once per process, so no text can be written to make two
/// words collide; sets of hashes are compared without reading a string or touching a
/// shared count, which is most of what comparing a new memory with its candidates costs.
pub(super) type Key = u64;

/// The process's hasher of keys and words: one random seed per process, so every thread
/// (and a write resumed on another thread) hashes alike.
fn hash_of(text: &str) -> u64 {
    static STATE: std::sync::OnceLock<foldhash::quality::RandomState> = std::sync::OnceLock::new();
    std::hash::BuildHasher::hash_one(STATE.get_or_init(Default::default), text)
}

/// The [`Key`] of a key's text. Its lowest bit is set for a negation (one of
/// [`NEGATIONS`]), so a reader of keys counts negations without comparing strings.
pub(super) fn key_hash(key: &str) -> Key {
    (hash_of(key) & !1) | Key::from(NEGATIONS.contains(&key))
}

/// A cached key: its hash, and its text (for the new memory's search terms), kept in place
/// when short so that reading it touches the cache's entry only.
type CachedKey = Option<(Key, InlineStr)>;

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
pub(super) struct Keys<'a> {
    cache: Option<&'a mut KeyCache>,
}

impl Keys<'_> {
    /// The key of a word as written (see [`key_of`]), hashed.
    pub(super) fn key(&mut self, raw: &str) -> Option<Key> {
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
            let cached: CachedKey = key_of(raw).map(|key| (key_hash(&key), InlineStr::new(&key)));
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
pub(super) fn for_each_raw_word<'t>(text: &'t str, mut visit: impl FnMut(&'t str) -> bool) {
    for_each_gap_and_word(text, |_, word| visit(word));
}

/// Calls `visit` with each word of `text` as written and what comes between it and the word
/// before (or the start of the text), until it returns `false`. ASCII text is read byte by
/// byte.
pub(super) fn for_each_gap_and_word<'t>(
    text: &'t str,
    mut visit: impl FnMut(&'t str, &'t str) -> bool,
) {
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

/// Most strings [`recycle_terms`] keeps per thread.
pub(super) const SPARE_TERMS: usize = 64;

/// Largest capacity, in bytes, of a string [`recycle_terms`] keeps: terms are short words,
/// and a long one is not worth holding on to.
pub(super) const SPARE_TERM_BYTES: usize = 64;

thread_local! {
    /// Strings of finished self-match searches' terms, reused by the next searches: a new
    /// memory's search terms are a handful of short strings, freshly allocated they cost
    /// `remember` more than the search compares them (about 6% at 100,000 memories).
    static SPARE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// `terms` as owned strings, written into strings [`recycle_terms`] handed back when there
/// are some.
pub(super) fn owned_terms<'a>(terms: impl Iterator<Item = &'a str>) -> Vec<String> {
    SPARE.with(|spare| {
        let mut spare = spare.try_borrow_mut().ok();
        terms
            .map(|term| match spare.as_mut().and_then(|spare| spare.pop()) {
                Some(mut string) => {
                    string.clear();
                    string.push_str(term);
                    string
                }
                None => term.to_owned(),
            })
            .collect()
    })
}

/// Hands the term strings of a finished self-match search back for the next one (at most
/// [`SPARE_TERMS`] are kept, none holding more than [`SPARE_TERM_BYTES`]).
pub(crate) fn recycle_terms(terms: impl IntoIterator<Item = String>) {
    SPARE.with(|spare| {
        if let Ok(mut spare) = spare.try_borrow_mut() {
            let room = SPARE_TERMS.saturating_sub(spare.len());
            spare.extend(
                terms
                    .into_iter()
                    .filter(|term| term.capacity() <= SPARE_TERM_BYTES)
                    .take(room),
            );
        }
    });
}

/// The distinct keys of a text, and how many of its words are negations.
pub(super) struct Terms {
    keys: HashSet<Key>,
    pub(super) negations: usize,
}

impl Vocabulary {
    /// Runs `read` with the cache of keys borrowed once (not once per word).
    pub(super) fn with<R>(&mut self, read: impl FnOnce(&mut Keys<'_>) -> R) -> R {
        KEYS.with(|cell| match cell.try_borrow_mut() {
            Ok(mut cache) => read(&mut Keys {
                cache: Some(&mut cache),
            }),
            Err(_) => read(&mut Keys { cache: None }),
        })
    }

    /// The distinct keys of `text`. Text with CJK characters is read by the analyzer whole
    /// (it splits such runs into bigrams, which words of a statement are not).
    pub(super) fn terms(&mut self, text: &str) -> HashSet<Key> {
        self.terms_with_text(text, |_, _| ()).keys
    }

    /// [`terms`](Self::terms) and the count of negations, handing each distinct key's hash
    /// and text to `each` once.
    pub(super) fn terms_with_text(&mut self, text: &str, mut each: impl FnMut(Key, &str)) -> Terms {
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
        // (A float cast saturates: a tiny threshold allows every term, and sizes nothing.)
        // Counted in f64 with a little slack, so rounding never cuts the bound under a whole
        // number it reaches (0.8 of 4 terms allows 1, where f32 gave 0.99999994): the check
        // after the walk is exact, and the early exit must not decide for it.
        let threshold_wide = f64::from(threshold);
        let allowed =
            ((1.0 - threshold_wide) / threshold_wide * terms.len() as f64 + 1e-6).floor() as usize;
        shared.clear();
        let mut extra: HashSet<Key> = HashSet::with_capacity(allowed.min(64).saturating_add(1));
        let mut within = true;
        self.with(|keys| {
            for_each_raw_word(text, |raw| {
                let Some(key) = keys.key(raw) else {
                    return true;
                };
                if terms.contains(&key) {
                    shared.insert(key);
                } else if extra.insert(key) {
                    within = extra.len() <= allowed;
                }
                within
            });
        });
        let union = terms.len() + extra.len();
        within && (union == 0 || shared.len() as f32 >= threshold * union as f32)
    }
}

pub(super) fn jaccard<T: Eq + std::hash::Hash>(a: &HashSet<T>, b: &HashSet<T>) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = a.intersection(b).count();
    shared as f32 / (a.len() + b.len() - shared) as f32
}

/// Whether `word` (as written) is one of [`NEGATIONS`], whatever its case and apostrophe.
fn is_negation(word: &str) -> bool {
    // Compared a character at a time: `’` is three bytes where `'` is one.
    word.len() <= 10
        && NEGATIONS.iter().any(|negation| {
            let mut written = word.chars();
            negation.chars().all(|n| {
                written
                    .next()
                    .is_some_and(|w| n == w.to_ascii_lowercase() || (n == '\'' && w == '’'))
            }) && written.next().is_none()
        })
}

/// Whether `key` is the key of a negation (see [`key_hash`]).
pub(super) fn is_negation_key(key: Key) -> bool {
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
        let search = owned_terms(spans.iter().map(text));
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

/// Words that turn a statement into its opposite.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't",
    "won't", "can't", "cannot", "nobody", "nothing", "neither", "nor",
];

pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '\'' || c == '’'
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
