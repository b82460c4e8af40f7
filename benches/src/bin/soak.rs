//! `cargo xtask soak`: writes many memories into a store with a capacity and prints the
//! resident memory of the process as it goes, to show that memory use stays flat.

use std::sync::Arc;
use std::time::Instant;

use agent_memory::inmem::InMemoryStore;
use agent_memory::retrieve::{Memory, Remember};
use agent_memory::{EvictionConfig, EvictionPolicy, MemoryStore, Namespace};
use memory_benches::corpus::{Rng, Zipf};

fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> std::process::ExitCode {
    let mut count = 1_000_000usize;
    let mut capacity = 10_000usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|v| v.parse().ok());
        match (arg.as_str(), value) {
            ("--count", Some(n)) => count = n,
            ("--capacity", Some(n)) => capacity = n,
            _ => {
                eprintln!("usage: soak [--count N] [--capacity N]");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("soak: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(soak(count, capacity)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("soak: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn soak(count: usize, capacity: usize) -> agent_memory::Result<()> {
    let store = Arc::new(InMemoryStore::new());
    let eviction = EvictionConfig {
        policy: EvictionPolicy::Capacity {
            max_items: capacity,
        },
        check_interval: 1000,
    };
    let memory = Memory::builder()
        .store(store.clone())
        .eviction(eviction)
        .build()?;
    let ns = Namespace::parse("soak")?;
    let zipf = Zipf::new(20_000, 7);
    let mut rng = Rng::new(11);
    let started = Instant::now();
    let every = (count / 20).max(1);
    println!("| written | stored | resident MiB | elapsed s |\n|---:|---:|---:|---:|");
    for i in 1..=count {
        let len = 150 + rng.below(300);
        memory
            .remember_with(Remember::new(ns.clone(), zipf.text(&mut rng, len)))
            .await?;
        if i % every == 0 || i == count {
            // Recall now and then, so recall statistics and feedback are part of the soak.
            let query = zipf.text(&mut rng, 20);
            memory.recall(&ns.exact(), &query).await?;
            let stored = store.count(&ns.exact()).await?;
            let rss = resident_kib().map_or_else(
                || "?".to_owned(),
                |kib| format!("{:.1}", kib as f64 / 1024.0),
            );
            println!(
                "| {i} | {stored} | {rss} | {:.1} |",
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}
