//! Capacity eviction holds for every tenant: whatever the interleaving of writes over many
//! namespaces, each namespace written through `Memory` stays within the policy's capacity
//! after every write, with no call to `maintain`. Runs in memory, on SQLite and, when
//! `AGENT_MEMORY_TEST_POSTGRES_URL` names a server, on PostgreSQL.
#![cfg(all(feature = "retrieve", feature = "sqlite"))]

mod common;

use std::sync::Arc;

use agent_memory::prelude::*;
use agent_memory::retrieve::Memory;
use agent_memory::{EvictionPolicy, RecallBasedConfig};
use common::backends;
use proptest::prelude::*;

fn tenants(count: usize) -> Vec<Namespace> {
    (0..count)
        .map(|i| Namespace::parse(&format!("tenant-{i}")).expect("valid namespace"))
        .collect()
}

/// Writes `writes` memories round-robin over `tenants`, through `memory`.
async fn round_robin(memory: &Memory, tenants: &[Namespace], writes: usize) {
    for i in 0..writes {
        let tenant = &tenants[i % tenants.len()];
        memory
            .remember(tenant, &format!("note {i} about topic {}", i % 7))
            .await
            .expect("remember");
    }
}

async fn largest(store: &dyn MemoryStore, tenants: &[Namespace]) -> usize {
    let mut largest = 0;
    for tenant in tenants {
        largest = largest.max(store.count(&tenant.exact()).await.expect("count"));
    }
    largest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_writes_keep_every_tenant_within_capacity() {
    for backend in backends("capacity").await {
        // 100 tenants, capacity 50, the default interval: every tenant passes its capacity
        // several times over without any one write being the interval's multiple for it.
        let tenants = tenants(100);
        let writes = if backend.name == "inmem" {
            20_000
        } else {
            8_000
        };
        let memory = backend.memory(EvictionPolicy::Capacity { max_items: 50 }, 100);
        round_robin(&memory, &tenants, writes).await;
        let largest = largest(&*backend.store, &tenants).await;
        assert!(largest <= 50, "{}: a tenant holds {largest}", backend.name);
        assert!(
            largest >= 46,
            "{}: eviction frees at most a sixteenth at once",
            backend.name
        );
        backend.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_tenant_beside_quiet_ones_stays_within_capacity() {
    for backend in backends("capacity").await {
        let tenants = tenants(10);
        let memory = backend.memory(
            EvictionPolicy::RecallBased(RecallBasedConfig {
                max_items: 40,
                ..RecallBasedConfig::default()
            }),
            100,
        );
        // The busy tenant makes nine writes in ten.
        for i in 0..1_500 {
            let tenant = if i % 10 == 9 {
                &tenants[1 + (i / 10) % 9]
            } else {
                &tenants[0]
            };
            memory
                .remember(tenant, &format!("entry {i}"))
                .await
                .expect("remember");
        }
        let busy = backend
            .store
            .count(&tenants[0].exact())
            .await
            .expect("count");
        assert!(busy <= 40, "{}: the busy tenant holds {busy}", backend.name);
        let quiet = largest(&*backend.store, &tenants[1..]).await;
        assert!(
            quiet <= 40,
            "{}: a quiet tenant holds {quiet}",
            backend.name
        );
        backend.cleanup().await;
    }
}

/// Writes made at once to one namespace, most of them while another's pass runs, leave it
/// within its capacity once all are acknowledged: the writes counted during a pass ask for
/// another when they take the namespace over again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_concurrent_writes_ends_within_capacity() {
    for backend in backends("capacity_burst").await {
        let memory = Arc::new(backend.memory(EvictionPolicy::Capacity { max_items: 16 }, 100));
        let tenant = Namespace::parse("burst").expect("valid namespace");
        for round in 0..4 {
            let writes: Vec<_> = (0..64)
                .map(|i| {
                    let memory = Arc::clone(&memory);
                    let tenant = tenant.clone();
                    tokio::spawn(async move {
                        memory
                            .remember(&tenant, &format!("burst {round} note {i}"))
                            .await
                            .expect("remember")
                    })
                })
                .collect();
            for write in writes {
                write.await.expect("the write's task");
            }
            let held = backend.store.count(&tenant.exact()).await.expect("count");
            assert!(held <= 16, "{} round {round}: {held} of 16", backend.name);
        }
        backend.cleanup().await;
    }
}

/// A random interleaving: batches of writes, each to one tenant.
fn batches() -> impl Strategy<Value = Vec<(usize, usize)>> {
    prop::collection::vec((0usize..12, 1usize..25), 1..40)
}

fn policy() -> impl Strategy<Value = EvictionPolicy> {
    (1usize..20, 0usize..3).prop_map(|(max_items, which)| match which {
        0 => EvictionPolicy::Capacity { max_items },
        1 => EvictionPolicy::RecallBased(RecallBasedConfig {
            max_items,
            ..RecallBasedConfig::default()
        }),
        _ => EvictionPolicy::Hybrid {
            ttl_secs: Some(1 << 30),
            max_items: Some(max_items),
            recall: None,
        },
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn every_namespace_stays_within_capacity_after_every_batch(
        batches in batches(),
        policy in policy(),
        check_interval in 1usize..300,
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let capacity = policy.capacity().expect("every generated policy has a capacity");
            let tenants = tenants(12);
            for backend in backends("capacity").await {
                let memory = backend.memory(policy.clone(), check_interval);
                let mut written = 0usize;
                for (tenant, count) in &batches {
                    for _ in 0..*count {
                        memory
                            .remember(&tenants[*tenant], &format!("fact number {written}"))
                            .await
                            .expect("remember");
                        written += 1;
                    }
                    for tenant in &tenants {
                        let held = backend.store.count(&tenant.exact()).await.expect("count");
                        assert!(
                            held <= capacity,
                            "{}: {tenant} holds {held} over capacity {capacity}",
                            backend.name
                        );
                    }
                }
                backend.cleanup().await;
            }
        });
    }
}

/// Forgetting by value: under a value-based capacity the least valuable go first (low
/// importance, old, unused), not simply the oldest; an important memory never recalled
/// survives. Pinned memories survive every policy, TTL and decay included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn value_based_forgetting_and_pinning() {
    use agent_memory::retrieve::Remember;
    use agent_memory::{DecayConfig, EvictionConfig, ManualClock, ValueBasedConfig};
    use chrono::Duration;

    for backend in backends("value").await {
        let clock = Arc::new(ManualClock::new("2024-01-01T00:00:00Z".parse().unwrap()));
        let memory = Memory::builder()
            .store(Arc::clone(&backend.store))
            .knowledge(Arc::clone(&backend.knowledge))
            .graph(Arc::clone(&backend.graph))
            .clock(clock.clone())
            .eviction(EvictionConfig {
                policy: EvictionPolicy::ValueBased(ValueBasedConfig {
                    max_items: 4,
                    decay_rate: 0.01,
                }),
                check_interval: 100,
            })
            .build()
            .expect("valid settings");
        let ns = Namespace::parse("value").unwrap();
        // The oldest memory is the most important one: capacity by age would drop it first.
        memory
            .remember_with(
                Remember::new(ns.clone(), "the user's name is Ada")
                    .id("name")
                    .importance(1.0),
            )
            .await
            .unwrap();
        memory
            .remember_with(
                Remember::new(ns.clone(), "an old trivial note")
                    .id("pinned")
                    .importance(0.1)
                    .pinned(),
            )
            .await
            .unwrap();
        for i in 0..6 {
            clock.advance(Duration::days(10));
            memory
                .remember_with(
                    Remember::new(ns.clone(), format!("small talk number {i}"))
                        .id(format!("talk-{i}"))
                        .importance(0.2),
                )
                .await
                .unwrap();
        }
        let held = backend.store.count(&ns.exact()).await.unwrap();
        assert!(held <= 4, "{}: {held} over capacity", backend.name);
        let alive = |id: &'static str| {
            let store = Arc::clone(&backend.store);
            let ns = ns.clone();
            async move { store.get(&ns, id).await.unwrap().is_some() }
        };
        assert!(
            alive("name").await,
            "{}: the important memory stays",
            backend.name
        );
        assert!(
            alive("pinned").await,
            "{}: the pinned memory stays",
            backend.name
        );
        assert!(
            !alive("talk-0").await,
            "{}: old small talk goes first",
            backend.name
        );
        assert!(
            alive("talk-5").await,
            "{}: the newest small talk stays",
            backend.name
        );

        // TTL and decay spare the pinned memory too.
        let memory = Memory::builder()
            .store(Arc::clone(&backend.store))
            .clock(clock.clone())
            .eviction(EvictionConfig {
                policy: EvictionPolicy::Ttl { ttl_secs: 86_400 },
                check_interval: 1,
            })
            .decay(DecayConfig {
                daily_rate: 0.5,
                min_threshold: 0.05,
                grace_period_days: 0,
            })
            .build()
            .unwrap();
        clock.advance(Duration::days(30));
        memory.maintain(&ns.subtree()).await.unwrap();
        let left: Vec<String> = backend
            .store
            .list(&agent_memory::MemoryFilter::new(ns.exact()))
            .await
            .unwrap()
            .into_iter()
            .map(|item| item.id)
            .collect();
        assert_eq!(left, ["pinned"], "{}", backend.name);
        let pinned = backend.store.get(&ns, "pinned").await.unwrap().unwrap();
        assert_eq!(pinned.importance, 0.1, "{}: not decayed", backend.name);
        // Unpinned, it goes at the next pass.
        assert!(memory.pin(&ns, "pinned", false).await.unwrap());
        memory.maintain(&ns.subtree()).await.unwrap();
        assert_eq!(
            backend.store.count(&ns.exact()).await.unwrap(),
            0,
            "{}",
            backend.name
        );
        backend.cleanup().await;
    }
}

