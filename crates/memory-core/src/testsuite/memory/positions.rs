//! Conformance of [`MemoryStore::term_positions`]: a store may tell nothing, but what it
//! tells is what the analyzer reads in the memory's content, and only in its namespace.

use super::{item, must};
use crate::text::Analyzer;
use crate::{MemoryStore, Namespace, SearchQuery, TermPositions};

/// Where `terms` stand in `content`, by the default analyzer's reading: the reference a
/// store's answer must equal.
fn read(content: &str, terms: &[String]) -> TermPositions {
    Analyzer::default().term_positions(content, terms)
}

async fn ask(
    store: &dyn MemoryStore,
    memories: &[(&Namespace, &str)],
    terms: &[String],
) -> Vec<Option<TermPositions>> {
    must(store.term_positions(memories, terms), "term_positions").await
}

pub(super) async fn term_positions(store: &dyn MemoryStore, ns: &Namespace) {
    let other = super::child(ns, "other");
    let plain = "The cat's owner said cats were running; a running café cat (猫) ran \
        through Straße after the cats, and the owner ran too";
    let changed = "Nobody owned a cat here: only dogs, running dogs";
    must(store.save(item(ns, "plain", plain, 0)), "save").await;
    let tagged = item(ns, "tagged", "the cat sat on the running mat", 1)
        .with_tags(["cats"])
        .unwrap_or_else(|error| panic!("conformance: tags: {error}"));
    must(store.save(tagged), "save tagged").await;
    must(
        store.save(item(&other, "elsewhere", plain, 2)),
        "save other",
    )
    .await;
    // Repeats, a term no memory holds, and more terms than a short scan looks through.
    let mut terms = Analyzer::default().query_terms("cats running owner café Straße 猫 ran");
    terms.push("cat".into());
    terms.extend(["zebra", "through", "after", "too", "said", "nobody"].map(String::from));
    let answers = ask(
        store,
        &[
            (ns, "plain"),
            (ns, "tagged"),
            (ns, "missing"),
            (&other, "tagged"),
            (&other, "elsewhere"),
        ],
        &terms,
    )
    .await;
    assert_eq!(answers.len(), 5, "one answer per memory asked");
    if let Some(found) = &answers[0] {
        assert_eq!(
            found,
            &read(plain, &terms),
            "positions as the analyzer reads them"
        );
        assert!(!found.is_empty(), "the content holds the terms");
    }
    if let Some(found) = &answers[1] {
        assert_eq!(
            found,
            &read("the cat sat on the running mat", &terms),
            "positions in the content, not in the tags"
        );
    }
    assert_eq!(
        answers[2], None,
        "no positions for a memory that does not exist"
    );
    assert_eq!(
        answers[3], None,
        "no positions for a memory of another namespace"
    );
    if let Some(found) = &answers[4] {
        assert_eq!(
            found,
            &read(plain, &terms),
            "each namespace its own memories"
        );
    }
    // A replaced memory is read anew; a deleted one is gone.
    must(store.save(item(ns, "plain", changed, 0)), "replace").await;
    if let Some(found) = &ask(store, &[(ns, "plain")], &terms).await[0] {
        assert_eq!(
            found,
            &read(changed, &terms),
            "positions of the new content"
        );
    }
    must(store.delete(ns, "plain"), "delete").await;
    assert_eq!(
        ask(store, &[(ns, "plain")], &terms).await,
        vec![None],
        "deleted"
    );
    assert!(
        ask(store, &[], &terms).await.is_empty(),
        "nothing asked, nothing told"
    );
}

/// Conformance of [`SearchHit::in_own_words`](crate::SearchHit::in_own_words): a store may
/// tell nothing, but what it tells is whether a term the hit was scored by is in its own
/// words (content, tags), not only in the context indexed beside it, as the memory stands
/// now.
pub(super) async fn own_words(store: &dyn MemoryStore, ns: &Namespace) {
    let told = "The owners were running after their cats";
    let beside = "Do they sell them back later?";
    must(store.save(item(ns, "told", told, 0)), "save").await;
    let context = "cats running after their owners";
    must(
        store.save(item(ns, "beside", beside, 1).with_context(context)),
        "save beside",
    )
    .await;
    let tagged = item(ns, "tagged", beside, 2)
        .with_context(context)
        .with_tags(["cats"])
        .unwrap_or_else(|error| panic!("conformance: tags: {error}"));
    must(store.save(tagged), "save tagged").await;
    let told_of = |hits: &[crate::SearchHit], id: &str| {
        let hit = hits.iter().find(|hit| hit.item.id == id);
        hit.unwrap_or_else(|| panic!("conformance: {id} is found"))
            .in_own_words
    };
    let search = SearchQuery::new(ns.exact(), "cat runs owner zebra", 10).with_own_words();
    let hits = must(store.search(&search), "search").await;
    assert_eq!(hits.len(), 3, "each memory holds a term somewhere");
    for (id, own, what) in [
        (
            "told",
            true,
            "the content holds the terms, as the analyzer reads them",
        ),
        ("beside", false, "the context alone holds them"),
        ("tagged", true, "a tag is the memory's own word"),
    ] {
        if let Some(told) = told_of(&hits, id) {
            assert_eq!(told, own, "conformance: in_own_words of {id}: {what}");
        }
    }
    // A replaced memory is read anew.
    must(
        store.save(item(ns, "beside", "The cat came back", 1).with_context(context)),
        "replace",
    )
    .await;
    let hits = must(store.search(&search), "search again").await;
    if let Some(told) = told_of(&hits, "beside") {
        assert!(told, "conformance: the new content holds a term");
    }
}
