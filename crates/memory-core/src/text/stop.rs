//! The English stop words and the table [`is_stop_word`] looks them up in.

use std::sync::OnceLock;

/// English stop words removed by the analyzer (lowercase, apostrophes removed).
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "arent",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "cannot",
    "cant",
    "could",
    "couldnt",
    "d",
    "did",
    "didnt",
    "do",
    "does",
    "doesnt",
    "doing",
    "dont",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadnt",
    "has",
    "hasnt",
    "have",
    "havent",
    "having",
    "he",
    "hed",
    "hell",
    "her",
    "here",
    "heres",
    "hers",
    "herself",
    "hes",
    "him",
    "himself",
    "his",
    "how",
    "hows",
    "i",
    "id",
    "if",
    "ill",
    "im",
    "in",
    "into",
    "is",
    "isnt",
    "it",
    "its",
    "itself",
    "ive",
    "just",
    "lets",
    "ll",
    "m",
    "me",
    "more",
    "most",
    "mustnt",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "o",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shant",
    "she",
    "shed",
    "shell",
    "shes",
    "should",
    "shouldnt",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "thats",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "theres",
    "these",
    "they",
    "theyd",
    "theyll",
    "theyre",
    "theyve",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasnt",
    "we",
    "wed",
    "well",
    "were",
    "werent",
    "weve",
    "what",
    "whats",
    "when",
    "whens",
    "where",
    "wheres",
    "which",
    "while",
    "who",
    "whom",
    "whos",
    "why",
    "whys",
    "will",
    "with",
    "wont",
    "would",
    "wouldnt",
    "you",
    "youd",
    "youll",
    "your",
    "youre",
    "yours",
    "yourself",
    "yourselves",
    "youve",
];

/// Slots of the stop-word table (a power of two, under half full).
pub(super) const STOP_SLOTS: usize = 512;

/// Longest word [`packed_word`] packs, in bytes.
const PACKED_BYTES: usize = 15;

/// `word` as one integer, for words of 1 to 15 bytes: its bytes in order, and its length
/// in the last byte (so a word that ends in zero bytes is not its shorter prefix).
fn packed_word(word: &str) -> Option<u128> {
    packed_bytes(word.as_bytes(), 0)
}

/// [`packed_word`] of `bytes` with every byte or'ed with `fold` (0x20 lowercases ASCII
/// letters and keeps digits).
fn packed_bytes(bytes: &[u8], fold: u8) -> Option<u128> {
    if bytes.is_empty() || bytes.len() > PACKED_BYTES {
        return None;
    }
    // Byte by byte: a copy of a variable length would call `memcpy` for every word.
    let mut key = (bytes.len() as u128) << 120;
    for (at, &byte) in bytes.iter().enumerate() {
        key |= u128::from(byte | fold) << (8 * at);
    }
    Some(key)
}

/// The first slot to probe for a packed word.
fn stop_slot(key: u128) -> usize {
    let mixed = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
    (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - STOP_SLOTS.trailing_zeros())) as usize
}

/// The stop words, for [`is_stop_word`].
struct StopTable {
    /// Bit `n` of entry `b`: some stop word of `n` bytes starts with byte `b`.
    lengths: [u16; 256],
    /// The stop words packed ([`packed_word`]), open addressing with linear probing.
    slots: [u128; STOP_SLOTS],
}

impl StopTable {
    fn new() -> Self {
        let mut table = Self {
            lengths: [0; 256],
            slots: [0; STOP_SLOTS],
        };
        for word in STOP_WORDS {
            let (Some(key), Some(&first)) = (packed_word(word), word.as_bytes().first()) else {
                continue;
            };
            table.lengths[usize::from(first)] |= 1 << word.len();
            let mut slot = stop_slot(key);
            while table.slots[slot] != 0 && table.slots[slot] != key {
                slot = (slot + 1) % STOP_SLOTS;
            }
            table.slots[slot] = key;
        }
        table
    }
}

/// Whether `word` (lowercase, apostrophes removed) is an English stop word.
///
/// Every word analysed is checked, so the stop words are kept for that: a word whose first
/// byte and length no stop word has (most words) is turned away by one bit, and the others
/// are looked up packed as an integer in an open-addressing table (one multiplication and,
/// mostly, one comparison), where a hash set of strings hashed each word byte by byte and
/// compared strings (a sixth of the analysis of a long text).
pub fn is_stop_word(word: &str) -> bool {
    lookup(word.as_bytes(), 0)
}

/// Whether `word`, ASCII letters and digits in any case, is a stop word once lowercased: the
/// analyzer asks before copying a word it would otherwise skip.
pub(super) fn is_plain_stop_word(word: &[u8]) -> bool {
    lookup(word, 0x20)
}

/// Whether `bytes`, each or'ed with `fold`, spell a stop word.
fn lookup(bytes: &[u8], fold: u8) -> bool {
    static TABLE: OnceLock<Box<StopTable>> = OnceLock::new();
    let table = TABLE.get_or_init(|| Box::new(StopTable::new()));
    let Some(&first) = bytes.first() else {
        return false;
    };
    if bytes.len() > PACKED_BYTES
        || table.lengths[usize::from(first | fold)] & (1 << bytes.len()) == 0
    {
        return false;
    }
    let Some(key) = packed_bytes(bytes, fold) else {
        return false;
    };
    let mut slot = stop_slot(key);
    // The table is under half full, so a probe meets an empty slot.
    loop {
        match table.slots[slot] {
            0 => return false,
            found if found == key => return true,
            _ => slot = (slot + 1) % STOP_SLOTS,
        }
    }
}
