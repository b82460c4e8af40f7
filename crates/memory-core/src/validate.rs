//! Validation rules shared by every constructor and every backend's write path.
//!
//! Types have public fields, so a record can be changed after it was built; backends call
//! the `validate` methods again on every write, and these functions are what they use.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

use crate::{MemoryError, Result};

/// Longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 256;
/// Longest tag accepted, in bytes, after normalisation.
pub const MAX_TAG_LEN: usize = 64;
/// Default maximum size of a memory's or a page's text, in bytes (1 MiB).
pub const DEFAULT_MAX_CONTENT_BYTES: usize = 1 << 20;
/// Most tags one memory or page may carry (after normalisation and de-duplication).
pub const MAX_TAGS: usize = 64;
/// Largest metadata accepted, in bytes of its compact JSON text (256 KiB).
pub const MAX_METADATA_BYTES: usize = 256 * 1024;
/// Deepest metadata accepted: an object directly holding scalars is depth 1.
///
/// Every backend must read back what it accepted, and JSON decoders bound their recursion
/// (serde_json refuses nesting past 128 levels), so the limit sits well below that.
pub const MAX_METADATA_DEPTH: usize = 32;
/// Largest context (the situating text indexed beside a memory) accepted, in bytes (64 KiB).
pub const MAX_CONTEXT_BYTES: usize = 64 * 1024;

/// Checks an id: non-empty after trimming, at most [`MAX_ID_LEN`] bytes, no control characters.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field`.
pub fn validate_id(field: &str, id: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(MemoryError::invalid(field, "empty"));
    }
    if id.len() > MAX_ID_LEN {
        return Err(MemoryError::invalid(
            field,
            format!("longer than {MAX_ID_LEN} bytes"),
        ));
    }
    if id.chars().any(char::is_control) {
        return Err(MemoryError::invalid(field, "contains a control character"));
    }
    Ok(())
}

/// Checks a weight: finite and within `[0, 1]`.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field` for NaN, infinities and values outside the range.
pub fn validate_unit(field: &str, value: f32) -> Result<()> {
    if !value.is_finite() {
        return Err(MemoryError::invalid(
            field,
            format!("{value} is not a finite number"),
        ));
    }
    if !(0.0..=1.0).contains(&value) {
        return Err(MemoryError::invalid(
            field,
            format!("{value} is outside [0, 1]"),
        ));
    }
    Ok(())
}

/// Checks a non-negative finite number (a weight that is not bounded by 1).
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field`.
pub fn validate_non_negative(field: &str, value: f64) -> Result<()> {
    if !value.is_finite() || value < 0.0 {
        return Err(MemoryError::invalid(
            field,
            format!("{value} is not a finite number >= 0"),
        ));
    }
    Ok(())
}

/// Checks text that must say something: not empty or blank, within `max_bytes`.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field`.
pub fn validate_text(field: &str, text: &str, max_bytes: usize) -> Result<()> {
    if text.trim().is_empty() {
        return Err(MemoryError::invalid(field, "empty"));
    }
    validate_len(field, text, max_bytes)
}

/// Checks the size of `text` and that it holds no NUL character (which PostgreSQL cannot
/// store in text, so no backend accepts it).
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field` when `text` is longer than `max_bytes` or
/// holds a NUL character.
pub fn validate_len(field: &str, text: &str, max_bytes: usize) -> Result<()> {
    if text.len() > max_bytes {
        return Err(MemoryError::invalid(
            field,
            format!("{} bytes is more than the limit of {max_bytes}", text.len()),
        ));
    }
    if text.contains('\0') {
        return Err(MemoryError::invalid(field, "contains a NUL character"));
    }
    Ok(())
}

/// Checks a record time: it must be representable as nanoseconds since the Unix epoch in a
/// signed 64-bit integer (years 1677 to 2262), the form every backend stores.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field` for a time outside that range.
pub fn validate_time(field: &str, time: DateTime<Utc>) -> Result<()> {
    if time.timestamp_nanos_opt().is_none() {
        return Err(MemoryError::invalid(
            field,
            format!("{time} is outside the storable range (years 1677 to 2262)"),
        ));
    }
    Ok(())
}

/// Checks a tag list's length against [`MAX_TAGS`].
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `tags`.
pub fn validate_tag_count(tags: &[Tag]) -> Result<()> {
    if tags.len() > MAX_TAGS {
        return Err(MemoryError::invalid(
            "tags",
            format!("{} tags is more than the limit of {MAX_TAGS}", tags.len()),
        ));
    }
    Ok(())
}

