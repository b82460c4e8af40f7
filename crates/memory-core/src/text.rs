//! The one text analyzer: every backend indexes with it and every query is analysed with
//! it, so indexing and querying never disagree.
//!
//! Steps: Unicode word segmentation (UAX #29), compatibility composition (NFKC: an accent
//! typed apart joins its letter, a full-width letter is the letter) and lowercasing with the
//! folds it leaves (final sigma, `ß`, the dot of `İ`), a word joined by `.`, `:` or `_`
//! read as its pieces ("Paris.She", "jane.doe", "snake_case"; "3.5" stays one number),
//! removal of possessive `'s` and apostrophes, English stop words, Snowball English stemming (an irregular form such as
//! "went" or "children", or a comparative such as "older", stemmed as the word it is a form
//! of: see `irregular`; a British spelling such as "colour" as the American: see
//! `spelling`; a word the stemmer would merge with one of another meaning, such as
//! "friendly" with "friend", kept apart: see `apart`), and for
//! Chinese and Japanese text (which has no spaces) overlapping character bigrams of each run
//! of ideographs or kana (a run of one character is kept as a unigram).
//!
//! ```
//! use memory_core::text::Analyzer;
//! let analyzer = Analyzer::default();
//! assert_eq!(analyzer.terms("The cats are running!"), ["cat", "run"]);
//! assert_eq!(analyzer.terms("She ran; he won"), ["run", "win"]);
//! assert_eq!(analyzer.terms("状态管理"), ["状态", "态管", "管理"]);
//! ```

use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

pub use self::inline::InlineStr;
use self::stop::is_plain_stop_word;
pub use self::stop::{STOP_WORDS, is_stop_word};

mod apart;
mod inline;
mod irregular;
mod spelling;
mod stop;

/// Longest term kept, in bytes; longer words (base64 blobs, hashes) are dropped. Bytes, not
/// letters: a word of a script written in two bytes a letter (Cyrillic, Greek) is kept up to
/// 24 letters, one of three (most of Asia's) up to 16. Scripts written without spaces other
/// than Chinese and Japanese (Thai, Lao, Khmer, Myanmar) are not split into words by UAX #29:
/// their letters come out one term each, so a search matches their letters, not their words.
pub const MAX_TERM_BYTES: usize = 48;

/// Most distinct terms a query is searched with (the first ones, in order of appearance).
///
/// Every backend analyses a query through [`Analyzer::query_terms`], so a long query costs
/// the same bounded work everywhere: a 16 KiB paragraph pasted as a query is searched with
/// its first 128 distinct terms, which is more than any question needs and keeps the SQL
/// backends' statements (one parameter per term) small.
pub const MAX_QUERY_TERMS: usize = 128;

/// The Chinese particles that carry no meaning on their own and are dropped as unigrams.
const CJK_STOP_CHARS: &[char] = &[
    '的', '了', '是', '在', '和', '吗', '呢', '吧', '啊', '与', '及',
];

/// Tokenizes text into index terms. Cheap to clone and share; `Default` is the English
/// configuration with stop words and stemming.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Analyzer {
    /// Drop English stop words.
    pub remove_stop_words: bool,
    /// Apply the Snowball English stemmer.
    pub stem: bool,
}

impl Default for Analyzer {
    fn default() -> Self {
        Self {
            remove_stop_words: true,
            stem: true,
        }
    }
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Words whose stems are remembered per thread before the cache is emptied.
const STEM_CACHE_WORDS: usize = 1 << 16;

/// The Snowball stem of `word` (lowercase ASCII), or of the word it is an irregular form
/// of, or of its American spelling when it is a British one (see `spelling`); the term a
/// word the stemmer would merge with one of another meaning is read as (see `apart`).
fn stem(word: &str) -> std::borrow::Cow<'_, str> {
    if let Some(term) = apart::term(word) {
        return std::borrow::Cow::Borrowed(term);
    }
    if let Some(american) = spelling::american(word) {
        let stemmed = stemmer().stem(irregular::lemma(&american).unwrap_or(&american));
        return std::borrow::Cow::Owned(stemmed.into_owned());
    }
    stemmer().stem(irregular::lemma(word).unwrap_or(word))
}

