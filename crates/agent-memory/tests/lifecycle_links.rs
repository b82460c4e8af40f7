//! The lifecycle's links kept whole, on every backend: a forgotten memory leaves no summary
//! holding its text (summaries of summaries too), no version naming a successor that is
//! gone, and no source stranded in a summary that is gone (by id, by filter, and racing a
//! consolidation); a remember with an id never replaces a memory of a history.

mod common;

use std::sync::Arc;

use agent_memory::prelude::*;
use agent_memory::{ManualClock, MemoryBuilder, MemoryFilter, Outcome};
use chrono::{DateTime, TimeZone, Utc};
use common::Backend;

fn day(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 1, 1, 12, 0, 0).unwrap() + chrono::Duration::days(n)
}

fn builder(backend: &Backend) -> MemoryBuilder {
    Memory::builder()
        .store(Arc::clone(&backend.store))
        .knowledge(Arc::clone(&backend.knowledge))
        .graph(Arc::clone(&backend.graph))
        .clock(Arc::new(ManualClock::new(day(100))))
}

/// Every stored memory of `ns`, current or ended.
async fn stored(backend: &Backend, ns: &Namespace) -> Vec<MemoryItem> {
    backend
        .store
        .list(&MemoryFilter::new(ns.exact()))
        .await
        .unwrap()
}

/// The lifecycle's promise after any forget: no ended memory names a successor that is
/// gone, and no stored memory holds the text of a forgotten one.
async fn assert_consistent(backend: &Backend, ns: &Namespace, forgotten: &[&str], what: &str) {
    let items = stored(backend, ns).await;
    let ids: Vec<&str> = items.iter().map(|item| item.id.as_str()).collect();
    for item in &items {
        if let Some(next) = item.ended.as_ref().and_then(|ended| ended.successor()) {
            assert!(
                ids.contains(&next),
                "{what}: {} ({}) names {next}, which is gone",
                item.id,
                item.content
            );
        }
        for text in forgotten {
            assert!(
                !item.content.contains(text),
                "{what}: {} still holds the forgotten {text:?}: {}",
                item.id,
                item.content
            );
        }
    }
}

/// Whether memory `id` is current at the builder's clock (not ended, not past its
/// `valid_until`), as recall reads it.
fn current(items: &[MemoryItem], id: &str) -> bool {
    items
        .iter()
        .any(|item| item.id == id && agent_memory::TimeView::Current(day(100)).admits(item))
}

#[tokio::test]
async fn forget_walks_through_summaries_of_summaries() {
    for backend in common::backends("forget_nested_summaries").await {
        let memory = builder(&backend).build().unwrap();
        let ns = Namespace::parse("nested").unwrap();
        let name = backend.name;
        let pears = memory
            .remember(&ns, "pears are green and sweet")
            .await
            .unwrap();
        let quinces = memory
            .remember(&ns, "quinces need long cooking")
            .await
            .unwrap();
        let canes = memory
            .remember(&ns, "raspberries grow on canes")
            .await
            .unwrap();
        let first = memory
            .consolidate(&ns, &[pears.clone(), quinces.clone()], 200)
            .await
            .unwrap();
        let second = memory
            .consolidate(&ns, &[first.clone(), canes.clone()], 200)
            .await
            .unwrap();

        assert!(memory.forget(&ns, &pears).await.unwrap(), "{name}");
        let items = stored(&backend, &ns).await;
        assert_consistent(&backend, &ns, &["pears are green"], name).await;
        assert!(
            !items
                .iter()
                .any(|item| item.id == first || item.id == second),
            "{name}: both summaries held the text"
        );
        assert!(
            current(&items, &quinces),
            "{name}: a source of the first comes back"
        );
        assert!(
            current(&items, &canes),
            "{name}: a source of the second comes back"
        );
        let found = memory.recall(&ns.subtree(), "pears").await.unwrap();
        assert!(found.items.is_empty(), "{name}: {:?}", found.items);
        backend.cleanup().await;
    }
}

