//! The commands: each opens the store, does one thing and returns its result as JSON and as
//! text.

use std::fmt::Write as _;
use std::io::Read;

use agent_memory::{
    Memory, MemoryFilter, MemoryKind, Namespace, RecallFilter, RecallOptions, Remember, Tag,
};
use serde_json::json;

use crate::backend::{self, StoreLocation};
use crate::cli::{Cli, Command, ContextArgs, ForgetArgs, KindArg, RecallArgs, RememberArgs};
use crate::config::{self, ConfigFile};
use crate::failure::{ErrorKind, Failure};
use crate::views::RecallView;

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
    /// Whether the result is printed as JSON.
    pub(crate) json: bool,
    /// The configuration file's values, for the commands' own settings.
    pub(crate) file: ConfigFile,
}

impl Settings {
    /// Opens the memory.
    pub(crate) async fn open(&self) -> Result<Memory, Failure> {
        backend::open(&self.store, self.postgres_schema.as_deref()).await
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
    let namespace = config::pick(
        cli.namespace,
        file.namespace.clone(),
        config::DEFAULT_NAMESPACE.to_owned(),
    );
    let settings = Settings {
        store: StoreLocation::parse(&store),
        namespace: parse_namespace(&namespace)?,
        postgres_schema: cli.postgres_schema.or_else(|| file.postgres_schema.clone()),
        json: cli.json,
        file,
    };
    match cli.command {
        Command::Remember(args) => remember(&settings, args).await,
        Command::Recall(args) => recall(&settings, args).await,
        Command::Context(args) => context(&settings, args).await,
        Command::Forget(args) => forget(&settings, args).await,
        Command::Stats => stats(&settings).await,
        Command::Maintain => maintain(&settings).await,
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

fn kinds(kinds: &[KindArg]) -> Vec<MemoryKind> {
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
    let memory = settings.open().await?;
    let id = memory.remember_with(request).await?.id;
    Ok(Outcome {
        json: json!({ "id": id, "namespace": settings.namespace.as_str() }),
        text: id,
    })
}

/// The recall options of a request.
pub(crate) fn recall_options(
    limit: usize,
    kinds: Vec<MemoryKind>,
    tags: Vec<Tag>,
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
        ..RecallFilter::default()
    };
    Ok(RecallOptions::default().max_results(limit).filter(filter))
}

async fn recall(settings: &Settings, args: RecallArgs) -> Result<Outcome, Failure> {
    let options = recall_options(args.limit, kinds(&args.kinds), parse_tags(&args.tags)?)?;
    let memory = settings.open().await?;
    let result = memory
        .recall_with(&settings.namespace.subtree(), &args.query, &options)
        .await?;
    // The recall statistics are written before the process exits.
    memory.flush().await?;
    let view = RecallView::new(&result, args.explain);
    let mut text = String::new();
    if view.results.is_empty() {
        text.push_str("nothing found");
    }
    for hit in &view.results {
        let _ = writeln!(
            text,
            "{:.3}  {:<6}  {}  {}",
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

fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 100 {
        let cut: String = line.chars().take(99).collect();
        format!("{cut}…")
    } else {
        line
    }
}

async fn context(settings: &Settings, args: ContextArgs) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let context = memory
        .recall_context(&settings.namespace.subtree(), &args.query, args.max_tokens)
        .await?;
    memory.flush().await?;
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
        "{} memories, {} pages, {} entities in {}\n",
        stats.total, stats.pages, stats.entities, settings.namespace
    );
    for (kind, count) in &stats.per_kind {
        let _ = writeln!(text, "  {:<10} {count}", kind.as_str());
    }
    let _ = write!(text, "mean recalls per memory: {:.2}", stats.mean_access);
    Ok(Outcome {
        json: serde_json::to_value(&stats).map_err(|error| Failure::internal(error.to_string()))?,
        text,
    })
}

async fn maintain(settings: &Settings) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let report = memory.maintain(&settings.namespace.subtree()).await?;
    Ok(Outcome {
        json: serde_json::to_value(report).map_err(|error| Failure::internal(error.to_string()))?,
        text: format!(
            "expired {}, decayed {}, evicted {}",
            report.expired, report.decayed, report.evicted
        ),
    })
}