/// Calls `emit` with the stem of `word` (lowercase ASCII; see [`stem`]), from a per-thread
/// cache: stemming costs far more than a lookup, and text repeats its words.
fn with_stem(word: &str, emit: impl FnOnce(&str)) {
    // The words are the user's, so the hasher is seeded (foldhash: a few cycles per word,
    // where FNV-1a went byte by byte and left many probes comparing strings). Words and
    // stems kept in place: a hit reads the table's entry only.
    type StemCache = foldhash::HashMap<InlineStr, InlineStr>;
    thread_local! {
        static STEMS: std::cell::RefCell<StemCache> = std::cell::RefCell::new(StemCache::default());
    }
    STEMS.with(|cache| {
        // `emit` runs while the cache is borrowed, so a hit hands out the stored stem
        // without copying it or counting a reference. If `emit` analyses text itself, the
        // borrow fails there and that word is stemmed without the cache.
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return emit(&stem(word));
        };
        if let Some(stem) = cache.get(word) {
            return emit(stem);
        }
        let stem = InlineStr::new(&stem(word));
        if cache.len() >= STEM_CACHE_WORDS {
            cache.clear();
        }
        let stem = cache.entry(InlineStr::new(word)).or_insert(stem);
        emit(stem);
    });
}

/// `bytes` (ASCII letters and digits, at most [`MAX_TERM_BYTES`]) lowercased into `lower`.
fn lowercase<'a>(bytes: &[u8], lower: &'a mut [u8; MAX_TERM_BYTES]) -> &'a str {
    for (to, from) in lower.iter_mut().zip(bytes) {
        *to = from | 0x20;
    }
    // ASCII, so always UTF-8.
    std::str::from_utf8(&lower[..bytes.len().min(MAX_TERM_BYTES)]).unwrap_or_default()
}

/// `may_start` asked about the first two bytes of `word` (0 for the second of a word of one).
fn may_start_word(word: &str, may_start: &mut impl FnMut(u8, u8) -> bool) -> bool {
    match word.as_bytes() {
        [first, rest @ ..] => may_start(*first, rest.first().copied().unwrap_or(0)),
        [] => false,
    }
}

/// The longest prefix of `text` of at most `max_chars` characters that ends between two
/// graphemes, so a cut never splits a flag, an emoji from its modifiers or a letter from
/// its accents.
///
/// ```
/// use memory_core::text::prefix_within;
/// assert_eq!(prefix_within("🇵🇹🇵🇹", 3), "🇵🇹", "a flag is two characters");
/// assert_eq!(prefix_within("héllo", 2), "hé");
/// ```
pub fn prefix_within(text: &str, max_chars: usize) -> &str {
    let mut chars = 0;
    let mut end = 0;
    for (at, grapheme) in text.grapheme_indices(true) {
        let count = grapheme.chars().count();
        if chars + count > max_chars {
            break;
        }
        chars += count;
        end = at + grapheme.len();
    }
    &text[..end]
}

/// Whether `c` is written without spaces between words (Han ideographs, kana).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F  // Extensions B to F, compatibility supplement
    )
}

impl Analyzer {
    /// An analyzer that keeps every word as written, lowercased (no stop words, no stemming).
    pub fn plain() -> Self {
        Self {
            remove_stop_words: false,
            stem: false,
        }
    }

    /// Calls `emit` with each term of `text`, in order (duplicates included).
    pub fn for_each_term(&self, text: &str, emit: impl FnMut(&str)) {
        self.scan(text, |_, _| true, emit, || {});
    }

