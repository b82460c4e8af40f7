//! `cargo xtask eval`: retrieval quality on LoCoMo conversations and LongMemEval haystacks.
//!
//! ```text
//! cargo xtask eval [--memories FILE --queries FILE | --longmemeval FILE | --synthetic]
//!                  [--ranked FILE] [--repeat N]
//!                  [--backend inmem|sqlite|postgres] [--strategy hybrid|memory|knowledge|graph]
//!                  [--scoring hybrid|relevance|overlap] [--fusion weighted|rrf]
//!                  [--weights relevance=0.6,overlap=0.1,...] [--candidates N]
//!                  [--no-date] [--no-context] [--role-weight ROLE=W] [--addressee on|off]
//!                  [--role-weight-about-agent ROLE=W] [--drop-time-words on|off]
//!                  [--time-phrases on|off]
//!                  [--other-speaker-factor F] [--context-only-factor F] [--role-search-depth N]
//!                  [--outside-time-factor F]
//!                  [--head-depth N] [--head-weight W] [--head-question-factor F] [--head-answer-bonus B] [--head-reply-bonus B] [--no-facts]
//!                  [--show-misses] [--show-facts] [--explain QID]
//!                  [--enrich on|off] [--rerank on|off] [--rerank-weight W] [--rerank-depth N]
//!                  [--embeddings on|off] [--json FILE]
//! cargo xtask eval --facts [--subjects N] [--seed N] [--k N]
//! ```
//!
//! `--facts` runs the generated changing-facts benchmark ([`memory_benches::facts`]) with
//! fact keys, with the default conflict detector and without detection, instead of a
//! conversation set. `--no-facts` ingests the conversations with `FactsConfig::off()` (no
//! duplicate merging or conflict flags). `--enrich on` links every turn to the entities the
//! rule-based enricher finds (the graph channel then follows the links); `--rerank on`
//! reranks with the default `TermReranker` (`--rerank-weight W` sets its share and
//! `--rerank-depth N` how many of the best it reorders; either turns it on). Both are off by
//! default. `--embeddings on` adds the embedding channel through an OpenAI-compatible
//! `/embeddings` service named by `AGENT_MEMORY_EMBEDDINGS_BASE_URL`, `_MODEL`, `_DIMENSION`,
//! `_QUERY_PREFIX`, `_DOCUMENT_PREFIX` and `_API_KEY` (`EmbeddingConfig::from_env`): every
//! turn is embedded as it is
//! remembered, so a haystack costs one request per turn. `--explain QID` (repeatable) prints
//! that question's first 30 results with their score breakdown: each signal's value and
//! contribution, and whether the result is evidence.

use std::path::PathBuf;
use std::sync::Arc;

use agent_memory::MemoryStore;
use agent_memory::inmem::InMemoryStore;
use agent_memory::retrieve::{FactsConfig, RerankConfig};
use agent_memory::retrieve::{Fusion, RetrievalStrategy, ScoringStrategy};
use memory_benches::eval::{
    EvalOptions, Evaluation, Query, TextFormat, Turn, each_longmemeval, evaluate, read_jsonl,
    render,
};

