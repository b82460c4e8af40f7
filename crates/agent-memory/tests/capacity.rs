//! Capacity eviction holds for every tenant: whatever the interleaving of writes over many
//! namespaces, each namespace written through `Memory` stays within the policy's capacity
//! after every write, with no call to `maintain`. Runs in memory, on SQLite and, when
//! `AGENT_MEMORY_TEST_POSTGRES_URL` names a server, on PostgreSQL.
#![cfg(all(feature = "retrieve", feature = "sqlite"))]

mod common;

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