    /// As [`for_each_term`](Self::for_each_term) for a caller looking for a few terms in a
    /// long text: a word is stemmed (and passed to `emit`) only when `may_start` accepts the
    /// first two bytes of the word as written (lowercased, a possessive's "s" dropped, not a
    /// stop word; the second is 0 for a word of one byte); `skipped` is called in its place
    /// otherwise, so the caller still counts term positions. Stemming is much of the cost of
    /// analysis, and an English stem keeps its word's first two letters (but a second "y"
    /// that becomes "i": "dying" -> "die") and is never longer than it (a test checks the
    /// words that change most), so a filter on the first bytes of the terms sought finds the
    /// same terms for a fraction of the work. A word of ASCII letters and digits that the
    /// filter turns away is not even copied: its first bytes are lowercased where they stand.
    /// An irregular form of a word that starts otherwise ("went", stemmed "go") is asked
    /// about a second time, with that word's first two bytes, when the first answer is no.
    pub fn for_each_term_where(
        &self,
        text: &str,
        may_start: impl FnMut(u8, u8) -> bool,
        emit: impl FnMut(&str),
        skipped: impl FnMut(),
    ) {
        self.scan(text, may_start, emit, skipped);
    }

    fn scan(
        &self,
        text: &str,
        mut may_start: impl FnMut(u8, u8) -> bool,
        mut emit: impl FnMut(&str),
        mut skipped: impl FnMut(),
    ) {
        let mut word = String::new();
        if text.is_ascii() {
            self.scan_ascii(text, &mut word, &mut may_start, &mut emit, &mut skipped);
            return;
        }
        // Mostly ASCII text with a few other characters (a curly quote, a dash, an accent):
        // only the words around them take the Unicode path. See `mixed_parts`.
        let mut run: Vec<char> = Vec::new();
        mixed_parts(text, |part, is_ascii| {
            if is_ascii {
                self.scan_ascii(part, &mut word, &mut may_start, &mut emit, &mut skipped);
            } else {
                self.scan_unicode(
                    part,
                    &mut run,
                    &mut word,
                    &mut may_start,
                    &mut emit,
                    &mut skipped,
                );
            }
        });
    }

    /// The ASCII path of [`scan`](Self::scan).
    fn scan_ascii(
        &self,
        text: &str,
        word: &mut String,
        may_start: &mut impl FnMut(u8, u8) -> bool,
        emit: &mut impl FnMut(&str),
        skipped: &mut impl FnMut(),
    ) {
        ascii_words(text, |segment, plain| {
            self.emit_word(segment, plain, word, may_start, emit, skipped)
        });
    }

    /// The Unicode path of [`scan`](Self::scan): UAX #29 word segments, CJK runs kept whole.
    fn scan_unicode(
        &self,
        text: &str,
        run: &mut Vec<char>,
        word: &mut String,
        may_start: &mut impl FnMut(u8, u8) -> bool,
        emit: &mut impl FnMut(&str),
        skipped: &mut impl FnMut(),
    ) {
        run.clear();
        for segment in text.split_word_bounds() {
            let mut chars = segment.chars();
            let Some(first) = chars.next() else { continue };
            if is_cjk(first) {
                run.extend(segment.chars().filter(|c| is_cjk(*c)));
                continue;
            }
            flush_cjk(run, word, emit);
            if !segment.chars().any(char::is_alphanumeric) {
                continue;
            }
            self.emit_word(segment, false, word, may_start, emit, skipped);
        }
        flush_cjk(run, word, emit);
    }