fn usage() -> String {
    "usage: eval [--memories FILE --queries FILE | --longmemeval FILE | --synthetic] [--ranked FILE] [--backend inmem|sqlite|postgres] [--strategy hybrid|memory|knowledge|graph] [--scoring hybrid|relevance|overlap] [--weights SIGNAL=W,...] [--fusion weighted|rrf] [--candidates N] [--no-date] [--no-context] [--role-weight ROLE=W] [--addressee on|off] [--role-weight-about-agent ROLE=W] [--other-speaker-factor F] [--context-only-factor F] [--role-search-depth N] [--drop-time-words on|off] [--time-phrases on|off] [--outside-time-factor F] [--head-depth N] [--head-weight W] [--head-question-factor F] [--head-answer-bonus B] [--head-reply-bonus B] [--no-facts] [--show-misses] [--show-facts] [--explain QID] [--enrich on|off] [--rerank on|off] [--rerank-weight W] [--rerank-depth N] [--embeddings on|off] [--repeat N] [--json FILE]\n       eval --facts [--subjects N] [--seed N] [--k N]".into()
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("eval: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut memories = root.join("../shared/eval/locomo-dev/memories.jsonl");
    let mut queries = root.join("../shared/eval/locomo-dev/queries.jsonl");
    let mut synthetic = false;
    let mut facts = false;
    let mut facts_spec = memory_benches::facts::FactsSpec::default();
    let mut longmemeval: Option<PathBuf> = None;
    let mut ranked: Option<PathBuf> = None;
    let mut backend = "inmem".to_owned();
    let mut json: Option<PathBuf> = None;
    let mut options = EvalOptions {
        progress: true,
        ..EvalOptions::default()
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value; {}", usage()))
        };
        match arg.as_str() {
            "--memories" => memories = PathBuf::from(value()?),
            "--queries" => queries = PathBuf::from(value()?),
            "--synthetic" => synthetic = true,
            "--facts" => facts = true,
            "--subjects" => {
                facts_spec.subjects = value()?.parse().map_err(|e| format!("--subjects: {e}"))?;
            }
            "--seed" => facts_spec.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--k" => facts_spec.k = value()?.parse().map_err(|e| format!("--k: {e}"))?,
            "--no-facts" => options.facts = FactsConfig::off(),
            "--show-facts" => options.show_facts = true,
            "--enrich" => options.enrich = on_off(&arg, &value()?)?,
            "--embeddings" => {
                options.embedder = if on_off(&arg, &value()?)? {
                    let config = agent_memory::models::EmbeddingConfig::from_env()
                        .map_err(|e| format!("--embeddings: {e}"))?;
                    let embedder = agent_memory::models::HttpEmbedder::new(config)
                        .map_err(|e| format!("--embeddings: {e}"))?;
                    Some(Arc::new(embedder) as Arc<dyn agent_memory::EmbeddingProvider>)
                } else {
                    None
                };
            }
            "--addressee" => options.config.read_addressee = on_off(&arg, &value()?)?,
            "--drop-time-words" => options.config.drop_time_words = on_off(&arg, &value()?)?,
            "--time-phrases" => {
                options.config.time_words_as_phrase = on_off(&arg, &value()?)?;
            }
            "--rerank" => {
                options.rerank = on_off(&arg, &value()?)?.then(RerankConfig::default);
            }
            "--rerank-weight" => {
                let weight = value()?
                    .parse()
                    .map_err(|e| format!("--rerank-weight: {e}"))?;
                options
                    .rerank
                    .get_or_insert_with(RerankConfig::default)
                    .weight = weight;
            }
            "--rerank-depth" => {
                let depth = value()?
                    .parse()
                    .map_err(|e| format!("--rerank-depth: {e}"))?;
                options
                    .rerank
                    .get_or_insert_with(RerankConfig::default)
                    .depth = depth;
            }
            "--longmemeval" => longmemeval = Some(PathBuf::from(value()?)),
            "--ranked" => ranked = Some(PathBuf::from(value()?)),
            "--backend" => backend = value()?,
            "--json" => json = Some(PathBuf::from(value()?)),
            "--no-date" => options.format = TextFormat::Speaker,
            "--show-misses" => options.show_misses = true,
            "--explain" => options.explain.push(value()?),
            "--no-context" => options.turn_context = false,
            "--role-weight" | "--role-weight-about-agent" => {
                // ROLE=WEIGHT, e.g. assistant=0.8; a weight of 1 removes the role's entry.
                let spec = value()?;
                let (role, weight) = spec
                    .split_once('=')
                    .ok_or_else(|| format!("{arg}: expected ROLE=WEIGHT, got {spec:?}"))?;
                let weight: f32 = weight.parse().map_err(|e| format!("{arg} {role}: {e}"))?;
                let weights = if arg == "--role-weight" {
                    &mut options.config.role_weights
                } else {
                    &mut options.config.role_weights_about_agent
                };
                if weight == 1.0 {
                    weights.remove(role);
                } else {
                    weights.insert(role.to_owned(), weight);
                }
            }
            "--head-depth" => {
                options.config.head_rerank_depth =
                    value()?.parse().map_err(|e| format!("--head-depth: {e}"))?;
            }
            "--head-weight" => {
                options.config.head_rerank_weight = value()?
                    .parse()
                    .map_err(|e| format!("--head-weight: {e}"))?;
            }
            "--head-reply-bonus" => {
                options.config.head_reply_bonus =
                    value()?.parse().map_err(|e| format!("{arg}: {e}"))?;
            }
            "--head-answer-bonus" | "--head-quantity-bonus" => {
                options.config.head_answer_bonus =
                    value()?.parse().map_err(|e| format!("{arg}: {e}"))?;
            }
            "--head-question-factor" => {
                options.config.head_question_factor = value()?
                    .parse()
                    .map_err(|e| format!("--head-question-factor: {e}"))?;
            }
            "--other-speaker-factor" => {
                options.config.other_speaker_factor = value()?
                    .parse()
                    .map_err(|e| format!("--other-speaker-factor: {e}"))?;
            }
            "--context-only-factor" => {
                options.config.context_only_factor = value()?
                    .parse()
                    .map_err(|e| format!("--context-only-factor: {e}"))?;
            }
            "--role-search-depth" => {
                options.config.role_search_depth = value()?
                    .parse()
                    .map_err(|e| format!("--role-search-depth: {e}"))?;
            }
            "--outside-time-factor" => {
                options.config.outside_time_factor = value()?
                    .parse()
                    .map_err(|e| format!("--outside-time-factor: {e}"))?;
            }
            "--repeat" => {
                options.repeat = value()?
                    .parse::<usize>()
                    .map_err(|e| format!("--repeat: {e}"))?
                    .max(1);
            }
            "--candidates" => {
                options.config.candidates_per_channel =
                    value()?.parse().map_err(|e| format!("--candidates: {e}"))?;
            }
            "--strategy" => {
                options.config.strategy = match value()?.as_str() {
                    "hybrid" => RetrievalStrategy::Hybrid,
                    "memory" => RetrievalStrategy::MemoryOnly,
                    "knowledge" => RetrievalStrategy::KnowledgeOnly,
                    "graph" => RetrievalStrategy::GraphOnly,
                    other => return Err(format!("unknown strategy {other}")),
                }
            }
            "--scoring" => {
                options.config.scoring = match value()?.as_str() {
                    "hybrid" => ScoringStrategy::default(),
                    "relevance" => ScoringStrategy::Relevance,
                    "overlap" => ScoringStrategy::TextOverlap,
                    other => return Err(format!("unknown scoring {other}")),
                }
            }
            "--weights" => {
                let mut weights = ScoringStrategy::Relevance.weights();
                weights.relevance = 0.0;
                for pair in value()?.split(',') {
                    let (name, number) = pair
                        .split_once('=')
                        .ok_or_else(|| format!("--weights: {pair} is not name=value"))?;
                    let number: f32 = number
                        .parse()
                        .map_err(|e| format!("--weights {name}: {e}"))?;
                    match name {
                        "relevance" => weights.relevance = number,
                        "overlap" => weights.overlap = number,
                        "graph" => weights.graph = number,
                        "temporal" => weights.temporal = number,
                        "reference" => weights.reference = number,
                        "importance" => weights.importance = number,
                        "frequency" => weights.frequency = number,
                        "recency" => weights.recency = number,
                        "context" => weights.context = number,
                        "embedding" => weights.embedding = number,
                        other => return Err(format!("--weights: unknown signal {other}")),
                    }
                }
                options.config.scoring = ScoringStrategy::Hybrid(weights);
            }
            "--fusion" => {
                options.config.fusion = match value()?.as_str() {
                    "weighted" => Fusion::Weighted,
                    "rrf" => Fusion::ReciprocalRank { k: 60.0 },
                    other => return Err(format!("unknown fusion {other}")),
                }
            }
            "--help" | "-h" => {
                println!("{}", usage());
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}; {}", usage())),
        }
    }
    if facts {
        return run_facts(&facts_spec);
    }
    options.keep_ranked = ranked.is_some();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let store: Arc<dyn MemoryStore> = match backend.as_str() {
        "inmem" => Arc::new(InMemoryStore::new()),
        "sqlite" => sqlite_store()?,
        "postgres" => runtime.block_on(postgres_store())?,
        other => {
            return Err(format!(
                "unknown backend {other}; available: inmem, sqlite, postgres"
            ));
        }
    };
    let report = if let Some(path) = &longmemeval {
        // One question at a time, each haystack forgotten once asked: a file of any size
        // (`longmemeval_m`) is measured in the memory of one haystack.
        eprintln!(
            "eval: {}, one question at a time, backend {backend}",
            path.display()
        );
        let mut evaluation = runtime
            .block_on(async { Evaluation::new(store, &options) })
            .map_err(|e| e.to_string())?;
        each_longmemeval(path, |haystack| {
            runtime.block_on(async {
                let turns: Vec<&Turn> = haystack.turns.iter().collect();
                let conv_id = haystack.query.conv_id.as_str();
                evaluation
                    .conversation(conv_id, &turns, &[&haystack.query])
                    .await?;
                evaluation.forget(conv_id).await
            })
        })
        .map_err(|e| e.to_string())?;
        evaluation.finish()
    } else {
        let (turns, questions): (Vec<Turn>, Vec<Query>) = if synthetic {
            memory_benches::synthetic::synthetic(5, 200, 42)
        } else {
            let turns = read_jsonl(&memories).map_err(|e| e.to_string())?;
            let questions = read_jsonl(&queries).map_err(|e| e.to_string())?;
            (turns, questions)
        };
        eprintln!(
            "eval: {} turns, {} questions, backend {backend}",
            turns.len(),
            questions.len()
        );
        runtime
            .block_on(evaluate(&turns, &questions, store, &options))
            .map_err(|e| e.to_string())?
    };
    println!("{}", render(&report));
    for question in &report.explained {
        eprint!("{}", question.render());
    }
    if let Some(path) = ranked {
        let mut text = String::new();
        for question in &report.ranked {
            text.push_str(&serde_json::to_string(question).map_err(|e| e.to_string())?);
            text.push('\n');
        }
        std::fs::write(&path, text).map_err(|e| format!("write {}: {e}", path.display()))?;
        eprintln!("eval: wrote each question's ranking to {}", path.display());
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("write {}: {e}", path.display()))?;
        eprintln!("eval: wrote {}", path.display());
    }
    Ok(())
}

