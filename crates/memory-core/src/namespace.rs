//! Hierarchical namespaces: the tenant boundary of every stored record.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::{MemoryError, Result};

/// Longest namespace accepted, in bytes of its `a/b/c` form.
pub const MAX_NAMESPACE_LEN: usize = 512;
/// Most segments a namespace may have.
pub const MAX_NAMESPACE_DEPTH: usize = 16;

/// A hierarchical namespace such as `user-42/agent-a/session-7`.
///
/// Every stored record belongs to exactly one namespace. Segments are non-empty and made of
/// ASCII letters, digits and `-`, `_`, `.`, `:`, `@`; the separator is `/`. The empty
/// namespace is the *root*: it is never the namespace of a record, only a [`Scope`] that
/// covers everything (for administration and export).
///
/// The text is shared: a clone, made for every record, hit, filter and recall event that
/// names the namespace, copies a pointer, not the text.
///
/// ```
/// use memory_core::Namespace;
/// let ns = Namespace::parse("user-42/agent-a/session-7")?;
/// assert_eq!(ns.segments().count(), 3);
/// assert!(Namespace::parse("user-42")?.is_ancestor_of(&ns));
/// assert!(Namespace::parse("user-4").map(|p| !p.is_ancestor_of(&ns))?);
/// assert!(Namespace::parse("user 42").is_err());
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Namespace(Arc<str>);

impl Namespace {
    /// The root namespace, which holds no records and, as a scope, covers all of them.
    pub fn root() -> Self {
        static ROOT: OnceLock<Arc<str>> = OnceLock::new();
        Self(Arc::clone(ROOT.get_or_init(|| Arc::from(""))))
    }

    /// Parses `a/b/c`. Leading and trailing `/` and surrounding whitespace are trimmed.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `namespace` when a segment is empty, has a
    /// character outside `[A-Za-z0-9._:@-]`, or the whole is longer than
    /// [`MAX_NAMESPACE_LEN`] bytes or deeper than [`MAX_NAMESPACE_DEPTH`].
    pub fn parse(text: &str) -> Result<Self> {
        let trimmed = text.trim().trim_matches('/');
        if trimmed.is_empty() {
            return Ok(Self::root());
        }
        if trimmed.len() > MAX_NAMESPACE_LEN {
            return Err(MemoryError::invalid(
                "namespace",
                format!("longer than {MAX_NAMESPACE_LEN} bytes"),
            ));
        }
        let mut depth = 0;
        for segment in trimmed.split('/') {
            depth += 1;
            validate_segment(segment)?;
        }
        if depth > MAX_NAMESPACE_DEPTH {
            return Err(MemoryError::invalid(
                "namespace",
                format!("deeper than {MAX_NAMESPACE_DEPTH} segments"),
            ));
        }
        Ok(Self(Arc::from(trimmed)))
    }

    /// Builds a namespace from its segments.
    ///
    /// # Errors
    /// As [`Namespace::parse`]; a segment containing `/` is rejected.
    pub fn from_segments<I, S>(segments: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut joined = String::new();
        for segment in segments {
            let segment = segment.as_ref();
            validate_segment(segment)?;
            if !joined.is_empty() {
                joined.push('/');
            }
            joined.push_str(segment);
        }
        Self::parse(&joined)
    }

    /// The child namespace `self/segment`.
    ///
    /// # Errors
    /// As [`Namespace::parse`].
    pub fn child(&self, segment: &str) -> Result<Self> {
        validate_segment(segment)?;
        if self.is_root() {
            Self::parse(segment)
        } else {
            Self::parse(&format!("{}/{segment}", self.0))
        }
    }

    /// The `a/b/c` form; empty for the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the root namespace.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|segment| !segment.is_empty())
    }

    /// The enclosing namespace, `None` for the root.
    pub fn parent(&self) -> Option<Self> {
        if self.is_root() {
            return None;
        }
        Some(match self.0.rfind('/') {
            Some(cut) => Self(Arc::from(&self.0[..cut])),
            None => Self::root(),
        })
    }

    /// Whether `self` equals `other` or encloses it, segment by segment
    /// (`user-4` does not enclose `user-42`).
    pub fn is_ancestor_of(&self, other: &Namespace) -> bool {
        if self.is_root() {
            return true;
        }
        match other.0.strip_prefix(&*self.0) {
            Some(rest) => rest.is_empty() || rest.starts_with('/'),
            None => false,
        }
    }

    /// A scope of exactly this namespace.
    pub fn exact(&self) -> Scope {
        Scope {
            namespace: self.clone(),
            descendants: false,
        }
    }

    /// A scope of this namespace and every namespace under it.
    pub fn subtree(&self) -> Scope {
        Scope {
            namespace: self.clone(),
            descendants: true,
        }
    }

    /// Errors unless this namespace may hold records (it is not the root).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `namespace` for the root.
    pub fn require_record_namespace(&self) -> Result<()> {
        if self.is_root() {
            Err(MemoryError::invalid(
                "namespace",
                "records need a non-empty namespace",
            ))
        } else {
            Ok(())
        }
    }
}