    /// Analyses one word segment and emits its term, if it has one. `plain`: the segment is
    /// ASCII letters and digits only (known from [`ascii_words`]); other segments are
    /// cleaned up in `buffer`.
    fn emit_word(
        &self,
        segment: &str,
        plain: bool,
        buffer: &mut String,
        may_start: &mut impl FnMut(u8, u8) -> bool,
        emit: &mut impl FnMut(&str),
        skipped: &mut impl FnMut(),
    ) {
        if plain {
            // The common case: lowercased on the stack, with no apostrophe, so no possessive.
            let bytes = segment.as_bytes();
            let [first, rest @ ..] = bytes else {
                return;
            };
            if bytes.len() > MAX_TERM_BYTES {
                return;
            }
            // ASCII letters and digits: `| 0x20` lowercases a letter and keeps a digit.
            let (first, second) = (first | 0x20, rest.first().map_or(0, |second| second | 0x20));
            if !may_start(first, second) {
                let mut lower = [0u8; MAX_TERM_BYTES];
                let base_may_start = self.stem
                    && irregular::may_start_differently(first, second)
                    && irregular::lemma(lowercase(bytes, &mut lower))
                        .is_some_and(|base| may_start_word(base, may_start));
                if !base_may_start {
                    if !(self.remove_stop_words && is_plain_stop_word(bytes)) {
                        skipped();
                    }
                    return;
                }
            }
            let mut lower = [0u8; MAX_TERM_BYTES];
            let word = lowercase(bytes, &mut lower);
            if !(self.remove_stop_words && is_stop_word(word)) {
                self.emit_term(word, emit);
            }
            return;
        }
        // A word joined by `.`, `:` or `_` ("Paris.She", "jane.doe", "snake_case") is its
        // pieces: each is found by its own word. Digits joined by `.` ("3.5") stay one.
        // Each piece holds no such joiner, so this goes one level deep, however many
        // pieces a word has.
        if joined_at(segment, 0).is_some() {
            let mut from = 0;
            while from <= segment.len() {
                let end = joined_at(segment, from).unwrap_or(segment.len());
                let piece = &segment[from..end];
                if piece.chars().any(char::is_alphanumeric) {
                    let plain = piece.bytes().all(|byte| byte.is_ascii_alphanumeric());
                    self.emit_word(piece, plain, buffer, may_start, emit, skipped);
                }
                from = end + 1;
            }
            return;
        }
        // Letters and digits, lowercased. Everything else inside a word is dropped: an
        // apostrophe ("don't" -> "dont"), a `.` between digits ("3.5" -> "35").
        buffer.clear();
        if segment.is_ascii() {
            buffer.extend(
                segment
                    .bytes()
                    .filter(u8::is_ascii_alphanumeric)
                    .map(|byte| char::from(byte.to_ascii_lowercase())),
            );
        } else {
            // Compatibility-composed first (NFKC): an accent typed apart joins its letter
            // and a full-width or ligature letter is the letter, so a word is one term
            // however it was typed. Then lowercased, with the folds lowercasing leaves: a
            // final sigma is a sigma ("ΝΊΚΟΣ" and "Νίκος" alike), "ß" is "ss" (as
            // "STRASSE" lowercases), and the dot "İ" lowercases with is dropped.
            for c in segment.nfkc().filter(|c| c.is_alphanumeric()) {
                for lower in c.to_lowercase() {
                    match lower {
                        'ς' => buffer.push('σ'),
                        'ß' => buffer.push_str("ss"),
                        '\u{307}' => {}
                        other => buffer.push(other),
                    }
                }
            }
        }
        // A possessive loses its "s": "caroline's" -> "caroline".
        let possessive = ["'s", "'S", "\u{2019}s", "\u{2019}S"]
            .iter()
            .any(|suffix| segment.ends_with(suffix));
        if possessive && buffer.len() > 1 {
            buffer.pop();
        }
        let [first, rest @ ..] = buffer.as_bytes() else {
            return;
        };
        if buffer.len() > MAX_TERM_BYTES {
            return;
        }
        if self.remove_stop_words && is_stop_word(buffer) {
            return;
        }
        let (first, second) = (*first, rest.first().copied().unwrap_or(0));
        let passes = may_start(first, second)
            || (self.stem
                && irregular::may_start_differently(first, second)
                && irregular::lemma(buffer).is_some_and(|base| may_start_word(base, may_start)));
        if !passes {
            return skipped();
        }
        self.emit_term(buffer, emit);
    }

    /// Emits `word` (lowercased, at most [`MAX_TERM_BYTES`], no stop word), stemmed when it
    /// is made of ASCII letters.
    fn emit_term(&self, word: &str, emit: &mut impl FnMut(&str)) {
        if self.stem && word.bytes().all(|byte| byte.is_ascii_alphabetic()) {
            with_stem(word, |stem| emit(stem));
        } else {
            emit(word);
        }
    }

