//! Which hits were found through the context indexed beside them alone: their own words
//! (their content, tags and fact key) hold none of the query's terms
//! ([`RetrieverConfig::context_only_factor`](crate::RetrieverConfig::context_only_factor)).

use memory_core::SearchHit;
use memory_core::text::Analyzer;

/// Which of `hits` hold none of `terms` in their own words (their content, tags and fact
/// key), found through the context indexed beside them alone: as their search told
/// ([`SearchHit::in_own_words`]), or read from the text for a hit whose search did not.
pub(super) fn found_through_context(hits: &[&SearchHit], terms: &[String]) -> Vec<bool> {
    let starts = crate::rerank::TermStarts::of(terms);
    hits.iter()
        .map(|hit| match hit.in_own_words {
            Some(own) => !own,
            None => {
                let item = &hit.item;
                let own = memory_core::search::memory_content_field(
                    &item.content,
                    &item.tags,
                    item.fact_key.as_deref(),
                );
                !text_holds_a_term(&own, terms, &starts)
            }
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
    use memory_core::{MemoryItem, Namespace};

    use super::*;

    fn memory(id: &str, text: &str, context: &str) -> MemoryItem {
        MemoryItem::new(Namespace::parse("n").unwrap(), text)
            .unwrap()
            .with_id(id)
            .unwrap()
            .with_context(context)
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
        let query = "rare vinyl records";
        let terms = Analyzer::default().query_terms(query);
        for (store, _) in super::super::test_stores() {
            let tagged = memory("tagged", "Do they buy them back?", "rare vinyl records")
                .with_tags(["vinyl"])
                .expect("tags");
            for item in [
                memory("own", "Rare records fetch the most.", ""),
                memory("beside", "Do they buy them back?", "rare vinyl records"),
                memory("stemmed", "Collecting VINYL, mostly.", "rare records"),
                tagged,
            ] {
                store.save(item).await.expect("save");
            }
            let search =
                memory_core::SearchQuery::new(Namespace::parse("n").unwrap().exact(), query, 10)
                    .with_own_words();
            let mut found = store.search(&search).await.expect("search");
            found.sort_by(|a, b| a.item.id.cmp(&b.item.id));
            let ids: Vec<&str> = found.iter().map(|hit| hit.item.id.as_str()).collect();
            assert_eq!(ids, ["beside", "own", "stemmed", "tagged"]);
            assert!(found.iter().all(|hit| hit.in_own_words.is_some()), "told");
            let all: Vec<&SearchHit> = found.iter().collect();
            // A tag is the memory's own word.
            assert_eq!(
                found_through_context(&all, &terms),
                [true, false, false, false]
            );
            // What the search tells is taken as told; a hit it told nothing of is read
            // from its text, its tags counted.
            let mut untold: Vec<SearchHit> = found.clone();
            for hit in &mut untold {
                hit.in_own_words = hit.in_own_words.map(|own| !own);
            }
            let flipped: Vec<&SearchHit> = untold.iter().collect();
            assert_eq!(
                found_through_context(&flipped, &terms),
                [false, true, true, true]
            );
            for hit in &mut untold {
                hit.in_own_words = None;
            }
            let read: Vec<&SearchHit> = untold.iter().collect();
            assert_eq!(
                found_through_context(&read, &terms),
                [true, false, false, false]
            );
        }
    }
}
