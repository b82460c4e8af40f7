//! Page search on SQLite: the match rules lift title and tag matches above content matches,
//! and the pruned walk ranks exactly as the in-memory knowledge store does.

use memory_core::{KnowledgePage, KnowledgeStore, Namespace, PageQuery};
use memory_sqlite::SqliteBackend;

use crate::common::Xorshift;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_search_ranks_title_and_tags_above_content() {
    let backend = SqliteBackend::open_in_memory().unwrap();
    let pages = backend.knowledge_store();
    let ns = Namespace::parse("kb").unwrap();
    let page = |id: &str, title: &str, tags: &[&str], content: &str| {
        KnowledgePage::new(ns.clone(), id, title)
            .unwrap()
            .with_tags(tags.iter().copied())
            .unwrap()
            .with_content(content)
    };
    pages
        .add_page(page("body", "Cooking", &[], "mentions borrowing once"))
        .await
        .unwrap();
    pages
        .add_page(page("title", "Borrowing rules", &["rust"], ""))
        .await
        .unwrap();
    pages
        .add_page(page("tag", "Ownership", &["borrowing"], ""))
        .await
        .unwrap();
    let hits = pages
        .search(&PageQuery::new(ns.exact(), "borrowing", 10))
        .await
        .unwrap();
    let ids: Vec<&str> = hits.iter().map(|hit| hit.page.id.as_str()).collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[2], "body", "content-only match ranks last: {ids:?}");
    assert!(hits[0].signals.title_prefix || hits[0].signals.tag_exact);
}

/// Page search over many pages ranks as the in-memory store does, scores and ties included,
/// whatever `top_k` and tag filter: pages whose title, tags or summary match the query
/// (boosted by up to 2.25) overtake pages with a better BM25F score, so the pages found
/// first by BM25F alone do not decide the cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_page_search_ranks_boosted_pages_as_in_memory() {
    use memory_core::{Scope, Tag};
    use memory_inmem::InMemoryKnowledgeStore;
    const WORDS: [&str; 12] = [
        "apple", "river", "stone", "garden", "violin", "coffee", "winter", "letter", "bread",
        "market", "quiet", "bright",
    ];
    let dir = std::env::temp_dir().join(format!("fts-pages-{}", memory_core::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sqlite = SqliteBackend::open(dir.join("pages.db")).unwrap();
    let memory = InMemoryKnowledgeStore::new();
    let spaces = ["kb/a", "kb/b"].map(|ns| Namespace::parse(ns).unwrap());
    let mut rng = Xorshift(0x2545_F491_4F6C_DD1D);
    for i in 0..1200 {
        let words = |rng: &mut Xorshift, most: usize| -> Vec<&str> {
            let length = 1 + rng.below(most);
            (0..length)
                .map(|_| {
                    // Skewed: low words are frequent, high ones rare.
                    let spread = 1 + rng.below(WORDS.len());
                    WORDS[rng.below(spread)]
                })
                .collect()
        };
        let ns = &spaces[usize::from(rng.below(3) == 0)];
        let title = words(&mut rng, 3).join(" ");
        let summary = if rng.below(3) == 0 {
            words(&mut rng, 4).join(" ")
        } else {
            String::new()
        };
        let tags: Vec<String> = if rng.below(4) == 0 {
            vec![WORDS[rng.below(WORDS.len())].to_owned()]
        } else {
            Vec::new()
        };
        let content = words(&mut rng, if i % 5 == 0 { 40 } else { 8 }).join(" ");
        let page = KnowledgePage::new(ns.clone(), format!("p{:03}-{i:04}", rng.below(300)), title)
            .unwrap()
            .with_tags(tags)
            .unwrap()
            .with_summary(summary)
            .with_content(content);
        sqlite
            .knowledge_store()
            .add_page(page.clone())
            .await
            .unwrap();
        memory.add_page(page).await.unwrap();
    }
    let kb = Namespace::parse("kb").unwrap();
    for scope in [spaces[0].exact(), kb.subtree(), Scope::all()] {
        for text in [
            "apple",
            "bright",
            "river quiet",
            "winter letter bread",
            "garden violin",
        ] {
            for top_k in [1, 5, 10, 50, 2000] {
                for tags in [Vec::new(), vec![Tag::new("apple").unwrap()]] {
                    let mut query = PageQuery::new(scope.clone(), text, top_k);
                    query.tags = tags.clone();
                    let hits = |hits: Vec<memory_core::PageHit>| {
                        hits.into_iter()
                            .map(|hit| {
                                (
                                    hit.page.namespace.to_string(),
                                    hit.page.id.clone(),
                                    hit.score.to_bits(),
                                )
                            })
                            .collect::<Vec<_>>()
                    };
                    let expected = hits(memory.search(&query).await.unwrap());
                    assert!(
                        !expected.is_empty() || !tags.is_empty(),
                        "{text:?} in {scope:?}"
                    );
                    assert_eq!(
                        hits(sqlite.knowledge_store().search(&query).await.unwrap()),
                        expected,
                        "{text:?} top {top_k} in {scope:?}, tags {tags:?}"
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
