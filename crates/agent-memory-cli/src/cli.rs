//! The command line: global options and one subcommand each for remember, recall, context,
//! get, list, forget, history, retract, supersede, consolidate, graph, page, conflicts,
//! stats, maintain, reembed, export, import, serve and mcp.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// What `--help` shows after the options: the exit codes and the log level.
const AFTER_HELP: &str = "Exit codes:
  0  ok
  1  internal error
  2  usage: unknown command or option, missing or malformed argument
  3  invalid input: a value, file or record was refused (the message names it)
  4  not found: no record with that id in that namespace
  5  storage: the store failed or is unreachable, or another write changed the record
     first (retrying may succeed)

Logs go to standard error, at the level AGENT_MEMORY_LOG names (error, warn, info, debug,
trace): by default info for `serve`, warn for the other commands.";

/// Long-term memory for LLM agents: remember, recall, and serve it over HTTP and MCP.
#[derive(Debug, Parser)]
#[command(name = "agent-memory", version, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    /// Where memories live: a SQLite file path (default ./agent-memory.db), a
    /// postgres://user@host:port/database URL, or `memory:` (kept in the process only).
    #[arg(
        long,
        global = true,
        env = "AGENT_MEMORY_STORE",
        value_name = "PATH|URL"
    )]
    pub(crate) store: Option<String>,

    /// The namespace (tenant) to work in, e.g. `user-42` or `acme/agent-a`; reads cover it
    /// and everything under it. Default `default`.
    #[arg(
        long,
        short = 'n',
        global = true,
        env = "AGENT_MEMORY_NAMESPACE",
        value_name = "NAMESPACE"
    )]
    pub(crate) namespace: Option<String>,

    /// A TOML configuration file; default $XDG_CONFIG_HOME/agent-memory/config.toml (else
    /// ~/.config/agent-memory/config.toml) when it exists. Flags win over environment
    /// variables, which win over the file.
    #[arg(long, global = true, env = "AGENT_MEMORY_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// The PostgreSQL schema to use (PostgreSQL stores only). Default `agent_memory`.
    #[arg(
        long,
        global = true,
        env = "AGENT_MEMORY_POSTGRES_SCHEMA",
        value_name = "SCHEMA"
    )]
    pub(crate) postgres_schema: Option<String>,

    /// Keep at most this many memories in each namespace: a write that goes over (an import
    /// too, once written) evicts the least valuable ones (pinned memories are never
    /// evicted). Default: no limit.
    #[arg(
        long,
        global = true,
        env = "AGENT_MEMORY_MAX_MEMORIES",
        value_name = "N"
    )]
    pub(crate) max_memories: Option<usize>,

    /// Print one JSON document on stdout (the result, or `{"error": ...}`) instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Remember a piece of text; prints its id.
    Remember(RememberArgs),
    /// Find the memories, pages and entities that best answer a query.
    Recall(RecallArgs),
    /// Prompt-ready text for a query, within a token budget.
    Context(ContextArgs),
    /// Show one memory by id (in the namespace exactly).
    Get(GetArgs),
    /// List the memories of the namespace (and those under it) that match filters, oldest
    /// first.
    List(ListArgs),
    /// Forget one memory by id, or every memory of the namespace that matches filters.
    Forget(ForgetArgs),
    /// Every version of the fact a memory states, oldest first, each with how it ended.
    History(HistoryArgs),
    /// Withdraw a memory without a replacement: it leaves recall and stays in its history.
    Retract(RetractArgs),
    /// Mark a memory as replaced by a newer one: the old one leaves recall and stays in the
    /// history of the new one.
    Supersede(SupersedeArgs),
    /// Fold several memories into one summary memory that lists them; they leave recall and
    /// stay in its history.
    Consolidate(ConsolidateArgs),
    /// The knowledge graph: add, show and remove entities, relate them, walk from one.
    #[command(subcommand)]
    Graph(GraphCommand),
    /// Knowledge pages (the wiki): write, show, list and remove them.
    #[command(subcommand)]
    Page(PageCommand),
    /// The pairs of current memories flagged as contradicting each other, with both texts:
    /// settle each with `supersede` or `retract`.
    Conflicts,
    /// Counts per kind and namespace, pages and entities.
    Stats,
    /// Run expiry, decay and eviction on the namespace now, as the configuration file's
    /// [eviction] and [decay] tables (or --max-memories) set them: without them there is
    /// nothing to expire, decay or evict. Also counts the conflicting pairs.
    Maintain,
    /// Embed the stored memories of the namespace (and those under it) with the embedding
    /// service: those without a vector, or all of them with --all (after a change of model
    /// or prefixes).
    Reembed(ReembedArgs),
    /// Write the namespace's records as JSON lines (agent-memory-jsonl).
    Export(ExportArgs),
    /// Read records: an agent-memory export, an MCP memory server's memory.jsonl
    /// (entities, relations and observations), or LoCoMo or LongMemEval conversations.
    Import(ImportArgs),
    /// Serve the HTTP API (with its OpenAPI document and the MCP server on /mcp).
    Serve(ServeArgs),
    /// Serve MCP on standard input and output, for an MCP client to start.
    Mcp(McpArgs),
}