#[tokio::test]
async fn forgetting_a_summary_takes_the_version_it_superseded() {
    for backend in common::backends("forget_summary_versions").await {
        let memory = builder(&backend).build().unwrap();
        let ns = Namespace::parse("phones").unwrap();
        let name = backend.name;
        let old = memory
            .remember(&ns, "my phone number is 555-1234")
            .await
            .unwrap();
        let new = memory
            .remember(&ns, "the new phone is 555-9999")
            .await
            .unwrap();
        let landline = memory
            .remember(&ns, "the landline was dropped")
            .await
            .unwrap();
        let summary = memory
            .consolidate(&ns, &[new.clone(), landline.clone()], 200)
            .await
            .unwrap();
        memory.supersede(&ns, &old, &summary).await.unwrap();
        // An ordinary memory whose metadata says it is a summary is still an ordinary
        // memory: the version it superseded goes with it.
        let older = memory
            .remember(&ns, "the office is on floor five")
            .await
            .unwrap();
        let newer = memory
            .remember_with(
                Remember::new(ns.clone(), "the office moved to floor nine")
                    .metadata(serde_json::json!({ "consolidated_from": 2 })),
            )
            .await
            .unwrap()
            .id;
        memory.supersede(&ns, &older, &newer).await.unwrap();

        assert!(memory.forget(&ns, &summary).await.unwrap(), "{name}");
        assert!(memory.forget(&ns, &newer).await.unwrap(), "{name}");
        let items = stored(&backend, &ns).await;
        assert_consistent(&backend, &ns, &["555-1234", "floor five"], name).await;
        assert!(current(&items, &new), "{name}: a source comes back");
        assert!(current(&items, &landline), "{name}: a source comes back");
        assert_eq!(items.len(), 2, "{name}: {items:?}");
        backend.cleanup().await;
    }
}

