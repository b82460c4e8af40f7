//! The full-text ranking every backend shares: which text each record indexes, and BM25F
//! over those fields.
//!
//! A memory indexes two fields: its content followed by its tags, and its
//! [context](crate::MemoryItem::context). A page indexes four: title, summary, tags and
//! content. Each field is analysed by [`Analyzer`](crate::text::Analyzer); a field's length
//! is its number of terms.
//!
//! A document's score for a query is the sum, over the query's distinct terms it contains,
//! of `idf · w / (BM25_K1 + w)`, where `w = Σ_fields weight · tf / (1 − B + B · len / avg)`
//! and `idf = ln(1 + (N − df + 0.5) / (df + 0.5))`. `N` is the number of documents and
//! `avg` each field's mean length (at least 1) in the namespace searched; `df` counts the
//! documents holding the term in any field. Every backend ranks with these definitions, so
//! the same records in one namespace are ranked in the same order everywhere.

use std::borrow::Cow;

use crate::{KnowledgePage, MemoryItem, Tag};

/// BM25 term-frequency saturation.
pub const BM25_K1: f32 = 1.2;

/// BM25 length normalisation: 0 ignores length, 1 divides by it fully. Agent memories mix
/// short statements with long replies; 0.5 keeps a long turn from winning by length alone
/// without burying it.
pub const BM25_B: f32 = 0.5;

/// Weight of the context field against the content's weight 1 in full-text ranking (BM25F).
pub const CONTEXT_FIELD_WEIGHT: f32 = 0.3;

/// A memory's field weights: content and tags, context.
pub const MEMORY_FIELD_WEIGHTS: [f32; 2] = [1.0, CONTEXT_FIELD_WEIGHT];

/// A page's field weights: title, summary, tags, content. Title and tags weigh most.
pub const PAGE_FIELD_WEIGHTS: [f32; 4] = [3.0, 2.0, 3.0, 1.0];

/// Which of a query's `terms` a search restricted to the `n` rarest
/// ([`SearchQuery::rarest`](crate::SearchQuery::rarest)) keeps, given each term's document
/// frequency in the namespace searched: the indices of the `n` distinct terms that the
/// fewest documents hold (ties: the earlier term), leaving out terms no document holds and
/// repeats of a term, in the order of `terms`. `df` is asked once per distinct term, with
/// its index in `terms` and the term. Every backend keeps the same terms, so a restricted
/// search ranks the same everywhere.
///
/// A term's frequency counts every document of the namespace, whatever a search's filter,
/// as BM25's does.
pub fn rarest_terms(
    terms: &[String],
    n: usize,
    mut df: impl FnMut(usize, &str) -> u64,
) -> Vec<usize> {
    let mut held: Vec<(u64, usize)> = Vec::with_capacity(terms.len());
    let mut seen: foldhash::HashSet<&str> =
        foldhash::HashSet::with_capacity_and_hasher(terms.len(), Default::default());
    for (index, term) in terms.iter().enumerate() {
        if !seen.insert(term.as_str()) {
            continue;
        }
        let count = df(index, term);
        if count > 0 {
            held.push((count, index));
        }
    }
    if held.len() > n {
        held.select_nth_unstable(n);
        held.truncate(n);
    }
    let mut kept: Vec<usize> = held.into_iter().map(|(_, index)| index).collect();
    kept.sort_unstable();
    kept
}

/// The inverse document frequency of a term found in `df` of `docs` documents; positive.
#[inline(always)]
pub fn bm25_idf(docs: f32, df: f32) -> f32 {
    ((docs - df + 0.5) / (df + 0.5)).ln_1p()
}

/// Each field's length factor `B / avg`, from the documents' total field lengths; a mean
/// under 1 counts as 1.
pub fn length_factors<const N: usize>(docs: f32, total_len: &[u64; N]) -> [f32; N] {
    let mut factors = [0.0f32; N];
    for (factor, total) in factors.iter_mut().zip(total_len) {
        let avg = if docs > 0.0 {
            (*total as f32 / docs).max(1.0)
        } else {
            1.0
        };
        *factor = BM25_B / avg;
    }
    factors
}

