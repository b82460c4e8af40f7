//! The commands: each opens the store, does one thing and returns its result as JSON and as
//! text.

use std::fmt::Write as _;
use std::io::{Read, Write as _};

use std::collections::{BTreeMap, HashMap};

use agent_memory::{
    ConflictPair, Memory, MemoryError, MemoryFilter, MemoryItem, MemoryKind, Namespace,
    RecallFilter, RecallOptions, Reembed, Remember, Scope, Tag,
};
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::json;

use crate::backend::{self, StoreLocation};
use crate::cli::{
    Cli, Command, ConsolidateArgs, ContextArgs, ForgetArgs, HistoryArgs, KindArg, RecallArgs,
    ReembedArgs, RememberArgs, RetractArgs, SupersedeArgs,
};
use crate::config::{self, ConfigFile};
use crate::failure::{ErrorKind, Failure};
use crate::views::{ConflictPairView, MemoryView, RecallView, RememberedView};

/// What a command printed: one JSON document for `--json`, and text otherwise.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The machine-readable result.
    pub(crate) json: serde_json::Value,
    /// The human-readable result.
    pub(crate) text: String,
}

/// The settings every command shares, resolved from flags, environment and file.
#[derive(Debug)]
pub(crate) struct Settings {
    /// Where the memories live.
    pub(crate) store: StoreLocation,
    /// The namespace to work in.
    pub(crate) namespace: Namespace,
    /// The PostgreSQL schema, if set.
    pub(crate) postgres_schema: Option<String>,
    /// The capacity of each namespace, if set.
    pub(crate) max_memories: Option<usize>,
    /// Whether the result is printed as JSON.
    pub(crate) json: bool,
    /// The configuration file's values, for the commands' own settings.
    pub(crate) file: ConfigFile,
}

impl Settings {
    /// Opens the memory.
    pub(crate) async fn open(&self) -> Result<Memory, Failure> {
        self.open_tuned(backend::Tuning::default()).await
    }

    /// Opens the memory with `tuning` (a server batches recall statistics more than a
    /// command that recalls once, and sizes SQLite's read connections); the capacity is
    /// the settings'.
    pub(crate) async fn open_tuned(&self, tuning: backend::Tuning) -> Result<Memory, Failure> {
        let tuning = backend::Tuning {
            max_memories: self.max_memories,
            retriever: self.file.retriever()?,
            eviction: self.file.eviction()?,
            decay: self.file.decay()?,
            embeddings: self.file.embeddings()?,
            ..tuning
        };
        backend::open(&self.store, self.postgres_schema.as_deref(), tuning).await
    }
}

/// Parses a namespace given by the user, with a hint on the accepted form.
pub(crate) fn parse_namespace(text: &str) -> Result<Namespace, Failure> {
    let namespace = Namespace::parse(text).map_err(Failure::from)?;
    if namespace.is_root() {
        return Err(Failure::invalid(
            "namespace",
            "the namespace is empty: records live in a named namespace",
        )
        .with_hint("pass --namespace NAME, e.g. `user-42` or `acme/agent-a`"));
    }
    Ok(namespace)
}