    /// A fingerprint of this analyzer's behaviour: a hash (FNV-1a) of its terms for a fixed
    /// probe text (stemming, stop words, possessives, numbers, case, Chinese and Japanese,
    /// overlong words), for every stop word and, when stemming, for every irregular form
    /// read as the word it is a form of, for every British spelling read as the American, and
    /// for every word kept apart from the one the stemmer would merge it with (so a database indexed before a form was added is re-indexed, and its memories saying
    /// "went" are found by "go", those saying "colour" by "color"). Persistent backends
    /// store analyzed terms and record this value, so an index built by an analyzer that
    /// behaves differently is rebuilt on open. Never change the probe or the hash without
    /// expecting that rebuild.
    pub fn fingerprint(&self) -> String {
        const PROBE: &str = "The cats are running! Caroline's adoption agencies; I'm going \
            to the LGBTQ support group. Version 3.5 of GPT-4, snake_case and e-mail. ÇAFÉ naïve \
            résumé Straße. ΝΊΚΟΣ İstanbul ＧＰＴ４ ﬁle cafe\u{301}. LangGraph 的 StateGraph 状态管理原理？ 東京で日本語を勉強しています 猫 的 \
            connection connected connecting generously happiness relational conditional \
            aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut feed = |text: &str| {
            self.for_each_term(text, |term| {
                for byte in term.bytes().chain([b' ']) {
                    hash ^= u64::from(byte);
                    hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
                }
            });
            hash ^= u64::from(b'|');
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        };
        feed(PROBE);
        for word in STOP_WORDS {
            feed(word);
        }
        if self.stem {
            for (form, _) in irregular::FORMS {
                feed(form);
            }
            for form in spelling::british_forms() {
                feed(&form);
            }
            for (form, _) in apart::FORMS {
                feed(form);
            }
        }
        format!("{hash:016x}")
    }

    /// Where `terms` stand in `text`: `(position, term)` pairs by position, `position`
    /// counting `text`'s terms from 0 (stop words, which make no term, not counted) and
    /// `term` the index in `terms` of the term found there (the first, when `terms` repeats
    /// one). What [`MemoryStore::term_positions`](crate::MemoryStore::term_positions) must
    /// answer for a memory's content, read with the default analyzer.
    pub fn term_positions(&self, text: &str, terms: &[String]) -> crate::TermPositions {
        let mut found = Vec::new();
        let mut position = 0u32;
        self.for_each_term(text, |term| {
            if let Some(at) = terms.iter().position(|sought| sought == term) {
                found.push((position, u32::try_from(at).unwrap_or(u32::MAX)));
            }
            position = position.saturating_add(1);
        });
        found
    }

    /// The terms of `text`, in order, duplicates included.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_term(text, |term| out.push(term.to_owned()));
        out
    }

    /// The distinct terms of `text`, in order of first appearance.
    pub fn unique_terms(&self, text: &str) -> Vec<String> {
        self.distinct_terms(text, usize::MAX)
    }

    /// `terms` (a caller's, analysed already) as a query is searched with them: each once,
    /// in order of first appearance, at most [`MAX_QUERY_TERMS`]; borrowed when they are
    /// so already (the terms this analyzer gives always are), so every backend scores the
    /// same terms.
    pub fn searched_terms(terms: &[String]) -> std::borrow::Cow<'_, [String]> {
        let distinct = terms.len() <= MAX_QUERY_TERMS
            && terms
                .iter()
                .enumerate()
                .all(|(at, term)| !terms[..at].contains(term));
        if distinct {
            return std::borrow::Cow::Borrowed(terms);
        }
        let mut seen: HashSet<&str> = HashSet::new();
        std::borrow::Cow::Owned(
            terms
                .iter()
                .filter(|term| seen.insert(term.as_str()))
                .take(MAX_QUERY_TERMS)
                .cloned()
                .collect(),
        )
    }

    /// The terms a query is searched with: the distinct terms of `text` in order of first
    /// appearance, at most [`MAX_QUERY_TERMS`]. Linear in the length of `text`.
    pub fn query_terms(&self, text: &str) -> Vec<String> {
        self.distinct_terms(text, MAX_QUERY_TERMS)
    }

    fn distinct_terms(&self, text: &str, limit: usize) -> Vec<String> {
        // A query has a few terms: a scan of those kept costs less than hashing each one
        // into a set. A text with many terms gets the set once it has that many.
        const SCANNED_TERMS: usize = 16;
        let mut out: Vec<String> = Vec::with_capacity(8);
        let mut seen: Option<HashSet<String>> = None;
        self.for_each_term(text, |term| {
            if out.len() >= limit {
                return;
            }
            let repeated = match &seen {
                Some(seen) => seen.contains(term),
                None => out.iter().any(|kept| kept == term),
            };
            if repeated {
                return;
            }
            out.push(term.to_owned());
            match &mut seen {
                Some(seen) => {
                    seen.insert(term.to_owned());
                }
                None if out.len() == SCANNED_TERMS => seen = Some(out.iter().cloned().collect()),
                None => {}
            }
        });
        out
    }
}

