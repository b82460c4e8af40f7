//! Full-text search: hostile query text, Chinese and Japanese, ranking against the in-memory
//! backend, and search combined with filters.

use memory_core::{
    KnowledgePage, KnowledgeStore, MemoryFilter, MemoryKind, MemoryStore, Namespace, PageQuery,
    SearchQuery,
};
use memory_inmem::{InMemoryKnowledgeStore, InMemoryStore};

use crate::common::{item, schema_or_skip};

const HOSTILE: &[&str] = &[
    "AND OR NEAR( \"unbalanced",
    "title:x*",
    "a & b | !c",
    "a &",
    "| b",
    "!",
    "(",
    "<->",
    "<2> a",
    "x:*",
    "'",
    "''",
    "'quoted'",
    "\"",
    "\\",
    "\\'",
    "back\\slash",
    "it's o'clock",
    "%_%",
    "$1",
    "'; DROP TABLE memories; --",
    "\0",
    "nul\0byte",
    "🙂",
    "",
    "   ",
    "the of and",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_query_text_never_errors_and_is_never_syntax() {
    let schema = schema_or_skip!("fts_hostile");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let pages = backend.knowledge_store();
    let ns = Namespace::parse("fts/hostile").unwrap();
    let docs = [
        ("q1", "a and b or c near the title"),
        ("q2", "it's o'clock, back\\slash and \"quotes\""),
        ("q3", "DROP TABLE memories is just text here"),
        ("q4", "title x star"),
    ];
    for (id, text) in docs {
        store.save(item(&ns, id, text)).await.unwrap();
        pages
            .add_page(
                KnowledgePage::new(ns.clone(), id, text)
                    .unwrap()
                    .with_content(text),
            )
            .await
            .unwrap();
    }
    for text in HOSTILE {
        let hits = store.search(&SearchQuery::new(ns.exact(), *text, 10)).await;
        assert!(hits.is_ok(), "memory search of {text:?} failed: {hits:?}");
        let hits = pages.search(&PageQuery::new(ns.exact(), *text, 10)).await;
        assert!(hits.is_ok(), "page search of {text:?} failed: {hits:?}");
    }
    let ids = |hits: Vec<memory_core::SearchHit>| {
        let mut ids: Vec<String> = hits.into_iter().map(|hit| hit.item.id.clone()).collect();
        ids.sort();
        ids
    };
    // Operators are words, not syntax: "near" and "title" are searched for.
    let hits = store
        .search(&SearchQuery::new(
            ns.exact(),
            "AND OR NEAR( \"unbalanced",
            10,
        ))
        .await
        .unwrap();
    assert_eq!(ids(hits), ["q1"]);
    let hits = store
        .search(&SearchQuery::new(
            ns.exact(),
            "'; DROP TABLE memories; --",
            10,
        ))
        .await
        .unwrap();
    assert_eq!(
        ids(hits),
        ["q3"],
        "an injection attempt is a search for its words"
    );
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "o'clock back\\slash", 10))
        .await
        .unwrap();
    assert_eq!(ids(hits), ["q2"]);
    assert_eq!(
        store.count(&ns.exact()).await.unwrap(),
        4,
        "nothing was dropped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chinese_and_japanese_text_is_found_through_bigrams() {
    let schema = schema_or_skip!("fts_cjk");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("fts/cjk").unwrap();
    let docs = [
        ("zh1", "用户喜欢 Rust 编程语言"),
        ("zh2", "LangGraph 的状态管理原理"),
        ("ja1", "東京で寿司を食べました"),
        ("ja2", "プログラミングが好きです"),
        ("en1", "The user likes programming in Rust"),
    ];
    for (id, text) in docs {
        store.save(item(&ns, id, text)).await.unwrap();
    }
    for (query, want) in [
        ("编程", "zh1"),
        ("状态管理", "zh2"),
        ("寿司", "ja1"),
        ("プログラミング", "ja2"),
        ("管理原理是什么？", "zh2"),
    ] {
        let hits = store
            .search(&SearchQuery::new(ns.exact(), query, 10))
            .await
            .unwrap();
        assert_eq!(
            hits.first().map(|hit| hit.item.id.as_str()),
            Some(want),
            "{query}"
        );
    }
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "rust", 10))
        .await
        .unwrap();
    assert_eq!(
        hits.len(),
        2,
        "mixed Chinese and English text keeps its English words"
    );
}