/// Runs the command line.
pub(crate) async fn run(cli: Cli) -> Result<Outcome, Failure> {
    let file = ConfigFile::load(cli.config.as_deref())?;
    let store = config::pick(
        cli.store,
        file.store.clone(),
        config::DEFAULT_STORE.to_owned(),
    );
    if store.trim().is_empty() {
        return Err(Failure::invalid("store", "the store is empty").with_hint(
            "name a SQLite file, a postgres:// URL or :memory: (--store or AGENT_MEMORY_STORE)",
        ));
    }
    let namespace = config::pick(
        cli.namespace,
        file.namespace.clone(),
        config::DEFAULT_NAMESPACE.to_owned(),
    );
    let settings = Settings {
        store: StoreLocation::parse(&store),
        namespace: parse_namespace(&namespace)?,
        postgres_schema: cli.postgres_schema.or_else(|| file.postgres_schema.clone()),
        max_memories: cli.max_memories.or(file.max_memories),
        json: cli.json,
        file,
    };
    match cli.command {
        Command::Remember(args) => remember(&settings, args).await,
        Command::Recall(args) => recall(&settings, args).await,
        Command::Context(args) => context(&settings, args).await,
        Command::Get(args) => crate::browse::get(&settings, args).await,
        Command::List(args) => crate::browse::list(&settings, args).await,
        Command::Forget(args) => forget(&settings, args).await,
        Command::History(args) => history(&settings, args).await,
        Command::Retract(args) => retract(&settings, args).await,
        Command::Supersede(args) => supersede(&settings, args).await,
        Command::Consolidate(args) => consolidate(&settings, args).await,
        Command::Graph(command) => crate::entities::run(&settings, command).await,
        Command::Page(command) => crate::pages::run(&settings, command).await,
        Command::Conflicts => conflicts(&settings).await,
        Command::Stats => stats(&settings).await,
        Command::Maintain => maintain(&settings).await,
        Command::Reembed(args) => reembed(&settings, args).await,
        Command::Export(args) => crate::exchange::export(&settings, args).await,
        Command::Import(args) => crate::exchange::import(&settings, args).await,
        Command::Serve(args) => crate::serve::run(&settings, args).await,
        Command::Mcp(args) => crate::mcp::run_stdio(&settings, args).await,
    }
}

/// Tags given by the user, normalised.
pub(crate) fn parse_tags(tags: &[String]) -> Result<Vec<Tag>, Failure> {
    tags.iter()
        .map(|tag| Tag::new(tag).map_err(Failure::from))
        .collect()
}

/// A time given by the user: RFC 3339 (`2024-05-01T09:30:00Z`), a date and time without
/// offset (taken as UTC), or a date (midnight UTC).
pub(crate) fn parse_time(field: &str, text: &str) -> Result<DateTime<Utc>, Failure> {
    let text = text.trim();
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Ok(time.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M"] {
        if let Ok(time) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(time.and_utc());
        }
    }
    if let Some(midnight) = NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|date| date.and_hms_opt(0, 0, 0))
    {
        return Ok(midnight.and_utc());
    }
    Err(
        Failure::invalid(field, format!("{field}: {text:?} is not a time"))
            .with_hint("write a time as RFC 3339 (2024-05-01T09:30:00Z) or a date (2024-05-01)"),
    )
}

/// Which memories a recall sees by time: what holds now (the default), what was held true
/// at `as_of`, or every memory with `include_ended`.
pub(crate) fn with_time_view(
    options: RecallOptions,
    as_of: Option<&str>,
    include_ended: bool,
) -> Result<RecallOptions, Failure> {
    match (as_of.filter(|text| !text.trim().is_empty()), include_ended) {
        (Some(_), true) => Err(Failure::invalid(
            "as_of",
            "as_of and include_ended exclude each other",
        )
        .with_hint("ask for what held at a time (as_of), or for every memory (include_ended)")),
        (Some(at), false) => Ok(options.as_of(parse_time("as_of", at)?)),
        (None, true) => Ok(options.view(agent_memory::RecallView::All)),
        (None, false) => Ok(options),
    }
}

/// The fact options of a remember request: key, validity and credibility.
pub(crate) fn with_fact(
    mut request: Remember,
    fact_key: Option<String>,
    valid_from: Option<&str>,
    valid_until: Option<&str>,
    credibility: Option<f32>,
) -> Result<Remember, Failure> {
    if let Some(key) = fact_key.filter(|key| !key.trim().is_empty()) {
        request = request.fact_key(key);
    }
    let from = valid_from
        .map(|text| parse_time("valid_from", text))
        .transpose()?;
    let until = valid_until
        .map(|text| parse_time("valid_until", text))
        .transpose()?;
    if from.is_some() || until.is_some() {
        request = request.valid(from, until);
    }
    if let Some(credibility) = credibility {
        request = request.credibility(credibility);
    }
    Ok(request)
}

pub(crate) fn kinds(kinds: &[KindArg]) -> Vec<MemoryKind> {
    kinds.iter().copied().map(MemoryKind::from).collect()
}