fn flush_cjk(run: &mut Vec<char>, buffer: &mut String, emit: &mut impl FnMut(&str)) {
    match run.len() {
        0 => {}
        1 => {
            if !CJK_STOP_CHARS.contains(&run[0]) {
                buffer.clear();
                buffer.push(run[0]);
                emit(buffer);
            }
        }
        _ => {
            for pair in run.windows(2) {
                buffer.clear();
                buffer.push(pair[0]);
                buffer.push(pair[1]);
                emit(buffer);
            }
        }
    }
    run.clear();
}

/// How [`ascii_words`] reads each byte.
const OTHER: u8 = 0;
const LETTER: u8 = 1;
const DIGIT: u8 = 2;
const UNDERSCORE: u8 = 3;

/// The class of every byte, for [`ascii_words`]: one load per byte instead of a match.
static CLASSES: [u8; 256] = {
    let mut classes = [OTHER; 256];
    let mut byte = 0;
    while byte < 256 {
        classes[byte] = match byte as u8 {
            b'a'..=b'z' | b'A'..=b'Z' => LETTER,
            b'0'..=b'9' => DIGIT,
            b'_' => UNDERSCORE,
            _ => OTHER,
        };
        byte += 1;
    }
    classes
};

/// Cuts `text` into parts whose word segments are those of the whole text, and calls
/// `part` with each in order and whether it is ASCII. A part that is not ASCII runs from
/// the ASCII whitespace before a non-ASCII character to the ASCII whitespace after it.
///
/// A cut lies just after ASCII whitespace and before an ASCII character, or just before
/// ASCII whitespace. UAX #29 breaks there (no rule joins whitespace to a following ASCII
/// character, or anything but whitespace to whitespace), and no rule deciding a break on
/// one side looks past whitespace to the other: the rules that look two characters ahead
/// or behind need a letter, a digit or a joiner (`.`, `'`, `:`, `,`, `;`) there. A cut
/// between two spaces splits a run of whitespace, which holds no word. A test compares
/// the terms with those of the whole text read the Unicode way.
fn mixed_parts(text: &str, mut part: impl FnMut(&str, bool)) {
    let bytes = text.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let Some(offset) = bytes[start..].iter().position(|byte| !byte.is_ascii()) else {
            part(&text[start..], true);
            return;
        };
        let other = start + offset;
        // Back to the last ASCII whitespace before the character; when that whitespace
        // is right before it (it may be a mark that joins the whitespace), the whitespace
        // goes with it.
        let from = match bytes[start..other]
            .iter()
            .rposition(u8::is_ascii_whitespace)
        {
            Some(space) if start + space + 1 < other => start + space + 1,
            Some(space) => start + space,
            None => start,
        };
        // On to the first ASCII whitespace after it that an ASCII character or the end
        // follows.
        let mut to = bytes.len();
        let mut at = other;
        while let Some(space) = bytes[at..].iter().position(u8::is_ascii_whitespace) {
            let space = at + space;
            if bytes.get(space + 1).is_none_or(u8::is_ascii) {
                to = space + 1;
                break;
            }
            at = space + 1;
        }
        // Cuts fall on ASCII bytes, so on character boundaries.
        if from > start {
            part(&text[start..from], true);
        }
        part(&text[from..to], false);
        start = to;
    }
}