fn validate_segment(segment: &str) -> Result<()> {
    if segment.is_empty() {
        return Err(MemoryError::invalid("namespace", "empty segment"));
    }
    if let Some(bad) = segment
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '@')))
    {
        return Err(MemoryError::invalid(
            "namespace",
            format!(
                "segment {segment:?} has the character {bad:?}; allowed are A-Z a-z 0-9 - _ . : @"
            ),
        ));
    }
    Ok(())
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Namespace({:?})", self.0)
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            f.write_str("/")
        } else {
            f.write_str(&self.0)
        }
    }
}

impl TryFrom<String> for Namespace {
    type Error = MemoryError;
    fn try_from(value: String) -> Result<Self> {
        Self::parse(&value)
    }
}

impl TryFrom<&str> for Namespace {
    type Error = MemoryError;
    fn try_from(value: &str) -> Result<Self> {
        Self::parse(value)
    }
}

impl From<Namespace> for String {
    fn from(value: Namespace) -> Self {
        value.0.to_string()
    }
}

impl std::str::FromStr for Namespace {
    type Err = MemoryError;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

/// Which namespaces a read covers: one namespace, or it and all under it.
///
/// Every list, search and count takes a scope and never returns a record outside it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    /// The namespace the scope starts at.
    pub namespace: Namespace,
    /// Whether namespaces under `namespace` are included.
    pub descendants: bool,
}

impl Scope {
    /// Every namespace (the root's subtree).
    pub fn all() -> Self {
        Namespace::root().subtree()
    }

    /// Whether a record in `namespace` lies in this scope.
    pub fn contains(&self, namespace: &Namespace) -> bool {
        if self.descendants {
            self.namespace.is_ancestor_of(namespace)
        } else {
            &self.namespace == namespace
        }
    }
}

impl From<Namespace> for Scope {
    fn from(namespace: Namespace) -> Self {
        Scope {
            namespace,
            descendants: false,
        }
    }
}

impl From<&Namespace> for Scope {
    fn from(namespace: &Namespace) -> Self {
        namespace.exact()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_and_rejects() {
        let ok = ["a", "user-42/agent-a/session-7", " /x/y/ ", "a.b:c@d_e"];
        for text in ok {
            assert!(Namespace::parse(text).is_ok(), "{text}");
        }
        let bad = ["a//b", "a/ b", "用户", "a/b\tc", "a\0"];
        for text in bad {
            let error = Namespace::parse(text).unwrap_err();
            assert!(error.to_string().contains("namespace"), "{text}: {error}");
        }
        assert!(Namespace::parse(&"a/".repeat(17)).is_err());
        assert!(Namespace::parse(&"a".repeat(600)).is_err());
    }

    #[test]
    fn ancestry_is_segment_wise() {
        let ns = Namespace::parse("user-42/agent").unwrap();
        assert!(Namespace::parse("user-42").unwrap().is_ancestor_of(&ns));
        assert!(!Namespace::parse("user-4").unwrap().is_ancestor_of(&ns));
        assert!(Namespace::root().is_ancestor_of(&ns));
        assert!(ns.is_ancestor_of(&ns));
        assert_eq!(ns.parent().unwrap().as_str(), "user-42");
        assert!(Namespace::parse("x").unwrap().parent().unwrap().is_root());
        assert_eq!(ns.child("s1").unwrap().as_str(), "user-42/agent/s1");
        assert!(ns.child("a/b").is_err());
    }

    #[test]
    fn scope_contains() {
        let ns = Namespace::parse("u/a").unwrap();
        let deeper = Namespace::parse("u/a/s").unwrap();
        assert!(ns.exact().contains(&ns));
        assert!(!ns.exact().contains(&deeper));
        assert!(ns.subtree().contains(&deeper));
        assert!(Scope::all().contains(&deeper));
    }

    #[test]
    fn serde_validates() {
        let ns: Namespace = serde_json::from_str("\"u/a\"").unwrap();
        assert_eq!(serde_json::to_string(&ns).unwrap(), "\"u/a\"");
        assert!(serde_json::from_str::<Namespace>("\"u//a\"").is_err());
    }
}