async fn remember(settings: &Settings, args: RememberArgs) -> Result<Outcome, Failure> {
    let text = if args.text == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|error| {
                Failure::invalid("text", format!("reading standard input: {error}"))
            })?;
        text
    } else {
        args.text
    };
    let metadata = match &args.metadata {
        None => json!({}),
        Some(raw) => serde_json::from_str(raw).map_err(|error| {
            Failure::invalid("metadata", format!("metadata is not valid JSON: {error}"))
                .with_hint("pass a JSON object, e.g. --metadata '{\"topic\":\"travel\"}'")
        })?,
    };
    let mut request = Remember::new(settings.namespace.clone(), text)
        .kind(args.kind.into())
        .importance(args.importance)
        .tags(args.tags)
        .metadata(metadata);
    if let Some(source) = args.source {
        request = request.source(source);
    }
    if let Some(context) = args.context {
        request = request.context(context);
    }
    if let Some(id) = args.id {
        request = request.id(id);
    }
    if let Some(at) = &args.created_at {
        request = request.created_at(parse_time("created_at", at)?);
    }
    let request = with_fact(
        request,
        args.fact_key,
        args.valid_from.as_deref(),
        args.valid_until.as_deref(),
        args.credibility,
    )?;
    let memory = settings.open().await?;
    let remembered = memory
        .remember_with(request)
        .await
        .map_err(Failure::of_remember)?;
    let view = RememberedView::new(&settings.namespace, &remembered);
    if !settings.json
        && let Some(note) = view.note()
    {
        // Standard output keeps only the id, for scripts; what reconciling did goes to people.
        let _ = writeln!(std::io::stderr(), "{note}");
    }
    Ok(Outcome {
        json: to_json(&view)?,
        text: view.id,
    })
}

/// A view as JSON.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, Failure> {
    serde_json::to_value(value).map_err(|error| Failure::internal(error.to_string()))
}

/// The metadata conditions of a recall (`RecallFilter::metadata`) from a JSON value: an
/// object, or none.
pub(crate) fn metadata_conditions(
    value: Option<serde_json::Value>,
) -> Result<serde_json::Map<String, serde_json::Value>, Failure> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(serde_json::Map::new()),
        Some(serde_json::Value::Object(conditions)) => Ok(conditions),
        Some(other) => Err(Failure::invalid(
            "metadata",
            format!("the metadata to match is a JSON object of keys and values, not {other}"),
        )
        .with_hint("pass an object, e.g. {\"user\": \"ann\"}")),
    }
}

/// The metadata conditions written as a JSON object (a command's `--metadata`, a query
/// parameter), checked as a recall checks them.
pub(crate) fn parse_metadata_conditions(
    raw: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, Failure> {
    let value = serde_json::from_str(raw).map_err(|error| {
        Failure::invalid("metadata", format!("metadata is not valid JSON: {error}"))
            .with_hint("pass a JSON object, e.g. {\"user\":\"ann\"}")
    })?;
    let filter = RecallFilter {
        metadata: metadata_conditions(Some(value))?,
        ..RecallFilter::default()
    };
    filter.validate()?;
    Ok(filter.metadata)
}

/// The recall options of a request: at most `limit` results of `kinds` carrying `tags`,
/// whose metadata holds `metadata`.
pub(crate) fn recall_options(
    limit: usize,
    kinds: Vec<MemoryKind>,
    tags: Vec<Tag>,
    metadata: serde_json::Map<String, serde_json::Value>,
) -> Result<RecallOptions, Failure> {
    if limit == 0 || limit > 1000 {
        return Err(Failure::invalid(
            "limit",
            format!("limit {limit} is outside 1 to 1000"),
        ));
    }
    let filter = RecallFilter {
        kinds,
        tags,
        metadata,
        ..RecallFilter::default()
    };
    filter.validate()?;
    Ok(RecallOptions::default().max_results(limit).filter(filter))
}

async fn recall(settings: &Settings, args: RecallArgs) -> Result<Outcome, Failure> {
    let metadata = match &args.metadata {
        None => serde_json::Map::new(),
        Some(raw) => parse_metadata_conditions(raw)?,
    };
    let limit = match args.limit {
        Some(limit) => limit,
        None => settings.file.recall_limit()?,
    };
    let options = recall_options(limit, kinds(&args.kinds), parse_tags(&args.tags)?, metadata)?;
    let options = with_time_view(options, args.as_of.as_deref(), args.include_ended)?;
    let memory = settings.open().await?;
    let result = memory
        .recall_with(&settings.namespace.subtree(), &args.query, &options)
        .await?;
    flush_statistics(&memory).await;
    let view = RecallView::new(&result, args.explain);
    let mut text = String::new();
    if view.results.is_empty() {
        text.push_str("nothing found");
    }
    for hit in &view.results {
        let ended = hit
            .ended
            .as_ref()
            .map(|ended| format!("[{}] ", ended.kind))
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "{:.3}  {:<6}  {}  {ended}{}",
            hit.score,
            hit.source,
            hit.id,
            one_line(&hit.text)
        );
        if let Some(explanation) = &hit.explanation {
            let _ = writeln!(
                text,
                "        channels: {}",
                explanation.channels.join(", ")
            );
            for signal in &explanation.signals {
                let _ = writeln!(
                    text,
                    "        {:<12} value {:.3}  contributes {:.3}",
                    signal.name, signal.value, signal.contribution
                );
            }
        }
    }
    Ok(Outcome {
        json: serde_json::to_value(&view).map_err(|error| Failure::internal(error.to_string()))?,
        text,
    })
}