/// The kinds of memory, as the command line spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum KindArg {
    /// Recent working context (conversation turns).
    ShortTerm,
    /// Durable knowledge.
    LongTerm,
    /// An event or experience.
    Episodic,
    /// A fact or concept.
    Semantic,
}

impl From<KindArg> for agent_memory::MemoryKind {
    fn from(kind: KindArg) -> Self {
        match kind {
            KindArg::ShortTerm => agent_memory::MemoryKind::ShortTerm,
            KindArg::LongTerm => agent_memory::MemoryKind::LongTerm,
            KindArg::Episodic => agent_memory::MemoryKind::Episodic,
            KindArg::Semantic => agent_memory::MemoryKind::Semantic,
        }
    }
}

/// `remember`.
#[derive(Debug, Args)]
pub(crate) struct RememberArgs {
    /// The text to remember; `-` reads it from standard input.
    pub(crate) text: String,
    /// Its kind.
    #[arg(long, value_enum, default_value = "episodic")]
    pub(crate) kind: KindArg,
    /// Its importance, from 0 to 1.
    #[arg(long, default_value_t = 0.5)]
    pub(crate) importance: f32,
    /// A tag (repeat for several).
    #[arg(long = "tag", value_name = "TAG")]
    pub(crate) tags: Vec<String>,
    /// Where it came from.
    #[arg(long)]
    pub(crate) source: Option<String>,
    /// Text that situates it (searchable, not part of it), e.g. the question it answers.
    #[arg(long)]
    pub(crate) context: Option<String>,
    /// Metadata, a JSON object.
    #[arg(long, value_name = "JSON")]
    pub(crate) metadata: Option<String>,
    /// An explicit id (an existing memory with this id is replaced, unless it is part of a
    /// fact's history: the same text again writes nothing, other text is refused); default
    /// a fresh one.
    #[arg(long)]
    pub(crate) id: Option<String>,
    /// When it was said or happened (RFC 3339, or YYYY-MM-DD); default now. Set it when
    /// replaying older conversations: recall --as-of sees what was known at a time.
    #[arg(long, value_name = "TIME")]
    pub(crate) created_at: Option<String>,
    /// The fact it states, as subject.attribute (e.g. `user.city`): it supersedes the current
    /// memory with this key, which stays in its history.
    #[arg(long, value_name = "KEY")]
    pub(crate) fact_key: Option<String>,
    /// From when the fact holds in the world (RFC 3339, or YYYY-MM-DD).
    #[arg(long, value_name = "TIME")]
    pub(crate) valid_from: Option<String>,
    /// Until when the fact holds in the world (RFC 3339, or YYYY-MM-DD).
    #[arg(long, value_name = "TIME")]
    pub(crate) valid_until: Option<String>,
    /// How far the source is trusted, from 0 to 1 (default 1): a memory never supersedes a
    /// more credible one; the two are flagged as conflicting instead.
    #[arg(long, value_name = "0..1")]
    pub(crate) credibility: Option<f32>,
}