/// One term's BM25F score in a document: `idf · w / (K1 + w)`, where `w` sums each field's
/// weighted, length-normalised term frequency (`length_factor` from [`length_factors`]).
#[inline(always)]
pub fn bm25f<const N: usize>(
    weights: &[f32; N],
    length_factor: &[f32; N],
    tf: &[u16; N],
    len: &[u32; N],
    idf: f32,
) -> f32 {
    // `w` kept as a fraction, so a document costs one division, not one per field and one
    // more: scoring is most of a search, and a division takes several times a product. The
    // denominator is the product of the fields' norms, each at most about half a field's
    // length in terms: far inside `f32` for the lengths stored text can have (a test checks
    // four fields of a million terms each against the sum with a division per field).
    let (mut numerator, mut denominator) = (0.0f32, 1.0f32);
    for field in 0..N {
        if tf[field] > 0 {
            let norm = (1.0 - BM25_B) + length_factor[field] * len[field] as f32;
            numerator = numerator * norm + weights[field] * f32::from(tf[field]) * denominator;
            denominator *= norm;
        }
    }
    idf * numerator / (BM25_K1 * denominator + numerator)
}

/// What the indexed fields of a memory and a page hold; persistent backends record it with
/// their index and rebuild an index built when it was different. 1: a memory's content and
/// tags, then its context; a page's title, summary, tags and content. 2: a memory's fact key
/// too ([`memory_content_field`]).
pub const INDEXED_FIELDS_VERSION: u32 = 2;

/// The text of a memory's content field: its content, then its tags, then the words of its
/// fact key (`ava_novak.city` adds "ava novak city"), each separated by a space. The one
/// definition every backend indexes (PostgreSQL rebuilds it from its columns).
///
/// The key is indexed because it says what the memory is about: a question naming the
/// subject or the attribute ("which city does Ava Novak live in?") finds the memory keyed
/// `ava_novak.city` above statements that merely share its words ("Ava Novak's sister
/// lives in Oslo").
pub fn memory_content_field<'a, T: AsRef<str>>(
    content: &'a str,
    tags: &[T],
    fact_key: Option<&str>,
) -> Cow<'a, str> {
    if tags.is_empty() && fact_key.is_none() {
        return Cow::Borrowed(content);
    }
    let key_len = fact_key.map_or(0, |key| key.len() + 1);
    let mut out = String::with_capacity(content.len() + tags.len() * 12 + key_len);
    out.push_str(content);
    for tag in tags {
        out.push(' ');
        out.push_str(tag.as_ref());
    }
    if let Some(key) = fact_key {
        out.push(' ');
        out.extend(
            key.chars()
                .map(|c| if c.is_alphanumeric() { c } else { ' ' }),
        );
    }
    Cow::Owned(out)
}

fn tag_text(tags: &[Tag]) -> Cow<'static, str> {
    Cow::Owned(tags.iter().map(Tag::as_str).collect::<Vec<_>>().join(" "))
}

impl MemoryItem {
    /// The text of each field full-text search indexes, in the order of
    /// [`MEMORY_FIELD_WEIGHTS`]: the content followed by the tags and the words of the fact
    /// key ([`memory_content_field`]), and the context.
    pub fn search_fields(&self) -> [Cow<'_, str>; 2] {
        [
            memory_content_field(&self.content, &self.tags, self.fact_key.as_deref()),
            Cow::Borrowed(self.context()),
        ]
    }
}