/// Capacity by age and by recall value never picks a pinned memory, even when it is the
/// oldest or the least recalled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinned_memories_survive_capacity_and_recall_value() {
    use agent_memory::retrieve::Remember;

    let policies = [
        EvictionPolicy::Capacity { max_items: 3 },
        EvictionPolicy::RecallBased(RecallBasedConfig {
            max_items: 3,
            ..RecallBasedConfig::default()
        }),
    ];
    for policy in policies {
        for backend in backends("pinned").await {
            let memory = backend.memory(policy.clone(), 100);
            let ns = Namespace::parse("pinned").unwrap();
            memory
                .remember_with(
                    Remember::new(ns.clone(), "keep me always")
                        .id("keep")
                        .pinned(),
                )
                .await
                .unwrap();
            for i in 0..10 {
                let id = memory
                    .remember(&ns, &format!("passing thought {i}"))
                    .await
                    .unwrap();
                // Every other memory is recalled, so the pinned one is the least valuable.
                backend
                    .store
                    .record_recall(&ns, &id, 0.9, chrono::Utc::now())
                    .await
                    .unwrap();
            }
            let held = backend.store.count(&ns.exact()).await.unwrap();
            assert!(held <= 3, "{} {policy:?}: {held}", backend.name);
            assert!(
                backend.store.get(&ns, "keep").await.unwrap().is_some(),
                "{} {policy:?}: the pinned memory survives",
                backend.name
            );
            backend.cleanup().await;
        }
    }
}
