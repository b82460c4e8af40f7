//! Facts that change: a user moves, a meeting moves, a rumour arrives, and the memory keeps
//! what is current in front and the rest as history.
//!
//! ```text
//! cargo run --example facts
//! ```

use agent_memory::prelude::*;
use agent_memory::{GraphEntity, ManualClock, Signal};
use chrono::{Duration, TimeZone, Utc};

fn show(title: &str, result: &RetrievalResult) {
    println!("{title}");
    for scored in &result.items {
        let stale = scored
            .breakdown
            .value(Signal::Stale)
            .map_or(String::new(), |factor| format!("  [stale x{factor}]"));
        println!("  {:.3}  {}{stale}", scored.score, scored.record.text());
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), MemoryError> {
    let start = Utc
        .with_ymd_and_hms(2025, 3, 1, 9, 0, 0)
        .single()
        .ok_or_else(|| MemoryError::invalid("start", "no such time"))?;
    let clock = std::sync::Arc::new(ManualClock::new(start + Duration::days(400)));
    let memory = Memory::builder()
        .clock(clock)
        .single_valued_relations(["lives_in"])
        .build()?;
    let user = Namespace::parse("user-7")?;

    println!("== a fact key: the user moves ==");
    let paris = memory
        .remember_with(
            Remember::new(user.clone(), "The user lives in Paris")
                .fact_key("user.city")
                .created_at(start),
        )
        .await?;
    let berlin = memory
        .remember_with(
            Remember::new(user.clone(), "The user moved to Berlin")
                .fact_key("user.city")
                .created_at(start + Duration::days(200)),
        )
        .await?;
    println!("Paris: {:?}\nBerlin: {:?}", paris.outcome, berlin.outcome);
    let question = "where does the user live";
    show(
        "recall now:",
        &memory.recall(&user.subtree(), question).await?,
    );
    let then = RecallOptions::default().as_of(start + Duration::days(100));
    show(
        "recall as of day 100:",
        &memory.recall_with(&user.subtree(), question, &then).await?,
    );
    println!("history:");
    for version in memory.history(&user, &berlin.id).await? {
        let ended = version
            .ended
            .as_ref()
            .map_or("current".to_owned(), |ended| {
                format!("ended {} ({:?})", ended.at.date_naive(), ended.reason)
            });
        println!("  {}  {ended}", version.content);
    }

    println!("\n== no key: a conflict is flagged and the older statement ranks lower ==");
    memory
        .remember_with(
            Remember::new(user.clone(), "The weekly sync is on Tuesday at 10am")
                .created_at(start + Duration::days(10)),
        )
        .await?;
    let moved = memory
        .remember_with(
            Remember::new(user.clone(), "The weekly sync is on Thursday at 10am")
                .created_at(start + Duration::days(50)),
        )
        .await?;
    for conflict in &moved.conflicts {
        println!("flagged: {} ({})", conflict.id, conflict.reason);
    }
    show(
        "recall 'weekly sync tuesday':",
        &memory
            .recall(&user.subtree(), "when is the weekly sync tuesday")
            .await?,
    );

    println!("\n== duplicates merge ==");
    let again = memory.remember(&user, "The user moved to Berlin!").await?;
    println!(
        "'The user moved to Berlin!' -> stored as {again} (was {})",
        berlin.id
    );

    println!("\n== a less credible source does not replace the fact ==");
    let rumour = memory
        .remember_with(
            Remember::new(user.clone(), "The user lives in Rome")
                .fact_key("user.city")
                .credibility(0.2),
        )
        .await?;
    println!(
        "rumour: {:?}, conflicts {}",
        rumour.outcome,
        rumour.conflicts.len()
    );
    println!("maintain: {:?}", memory.maintain(&user.subtree()).await?);

    println!("\n== a single-valued relation ==");
    let graph = memory.graph();
    for (id, kind) in [("user", "person"), ("paris", "city"), ("berlin", "city")] {
        graph
            .add_entity(GraphEntity::new(user.clone(), id, id, kind)?)
            .await?;
    }
    let lives = |city: &str, day: i64| {
        GraphRelation::new(user.clone(), "user", city, "lives_in", 1.0)?
            .with_validity(Some(start + Duration::days(day)), None)
    };
    memory.relate(lives("paris", 0)?).await?;
    let closed = memory.relate(lives("berlin", 200)?).await?;
    for relation in closed {
        println!(
            "closed: {} -{}-> {} until {:?}",
            relation.source_id, relation.relation_type, relation.target_id, relation.valid_until
        );
    }
    let context =
        agent_memory::KnowledgeGraphExt::context_for_agent(&**graph, &user, "user", 1, 400).await?;
    println!("{context}");
    Ok(())
}