/// The value of an on/off flag.
fn on_off(flag: &str, value: &str) -> Result<bool, String> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("{flag} takes on or off, not {other}")),
    }
}

/// `--facts`: the changing-facts benchmark in every mode, as tables on stdout.
fn run_facts(spec: &memory_benches::facts::FactsSpec) -> Result<(), String> {
    use memory_benches::facts::{FactsMode, generate, render, run};
    let set = generate(spec);
    eprintln!(
        "eval --facts: {} memories, {} facts, seed {}",
        set.statements.len(),
        set.facts.len(),
        spec.seed
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut reports = Vec::new();
    for mode in FactsMode::ALL {
        eprintln!("eval --facts: {}", mode.name());
        reports.push(
            runtime
                .block_on(run(&set, mode, spec.k))
                .map_err(|e| e.to_string())?,
        );
    }
    print!("{}", render(&set, &reports));
    Ok(())
}

/// A fresh SQLite file under the system's temporary directory (removed first if it exists).
fn sqlite_store() -> Result<Arc<dyn MemoryStore>, String> {
    let path = std::env::temp_dir().join("agent-memory-eval.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let backend = agent_memory::sqlite::SqliteBackend::open(&path).map_err(|e| e.to_string())?;
    eprintln!("eval: SQLite file {}", path.display());
    Ok(Arc::new(backend.memory_store().clone()))
}

/// The PostgreSQL memory store of `--backend postgres`: schema `am_eval` on the server named
/// by `AGENT_MEMORY_POSTGRES_URL` (else `AGENT_MEMORY_TEST_POSTGRES_URL`, else the local
/// development server), emptied first so every run starts from nothing.
async fn postgres_store() -> Result<Arc<dyn MemoryStore>, String> {
    use agent_memory::postgres::{PostgresBackend, PostgresOptions};
    let url = std::env::var("AGENT_MEMORY_POSTGRES_URL")
        .or_else(|_| std::env::var("AGENT_MEMORY_TEST_POSTGRES_URL"))
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let backend = PostgresBackend::connect(&url, PostgresOptions::default().with_schema("am_eval"))
        .await
        .map_err(|e| format!("postgres: {e}"))?;
    let store = backend.memory_store().clone();
    store
        .clear(&agent_memory::Scope::all())
        .await
        .map_err(|e| format!("postgres: emptying schema am_eval: {e}"))?;
    Ok(Arc::new(store))
}