/// Checks metadata: a JSON object, at most [`MAX_METADATA_DEPTH`] levels deep, at most
/// [`MAX_METADATA_BYTES`] as compact JSON, with no NUL character in a key or a string. The
/// indexed context ([`CONTEXT_METADATA_KEY`](crate::CONTEXT_METADATA_KEY)) and a compressed
/// memory's original ([`ORIGINAL_METADATA_KEY`](crate::ORIGINAL_METADATA_KEY)), when text,
/// do not count against the size: each has a limit of its own
/// ([`MAX_CONTEXT_BYTES`], the content's).
///
/// The walk is iterative, so no nesting can overflow the stack, and the size is counted
/// without building the JSON text.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `metadata`.
pub fn validate_metadata(metadata: &serde_json::Value) -> Result<()> {
    validate_json_object(
        "metadata",
        metadata,
        &[
            crate::memory::ORIGINAL_METADATA_KEY,
            crate::memory::CONTEXT_METADATA_KEY,
        ],
    )
}

/// Checks a JSON object as [`validate_metadata`] does, naming `field`; a top-level string
/// under one of the keys `exempt` (text with a limit of its own, checked apart) does not
/// count against the size.
pub(crate) fn validate_json_object(
    field: &str,
    object: &serde_json::Value,
    exempt: &[&str],
) -> Result<()> {
    match object {
        serde_json::Value::Object(fields) => validate_json_map(field, fields, exempt),
        _ => Err(MemoryError::invalid(field, "must be a JSON object")),
    }
}

/// Checks an entity's [attributes](crate::GraphEntity::attributes) as
/// [`validate_metadata`] checks metadata.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `attributes`.
pub fn validate_attributes(attributes: &crate::Attributes) -> Result<()> {
    validate_json_map("attributes", attributes, &[])
}

/// [`validate_json_object`] for the object's fields.
fn validate_json_map(
    field: &str,
    fields: &serde_json::Map<String, serde_json::Value>,
    exempt: &[&str],
) -> Result<()> {
    use serde_json::Value;
    let too_large = || {
        MemoryError::invalid(
            field,
            format!("more than the limit of {MAX_METADATA_BYTES} bytes as JSON"),
        )
    };
    let too_deep = || {
        MemoryError::invalid(
            field,
            format!("nested more than {MAX_METADATA_DEPTH} levels deep"),
        )
    };
    let nul = || MemoryError::invalid(field, "contains a NUL character");
    // The object itself, then every value under it: `(value, depth)`, the object at 1.
    let mut bytes: usize = 2;
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    for (key, item) in fields {
        if key.contains('\0') {
            return Err(nul());
        }
        if exempt.contains(&key.as_str())
            && let Value::String(original) = item
        {
            if original.contains('\0') {
                return Err(nul());
            }
            continue;
        }
        bytes = bytes.saturating_add(json_len(key) + 3);
        stack.push((item, 2));
    }
    while let Some((value, depth)) = stack.pop() {
        // Separators and quotes are counted approximately (two bytes per value and key),
        // escapes in full (a control character is six bytes as JSON): the bound is what
        // matters, and it holds for the JSON written, not only for the text.
        bytes = bytes.saturating_add(2);
        match value {
            Value::Null | Value::Bool(_) => bytes = bytes.saturating_add(5),
            Value::Number(_) => bytes = bytes.saturating_add(24),
            Value::String(text) => {
                if text.contains('\0') {
                    return Err(nul());
                }
                bytes = bytes.saturating_add(json_len(text));
            }
            Value::Array(items) => {
                if depth > MAX_METADATA_DEPTH {
                    return Err(too_deep());
                }
                stack.extend(items.iter().map(|item| (item, depth + 1)));
            }
            Value::Object(fields) => {
                if depth > MAX_METADATA_DEPTH {
                    return Err(too_deep());
                }
                for (key, item) in fields {
                    if key.contains('\0') {
                        return Err(nul());
                    }
                    bytes = bytes.saturating_add(json_len(key) + 3);
                    stack.push((item, depth + 1));
                }
            }
        }
        if bytes > MAX_METADATA_BYTES {
            return Err(too_large());
        }
    }
    if bytes > MAX_METADATA_BYTES {
        return Err(too_large());
    }
    Ok(())
}