/// `recall`.
#[derive(Debug, Args)]
pub(crate) struct RecallArgs {
    /// What to look for, in plain words.
    pub(crate) query: String,
    /// Most results, 1 to 1000 [default: the configuration file's `[retriever]`
    /// `max_results`, else 10].
    #[arg(long, short = 'k')]
    pub(crate) limit: Option<usize>,
    /// Only these kinds (repeat for several); default all but short-term.
    #[arg(long = "kind", value_enum)]
    pub(crate) kinds: Vec<KindArg>,
    /// Only records carrying every one of these tags.
    #[arg(long = "tag", value_name = "TAG")]
    pub(crate) tags: Vec<String>,
    /// Only memories whose metadata holds each key of this JSON object with its value, e.g.
    /// '{"user":"ann"}' (values compare as JSON: 1 is not "1"); pages and graph entities,
    /// which carry no metadata, are left out.
    #[arg(long, value_name = "JSON")]
    pub(crate) metadata: Option<String>,
    /// Show each result's score breakdown: the channels that found it and every signal's
    /// value and contribution (`stale` marks a memory ranked down because it ended or a newer
    /// one contradicts it).
    #[arg(long)]
    pub(crate) explain: bool,
    /// Recall what was held true at this time (RFC 3339, or YYYY-MM-DD) instead of now: the
    /// memories that held then, and the graph's relations valid then (pages and entities
    /// are found as they read now).
    #[arg(long, value_name = "TIME", conflicts_with = "include_ended")]
    pub(crate) as_of: Option<String>,
    /// Include memories that ended (superseded, retracted, consolidated), ranked below the
    /// current ones and marked.
    #[arg(long)]
    pub(crate) include_ended: bool,
}

/// `get`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    /// The memory's id.
    pub(crate) id: String,
}

/// `list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Only these kinds (repeat for several); default every kind.
    #[arg(long = "kind", value_enum)]
    pub(crate) kinds: Vec<KindArg>,
    /// Only memories carrying every one of these tags.
    #[arg(long = "tag", value_name = "TAG")]
    pub(crate) tags: Vec<String>,
    /// Only memories whose metadata holds each key of this JSON object with its value, e.g.
    /// '{"user":"ann"}'.
    #[arg(long, value_name = "JSON")]
    pub(crate) metadata: Option<String>,
    /// Only memories created at or after this time (RFC 3339, or YYYY-MM-DD).
    #[arg(long, value_name = "TIME")]
    pub(crate) since: Option<String>,
    /// Only memories created before this time (RFC 3339, or YYYY-MM-DD).
    #[arg(long, value_name = "TIME")]
    pub(crate) until: Option<String>,
    /// Only the namespace itself, not those under it.
    #[arg(long)]
    pub(crate) exact: bool,
    /// Only what is believed now: none superseded, retracted or consolidated, none past its
    /// `valid_until` (one whose `valid_from` lies ahead is listed). By default the history is
    /// listed too, each ended memory marked.
    #[arg(long)]
    pub(crate) current: bool,
    /// Newest first.
    #[arg(long)]
    pub(crate) newest_first: bool,
    /// At most this many, 1 to 10000.
    #[arg(long, short = 'k', default_value_t = 50)]
    pub(crate) limit: usize,
    /// The page after the one this cursor ends: the `next_cursor` of the previous `--json`
    /// listing (or the `more:` line of the text one).
    #[arg(long, value_name = "CURSOR")]
    pub(crate) cursor: Option<String>,
}

/// `history`.
#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// The id of any version of the fact (in the namespace exactly).
    pub(crate) id: String,
}

/// `retract`.
#[derive(Debug, Args)]
pub(crate) struct RetractArgs {
    /// The id of the memory to retract (in the namespace exactly).
    pub(crate) id: String,
    /// Why it is withdrawn (kept in its history).
    #[arg(long, default_value = "")]
    pub(crate) reason: String,
}