#[tokio::test]
async fn forget_matching_leaves_no_version_naming_a_gone_successor() {
    for backend in common::backends("forget_matching_links").await {
        let memory = builder(&backend).build().unwrap();
        let ns = Namespace::parse("filtered").unwrap();
        let name = backend.name;
        let tagged = |text: &str| Remember::new(ns.clone(), text).tags(["gone"]);
        let five = memory
            .remember(&ns, "the office is on floor five")
            .await
            .unwrap();
        let nine = memory
            .remember_with(tagged("the office moved to floor nine"))
            .await
            .unwrap()
            .id;
        memory.supersede(&ns, &five, &nine).await.unwrap();
        let pears = memory
            .remember_with(tagged("pears are green and sweet"))
            .await
            .unwrap()
            .id;
        let quinces = memory
            .remember(&ns, "quinces need long cooking")
            .await
            .unwrap();
        let summary = memory
            .consolidate(&ns, &[pears.clone(), quinces.clone()], 200)
            .await
            .unwrap();
        let kept = memory
            .remember(&ns, "raspberries grow on canes")
            .await
            .unwrap();

        let filter = MemoryFilter::new(ns.exact()).with_tags(["gone"]).unwrap();
        let deleted = memory.forget_matching(&filter).await.unwrap();
        assert_eq!(deleted, 4, "{name}: the matches, a version and a summary");
        let items = stored(&backend, &ns).await;
        assert_consistent(&backend, &ns, &["floor five", "floor nine", "pears"], name).await;
        assert!(!items.iter().any(|item| item.id == summary), "{name}");
        assert!(
            current(&items, &quinces),
            "{name}: the summary's other source is back"
        );
        assert!(current(&items, &kept), "{name}");
        assert_eq!(items.len(), 2, "{name}: {items:?}");
        backend.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_and_consolidate_racing_leave_no_forgotten_text() {
    for backend in common::backends("forget_consolidate_race").await {
        let memory = Arc::new(builder(&backend).build().unwrap());
        let ns = Namespace::parse("race").unwrap();
        let name = backend.name;
        for round in 0..24 {
            let base = format!("race base {round} alpha{round}");
            let other = format!("race other {round} gamma{round}");
            let doomed = memory.remember(&ns, &base).await.unwrap();
            let kept = memory.remember(&ns, &other).await.unwrap();
            let consolidating = {
                let (memory, ns, ids) = (Arc::clone(&memory), ns.clone(), [doomed.clone(), kept]);
                tokio::spawn(async move { memory.consolidate(&ns, &ids, 200).await })
            };
            let forgetting = {
                let (memory, ns, id) = (Arc::clone(&memory), ns.clone(), doomed.clone());
                tokio::spawn(async move {
                    // Either order may win; each is a complete operation.
                    tokio::task::yield_now().await;
                    memory.forget(&ns, &id).await
                })
            };
            // The consolidation may find its source gone (an error, nothing written).
            let _ = consolidating.await.unwrap();
            forgetting.await.unwrap().unwrap();
            assert_consistent(
                &backend,
                &ns,
                &[base.as_str()],
                &format!("{name} round {round}"),
            )
            .await;
        }
        backend.cleanup().await;
    }
}

#[tokio::test]
async fn a_remember_never_replaces_a_memory_of_a_history() {
    for backend in common::backends("remember_over_history").await {
        let memory = builder(&backend).build().unwrap();
        let ns = Namespace::parse("replace").unwrap();
        let name = backend.name;
        let zeus = memory
            .remember(&ns, "the old server is zeus")
            .await
            .unwrap();
        let hera = memory
            .remember(&ns, "the new server is hera")
            .await
            .unwrap();
        memory.supersede(&ns, &zeus, &hera).await.unwrap();
        let pears = memory.remember(&ns, "pears are green").await.unwrap();
        let quinces = memory.remember(&ns, "quinces are yellow").await.unwrap();
        let summary = memory
            .consolidate(&ns, &[pears.clone(), quinces], 200)
            .await
            .unwrap();
        let plain = memory.remember(&ns, "kites fly in the wind").await.unwrap();
        let before = stored(&backend, &ns).await;

        for id in [&zeus, &hera, &pears, &summary] {
            let one = memory
                .remember_with(Remember::new(ns.clone(), "boats are fast on water").id(id.clone()))
                .await
                .unwrap_err();
            assert_eq!(one.field(), Some("id"), "{name}: {one}");
            assert!(one.to_string().contains("history"), "{name}: {one}");
            let batch = memory
                .remember_many(vec![
                    Remember::new(ns.clone(), "sails catch the wind"),
                    Remember::new(ns.clone(), "boats are fast on water").id(id.clone()),
                ])
                .await
                .unwrap_err();
            assert_eq!(batch.field(), Some("requests[1].id"), "{name}: {batch}");
        }
        assert_eq!(
            stored(&backend, &ns).await,
            before,
            "{name}: nothing written"
        );

        // The same memory sent again (its text, kind and fact key) changes nothing, in a
        // batch too: a dialogue sent again after its turns were consolidated.
        for (id, text) in [
            (&zeus, "the old server is zeus"),
            (&pears, "pears are green"),
        ] {
            let again = memory
                .remember_with(Remember::new(ns.clone(), text).id(id.clone()))
                .await
                .unwrap();
            assert_eq!(
                again.outcome,
                Outcome::Merged { into: id.clone() },
                "{name}"
            );
            let batch = memory
                .remember_many(vec![
                    Remember::new(ns.clone(), text).id(id.clone()),
                    Remember::new(ns.clone(), "sails catch the wind"),
                ])
                .await
                .unwrap();
            assert_eq!(
                batch[0].outcome,
                Outcome::Merged { into: id.clone() },
                "{name}"
            );
            assert_eq!(batch[1].outcome, Outcome::Added, "{name}");
            let sails = batch[1].id.clone();
            assert!(memory.forget(&ns, &sails).await.unwrap(), "{name}");
        }
        let keyed = |text: &str| {
            Remember::new(ns.clone(), text)
                .fact_key("user.city")
                .id("city-2")
        };
        memory
            .remember_with(
                Remember::new(ns.clone(), "the user lives in Paris").fact_key("user.city"),
            )
            .await
            .unwrap();
        let first = memory
            .remember_with(keyed("the user lives in Berlin"))
            .await
            .unwrap();
        assert!(
            matches!(first.outcome, Outcome::Superseded { .. }),
            "{name}: {first:?}"
        );
        let again = memory
            .remember_with(keyed("the user lives in Berlin"))
            .await
            .unwrap();
        assert_eq!(
            again.outcome,
            Outcome::Merged {
                into: "city-2".into()
            },
            "{name}"
        );
        let stored_now: Vec<MemoryItem> = stored(&backend, &ns).await;
        assert_eq!(stored_now.len(), before.len() + 2, "{name}: {stored_now:?}");

        // A memory outside any history is replaced whole, as a turn sent again is.
        let replaced = memory
            .remember_with(Remember::new(ns.clone(), "kites need a steady wind").id(plain.clone()))
            .await
            .unwrap();
        assert_eq!(replaced.id, plain, "{name}");
        let item = backend.store.get(&ns, &plain).await.unwrap().unwrap();
        assert_eq!(item.content, "kites need a steady wind", "{name}");
        backend.cleanup().await;
    }
}

/// An import is checked as `supersede` and `consolidate` check their links: a memory ended
/// into one that neither the input nor the store holds, or memories ended into one another
/// in a loop (through the input alone or through stored memories too), are refused naming
/// the line, and nothing is written (each would stay out of recall for good). A successor
/// the store holds is accepted.
#[tokio::test]
async fn an_import_refuses_lifecycle_links_that_lead_nowhere() {
    use agent_memory::{EndReason, Ended, transfer};
    for backend in common::backends("import_links").await {
        let name = backend.name;
        let ns = Namespace::parse("links").unwrap();
        let ended = |id: &str, by: &str| {
            let mut item = MemoryItem::new(ns.clone(), format!("memory {id}"))
                .unwrap()
                .with_id(id)
                .unwrap();
            item.ended = Some(Ended {
                at: day(1),
                reason: EndReason::Superseded { by: by.into() },
            });
            item.supersedes = Vec::new();
            item
        };
        // The files are written from a store that takes anything.
        let file = |items: Vec<MemoryItem>| async move {
            let source = agent_memory::inmem::InMemoryStore::new();
            source.save_many(items).await.unwrap();
            let mut out = Vec::new();
            transfer::export_jsonl(&ns_scope(), Some(&source), None, None, &mut out)
                .await
                .unwrap();
            out
        };
        let import = |bytes: Vec<u8>| {
            let store = Arc::clone(&backend.store);
            async move {
                let mut reader = std::io::Cursor::new(bytes);
                transfer::import_jsonl(&mut reader, Some(store.as_ref()), None, None).await
            }
        };

        let looped = file(vec![ended("a", "b"), ended("b", "a")]).await;
        let error = import(looped).await.unwrap_err();
        assert!(error.to_string().contains("loop"), "{name}: {error}");
        assert!(
            error
                .field()
                .is_some_and(|field| field.starts_with("import line")),
            "{name}"
        );
        let dangling = file(vec![ended("c", "ghost")]).await;
        let error = import(dangling.clone()).await.unwrap_err();
        assert!(error.to_string().contains("ghost"), "{name}: {error}");
        assert!(
            stored(&backend, &ns).await.is_empty(),
            "{name}: nothing written"
        );

        // Once the store holds the successor, the same file imports.
        let ghost = MemoryItem::new(ns.clone(), "the ghost")
            .unwrap()
            .with_id("ghost")
            .unwrap();
        backend.store.save(ghost).await.unwrap();
        import(dangling).await.unwrap();
        assert_eq!(stored(&backend, &ns).await.len(), 2, "{name}");

        // A loop through the store: the stored `ghost` ended into `e`, and the file ends `e`
        // into `ghost`.
        backend.store.save(ended("ghost", "e")).await.unwrap();
        let through_store = file(vec![ended("e", "ghost")]).await;
        let error = import(through_store).await.unwrap_err();
        assert!(error.to_string().contains("loop"), "{name}: {error}");
        assert!(
            backend.store.get(&ns, "e").await.unwrap().is_none(),
            "{name}: nothing written"
        );
        // Through a longer line of stored memories too: `f` → stored `g` → stored `h` → `f`.
        backend.store.save(ended("g", "h")).await.unwrap();
        backend.store.save(ended("h", "f")).await.unwrap();
        let longer = file(vec![ended("f", "g")]).await;
        let error = import(longer).await.unwrap_err();
        assert!(error.to_string().contains("loop"), "{name}: {error}");
        // A loop the store holds already, which the file only leads into, is the store's:
        // `i` → stored `j` ⇄ stored `k` imports.
        backend.store.save(ended("j", "k")).await.unwrap();
        backend.store.save(ended("k", "j")).await.unwrap();
        import(file(vec![ended("i", "j")]).await).await.unwrap();
        assert!(
            backend.store.get(&ns, "i").await.unwrap().is_some(),
            "{name}"
        );

        // A memory ended by itself is refused as it is read.
        let mut own = ended("d", "d");
        own.ended = Some(Ended {
            at: day(1),
            reason: EndReason::Consolidated { into: "d".into() },
        });
        assert_eq!(
            own.validate().unwrap_err().field(),
            Some("consolidated_into")
        );
        backend.cleanup().await;
    }
}

fn ns_scope() -> Scope {
    Namespace::parse("links").unwrap().subtree()
}

/// `stats` tells the current memories (what a recall can find) from the history beside
/// them: a superseded version, a consolidated source, a memory past its `valid_until`.
#[tokio::test]
async fn stats_count_the_current_memories_apart_from_the_history() {
    for backend in common::backends("stats_current").await {
        let memory = builder(&backend).build().unwrap();
        let ns = Namespace::parse("counts").unwrap();
        let name = backend.name;
        let old = memory
            .remember(&ns, "the office is on floor five")
            .await
            .unwrap();
        let new = memory
            .remember(&ns, "the office moved to floor nine")
            .await
            .unwrap();
        memory.supersede(&ns, &old, &new).await.unwrap();
        let pears = memory.remember(&ns, "pears are green").await.unwrap();
        let quinces = memory.remember(&ns, "quinces are yellow").await.unwrap();
        memory
            .consolidate(&ns, &[pears, quinces], 200)
            .await
            .unwrap();
        memory
            .remember_with(
                Remember::new(ns.clone(), "a badge for the visit").valid(None, Some(day(99))),
            )
            .await
            .unwrap();
        // A plan (valid from a later time) is recalled, so it counts as current.
        memory
            .remember_with(
                Remember::new(ns.clone(), "a trip to the coast").valid(Some(day(200)), None),
            )
            .await
            .unwrap();
        let stats = memory.stats(&ns.subtree()).await.unwrap();
        assert_eq!(stats.total, 7, "{name}: {stats:?}");
        assert_eq!(
            stats.current, 3,
            "{name}: the new version, the summary and the plan"
        );
        let found = memory.recall(&ns.subtree(), "trip coast").await.unwrap();
        assert_eq!(found.items.len(), 1, "{name}: the plan is recalled");
        backend.cleanup().await;
    }
}

/// `history` follows a link back only where the older memory confirms it, as `forget`
/// does: a memory that names another in `supersedes` while that one ended otherwise (or
/// not at all: a source brought back when its summary was forgotten) has no such version.
#[tokio::test]
async fn history_follows_only_confirmed_links() {
    for backend in common::backends("history_confirmed").await {
        let memory = builder(&backend).build().unwrap();
        let ns = Namespace::parse("confirmed").unwrap();
        let name = backend.name;
        let older = memory.remember(&ns, "the server is zeus").await.unwrap();
        let newer = memory.remember(&ns, "the server is hera").await.unwrap();
        memory.supersede(&ns, &older, &newer).await.unwrap();
        let stray = memory
            .remember(&ns, "boats are fast on water")
            .await
            .unwrap();
        let mut item = backend.store.get(&ns, &newer).await.unwrap().unwrap();
        item.supersedes.push(stray.clone());
        backend.store.save(item).await.unwrap();

        let versions: Vec<String> = memory
            .history(&ns, &newer)
            .await
            .unwrap()
            .into_iter()
            .map(|item| item.id)
            .collect();
        assert_eq!(versions, [older, newer.clone()], "{name}");
        assert!(memory.forget(&ns, &newer).await.unwrap(), "{name}");
        assert!(
            backend.store.get(&ns, &stray).await.unwrap().is_some(),
            "{name}: the stray memory is no version of the forgotten fact"
        );
        backend.cleanup().await;
    }
}

/// A summary goes for the text it holds, not as a version of a fact: forgetting one of its
/// sources leaves what superseded the summary (and that fact's history) alone, brings back
/// a version the summary had superseded, and links a source brought back to its fact's
/// current version both ways.
#[tokio::test]
async fn forgetting_a_source_keeps_the_facts_its_summary_touched() {
    for backend in common::backends("forget_source_facts").await {
        let memory = builder(&backend).build().unwrap();
        let ns = Namespace::parse("touched").unwrap();
        let name = backend.name;
        let keyed = |text: &str, key: &str| Remember::new(ns.clone(), text).fact_key(key);
        // A summary that a city superseded.
        let pears = memory.remember(&ns, "pears are green").await.unwrap();
        let quinces = memory.remember(&ns, "quinces are yellow").await.unwrap();
        let fruit = memory
            .consolidate(&ns, &[pears.clone(), quinces.clone()], 200)
            .await
            .unwrap();
        let paris = memory
            .remember_with(keyed("the user lives in Paris", "user.city"))
            .await;
        let paris = paris.unwrap().id;
        let berlin = memory
            .remember_with(keyed("the user lives in Berlin", "user.city"))
            .await;
        let berlin = berlin.unwrap().id;
        memory.supersede(&ns, &fruit, &berlin).await.unwrap();
        // A summary that superseded a job.
        let acme = memory
            .remember_with(keyed("the user works at Acme", "user.job"))
            .await;
        let acme = acme.unwrap().id;
        let kites = memory.remember(&ns, "kites fly in the wind").await.unwrap();
        let sails = memory.remember(&ns, "sails catch the wind").await.unwrap();
        let wind = memory
            .consolidate(&ns, &[kites.clone(), sails.clone()], 200)
            .await
            .unwrap();
        memory.supersede(&ns, &acme, &wind).await.unwrap();
        // A keyed source whose fact moved on after it was folded.
        let tea = memory
            .remember_with(keyed("the user drinks tea", "user.drink"))
            .await;
        let tea = tea.unwrap().id;
        let rain = memory.remember(&ns, "rain fell all week").await.unwrap();
        let week = memory
            .consolidate(&ns, &[tea.clone(), rain.clone()], 200)
            .await
            .unwrap();
        let coffee = memory
            .remember_with(keyed("the user drinks coffee", "user.drink"))
            .await;
        let coffee = coffee.unwrap().id;

        for source in [&pears, &kites, &rain] {
            assert!(memory.forget(&ns, source).await.unwrap(), "{name}");
        }
        let items = stored(&backend, &ns).await;
        assert_consistent(&backend, &ns, &["pears", "kites", "rain"], name).await;
        for gone in [&fruit, &wind, &week] {
            assert!(
                !items.iter().any(|item| item.id == **gone),
                "{name}: {gone}"
            );
        }
        for back in [&quinces, &sails, &berlin, &acme, &coffee] {
            assert!(current(&items, back), "{name}: {back} is current");
        }
        let paris_item = items
            .iter()
            .find(|item| item.id == paris)
            .expect("Paris stays");
        assert_eq!(
            paris_item
                .ended
                .as_ref()
                .and_then(|ended| ended.superseded_by()),
            Some(berlin.as_str()),
            "{name}"
        );
        let tea_item = items
            .iter()
            .find(|item| item.id == tea)
            .expect("tea is back");
        assert_eq!(
            tea_item
                .ended
                .as_ref()
                .and_then(|ended| ended.superseded_by()),
            Some(coffee.as_str()),
            "{name}: ended by the version written since"
        );
        let coffee_item = items.iter().find(|item| item.id == coffee).expect("coffee");
        assert!(
            coffee_item.supersedes.contains(&tea),
            "{name}: linked both ways"
        );
        backend.cleanup().await;
    }
}

/// A summary reached both as a holder of a forgotten memory's text and as a version of a
/// forgotten fact goes as a version, whichever the walk reaches first: what superseded it
/// goes too, as it does when that fact alone is forgotten.
#[tokio::test]
async fn a_summary_that_is_also_a_version_goes_as_one_whatever_the_order() {
    for backend in common::backends("forget_order").await {
        let memory = builder(&backend).build().unwrap();
        let ns = Namespace::parse("order").unwrap();
        let name = backend.name;
        // Episodic, as the summary (long-term) is not: the filter matches the two alone,
        // listed oldest first, the source before the version.
        let episode = |text: &str, at: i64| {
            Remember::new(ns.clone(), text)
                .kind(MemoryKind::Episodic)
                .created_at(day(at))
        };
        let source = memory.remember_with(episode("pears are green", 1)).await;
        let source = source.unwrap().id;
        let quinces = memory
            .remember_with(
                Remember::new(ns.clone(), "quinces are yellow").kind(MemoryKind::Semantic),
            )
            .await
            .unwrap()
            .id;
        let summary = memory
            .consolidate(&ns, &[source.clone(), quinces.clone()], 200)
            .await
            .unwrap();
        let version = memory
            .remember_with(episode("the fruit stall opens at nine", 2))
            .await
            .unwrap()
            .id;
        memory.supersede(&ns, &version, &summary).await.unwrap();
        let later = memory
            .remember_with(
                Remember::new(ns.clone(), "the fruit stall opens at ten")
                    .kind(MemoryKind::Semantic),
            )
            .await
            .unwrap()
            .id;
        memory.supersede(&ns, &summary, &later).await.unwrap();

        let filter = MemoryFilter::new(ns.exact()).with_kinds([MemoryKind::Episodic]);
        assert_eq!(
            memory.store().list(&filter).await.unwrap().len(),
            2,
            "{name}"
        );
        memory.forget_matching(&filter).await.unwrap();
        let items = stored(&backend, &ns).await;
        assert_consistent(&backend, &ns, &["pears", "opens at nine"], name).await;
        assert!(
            !items.iter().any(|item| item.id == later),
            "{name}: the summary went as a version, and what superseded it with it"
        );
        assert!(
            current(&items, &quinces),
            "{name}: the other source is back"
        );
        assert_eq!(items.len(), 1, "{name}: {items:?}");
        backend.cleanup().await;
    }
}

/// A memory superseded by one that began earlier (an explicit correction by an older
/// statement) is left a validity of no length, never one that ends before it begins.
#[tokio::test]
async fn a_superseded_memory_never_ends_before_it_begins() {
    for backend in common::backends("supersede_order").await {
        let memory = builder(&backend).build().unwrap();
        let ns = Namespace::parse("order").unwrap();
        let name = backend.name;
        let newer = memory
            .remember_with(Remember::new(ns.clone(), "the office is in York").created_at(day(40)))
            .await
            .unwrap()
            .id;
        let older = memory
            .remember_with(Remember::new(ns.clone(), "the office is in Leeds").created_at(day(10)))
            .await
            .unwrap()
            .id;
        memory.supersede(&ns, &newer, &older).await.unwrap();
        let ended = backend.store.get(&ns, &newer).await.unwrap().unwrap();
        assert_eq!(ended.valid_until, Some(day(40)), "{name}: {ended:?}");
        assert!(
            ended.ended.as_ref().and_then(|e| e.superseded_by()) == Some(older.as_str()),
            "{name}"
        );
        backend.cleanup().await;
    }
}