pub(crate) fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 100 {
        format!("{}…", agent_memory::text::prefix_within(&line, 99))
    } else {
        line
    }
}

/// The most tokens a context or a consolidation may be asked for, on every face.
pub(crate) const MAX_TOKENS: usize = 100_000;

/// Checks a token budget (`max_tokens`): 1 to [`MAX_TOKENS`], the same for the command, the
/// HTTP API and the MCP tools.
pub(crate) fn check_max_tokens(max_tokens: usize) -> Result<(), Failure> {
    if (1..=MAX_TOKENS).contains(&max_tokens) {
        Ok(())
    } else {
        Err(Failure::invalid(
            "max_tokens",
            format!("max_tokens {max_tokens} is outside 1 to {MAX_TOKENS}"),
        ))
    }
}

/// Writes a read's recall statistics before the process exits. A store that takes no
/// write (read-only, or locked by another process past the busy timeout) costs the
/// statistics, which only make memories look more recalled, not the answer: the failure
/// is noted on stderr.
async fn flush_statistics(memory: &Memory) {
    if let Err(error) = memory.flush().await {
        let _ = writeln!(
            std::io::stderr(),
            "note: the recall statistics were not written: {error}"
        );
    }
}

async fn context(settings: &Settings, args: ContextArgs) -> Result<Outcome, Failure> {
    check_max_tokens(args.max_tokens)?;
    let memory = settings.open().await?;
    let context = memory
        .recall_context(&settings.namespace.subtree(), &args.query, args.max_tokens)
        .await?;
    flush_statistics(&memory).await;
    Ok(Outcome {
        json: json!({ "context": context }),
        text: context,
    })
}

async fn forget(settings: &Settings, args: ForgetArgs) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    if let Some(id) = args.id {
        if !memory.forget(&settings.namespace, &id).await? {
            return Err(Failure::new(
                ErrorKind::NotFound,
                format!("no memory {id:?} in namespace {}", settings.namespace),
            ));
        }
        return Ok(Outcome {
            json: json!({ "forgotten": 1, "id": id }),
            text: format!("forgot {id}"),
        });
    }
    let filter = MemoryFilter::new(settings.namespace.subtree())
        .with_kinds(kinds(&args.kinds))
        .with_tags(args.tags.iter().map(String::as_str))?;
    let deleted = memory.forget_matching(&filter).await?;
    Ok(Outcome {
        json: json!({ "forgotten": deleted }),
        text: format!("forgot {deleted} memories"),
    })
}