/// `supersede`.
#[derive(Debug, Args)]
pub(crate) struct SupersedeArgs {
    /// The id of the memory that no longer holds.
    pub(crate) old: String,
    /// The id of the memory that replaces it.
    pub(crate) new: String,
}

/// `page`.
#[derive(Debug, Subcommand)]
pub(crate) enum PageCommand {
    /// Write a page: create it, or replace the page with this id (keeping when it was
    /// created).
    Put(PageArgs),
    /// Show one page, with the pages that cite it.
    Show(PageId),
    /// The pages' table of contents, by title.
    List,
    /// Remove a page (the pages citing it keep their references).
    Remove(PageId),
}

/// `page put`.
#[derive(Debug, Args)]
pub(crate) struct PageArgs {
    /// Its id, unique in the namespace (how other pages cite it).
    pub(crate) id: String,
    /// Its title.
    pub(crate) title: String,
    /// A short summary.
    #[arg(long, default_value = "")]
    pub(crate) summary: String,
    /// The body.
    #[arg(long, default_value = "")]
    pub(crate) content: String,
    /// A topic label (repeat for several).
    #[arg(long = "tag", value_name = "TAG")]
    pub(crate) tags: Vec<String>,
    /// The id of a page it cites, written or not (repeat for several).
    #[arg(long = "cites", value_name = "PAGE")]
    pub(crate) references: Vec<String>,
    /// Write only over the page as it was read: its `updated_at` (RFC 3339, as `page show
    /// --json` prints it). Refused (exit code 5) when the page changed since, and exit code
    /// 4 when it was deleted: read it again and redo the edit.
    #[arg(long, value_name = "TIME")]
    pub(crate) if_updated_at: Option<String>,
}

/// `page show` and `page remove`.
#[derive(Debug, Args)]
pub(crate) struct PageId {
    /// The page's id.
    pub(crate) id: String,
}

/// `graph`.
#[derive(Debug, Subcommand)]
pub(crate) enum GraphCommand {
    /// Add an entity, or replace the one with this id (its relations stay).
    Add(EntityArgs),
    /// Show one entity with its relations.
    Show(EntityId),
    /// The neighbourhood of an entity within a few hops, as text; with --json, also the
    /// entities reached, nearest first, each with its hops and score.
    Related(RelatedArgs),
    /// Remove an entity and its relations.
    Remove(EntityId),
    /// Relate two entities: SOURCE RELATION TARGET (adding it again replaces its weight and
    /// attributes).
    Relate(RelateArgs),
    /// Remove the relation SOURCE RELATION TARGET.
    Unrelate(UnrelateArgs),
}

/// `graph add`.
#[derive(Debug, Args)]
pub(crate) struct EntityArgs {
    /// Its id, unique in the namespace (how relations refer to it).
    pub(crate) id: String,
    /// Its display name.
    pub(crate) name: String,
    /// What it is: person, project, organization, ...
    pub(crate) entity_type: String,
    /// One or two sentences about it.
    #[arg(long, default_value = "")]
    pub(crate) description: String,
    /// A topic label (repeat for several).
    #[arg(long = "tag", value_name = "TAG")]
    pub(crate) tags: Vec<String>,
    /// What is known about it, a JSON object, e.g. '{"born":1990}'.
    #[arg(long, value_name = "JSON")]
    pub(crate) attributes: Option<String>,
}

/// `graph show` and `graph remove`.
#[derive(Debug, Args)]
pub(crate) struct EntityId {
    /// The entity's id.
    pub(crate) id: String,
}

/// `graph related`.
#[derive(Debug, Args)]
pub(crate) struct RelatedArgs {
    /// The entity to start from.
    pub(crate) id: String,
    /// Hops to walk, 1 to 4.
    #[arg(long, default_value_t = 2)]
    pub(crate) depth: usize,
    /// Most entities reached, 1 to 200 (the nearest kept).
    #[arg(long, short = 'k', default_value_t = 50)]
    pub(crate) limit: usize,
}