/// Drops a JSON value without recursion.
///
/// A `serde_json::Value` drops itself recursively, so dropping one nested some thousands of
/// levels deep overflows a thread's stack. Entry points that take such a value from a
/// caller and refuse it (see [`validate_metadata`]) release it through this function.
pub fn drop_json(value: serde_json::Value) {
    use serde_json::Value;
    let mut stack = vec![value];
    while let Some(mut value) = stack.pop() {
        match &mut value {
            Value::Array(items) => stack.append(items),
            Value::Object(fields) => {
                stack.extend(std::mem::take(fields).into_iter().map(|(_, item)| item));
            }
            _ => {}
        }
        // `value` is shallow now and drops here.
    }
}

/// A retrieval tag: lowercase, atomic (no spaces or punctuation but `-`), at most
/// [`MAX_TAG_LEN`] bytes.
///
/// [`Tag::new`] normalises what can be normalised: it lowercases, turns runs of spaces,
/// underscores, slashes and dots into one `-`, and splits CamelCase words
/// (`"State Graph"` and `"StateGraph"` become `"state-graph"`). Letters of any script are kept
/// (`"状态管理"` is a tag), with the combining marks written after them (`"हिन्दी"`), composed
/// (NFC) where they compose. What is left empty, or holds other punctuation, is rejected.
///
/// ```
/// use memory_core::Tag;
/// assert_eq!(Tag::new("State Graph")?.as_str(), "state-graph");
/// assert_eq!(Tag::new("StateGraph")?.as_str(), "state-graph");
/// assert_eq!(Tag::new("  LLM_agents ")?.as_str(), "llm-agents");
/// assert!(Tag::new("c++").is_err());
/// assert!(Tag::new("   ").is_err());
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Tag(String);