async fn stats(settings: &Settings) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let stats = memory.stats(&settings.namespace.subtree()).await?;
    let mut text = format!(
        "{} memories ({} current, {} history), {} pages, {} entities in {}\n",
        stats.total,
        stats.current,
        stats.total - stats.current,
        stats.pages,
        stats.entities,
        settings.namespace
    );
    for (kind, count) in &stats.per_kind {
        let _ = writeln!(text, "  {:<10} {count}", kind.as_str());
    }
    let _ = write!(
        text,
        "mean accesses per memory (recalls and merges): {:.2}",
        stats.mean_access
    );
    if let Some(score) = stats.mean_recall_score {
        let _ = write!(
            text,
            "\n{} memories recalled, with a mean relevance of {score:.2}",
            stats.recalled
        );
    }
    if stats.compressed > 0 {
        let _ = write!(text, "\n{} compressed", stats.compressed);
    }
    let view = crate::views::StatsView::new(stats);
    Ok(Outcome {
        json: serde_json::to_value(&view).map_err(|error| Failure::internal(error.to_string()))?,
        text,
    })
}

async fn maintain(settings: &Settings) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let report = memory.maintain(&settings.namespace.subtree()).await?;
    Ok(Outcome {
        json: serde_json::to_value(report).map_err(|error| Failure::internal(error.to_string()))?,
        text: format!(
            "expired {}, decayed {}, evicted {}; {} conflicting pairs of current memories",
            report.expired, report.decayed, report.evicted, report.conflicts_found
        ),
    })
}

async fn reembed(settings: &Settings, args: ReembedArgs) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let which = if args.all {
        Reembed::All
    } else {
        Reembed::Missing
    };
    let bar = crate::exchange::progress(settings, None, "{spinner} {msg}");
    let shown = |report: &agent_memory::ReembedReport| {
        bar.set_message(format!(
            "embedded {} of the {} memories examined so far",
            report.embedded, report.examined
        ));
        bar.tick();
    };
    let done = memory
        .reembed_with_progress(&settings.namespace.subtree(), which, shown)
        .await;
    bar.finish_and_clear();
    let report = done.map_err(reembed_failure)?;
    Ok(Outcome {
        json: serde_json::to_value(report).map_err(|error| Failure::internal(error.to_string()))?,
        text: format!(
            "embedded {} of {} memories ({} changed or deleted meanwhile, left alone)",
            report.embedded, report.examined, report.skipped
        ),
    })
}

/// A failed re-embedding as the command line and the HTTP API report it: a memory without
/// an embedder is refused naming the configuration's `embeddings`, which adds one.
pub(crate) fn reembed_failure(error: MemoryError) -> Failure {
    match error {
        MemoryError::InvalidInput { field, .. } if field == "embedder" => Failure::invalid(
            "embeddings",
            "no embedding service to embed with: add an [embeddings] table to the \
             configuration file, or set AGENT_MEMORY_EMBEDDINGS_BASE_URL",
        )
        .with_hint(
            "name an OpenAI-compatible `/embeddings` service, then run the re-embedding again",
        ),
        other => other.into(),
    }
}

async fn history(settings: &Settings, args: HistoryArgs) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let versions = memory.history(&settings.namespace, &args.id).await?;
    let views: Vec<MemoryView> = versions.iter().map(MemoryView::from).collect();
    let mut text = String::new();
    let now = chrono::Utc::now();
    for (version, item) in views.iter().zip(&versions) {
        let state = match &version.ended {
            None => crate::views::validity_note(item, now)
                .unwrap_or("current")
                .to_owned(),
            Some(ended) => match (&ended.by, &ended.reason) {
                (Some(by), _) => format!("{} by {by} at {}", ended.kind, ended.at),
                (None, Some(reason)) if !reason.is_empty() => {
                    format!("{} at {}: {reason}", ended.kind, ended.at)
                }
                _ => format!("{} at {}", ended.kind, ended.at),
            },
        };
        let _ = writeln!(
            text,
            "{}  {}  {}  ({state})",
            version.valid_from.as_deref().unwrap_or(&version.created_at),
            version.id,
            one_line(&version.content)
        );
    }
    Ok(Outcome {
        json: json!({ "id": args.id, "versions": to_json(&views)? }),
        text,
    })
}