/// Conversation-like documents with repeated words, different lengths and shared terms.
fn corpus() -> Vec<(String, String)> {
    let sentences = [
        "Caroline went to the LGBTQ support group yesterday and felt welcome",
        "Melanie painted a sunrise over the lake with her kids",
        "The support group met again; Caroline spoke about support and adoption",
        "Melanie ran a charity race for mental health",
        "Caroline is researching adoption agencies and counseling",
        "The kids loved the camping trip to the lake and the sunrise",
        "Melanie and Caroline talked about painting, pottery and camping",
        "A long note: support support support, lake, race, painting, adoption, camping trip",
        "Counseling and mental health matter to Caroline",
        "用户喜欢在湖边画日出",
    ];
    sentences
        .iter()
        .enumerate()
        .map(|(index, text)| (format!("d{index:02}"), (*text).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bm25_ranking_matches_the_in_memory_backend() {
    let schema = schema_or_skip!("fts_bm25");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let reference = InMemoryStore::new();
    let ns = Namespace::parse("fts/bm25").unwrap();
    for (index, (id, text)) in corpus().into_iter().enumerate() {
        let mut entry = item(&ns, &id, &text).with_tags(["Conversation"]).unwrap();
        // Every other item answers a question: its context is a second, lighter field.
        if index % 2 == 1 {
            entry = entry.with_context(format!("How was the weekend, question {index}?"));
        }
        store.save(entry.clone()).await.unwrap();
        reference.save(entry).await.unwrap();
    }
    for query in [
        "support group",
        "Caroline adoption",
        "lake sunrise painting",
        "camping trip with the kids",
        "mental health counseling",
        "conversation",
        "湖边日出",
        "how was your weekend",
        "weekend painting",
    ] {
        let got = store
            .search(&SearchQuery::new(ns.exact(), query, 10))
            .await
            .unwrap();
        let want = reference
            .search(&SearchQuery::new(ns.exact(), query, 10))
            .await
            .unwrap();
        let got_ids: Vec<&str> = got.iter().map(|hit| hit.item.id.as_str()).collect();
        let want_ids: Vec<&str> = want.iter().map(|hit| hit.item.id.as_str()).collect();
        assert_eq!(got_ids, want_ids, "ranking of {query:?}");
        for (a, b) in got.iter().zip(&want) {
            assert!(
                (a.score - b.score).abs() <= 1e-4 * b.score.abs().max(1.0),
                "score of {} for {query:?}: {} vs in-memory {}",
                a.item.id,
                a.score,
                b.score
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_ranking_matches_the_in_memory_backend() {
    let schema = schema_or_skip!("fts_pages");
    let backend = schema.connect().await;
    let pages = backend.knowledge_store();
    let reference = InMemoryKnowledgeStore::new();
    let ns = Namespace::parse("fts/pages").unwrap();
    let specs = [
        (
            "sg",
            "StateGraph 状态管理",
            "LangGraph 的核心状态机",
            "state-graph langgraph",
        ),
        (
            "lc",
            "LangChain overview",
            "Chains of LLM calls",
            "langchain",
        ),
        (
            "rs",
            "Rust async",
            "Futures and executors; mentions graph once",
            "rust",
        ),
        (
            "pg",
            "Graph theory basics",
            "Nodes and edges of a graph",
            "graph",
        ),
        (
            "gx",
            "Graphs in practice",
            "Graph databases and graph queries",
            "graph database",
        ),
    ];
    for (id, title, summary, tags) in specs {
        let page = KnowledgePage::new(ns.clone(), id, title)
            .unwrap()
            .with_summary(summary)
            .with_content(format!("{title}. {summary}. More words about {tags}."))
            .with_tags(tags.split(' '))
            .unwrap();
        pages.add_page(page.clone()).await.unwrap();
        reference.add_page(page).await.unwrap();
    }
    for query in [
        "graph",
        "LangGraph 的 StateGraph 状态管理原理？",
        "chains",
        "graph database",
    ] {
        let got = pages
            .search(&PageQuery::new(ns.exact(), query, 10))
            .await
            .unwrap();
        let want = reference
            .search(&PageQuery::new(ns.exact(), query, 10))
            .await
            .unwrap();
        let got_ids: Vec<&str> = got.iter().map(|hit| hit.page.id.as_str()).collect();
        let want_ids: Vec<&str> = want.iter().map(|hit| hit.page.id.as_str()).collect();
        assert_eq!(got_ids, want_ids, "ranking of {query:?}");
        for (a, b) in got.iter().zip(&want) {
            assert_eq!(
                a.signals, b.signals,
                "signals of {} for {query:?}",
                a.page.id
            );
            assert_eq!(a.referenced_by, b.referenced_by);
            assert!(
                (a.score - b.score).abs() <= 1e-4 * b.score.abs().max(1.0),
                "score of {} for {query:?}: {} vs in-memory {}",
                a.page.id,
                a.score,
                b.score
            );
        }
    }
}

/// Hits as `(namespace, id)`, in order.
fn memory_keys(hits: &[memory_core::SearchHit]) -> Vec<(String, String)> {
    hits.iter()
        .map(|hit| (hit.item.namespace.to_string(), hit.item.id.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_of_two_namespaces_ranks_each_on_its_own_statistics() {
    let schema = schema_or_skip!("fts_two_namespaces");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let pages = backend.knowledge_store();
    let reference = InMemoryStore::new();
    let reference_pages = InMemoryKnowledgeStore::new();
    let parent = Namespace::parse("fts/two").unwrap();
    let big = parent.child("big").unwrap();
    let small = parent.child("small").unwrap();
    // "support" is common in the big namespace and rare in the small one, and the small
    // namespace's documents are much shorter: statistics over both together would rank them
    // differently than each namespace's own.
    let mut documents: Vec<(Namespace, String, String)> = corpus()
        .into_iter()
        .map(|(id, text)| (big.clone(), id, text))
        .collect();
    for (id, text) in [
        ("s1", "support lake"),
        ("s2", "adoption"),
        ("s3", "support"),
        ("d03", "quiet words about nothing"),
    ] {
        documents.push((small.clone(), id.to_owned(), text.to_owned()));
    }
    for (ns, id, text) in &documents {
        let entry = item(ns, id, text);
        store.save(entry.clone()).await.unwrap();
        reference.save(entry).await.unwrap();
        let page = KnowledgePage::new(ns.clone(), id.as_str(), text.as_str())
            .unwrap()
            .with_content(format!("{text} {text}"));
        pages.add_page(page.clone()).await.unwrap();
        reference_pages.add_page(page).await.unwrap();
    }
    for query in [
        "support",
        "support lake",
        "adoption",
        "Caroline adoption support",
        "lake sunrise",
    ] {
        for top_k in [3, 20] {
            let search = SearchQuery::new(parent.subtree(), query, top_k);
            let got = store.search(&search).await.unwrap();
            let want = reference.search(&search).await.unwrap();
            assert_eq!(
                memory_keys(&got),
                memory_keys(&want),
                "memories for {query:?}, top {top_k}"
            );
            for (a, b) in got.iter().zip(&want) {
                assert!(
                    (a.score - b.score).abs() <= 1e-4 * b.score.abs().max(1.0),
                    "score of {} for {query:?}: {} vs in-memory {}",
                    a.item.id,
                    a.score,
                    b.score
                );
            }
            let search = PageQuery::new(parent.subtree(), query, top_k);
            let page_keys = |hits: Vec<memory_core::PageHit>| {
                hits.into_iter()
                    .map(|hit| {
                        (
                            hit.page.namespace.to_string(),
                            hit.page.id.clone(),
                            hit.score,
                        )
                    })
                    .collect::<Vec<_>>()
            };
            let got = page_keys(pages.search(&search).await.unwrap());
            let want = page_keys(reference_pages.search(&search).await.unwrap());
            assert_eq!(got.len(), want.len(), "pages for {query:?}, top {top_k}");
            for (a, b) in got.iter().zip(&want) {
                assert_eq!(
                    (&a.0, &a.1),
                    (&b.0, &b.1),
                    "pages for {query:?}, top {top_k}"
                );
                assert!(
                    (a.2 - b.2).abs() <= 1e-4 * b.2.abs().max(1.0),
                    "score of page {} for {query:?}: {} vs in-memory {}",
                    a.1,
                    a.2,
                    b.2
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_and_list_apply_every_filter() {
    let schema = schema_or_skip!("fts_filters");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("fts/filters").unwrap();
    let at = |second: i64| chrono::DateTime::from_timestamp(1_700_000_000 + second, 0).unwrap();
    let entries = [
        (
            "f1",
            0,
            MemoryKind::Episodic,
            serde_json::json!({"speaker": "ann", "turn": 1}),
        ),
        (
            "f2",
            10,
            MemoryKind::Semantic,
            serde_json::json!({"speaker": "bob", "turn": 2}),
        ),
        (
            "f3",
            20,
            MemoryKind::Semantic,
            serde_json::json!({"speaker": "ann", "turn": 3.0}),
        ),
        (
            "f4",
            30,
            MemoryKind::Episodic,
            serde_json::json!({"speaker": "ann", "tags": ["x", "y"]}),
        ),
    ];
    for (id, second, kind, metadata) in entries {
        let entry = item(&ns, id, "garden notes about tomatoes")
            .with_created_at(at(second))
            .with_kind(kind)
            .with_metadata(metadata)
            .unwrap();
        store.save(entry).await.unwrap();
    }
    let search = |filter: MemoryFilter| {
        let query = SearchQuery::new(ns.exact(), "tomato garden", 10).with_filter(filter);
        async move {
            let mut ids: Vec<String> = store
                .search(&query)
                .await
                .unwrap()
                .into_iter()
                .map(|hit| hit.item.id.clone())
                .collect();
            ids.sort();
            ids
        }
    };
    let base = || MemoryFilter::new(ns.exact());
    assert_eq!(search(base()).await, ["f1", "f2", "f3", "f4"]);
    assert_eq!(
        search(base().with_kinds([MemoryKind::Semantic])).await,
        ["f2", "f3"]
    );
    assert_eq!(
        search(base().with_time_range(Some(at(10)), Some(at(30)))).await,
        ["f2", "f3"]
    );
    assert_eq!(
        search(base().with_metadata("speaker", serde_json::json!("ann"))).await,
        ["f1", "f3", "f4"]
    );
    // jsonb would call 3 and 3.0 equal; the contract compares the values as serde_json does.
    assert_eq!(
        search(base().with_metadata("turn", serde_json::json!(3))).await,
        Vec::<String>::new()
    );
    assert_eq!(
        search(base().with_metadata("turn", serde_json::json!(3.0))).await,
        ["f3"]
    );
    // Containment is not equality: ["x"] is inside ["x", "y"] but not equal to it.
    assert_eq!(
        search(base().with_metadata("tags", serde_json::json!(["x"]))).await,
        Vec::<String>::new()
    );
    assert_eq!(
        search(base().with_metadata("tags", serde_json::json!(["x", "y"]))).await,
        ["f4"]
    );
    assert_eq!(
        search(base().with_metadata("speak\0er", serde_json::json!("ann"))).await,
        Vec::<String>::new(),
        "a key no stored item can have matches nothing, without an error"
    );
    let listed = store
        .list(
            &base()
                .with_metadata("speaker", serde_json::json!("ann"))
                .newest_first()
                .with_limit(2),
        )
        .await
        .unwrap();
    assert_eq!(
        listed.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
        ["f4", "f3"],
        "metadata filter with limit and order"
    );
    assert!(
        store
            .list(&base().with_id_prefix("f\0"))
            .await
            .unwrap()
            .is_empty()
    );
}

/// Chinese text of `bytes` bytes or a little less whose bigrams are (almost all) distinct:
/// ideographs drawn from the 20,992 of the CJK Unified Ideographs block by a full-period
/// linear congruential generator, so consecutive pairs rarely repeat.
fn distinct_bigram_text(bytes: usize) -> String {
    const FIRST: u32 = 0x4E00;
    const COUNT: u64 = 20_992;
    let mut state: u64 = 1;
    let mut text = String::with_capacity(bytes);
    while text.len() + 3 <= bytes {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let offset = u32::try_from((state >> 33) % COUNT).unwrap();
        text.push(char::from_u32(FIRST + offset).unwrap());
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_up_to_the_limit_is_indexed_whatever_its_vocabulary() {
    let schema = schema_or_skip!("fts_large");
    let backend = schema.connect().await;
    let ns = Namespace::parse("fts/large").unwrap();
    let text = distinct_bigram_text(memory_core::DEFAULT_MAX_CONTENT_BYTES - 64);
    let terms = memory_core::text::Analyzer::default().unique_terms(&text);
    assert!(terms.len() > 300_000, "{} distinct terms", terms.len());
    // A bigram from the middle and the last one.
    let probes = [
        terms[terms.len() / 2].clone(),
        terms[terms.len() - 1].clone(),
    ];

    backend
        .memory_store()
        .save(item(&ns, "large", &text))
        .await
        .unwrap_or_else(|error| panic!("saving {} bytes: {error}", text.len()));
    backend
        .knowledge_store()
        .add_page(
            KnowledgePage::new(ns.clone(), "large", "Large page")
                .unwrap()
                .with_content(text.clone()),
        )
        .await
        .unwrap_or_else(|error| panic!("adding a page of {} bytes: {error}", text.len()));
    for probe in &probes {
        let hits = backend
            .memory_store()
            .search(&SearchQuery::new(ns.exact(), probe, 5))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "{probe}");
        assert_eq!(hits[0].item.content, text);
        let pages = backend
            .knowledge_store()
            .search(&PageQuery::new(ns.exact(), probe, 5))
            .await
            .unwrap();
        assert_eq!(pages.len(), 1, "{probe}");
    }
}

/// Word `n` of a made-up vocabulary: consonants only, so stemming leaves every word whole.
fn made_up_word(mut n: usize) -> String {
    const LETTERS: &[u8] = b"bdfgkmptvz";
    let mut word = String::from("x");
    loop {
        word.push(char::from(LETTERS[n % LETTERS.len()]));
        n /= LETTERS.len();
        if n == 0 {
            return word;
        }
    }
}

/// 16 KiB of distinct words, the longest query the retriever passes on.
fn long_query() -> String {
    let mut query = String::new();
    for n in 0.. {
        let word = made_up_word(n);
        if query.len() + word.len() + 1 > 16 * 1024 {
            return query;
        }
        query.push_str(&word);
        query.push(' ');
    }
    query
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_query_of_distinct_words_is_searched_with_its_first_terms() {
    let schema = schema_or_skip!("fts_long_query");
    let backend = schema.connect().await;
    let ns = Namespace::parse("fts/long").unwrap();
    let mut items = Vec::new();
    for n in 0..300 {
        let text = format!("note {} and {}", made_up_word(n), made_up_word(n + 1));
        items.push(item(&ns, &format!("m{n:03}"), &text));
        backend
            .knowledge_store()
            .add_page(
                KnowledgePage::new(ns.clone(), format!("p{n:03}"), format!("Page {n}"))
                    .unwrap()
                    .with_content(text),
            )
            .await
            .unwrap();
    }
    backend.memory_store().save_many(items).await.unwrap();
    let query = long_query();
    assert!(query.len() > 16 * 1024 - 16, "{}", query.len());
    let terms = memory_core::text::Analyzer::default().query_terms(&query);
    assert_eq!(terms.len(), memory_core::text::MAX_QUERY_TERMS);

    let hits = backend
        .memory_store()
        .search(&SearchQuery::new(ns.exact(), &query, 1_000))
        .await
        .unwrap();
    // The first 128 words are searched: memories 0 to 127 hold one of them.
    assert_eq!(hits.len(), memory_core::text::MAX_QUERY_TERMS);
    let pages = backend
        .knowledge_store()
        .search(&PageQuery::new(ns.exact(), &query, 1_000))
        .await
        .unwrap();
    assert_eq!(pages.len(), memory_core::text::MAX_QUERY_TERMS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_tells_which_hits_hold_a_term_in_their_own_words() {
    let schema = schema_or_skip!("fts_own_words");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("fts/own").unwrap();
    let beside = "cats running after their owners";
    store
        .save_many(vec![
            item(&ns, "told", "The owners were running after their cats"),
            item(&ns, "beside", "Do they sell them back?").with_context(beside),
            item(&ns, "tagged", "Do they sell them back?")
                .with_context(beside)
                .with_tags(["cats"])
                .unwrap(),
        ])
        .await
        .unwrap();
    // Told unasked: the score's SQL sums each field's frequencies anyway.
    let mut hits = store
        .search(&SearchQuery::new(ns.exact(), "cat runs owner", 10))
        .await
        .unwrap();
    hits.sort_by(|a, b| a.item.id.cmp(&b.item.id));
    let told: Vec<(&str, Option<bool>)> = hits
        .iter()
        .map(|hit| (hit.item.id.as_str(), hit.in_own_words))
        .collect();
    assert_eq!(
        told,
        [
            ("beside", Some(false)),
            ("tagged", Some(true)),
            ("told", Some(true))
        ]
    );
}

/// A search with metadata conditions asks for a bounded number of rows, and asks again for
/// more when the rows the SQL kept fail the exact check (jsonb compares 3 and 3.0 as equal,
/// the contract does not): the one memory that matches is found below many that the SQL
/// alone would have returned first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_search_asks_again_past_rows_the_exact_check_refuses() {
    let schema = schema_or_skip!("fts_meta_again");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("fts/again").unwrap();
    for n in 0..12 {
        let entry = item(&ns, &format!("float{n:02}"), "tomato tomato garden")
            .with_metadata(serde_json::json!({"turn": 3.0}))
            .unwrap();
        store.save(entry).await.unwrap();
    }
    let entry = item(
        &ns,
        "integer",
        "a long note that mentions the garden once among many other words",
    )
    .with_metadata(serde_json::json!({"turn": 3}))
    .unwrap();
    store.save(entry).await.unwrap();
    let filter = MemoryFilter::new(ns.exact()).with_metadata("turn", serde_json::json!(3));
    for top_k in [1, 2] {
        let query =
            SearchQuery::new(ns.exact(), "tomato garden", top_k).with_filter(filter.clone());
        let hits = store.search(&query).await.unwrap();
        let ids: Vec<&str> = hits.iter().map(|hit| hit.item.id.as_str()).collect();
        assert_eq!(ids, ["integer"], "top {top_k}");
    }
}