/// `graph relate`.
#[derive(Debug, Args)]
pub(crate) struct RelateArgs {
    /// The source entity's id.
    pub(crate) source: String,
    /// The relation, in active voice (works_at, manages, ...).
    pub(crate) relation: String,
    /// The target entity's id.
    pub(crate) target: String,
    /// How strong it is, in [0, 1].
    #[arg(long, default_value_t = 1.0)]
    pub(crate) weight: f32,
    /// What is known about it, a JSON object, e.g. '{"since":2019}'.
    #[arg(long, value_name = "JSON")]
    pub(crate) attributes: Option<String>,
}

/// `graph unrelate`.
#[derive(Debug, Args)]
pub(crate) struct UnrelateArgs {
    /// The source entity's id.
    pub(crate) source: String,
    /// The relation.
    pub(crate) relation: String,
    /// The target entity's id.
    pub(crate) target: String,
}

/// `reembed`.
#[derive(Debug, Args)]
pub(crate) struct ReembedArgs {
    /// Embed every memory, not only those without a vector of the service's dimension.
    #[arg(long)]
    pub(crate) all: bool,
}

/// `consolidate`.
#[derive(Debug, Args)]
pub(crate) struct ConsolidateArgs {
    /// The ids of the memories to fold together (2 to 64, in the namespace exactly).
    #[arg(required = true, num_args = 2..)]
    pub(crate) ids: Vec<String>,
    /// The summary's size, in tokens (estimated).
    #[arg(long, default_value_t = 200)]
    pub(crate) max_tokens: usize,
}

/// `context`.
#[derive(Debug, Args)]
pub(crate) struct ContextArgs {
    /// What the prompt is about.
    pub(crate) query: String,
    /// The token budget (estimated).
    #[arg(long, default_value_t = 500)]
    pub(crate) max_tokens: usize,
}

/// `forget`.
#[derive(Debug, Args)]
pub(crate) struct ForgetArgs {
    /// The id of the memory to forget (in the namespace exactly).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub(crate) id: Option<String>,
    /// Forget every memory in the namespace and under it that matches --kind and --tag,
    /// each as a forget by id forgets one (the versions of its fact and the summaries
    /// holding its text go too).
    #[arg(long)]
    pub(crate) all: bool,
    /// With --all: only these kinds.
    #[arg(long = "kind", value_enum, requires = "all")]
    pub(crate) kinds: Vec<KindArg>,
    /// With --all: only memories carrying every one of these tags.
    #[arg(long = "tag", value_name = "TAG", requires = "all")]
    pub(crate) tags: Vec<String>,
}

/// `export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The file to write; default standard output (not with --json). The records are
    /// written beside it and replace it once all are written, so a failed export leaves an
    /// existing file as it was; the store's own file and SQLite's files beside it (`-wal`,
    /// `-shm`, `-journal`) are refused.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Export every namespace, not only --namespace.
    #[arg(long)]
    pub(crate) all_namespaces: bool,
}

/// The formats `import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ImportFormat {
    /// Decide from the first line.
    Auto,
    /// An `agent-memory export` (agent-memory-jsonl); records keep their namespaces.
    AgentMemory,
    /// The MCP reference memory server's memory.jsonl, into --namespace.
    McpMemory,
    /// LoCoMo conversations as JSON lines, one dialogue turn a line (`conv_id`, `dia_id`,
    /// `session`, `date`, `timestamp`, `speaker`, `text`, `blip_caption`): each
    /// conversation into its own namespace under --namespace.
    Locomo,
    /// LongMemEval's JSON (a list of questions with their haystack sessions): each
    /// question's haystack into its own namespace under --namespace.
    Longmemeval,
}

/// `import`.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The file to read; `-` reads standard input.
    pub(crate) input: PathBuf,
    /// The file's format.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) format: ImportFormat,
}