async fn retract(settings: &Settings, args: RetractArgs) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    memory
        .retract(&settings.namespace, &args.id, &args.reason)
        .await?;
    let retracted = memory
        .store()
        .get(&settings.namespace, &args.id)
        .await?
        .map(|item| MemoryView::from(&item));
    Ok(Outcome {
        json: to_json(&retracted)?,
        text: format!("retracted {}", args.id),
    })
}

async fn supersede(settings: &Settings, args: SupersedeArgs) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    memory
        .supersede(&settings.namespace, &args.old, &args.new)
        .await?;
    Ok(Outcome {
        json: json!({ "old": args.old, "new": args.new, "namespace": settings.namespace.as_str() }),
        text: format!("{} supersedes {}", args.new, args.old),
    })
}

async fn consolidate(settings: &Settings, args: ConsolidateArgs) -> Result<Outcome, Failure> {
    check_max_tokens(args.max_tokens)?;
    let memory = settings.open().await?;
    let id = memory
        .consolidate(&settings.namespace, &args.ids, args.max_tokens)
        .await?;
    let summary = memory
        .store()
        .get(&settings.namespace, &id)
        .await?
        .map(|item| MemoryView::from(&item));
    let text = summary.as_ref().map_or_else(
        || id.clone(),
        |view| format!("{id}  {}", one_line(&view.content)),
    );
    Ok(Outcome {
        json: json!({ "id": id, "consolidated": args.ids, "summary": to_json(&summary)? }),
        text,
    })
}

/// One page of the pairs of current memories in `scope` flagged as contradicting each other
/// (see [`Memory::conflicts`]), after the pair `cursor` names (by namespace and the two ids),
/// at most `limit` of them, each with both memories as stored; and the cursor of the next
/// page while more remain. A pair settled meanwhile leaves the list without moving the next
/// page's first pair (see [`page_after`](crate::cursor::page_after)). Finding the pairs
/// reads every current memory of the scope, as maintenance does; only the page's memories
/// are read again whole. A pair one of whose memories was forgotten meanwhile is left out.
pub(crate) async fn conflict_page(
    memory: &Memory,
    scope: &Scope,
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<ConflictPairView>, Option<String>), Failure> {
    let pairs = memory.conflicts(scope).await?;
    let (page, next) = crate::cursor::page_after(pairs, cursor, limit, |pair: &ConflictPair| {
        (
            pair.namespace.as_str().to_owned(),
            pair.older.clone(),
            pair.newer.clone(),
        )
    })?;
    let mut wanted: BTreeMap<&Namespace, Vec<String>> = BTreeMap::new();
    for pair in &page {
        let ids = wanted.entry(&pair.namespace).or_default();
        ids.push(pair.older.clone());
        ids.push(pair.newer.clone());
    }
    let mut stored: HashMap<(String, String), MemoryItem> = HashMap::new();
    for (namespace, ids) in wanted {
        for item in memory.store().get_many(namespace, &ids).await? {
            stored.insert((item.namespace.to_string(), item.id.clone()), item);
        }
    }
    let view = |pair: &ConflictPair, id: &str| {
        stored
            .get(&(pair.namespace.to_string(), id.to_owned()))
            .map(MemoryView::from)
    };
    let views = page
        .iter()
        .filter_map(|pair| {
            Some(ConflictPairView {
                namespace: pair.namespace.to_string(),
                older: view(pair, &pair.older)?,
                newer: view(pair, &pair.newer)?,
            })
        })
        .collect();
    Ok((views, next))
}

async fn conflicts(settings: &Settings) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let (pairs, _) =
        conflict_page(&memory, &settings.namespace.subtree(), None, usize::MAX).await?;
    let mut text = String::new();
    if pairs.is_empty() {
        text.push_str("no conflicts");
    }
    for pair in &pairs {
        let _ = writeln!(
            text,
            "{}  {}  {}\n{:width$}  {}  {}",
            pair.namespace,
            pair.older.id,
            one_line(&pair.older.content),
            "",
            pair.newer.id,
            one_line(&pair.newer.content),
            width = pair.namespace.chars().count(),
        );
    }
    Ok(Outcome {
        json: json!({ "conflicts": to_json(&pairs)? }),
        text,
    })
}
