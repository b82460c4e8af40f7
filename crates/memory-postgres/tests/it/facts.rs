//! Time views and fact keys in SQL: every view admits exactly what
//! [`TimeView::admits`](memory_core::TimeView::admits) admits, at interval edges and at times
//! outside the stored range too, in lists (with limits) and searches (before the top-k cut).

use chrono::{DateTime, Duration, TimeZone, Utc};
use memory_core::{
    EndReason, Ended, MemoryFilter, MemoryItem, MemoryStore, Namespace, SearchQuery, TimeView,
};

use crate::common::schema_or_skip;

fn day(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap() + Duration::days(n)
}

/// Items over every combination of open and closed validity ends and of ended or not, with
/// edges on whole days so the views' times fall on them.
fn items(ns: &Namespace) -> Vec<MemoryItem> {
    let mut out = Vec::new();
    let mut n = 0;
    for created in [1, 3] {
        for from in [None, Some(0), Some(4)] {
            for until in [None, Some(5), Some(8)] {
                for ended in [None, Some(6), Some(3)] {
                    n += 1;
                    let mut item = MemoryItem::new(ns.clone(), format!("the city fact {n}"))
                        .unwrap()
                        .with_id(format!("f{n:03}"))
                        .unwrap()
                        .with_created_at(day(created))
                        .with_validity(from.map(day), until.map(day))
                        .unwrap();
                    if n % 2 == 0 {
                        item = item.with_fact_key("user.city").unwrap();
                    }
                    item.ended = ended.map(|at| Ended {
                        at: day(at),
                        reason: EndReason::Superseded { by: "next".into() },
                    });
                    out.push(item);
                }
            }
        }
    }
    out
}

fn ids<'a>(items: impl IntoIterator<Item = &'a MemoryItem>) -> Vec<&'a str> {
    items.into_iter().map(|item| item.id.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_in_sql_admit_exactly_what_the_core_admits() {
    let schema = schema_or_skip!("facts_views");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("facts/views").unwrap();
    let all = items(&ns);
    store.save_many(all.clone()).await.unwrap();
    let listed = store.list(&MemoryFilter::new(ns.exact())).await.unwrap();
    assert_eq!(
        listed, all,
        "every fact field round-trips through save_many"
    );

    let mut views = vec![TimeView::All];
    for n in -1..=9 {
        views.push(TimeView::Current(day(n)));
        views.push(TimeView::AsOf(day(n)));
        views.push(TimeView::AsOf(day(n) + Duration::nanoseconds(1)));
    }
    // Outside the range the schema stores: no bound parameter could stand for these.
    for far in [DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC] {
        views.push(TimeView::Current(far));
        views.push(TimeView::AsOf(far));
    }
    let everything = SearchQuery::new(ns.exact(), "city", 1_000);
    let ranked = store.search(&everything).await.unwrap();
    assert_eq!(ranked.len(), all.len());
    for view in views {
        for key in [None, Some("user.city")] {
            let mut filter = MemoryFilter::new(ns.exact()).with_view(view);
            if let Some(key) = key {
                filter = filter.with_fact_key(key).unwrap();
            }
            let want: Vec<&MemoryItem> = all.iter().filter(|item| filter.matches(item)).collect();
            let got = store.list(&filter).await.unwrap();
            assert_eq!(ids(&got), ids(want.iter().copied()), "{view:?} {key:?}");
            let newest = store
                .list(&filter.clone().newest_first().with_limit(2))
                .await
                .unwrap();
            let want_newest: Vec<&str> = ids(want.iter().rev().take(2).copied());
            assert_eq!(ids(&newest), want_newest, "newest 2, {view:?} {key:?}");
            // Search: the same scores as without the view (statistics are the namespace's),
            // the admitted hits only, cut at top_k after the view.
            let hits = store
                .search(&SearchQuery::new(ns.exact(), "city", 3).with_filter(filter.clone()))
                .await
                .unwrap();
            let want_hits: Vec<(&str, f32)> = ranked
                .iter()
                .filter(|hit| filter.matches(&hit.item))
                .take(3)
                .map(|hit| (hit.item.id.as_str(), hit.score))
                .collect();
            let got_hits: Vec<(&str, f32)> = hits
                .iter()
                .map(|hit| (hit.item.id.as_str(), hit.score))
                .collect();
            assert_eq!(got_hits, want_hits, "search, {view:?} {key:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fact_key_with_a_nul_matches_nothing_and_fact_fields_clear() {
    let schema = schema_or_skip!("facts_clear");
    let backend = schema.connect().await;
    let store = backend.memory_store();
    let ns = Namespace::parse("facts/clear").unwrap();
    let mut item = MemoryItem::new(ns.clone(), "the user lives in Lyon")
        .unwrap()
        .with_id("lyon")
        .unwrap()
        .with_fact_key("user.city")
        .unwrap()
        .with_validity(Some(day(1)), Some(day(2)))
        .unwrap();
    item.supersedes = vec!["paris".into()];
    item.ended = Some(Ended {
        at: day(2),
        reason: EndReason::Retracted {
            reason: "moved".into(),
        },
    });
    store.save(item.clone()).await.unwrap();
    let mut filter = MemoryFilter::new(ns.exact());
    // Built by hand: with_fact_key would refuse it.
    filter.fact_key = Some("user\0city".into());
    assert!(store.list(&filter).await.unwrap().is_empty());
    let query = SearchQuery::new(ns.exact(), "Lyon", 5).with_filter(filter);
    assert!(store.search(&query).await.unwrap().is_empty());
    // Update clears every fact column, so no view still sees the old end.
    let mut plain = item.clone();
    plain.fact_key = None;
    plain.valid_from = None;
    plain.valid_until = None;
    plain.ended = None;
    plain.supersedes.clear();
    store.update(plain.clone()).await.unwrap();
    assert_eq!(store.get(&ns, "lyon").await.unwrap(), Some(plain.clone()));
    let current = MemoryFilter::new(ns.exact()).with_view(TimeView::Current(day(9)));
    assert_eq!(store.list(&current).await.unwrap(), [plain]);
    store.update(item.clone()).await.unwrap();
    assert!(store.list(&current).await.unwrap().is_empty());
    assert_eq!(store.get(&ns, "lyon").await.unwrap(), Some(item));
}
