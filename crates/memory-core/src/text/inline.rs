//! [`InlineStr`]: a short string kept in place, for the keys and values of the hash tables
//! that analysis reads once per word.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};

use compact_str::CompactString;

/// Text of up to 24 bytes kept in place, longer text on the heap; 24 bytes either way.
///
/// A hash table keyed by `Box<str>` follows a pointer to compare every key it probes, and
/// one holding `Box<str>` values follows another to read the value found: two reads of
/// memory far from the table for each word looked up, which is most of what a lookup costs
/// once the table outgrows the processor's caches. Words and stems are nearly all shorter
/// than 25 bytes, so kept in place they are compared and read where the table's entry is.
/// It hashes and compares as the `str` it holds, so a table keyed by it is looked up with a
/// `&str`.
///
/// The text is a [`CompactString`], whose read back is a slice worked out without a branch
/// on the length and without checking the bytes again: an earlier version of this type,
/// written here without unsafe code, had to check its bytes as UTF-8 each time it was read
/// (every probe of a table compares a key read back), which was a tenth of the
/// instructions of a `remember`.
#[derive(Clone, Default)]
pub struct InlineStr(CompactString);

impl InlineStr {
    /// `text`, in place when it is at most 24 bytes long.
    pub fn new(text: &str) -> Self {
        Self(CompactString::new(text))
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The text's length in bytes, read without following a pointer.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&str> for InlineStr {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl std::ops::Deref for InlineStr {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for InlineStr {
    #[inline]
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for InlineStr {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for InlineStr {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for InlineStr {}

impl PartialEq<str> for InlineStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl Hash for InlineStr {
    /// As the `str` it holds (so that a table keyed by it is looked up with a `&str`).
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for InlineStr {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InlineStr {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for InlineStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for InlineStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::InlineStr;

    #[test]
    fn short_and_long_text_read_back_and_look_up_as_str() {
        let texts = [
            "",
            "a",
            "exactly twenty-two b.",
            "exactly twenty-two by",
            "twenty-three bytes long",
            "exactly twenty-four byte",
            "twenty-five bytes of text",
            "é is two bytes: ééééééé",
            "a much longer text that lives on the heap",
        ];
        let mut table = HashMap::new();
        for (at, text) in texts.iter().enumerate() {
            let kept = InlineStr::new(text);
            assert_eq!(kept.as_str(), *text);
            assert_eq!(kept.len(), text.len());
            assert_eq!(kept.is_empty(), text.is_empty());
            assert_eq!(&*kept, *text);
            table.insert(kept, at);
        }
        for (at, text) in texts.iter().enumerate() {
            assert_eq!(table.get(*text), Some(&at), "{text:?}");
        }
        assert_eq!(table.get("absent"), None);
        assert!(InlineStr::new("abc") < InlineStr::new("abd"));
        assert_eq!(format!("{:?}", InlineStr::new("x\"y")), "\"x\\\"y\"");
    }

    #[test]
    fn it_takes_as_much_room_as_a_string() {
        assert_eq!(std::mem::size_of::<InlineStr>(), 24);
        assert_eq!(std::mem::size_of::<Option<InlineStr>>(), 24);
    }
}