impl Tag {
    /// Normalises and validates a tag.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `tag` when nothing is left after normalisation,
    /// when a character other than a letter, digit or `-` remains, or when it is too long.
    pub fn new(raw: &str) -> Result<Self> {
        let mut out = String::with_capacity(raw.len());
        let mut previous: Option<char> = None;
        let mut pending_dash = false;
        // Composed first (NFC): an accent typed apart joins its letter. A combining mark
        // that has no composed form with it (a Devanagari virama, a Tamil vowel sign) is
        // part of its word, and kept after a letter or digit.
        for c in raw.trim().nfc() {
            if c.is_whitespace() || matches!(c, '_' | '-' | '/' | '.') {
                pending_dash = true;
                previous = Some(c);
                continue;
            }
            if unicode_normalization::char::is_combining_mark(c)
                && !pending_dash
                && previous.is_some_and(|p| {
                    p.is_alphanumeric() || unicode_normalization::char::is_combining_mark(p)
                })
            {
                out.push(c);
                previous = Some(c);
                continue;
            }
            if !c.is_alphanumeric() {
                return Err(MemoryError::invalid(
                    "tag",
                    format!("{raw:?} has the character {c:?}; tags are letters, digits and '-'"),
                ));
            }
            // CamelCase boundary: a lowercase letter or digit followed by an uppercase letter
            // that has a lowercase form (one without, such as 'ℙ', stays as it is, so it must
            // not start a word either, or normalising the result again would add a dash).
            let camel_boundary = c.is_uppercase()
                && !c.to_lowercase().eq(std::iter::once(c))
                && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit());
            if (pending_dash || camel_boundary) && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            // A lowercase form may hold a combining mark ('İ' is "i" and U+0307): only its
            // letters and digits are kept, so the result is a valid tag again.
            out.extend(c.to_lowercase().filter(|lower| lower.is_alphanumeric()));
            previous = Some(c);
        }
        if out.is_empty() {
            return Err(MemoryError::invalid(
                "tag",
                format!("{raw:?} is empty after normalisation"),
            ));
        }
        // A mark may compose with a letter's lowercase form and not with the letter ('J'
        // and U+030C stay apart, 'j' and U+030C are 'ǰ'): composed again, so the tag a
        // store reads back through `Tag::new` is the tag it wrote.
        if !unicode_normalization::is_nfc(&out) {
            out = out.nfc().collect();
        }
        if out.len() > MAX_TAG_LEN {
            return Err(MemoryError::invalid(
                "tag",
                format!("{raw:?} is longer than {MAX_TAG_LEN} bytes"),
            ));
        }
        Ok(Self(out))
    }

    /// Normalises the beginning of a tag, as [`find_tags`](crate::KnowledgeGraph::find_tags)
    /// matches it: the text [`Tag::new`] would make of it, so a tag normalised from a text
    /// that goes on from `raw` with more of a word, or a separator and more words, starts
    /// with the result. (Not every such text: one that is `raw` with trailing separators
    /// alone makes a tag without the trailing `-` kept here, and a character composed across
    /// the end of `raw`, `e` and a combining accent, is another letter.) Surrounding whitespace is trimmed
    /// as [`Tag::new`] trims it, a trailing run of `-`, `_`, `/` or `.` (which
    /// [`Tag::new`] would drop, having no word after it) is kept as a trailing `-`, and a
    /// prefix of separators only, or empty, is `""` (tags never start with `-`).
    ///
    /// `None` when no tag can start with it: it holds a character that [`Tag::new`]
    /// rejects, or is longer than [`MAX_TAG_LEN`] bytes once normalised.
    ///
    /// ```
    /// use memory_core::Tag;
    /// assert_eq!(Tag::normalize_prefix("İstanbul").as_deref(), Some("istanbul"));
    /// assert_eq!(Tag::normalize_prefix("ΣΊΣ").as_deref(), Some("σίσ"));
    /// assert_eq!(Tag::normalize_prefix("State_").as_deref(), Some("state-"));
    /// assert_eq!(Tag::normalize_prefix("StateG").as_deref(), Some("state-g"));
    /// assert_eq!(Tag::normalize_prefix(" ").as_deref(), Some(""));
    /// assert_eq!(Tag::normalize_prefix("c+"), None);
    /// ```
    pub fn normalize_prefix(raw: &str) -> Option<String> {
        let trimmed = raw.trim();
        let body = trimmed
            .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '_' | '-' | '/' | '.'));
        if body.is_empty() {
            return Some(String::new());
        }
        let mut out = Tag::new(body).ok()?.0;
        if body.len() < trimmed.len() {
            out.push('-');
        }
        (out.len() <= MAX_TAG_LEN).then_some(out)
    }

    /// Normalises a list of tags, dropping duplicates and keeping the first occurrence's order.
    ///
    /// # Errors
    /// The first tag that [`Tag::new`] rejects; [`MemoryError::InvalidInput`] naming `tags`
    /// for more than [`MAX_TAGS`] distinct tags.
    pub fn normalize_all<I, S>(raw: I) -> Result<Vec<Tag>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut tags: Vec<Tag> = Vec::new();
        for item in raw {
            let tag = Tag::new(item.as_ref())?;
            if !tags.contains(&tag) {
                // Checked before the push, so the `contains` above stays bounded.
                if tags.len() == MAX_TAGS {
                    return Err(MemoryError::invalid(
                        "tags",
                        format!("more than the limit of {MAX_TAGS} distinct tags"),
                    ));
                }
                tags.push(tag);
            }
        }
        Ok(tags)
    }

    /// The normalised text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tag({:?})", self.0)
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Tag {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Tag {
    type Error = MemoryError;
    fn try_from(value: String) -> Result<Self> {
        let tag = Tag::new(&value)?;
        Ok(tag)
    }
}

impl TryFrom<&str> for Tag {
    type Error = MemoryError;
    fn try_from(value: &str) -> Result<Self> {
        Tag::new(value)
    }
}

impl From<Tag> for String {
    fn from(value: Tag) -> Self {
        value.0
    }
}

impl PartialEq<str> for Tag {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Tag {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// The length of `text` as a JSON string's contents, at most: a quote or a backslash is
/// written escaped (two bytes), a control character as `\u00XX` (six; serde_json writes a
/// few as two).
fn json_len(text: &str) -> usize {
    let escapes: usize = text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    text.len().saturating_add(escapes)
}

/// A new record id: unique within the process and, with overwhelming likelihood, across
/// processes; lexicographically increasing with creation time (26 lowercase hex and base-32
/// characters, no dependency on a UUID crate).
pub fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static SALT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let salt = *SALT.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.finish()
    });
    let micros = chrono::Utc::now().timestamp_micros().max(0) as u64;
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "{micros:014x}{:06x}{:06x}",
        count & 0xff_ffff,
        salt & 0xff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size bound holds for the JSON written: text that escapes counts as escaped.
    #[test]
    fn metadata_is_measured_as_the_json_written() {
        let plain = serde_json::json!({ "note": "a".repeat(200 * 1024) });
        validate_metadata(&plain).unwrap();
        let controls = serde_json::json!({ "note": "\u{1}".repeat(200 * 1024) });
        assert!(serde_json::to_string(&controls).unwrap().len() > MAX_METADATA_BYTES);
        let error = validate_metadata(&controls).unwrap_err();
        assert!(error.to_string().contains("metadata"), "{error}");
        let quotes = serde_json::json!({ "\"".repeat(140 * 1024): "\\" });
        assert!(validate_metadata(&quotes).is_err());
    }

    #[test]
    fn ids() {
        for bad in ["", "   ", "a\nb", "\u{7}"] {
            assert!(
                validate_id("id", bad)
                    .unwrap_err()
                    .to_string()
                    .contains("id")
            );
        }
        assert!(validate_id("id", &"x".repeat(MAX_ID_LEN + 1)).is_err());
        assert!(validate_id("id", "m-1 ok/ünï").is_ok());
    }

    #[test]
    fn units() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.01, 1.01] {
            let error = validate_unit("weight", bad).unwrap_err();
            assert!(
                matches!(error, MemoryError::InvalidInput { field: ref m, .. } if m.starts_with("weight"))
            );
        }
        for ok in [0.0, 0.5, 1.0] {
            assert!(validate_unit("weight", ok).is_ok());
        }
        assert!(validate_non_negative("w", f64::NAN).is_err());
        assert!(validate_non_negative("w", -1.0).is_err());
        assert!(validate_non_negative("w", 3.0).is_ok());
    }

    #[test]
    fn texts() {
        assert!(validate_text("content", " \n\t", 10).is_err());
        assert!(validate_text("content", "hello world", 5).is_err());
        assert!(validate_text("content", "hello", 5).is_ok());
    }

    /// Normalising a tag again changes nothing, whatever letters it holds (found by the
    /// analyzer fuzz target: 'ℙ' is uppercase without a lowercase form).
    #[test]
    fn tags_normalise_idempotently() {
        let inputs = [
            "GℙSGzG",
            "aℙb",
            "İstanbul",
            "fooİBar",
            "ǅemal",
            "aẞc",
            "ΣΑΣ",
            "x١Y",
            "ᾈbc",
            "Ⅻx",
            "हिन्दी",
            "தமிழ்",
            "cafe\u{301}",
            "Ca\u{301}fe\u{301}Bar",
            "a\u{301}\u{302}",
            "J\u{30C}",
            "T\u{308}",
            "İ\u{301}",
            "xJ\u{30C}Y",
        ];
        for raw in inputs {
            let tag = Tag::new(raw).unwrap_or_else(|error| panic!("{raw:?}: {error}"));
            let again = Tag::new(tag.as_str());
            assert_eq!(
                again.as_ref().ok(),
                Some(&tag),
                "{raw:?} -> {tag:?} -> {again:?}"
            );
        }
        assert_eq!(Tag::new("İstanbul").unwrap().as_str(), "istanbul");
        assert_eq!(Tag::new("J\u{30C}").unwrap().as_str(), "\u{1F0}");
    }

    #[test]
    fn tags_normalise_or_reject() {
        let cases = [
            ("State Graph", Some("state-graph")),
            ("StateGraph", Some("state-graph")),
            ("state-graph", Some("state-graph")),
            ("LANGGRAPH", Some("langgraph")),
            ("gpt4Turbo", Some("gpt4-turbo")),
            ("  a__b--c ", Some("a-b-c")),
            ("状态管理", Some("状态管理")),
            ("हिन्दी", Some("हिन्दी")),
            ("தமிழ்", Some("தமிழ்")),
            ("cafe\u{301}", Some("café")),
            ("\u{301}x", None),
            ("a-\u{301}", None),
            ("", None),
            ("---", None),
            ("c++", None),
            ("a,b", None),
            ("emoji🙂", None),
        ];
        for (raw, expected) in cases {
            match (Tag::new(raw), expected) {
                (Ok(tag), Some(want)) => assert_eq!(tag.as_str(), want, "{raw}"),
                (Err(error), None) => assert!(error.to_string().contains("tag"), "{raw}"),
                (got, want) => panic!("{raw:?}: got {got:?}, wanted {want:?}"),
            }
        }
        assert!(Tag::new(&"a".repeat(65)).is_err());
        let all = Tag::normalize_all(["A", "a", "B"]).unwrap();
        assert_eq!(all, vec![Tag::new("a").unwrap(), Tag::new("b").unwrap()]);
        assert!(serde_json::from_str::<Tag>("\"c++\"").is_err());
        assert_eq!(
            serde_json::from_str::<Tag>("\"Big Tag\"").unwrap(),
            "big-tag"
        );
    }

    #[test]
    fn ids_are_unique_and_ordered() {
        let ids: Vec<String> = (0..1000).map(|_| new_id()).collect();
        // Made one after another: each later than the one before, so none repeats.
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "ids increase with creation"
        );
    }
}