/// `serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on. Default 127.0.0.1:8080.
    #[arg(long, env = "AGENT_MEMORY_LISTEN", value_name = "HOST:PORT")]
    pub(crate) listen: Option<String>,
    /// The admin key, which manages API keys (POST/GET/DELETE /v1/keys).
    #[arg(
        long,
        env = "AGENT_MEMORY_ADMIN_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub(crate) admin_key: Option<String>,
    /// Accept requests without a key, with access to every namespace (local use only, on
    /// a loopback address). `--no-auth` alone is `--no-auth=true`; `--no-auth=false` or
    /// AGENT_MEMORY_NO_AUTH=false (also 0, no, off or empty; 1, yes, on for true)
    /// overrides the configuration file's `no_auth`.
    #[arg(
        long,
        env = "AGENT_MEMORY_NO_AUTH",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = parse_no_auth
    )]
    pub(crate) no_auth: Option<bool>,
    /// Largest request body accepted, in bytes. Default 2 MiB.
    #[arg(long, env = "AGENT_MEMORY_MAX_BODY_BYTES", value_name = "BYTES")]
    pub(crate) max_body_bytes: Option<usize>,
    /// Deadline of one request, in milliseconds. Default 30000.
    #[arg(long, env = "AGENT_MEMORY_REQUEST_TIMEOUT_MS", value_name = "MS")]
    pub(crate) request_timeout_ms: Option<u64>,
    /// The most connections open at once; more wait until one closes. A request's head
    /// must arrive within the request deadline (and 10 s), on a new connection or one kept alive, or
    /// its connection is closed. MCP event streams (GET /mcp), each holding its connection
    /// while its client keeps it open, take at most half of them, one per session and a
    /// tenant's share (an eighth, at least 16) each; past that a stream gets 503. Default
    /// 512, at most 100000.
    #[arg(long, env = "AGENT_MEMORY_MAX_CONNECTIONS", value_name = "N")]
    pub(crate) max_connections: Option<usize>,
    /// The most MCP sessions open at once on /mcp (each is kept until it has been idle 5
    /// minutes or its client ends it); an `initialize` past the limit, or past a tenant's
    /// share of it (an eighth, at least 16), gets 503 until one ends. A session holds no
    /// connection between its requests (its event stream is bounded by --max-connections),
    /// so this may exceed --max-connections. Default 1024, at most 65536.
    #[arg(long, env = "AGENT_MEMORY_MAX_MCP_SESSIONS", value_name = "N")]
    pub(crate) max_mcp_sessions: Option<usize>,
    /// SQLite stores: the most connections that serve reads (recall, context, lists, the
    /// graph) beside the one that writes, opened as requests overlap, so reads run in
    /// parallel instead of one after another and never wait for a write. Default 4, at most
    /// 64; 0 serves everything on the one connection. PostgreSQL has a pool of its own.
    #[arg(long, env = "AGENT_MEMORY_SQLITE_READERS", value_name = "N")]
    pub(crate) sqlite_readers: Option<usize>,
    /// The tool set of the MCP server on /mcp.
    #[arg(long, value_enum, default_value = "native")]
    pub(crate) mcp_compat: Compat,
}

/// Which MCP tools to offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Compat {
    /// This library's tools: remember, remember_dialogue, recall, context, forget, history,
    /// retract, supersede, conflicts, the graph's and the pages'.
    Native,
    /// The nine tools of the reference MCP memory server (create_entities, read_graph, ...).
    ServerMemory,
}

/// `mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The tool set to offer.
    #[arg(long, value_enum, default_value = "native")]
    pub(crate) compat: Compat,
}

/// `--no-auth`'s value, from the flag (`--no-auth=false`) or `AGENT_MEMORY_NO_AUTH`: true,
/// yes, on, 1 (or y, t) for true, false, no, off, 0 (or n, f) and empty for false, in any
/// case; anything else is refused with the values it takes (clap's own message names the
/// flag only, though the value may have come from the variable).
fn parse_no_auth(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "on" | "1" => Ok(true),
        "false" | "f" | "no" | "n" | "off" | "0" | "" => Ok(false),
        _ => Err(
            "not a boolean (from --no-auth=BOOL or AGENT_MEMORY_NO_AUTH): write true or false, 1 or 0, yes or no, on or off"
                .to_owned(),
        ),
    }
}