impl KnowledgePage {
    /// The text of each field full-text search indexes, in the order of
    /// [`PAGE_FIELD_WEIGHTS`]: title, summary, tags, content.
    pub fn search_fields(&self) -> [Cow<'_, str>; 4] {
        [
            Cow::Borrowed(&self.title),
            Cow::Borrowed(&self.summary),
            tag_text(&self.tags),
            Cow::Borrowed(&self.content),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Namespace;

    #[test]
    fn fields_of_a_memory_and_a_page() {
        let ns = Namespace::parse("t").unwrap();
        let item = MemoryItem::new(ns.clone(), "likes tea")
            .unwrap()
            .with_tags(["drinks", "Morning Routine"])
            .unwrap()
            .with_context("what do you drink?");
        assert_eq!(
            item.search_fields(),
            ["likes tea drinks morning-routine", "what do you drink?"]
        );
        let plain = MemoryItem::new(ns.clone(), "plain").unwrap();
        assert!(matches!(plain.search_fields()[0], Cow::Borrowed("plain")));
        let page = KnowledgePage::new(ns, "p", "Title")
            .unwrap()
            .with_tags(["a", "b"])
            .unwrap();
        assert_eq!(page.search_fields(), ["Title", "", "a b", ""]);
    }

    #[test]
    fn bm25f_follows_its_formula() {
        let factors = length_factors(4.0, &[12, 0]);
        assert_eq!(factors, [BM25_B / 3.0, BM25_B]);
        let idf = bm25_idf(4.0, 1.0);
        assert!((idf - (1.0f32 + 3.5 / 1.5).ln()).abs() < 1e-6);
        let score = bm25f(&MEMORY_FIELD_WEIGHTS, &factors, &[2, 1], &[3, 5], idf);
        let w = 2.0 / (1.0 - BM25_B + BM25_B * 3.0 / 3.0)
            + CONTEXT_FIELD_WEIGHT / (1.0 - BM25_B + BM25_B * 5.0);
        assert!((score - idf * w / (BM25_K1 + w)).abs() < 1e-6);
        assert_eq!(bm25f(&[1.0], &[0.5], &[0], &[3], idf), 0.0);
    }

    #[test]
    fn bm25f_with_one_division_is_the_textbook_sum() {
        // The sum of each field's share, each divided by its norm, as the formula reads.
        fn textbook<const N: usize>(
            weights: &[f32; N],
            factors: &[f32; N],
            tf: &[u16; N],
            len: &[u32; N],
            idf: f32,
        ) -> f64 {
            let w: f64 = (0..N)
                .filter(|field| tf[*field] > 0)
                .map(|field| {
                    let norm =
                        f64::from(1.0 - BM25_B) + f64::from(factors[field]) * f64::from(len[field]);
                    f64::from(weights[field]) * f64::from(tf[field]) / norm
                })
                .sum();
            f64::from(idf) * w / (f64::from(BM25_K1) + w)
        }
        let factors = length_factors(10.0, &[173, 402, 31, 2_000]);
        for tf in [
            [1u16, 0, 0, 0],
            [0, 3, 0, 0],
            [2, 1, 0, 1],
            [7, 9, 4, 65_535],
            [1, 1, 1, 1],
        ] {
            for len in [
                [1u32, 1, 1, 1],
                [17, 40, 3, 200],
                [4_000, 1, 60_000, 9],
                [u32::MAX, 2, 3, 4],
                [1_000_000; 4],
            ] {
                let got = bm25f(&PAGE_FIELD_WEIGHTS, &factors, &tf, &len, 2.5);
                let want = textbook(&PAGE_FIELD_WEIGHTS, &factors, &tf, &len, 2.5);
                assert!(got.is_finite(), "{tf:?} {len:?}");
                assert!(
                    (f64::from(got) - want).abs() <= want.abs() * 1e-5 + 1e-9,
                    "{tf:?} {len:?}: {got} against {want}"
                );
            }
        }
    }

    #[test]
    fn rarest_terms_keep_the_least_frequent_held_terms_in_query_order() {
        let terms: Vec<String> = ["common", "gone", "rare", "mid", "rare", "tie", "other"]
            .map(String::from)
            .to_vec();
        let df = |_: usize, term: &str| match term {
            "common" => 90,
            "gone" => 0,
            "rare" => 2,
            "mid" => 7,
            "tie" | "other" => 5,
            _ => unreachable!("only the query's terms are looked up"),
        };
        assert_eq!(rarest_terms(&terms, 1, df), [2]);
        // "tie" and "other" hold as many documents: the earlier one is kept.
        assert_eq!(rarest_terms(&terms, 2, df), [2, 5]);
        assert_eq!(rarest_terms(&terms, 4, df), [2, 3, 5, 6]);
        // Never a term no document holds, nor a repeat.
        assert_eq!(rarest_terms(&terms, 10, df), [0, 2, 3, 5, 6]);
        assert!(rarest_terms(&terms, 0, df).is_empty());
    }
}