/// The UAX #29 word segments of ASCII `text` that hold a letter or digit, in order: the same
/// segments `split_word_bounds` yields (a test checks it), found by one pass over the bytes.
/// For ASCII the rules reduce to: letters, digits and `_` join; `'` and `.` join two letters
/// or two digits; `:` joins two letters; `,` and `;` join two digits.
///
/// `emit` also learns whether the segment is plain: letters and digits only, so that the
/// analyzer can lowercase it without filtering and skip the possessive test.
fn ascii_words<'t>(text: &'t str, mut emit: impl FnMut(&'t str, bool)) {
    let bytes = text.as_bytes();
    let class = |at: usize| CLASSES[usize::from(bytes[at])];
    let mut at = 0;
    while at < bytes.len() {
        let mut current = class(at);
        if current == OTHER {
            at += 1;
            continue;
        }
        let start = at;
        let mut underscore = false;
        let mut joined = false;
        loop {
            // A run of letters, digits and underscores, one class load per byte; `at` ends
            // past its last byte and `current` is that byte's class.
            loop {
                underscore |= current == UNDERSCORE;
                at += 1;
                if at == bytes.len() {
                    break;
                }
                let next = class(at);
                if next == OTHER {
                    break;
                }
                current = next;
            }
            // A single joiner between two characters of the right classes stays in the word.
            let Some(&after) = bytes.get(at + 1) else {
                break;
            };
            let after = CLASSES[usize::from(after)];
            let joins = match bytes[at] {
                b'\'' | b'.' => {
                    (current == LETTER && after == LETTER) || (current == DIGIT && after == DIGIT)
                }
                b':' => current == LETTER && after == LETTER,
                b',' | b';' => current == DIGIT && after == DIGIT,
                _ => false,
            };
            if !joins {
                break;
            }
            joined = true;
            at += 1;
            current = after;
        }
        let segment = &text[start..at];
        // Only underscores is no word.
        if !underscore || segment.bytes().any(|byte| byte.is_ascii_alphanumeric()) {
            emit(segment, !underscore && !joined);
        }
    }
}

/// Where the first `.`, `:` or `_` from byte `from` on that joins two pieces of `segment`
/// into one word is, if any: not a `.` between two digits ("3.5"), which make one number.
fn joined_at(segment: &str, from: usize) -> Option<usize> {
    let bytes = segment.as_bytes();
    memchr::memchr3(b'.', b':', b'_', bytes.get(from..)?)?;
    (from..bytes.len()).find(|&at| match bytes[at] {
        b'_' => true,
        b'.' | b':' => {
            let digit = |at: Option<usize>| {
                at.and_then(|at| bytes.get(at))
                    .is_some_and(u8::is_ascii_digit)
            };
            !(digit(at.checked_sub(1)) && digit(Some(at + 1)))
        }
        _ => false,
    })
}

/// The lowercased words of `text` as written (no stemming, no stop-word removal; CJK runs
/// kept whole). Used for the title-prefix and summary-contains match rules.
pub fn surface_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if text.is_ascii() {
        ascii_words(text, |segment, _| out.push(segment.to_ascii_lowercase()));
        return out;
    }
    let mut run = String::new();
    for segment in text.split_word_bounds() {
        let Some(first) = segment.chars().next() else {
            continue;
        };
        if is_cjk(first) {
            run.push_str(segment);
            continue;
        }
        if !run.is_empty() {
            out.push(std::mem::take(&mut run));
        }
        if segment.chars().any(char::is_alphanumeric) {
            out.push(segment.to_lowercase());
        }
    }
    if !run.is_empty() {
        out.push(run);
    }
    out
}

#[cfg(test)]
mod tests;
