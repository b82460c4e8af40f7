//! Text analysis for the full-text index: the shared analyzer, a record's terms with their
//! frequency in each field, the compact form a record's terms are stored in, and the query
//! terms bound to a search.

use foldhash::{HashMap, HashMapExt};
use memory_core::text::Analyzer;

use crate::error::corrupt;

/// The analyzer every SQLite index and query uses: the same as every other backend's.
pub(crate) fn analyzer() -> Analyzer {
    Analyzer::default()
}

/// A fingerprint of the shared analyzer's behaviour. The index holds analyzed terms, so a
/// database indexed by an analyzer with another fingerprint is re-indexed on open (see
/// `schema::index_fingerprint`).
pub(crate) fn analyzer_fingerprint() -> String {
    analyzer().fingerprint()
}

/// The analyzed terms of a record's `N` fields: each distinct term with its frequency per
/// field, and each field's length (its number of terms, duplicates included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Analyzed<const N: usize> {
    /// Distinct terms in byte order, each with its frequency per field (at most `u16::MAX`).
    pub(crate) terms: Vec<(String, [u16; N])>,
    /// Each field's number of terms.
    pub(crate) len: [u32; N],
}

impl<const N: usize> Analyzed<N> {
    /// Analyzes the text of each field.
    pub(crate) fn new(fields: [&str; N]) -> Self {
        let analyzer = analyzer();
        // About one distinct term per eight bytes of text: sized once, not grown term by term.
        let text_len: usize = fields.iter().map(|text| text.len()).sum();
        let mut counts: HashMap<String, [u16; N]> = HashMap::with_capacity(text_len / 8);
        let mut len = [0u32; N];
        for (field, text) in fields.iter().enumerate() {
            analyzer.for_each_term(text, |term| {
                len[field] = len[field].saturating_add(1);
                let tf = match counts.get_mut(term) {
                    Some(tf) => tf,
                    None => counts.entry(term.to_owned()).or_insert([0; N]),
                };
                tf[field] = tf[field].saturating_add(1);
            });
        }
        let mut terms: Vec<(String, [u16; N])> = counts.into_iter().collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Self { terms, len }
    }

    /// The stored form of the terms (`docs.terms`): per term, its length in bytes (one
    /// byte), its bytes, and its frequency in each field (`u16`, little-endian). Terms are
    /// at most [`MAX_TERM_BYTES`](memory_core::text::MAX_TERM_BYTES) long.
    pub(crate) fn encode_terms(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.terms.len() * (8 + 2 * N));
        for (term, tf) in &self.terms {
            let bytes = term.as_bytes();
            let bytes = &bytes[..bytes.len().min(usize::from(u8::MAX))];
            out.push(u8::try_from(bytes.len()).unwrap_or(u8::MAX));
            out.extend_from_slice(bytes);
            for count in tf {
                out.extend_from_slice(&count.to_le_bytes());
            }
        }
        out
    }
}

/// The terms of a stored `docs.terms` value ([`Analyzed::encode_terms`]), in order.
///
/// # Errors
/// [`MemoryError::Serialization`](memory_core::MemoryError::Serialization) when the value is
/// cut short or a term is not UTF-8.
pub(crate) fn decode_terms<const N: usize>(
    rid: i64,
    mut bytes: &[u8],
) -> memory_core::Result<Vec<&str>> {
    let what = || format!("the index terms of row {rid}");
    let mut out = Vec::new();
    while let Some((&len, rest)) = bytes.split_first() {
        let len = usize::from(len);
        let Some((term, rest)) = rest.split_at_checked(len) else {
            return Err(corrupt(what(), "a term is cut short"));
        };
        let Some(rest) = rest.get(2 * N..) else {
            return Err(corrupt(what(), "term frequencies are cut short"));
        };
        out.push(std::str::from_utf8(term).map_err(|error| corrupt(what(), error))?);
        bytes = rest;
    }
    Ok(out)
}

/// A query's terms as a search reads them: the distinct terms of the text
/// ([`Analyzer::query_terms`], at most
/// [`MAX_QUERY_TERMS`](memory_core::text::MAX_QUERY_TERMS)), each bound to the statement
/// that reads its blocks, so a statement's text never depends on the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct QueryTerms {
    /// The distinct terms, in the query's order.
    pub(crate) terms: Vec<String>,
    /// Search each namespace with only this many of them, its rarest
    /// (`SearchQuery::rarest`).
    pub(crate) rarest: Option<usize>,
}

impl QueryTerms {
    /// The terms of `text`; `None` when it has no searchable term.
    #[cfg(test)]
    pub(crate) fn new(text: &str) -> Option<Self> {
        Self::of(&analyzer().query_terms(text))
    }

    /// Analysed `terms` (a query's, see `SearchQuery::analysed_terms`); `None` when there is
    /// none.
    pub(crate) fn of(terms: &[String]) -> Option<Self> {
        if terms.is_empty() {
            return None;
        }
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let distinct: Vec<String> = terms
            .iter()
            .filter(|term| seen.insert(term.as_str()))
            .cloned()
            .collect();
        Some(Self {
            terms: distinct,
            rarest: None,
        })
    }

    /// These terms, each namespace searched with only its `rarest` ones (`None`: all).
    pub(crate) fn with_rarest(mut self, rarest: Option<usize>) -> Self {
        self.rarest = rarest;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_and_encoded() {
        let doc = Analyzed::new(["Cats, cats and a dog", "cat food"]);
        assert_eq!(doc.len, [3, 2]);
        assert_eq!(
            doc.terms,
            [
                ("cat".to_owned(), [2, 1]),
                ("dog".to_owned(), [1, 0]),
                ("food".to_owned(), [0, 1]),
            ]
        );
        let bytes = doc.encode_terms();
        assert_eq!(
            decode_terms::<2>(1, &bytes).unwrap(),
            ["cat", "dog", "food"]
        );
        assert!(decode_terms::<2>(1, &bytes[..bytes.len() - 1]).is_err());
        assert!(decode_terms::<2>(1, &[9, b'a']).is_err());
        assert_eq!(Analyzed::<1>::new([""]).encode_terms(), Vec::<u8>::new());
    }

    #[test]
    fn query_terms_are_distinct_analysed_terms() {
        let terms = QueryTerms::new("AND OR NEAR( \"unbalanced").unwrap();
        assert_eq!(terms.terms, ["near", "unbalanc"]);
        assert_eq!(QueryTerms::new("the of 🙂"), None);
        assert_eq!(QueryTerms::new(""), None);
        assert_eq!(
            QueryTerms::new("状态管理").map(|t| t.terms),
            Some(vec![
                "状态".to_owned(),
                "态管".to_owned(),
                "管理".to_owned()
            ])
        );
        let repeated = QueryTerms::of(&["cat".to_owned(), "dog".to_owned(), "cat".to_owned()]);
        assert_eq!(
            repeated.map(|t| t.terms),
            Some(vec!["cat".to_owned(), "dog".to_owned()])
        );
    }
}
