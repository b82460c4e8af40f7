//! Which hits were found through the context indexed beside them alone: their own words
//! (their content) hold none of the query's terms
//! ([`RetrieverConfig::context_only_factor`](crate::RetrieverConfig::context_only_factor)).

use memory_core::text::Analyzer;
use memory_core::{MemoryStore, Namespace, SearchHit};

/// Which of `hits` hold none of `terms` in their own words (their content), found through
/// the context indexed beside them alone. Asked of the store's index in one call ([`MemoryStore::content_holds_terms`]); the text
/// is analysed for a memory the store cannot tell of, or all of them when it fails.
pub(super) async fn found_through_context(
    memory: &dyn MemoryStore,
    hits: &[&SearchHit],
    terms: &[String],
) -> Vec<bool> {
    let keys: Vec<(&Namespace, &str)> = hits
        .iter()
        .map(|hit| (&hit.item.namespace, hit.item.id.as_str()))
        .collect();
    let told = crate::retriever::told_by_store(
        memory.content_holds_terms(&keys, terms).await,
        keys.len(),
        "which contents hold terms",
    );
    let starts = crate::rerank::TermStarts::of(terms);
    hits.iter()
        .zip(told)
        .map(|(hit, holds)| match holds {
            Some(holds) => !holds,
            None => !text_holds_a_term(&hit.item.content, terms, &starts),
        })
        .collect()
}

/// Whether `text` holds one of `terms` ([`Analyzer::term_positions`] finds one): only the
/// words that may stem to one of them (`starts`) are stemmed, and none once one is found.
fn text_holds_a_term(text: &str, terms: &[String], starts: &crate::rerank::TermStarts) -> bool {
    let holds = std::cell::Cell::new(false);
    Analyzer::default().for_each_term_where(
        text,
        |first, second| !holds.get() && starts.may_start(first, second),
        |term| {
            if terms.iter().any(|sought| sought == term) {
                holds.set(true);
            }
        },
        || {},
    );
    holds.get()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use memory_core::MemoryItem;

    use super::*;

    fn hit(id: &str, text: &str, context: &str) -> SearchHit {
        let item = MemoryItem::new(Namespace::parse("n").unwrap(), text)
            .unwrap()
            .with_id(id)
            .unwrap()
            .with_context(context);
        SearchHit {
            item: Arc::new(item),
            score: 1.0,
        }
    }

    #[test]
    fn a_text_holds_a_term_as_the_analyzer_reads_it() {
        let analyzer = Analyzer::default();
        let texts = [
            "Rare records fetch the most.",
            "I went running with the owners' dogs",
            "Nothing of the kind",
            "Caroline's café, by the RIVER",
            "the dying embers; a day's work",
            "",
        ];
        for query in [
            "rare vinyl records",
            "go run owner",
            "river cafe",
            "die day",
            "zebra",
        ] {
            let terms = analyzer.query_terms(query);
            let starts = crate::rerank::TermStarts::of(&terms);
            for text in texts {
                assert_eq!(
                    text_holds_a_term(text, &terms, &starts),
                    !analyzer.term_positions(text, &terms).is_empty(),
                    "{query:?} in {text:?}"
                );
            }
        }
    }

    #[tokio::test]
    async fn a_memory_whose_own_words_hold_no_query_term_is_told_apart() {
        let terms = Analyzer::default().query_terms("rare vinyl records");
        for (store, tells) in super::super::test_stores() {
            let stored = [
                hit("own", "Rare records fetch the most.", ""),
                hit("beside", "Do they buy them back?", "rare vinyl records"),
                hit("stemmed", "Collecting VINYL, mostly.", "rare records"),
            ];
            for hit in &stored {
                store.save((*hit.item).clone()).await.expect("save");
            }
            let all: Vec<&SearchHit> = stored.iter().collect();
            assert_eq!(
                found_through_context(store.as_ref(), &all, &terms).await,
                [false, true, false]
            );
            // A memory the store does not hold is read from its text.
            let gone = hit("gone", "Nothing of the kind.", "rare vinyl");
            assert_eq!(
                found_through_context(store.as_ref(), &[&gone], &terms).await,
                [true]
            );
            // A hit whose text changed since it was stored is judged by the store's index
            // where the store tells, by its text where it does not.
            let changed = hit("own", "Nothing of the kind.", "");
            assert_eq!(
                found_through_context(store.as_ref(), &[&changed], &terms).await,
                [!tells]
            );
        }
    }
}
