//! `agent_memory.Memory`: the Rust `Memory` behind a Python class. Every method converts
//! its arguments while holding the GIL, then runs the library's future on the module's
//! runtime with the GIL released (see `runtime`).
//!
//! The methods are one `#[pymethods]` block, as PyO3 asks without its `multiple-pymethods`
//! feature (which registers blocks at start-up through `inventory`): the file is long for
//! that. Each method converts and calls; what takes more (arguments, graph and page records)
//! lives in the submodules below.

use std::sync::Arc;

use agent_memory::{
    DecayConfig, EvictionConfig, EvictionPolicy, FactsConfig, GraphEntity, ListPosition, Memory,
    MemoryFilter, MemoryItem, PostgresBackend, PostgresOptions, RecallFilter, RecallOptions,
    RecallView, Remember, RetrieverConfig, SqliteBackend, StoreLocation, TimeView,
};
use chrono::Utc;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::{PyTraverseError, PyVisit};

use crate::convert::{count, count_of, from_json, from_python, record_namespace, scope, to_time};
use crate::errors::{invalid, to_py_err};
use crate::results::{Recalled, Record, Remembered};
use crate::runtime::{block_on, block_on_detached};

mod arguments;
mod graph;
mod pages;

use self::arguments::{
    conditions, location, metadata, over_default, records, tagged, tags, turn_of,
};

/// Long-term memory for an agent: remember text, recall the best of it for a query with
/// each score explained, build prompt context, forget, maintain.
///
/// `Memory()` keeps everything in this process; `Memory("agent.db")` in a SQLite file (made
/// if missing; other processes may open it too); `Memory("postgres://user@host/db")` on a
/// PostgreSQL server (`postgres_schema` names the schema, default `agent_memory`).
///
/// Namespaces are strings like `"user-42/agent-a/session-7"` (segments of letters, digits
/// and `-_.:@`). Reads take a namespace and cover it and everything under it, or only it
/// with `exact=True`; `""` covers every namespace.
///
/// Builder settings are dicts with the Rust types' field names: `eviction` (an
/// `EvictionPolicy`, e.g. `{"policy": "value_based", "max_items": 1000}`), `check_interval`,
/// `decay` (`{"daily_rate": 0.01, ...}`), `facts` (`{"duplicates": "merge", ...}`) and
/// `retriever` (`{"max_results": 20, "min_score": 0.05, ...}`). A key the type does not
/// have raises `InvalidInputError` for that setting.
///
/// `embedder` turns on the optional embedding channel, so recall also finds memories by
/// meaning: a callable taking a list of texts and returning one vector per text (with
/// `embedding_dimension`, the vectors' length), or a dict naming an OpenAI-compatible
/// `/embeddings` service (`{"base_url": ..., "model": ..., "dimension": ...}`, optionally
/// `api_key`, `batch_size`, `send_dimensions`). Each memory is embedded as it is
/// remembered and each query as it is asked; a memory the embedder fails on is not stored.
/// The embedder runs inside the call that needs it, so it may not call a `Memory` method
/// itself (of any memory): that raises `RuntimeError` within it.
///
/// Every method releases the GIL while the library works, so threads may share one Memory.
/// Errors raise subclasses of `agent_memory.MemoryError`.
#[pyclass(frozen, module = "agent_memory", name = "Memory")]
pub(crate) struct PyMemory {
    inner: Arc<Memory>,
    location: String,
    /// The process that opened it: a process forked after that holds a copy whose threads
    /// (a SQLite writer, a connection pool's tasks) did not come along.
    opened_by: u32,
    /// The embedder made of Python callables, if any: held by `inner` too, and named here
    /// for `__traverse__`.
    python_embedder: Option<Arc<crate::embedder::PyEmbedder>>,
}

impl Drop for PyMemory {
    fn drop(&mut self) {
        if self.opened_by != std::process::id() {
            // In a forked child: flushing or closing would wait for threads that exist only
            // in the parent. The copy is left as it is; the parent still owns the store.
            std::mem::forget(Arc::clone(&self.inner));
            return;
        }
        // Recall statistics still buffered would be lost with the last handle.
        if Arc::strong_count(&self.inner) == 1 {
            let inner = Arc::clone(&self.inner);
            block_on_detached(async move { inner.flush().await });
        }
    }
}

impl PyMemory {
    /// The memory, unless this process was forked from the one that opened it: the copy a
    /// child holds would wait for ever on threads left in the parent (a SQLite writer, a
    /// connection pool's tasks), so its calls raise instead.
    fn live(&self) -> PyResult<&Arc<Memory>> {
        if self.opened_by == std::process::id() {
            Ok(&self.inner)
        } else {
            Err(pyo3::exceptions::PyRuntimeError::new_err(
                "agent_memory: this Memory was opened by the process this one was forked from, \
                 and its threads stayed there; open a new Memory in this process",
            ))
        }
    }
}

#[pymethods]
impl PyMemory {
    #[new]
    #[pyo3(signature = (
        store = None,
        *,
        postgres_schema = None,
        eviction = None,
        check_interval = None,
        decay = None,
        facts = None,
        retriever = None,
        single_valued_relations = None,
        embedder = None,
        embedding_dimension = None,
    ))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn new(
        py: Python<'_>,
        store: Option<&Bound<'_, PyAny>>,
        postgres_schema: Option<String>,
        eviction: Option<&Bound<'_, PyAny>>,
        check_interval: Option<i64>,
        decay: Option<&Bound<'_, PyAny>>,
        facts: Option<&Bound<'_, PyAny>>,
        retriever: Option<&Bound<'_, PyAny>>,
        single_valued_relations: Option<Vec<String>>,
        embedder: Option<&Bound<'_, PyAny>>,
        embedding_dimension: Option<i64>,
    ) -> PyResult<Self> {
        let check_interval = count_of(py, "check_interval", check_interval)?;
        let embedding_dimension = count_of(py, "embedding_dimension", embedding_dimension)?;
        let location = location(store)?;
        let mut builder = Memory::builder();
        let mut python_embedder = None;
        match embedder {
            Some(embedder) => {
                let (provider, callables) =
                    crate::embedder::embedder(py, embedder, embedding_dimension)?;
                builder = builder.embedder(provider);
                python_embedder = callables;
            }
            None if embedding_dimension.is_some() => {
                return Err(invalid(
                    py,
                    "embedding_dimension",
                    "given without an embedder",
                ));
            }
            None => {}
        }
        if eviction.is_some() || check_interval.is_some() {
            let mut config = EvictionConfig::default();
            if let Some(eviction) = eviction {
                config.policy = tagged::<EvictionPolicy>(eviction, "policy", "eviction")?;
            }
            if let Some(interval) = check_interval {
                config.check_interval = interval;
            }
            builder = builder.eviction(config);
        }
        if let Some(decay) = decay {
            builder = builder.decay(over_default::<DecayConfig>(decay, "decay")?);
        }
        if let Some(facts) = facts {
            builder = builder.facts(over_default::<FactsConfig>(facts, "facts")?);
        }
        if let Some(retriever) = retriever {
            builder =
                builder.retriever_config(from_python::<RetrieverConfig>(retriever, "retriever")?);
        }
        if let Some(relations) = single_valued_relations {
            builder = builder.single_valued_relations(relations);
        }
        let describe = location.to_string();
        let memory = block_on(py, async move {
            let builder = match location {
                StoreLocation::InMemory => builder,
                StoreLocation::Sqlite(path) => builder.stores(SqliteBackend::open(path)?.stores()),
                StoreLocation::Postgres(url) => {
                    let mut options = PostgresOptions::default();
                    if let Some(schema) = postgres_schema {
                        options = options.with_schema(schema);
                    }
                    builder.stores(PostgresBackend::connect(&url, options).await?.stores())
                }
            };
            builder.build()
        })?;
        Ok(Self {
            inner: Arc::new(memory),
            location: describe,
            opened_by: std::process::id(),
            python_embedder,
        })
    }

    /// The Python objects this memory holds (an embedder's callables), for the cycle
    /// collector: a `Memory` whose embedder is a method of the object holding it is freed
    /// with that object.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match &self.python_embedder {
            Some(embedder) => embedder.traverse(&visit),
            None => Ok(()),
        }
    }

    /// Where the records live: `:memory:`, the SQLite path, or the PostgreSQL server.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    /// Remembers `text` in `namespace`, reconciled with what is stored: a duplicate merges
    /// into the memory it repeats, a memory with a `fact_key` supersedes the current one of
    /// that key, and contradicted memories are flagged. Returns what happened.
    ///
    /// `kind` is `episodic` (default), `semantic`, `long_term` or `short_term`; `importance`
    /// in [0, 1] (default 0.5); `metadata` a JSON-like dict; `created_at` a datetime (naive
    /// means UTC), an RFC 3339 string or epoch seconds; `context` text that situates it
    /// (searched with a lower weight, not part of it); `pinned` keeps maintenance away;
    /// `valid_from`/`valid_until` when the fact holds; `credibility` of its source in [0, 1].
    #[pyo3(signature = (
        namespace,
        text,
        *,
        kind = None,
        importance = None,
        tags = None,
        metadata = None,
        id = None,
        source = None,
        context = None,
        fact_key = None,
        created_at = None,
        pinned = false,
        valid_from = None,
        valid_until = None,
        credibility = None,
    ))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn remember(
        &self,
        py: Python<'_>,
        namespace: &str,
        text: String,
        kind: Option<&str>,
        importance: Option<f32>,
        tags: Option<Vec<String>>,
        metadata: Option<&Bound<'_, PyAny>>,
        id: Option<String>,
        source: Option<String>,
        context: Option<String>,
        fact_key: Option<String>,
        created_at: Option<&Bound<'_, PyAny>>,
        pinned: bool,
        valid_from: Option<&Bound<'_, PyAny>>,
        valid_until: Option<&Bound<'_, PyAny>>,
        credibility: Option<f32>,
    ) -> PyResult<Remembered> {
        let mut request = Remember::new(record_namespace(py, namespace)?, text);
        if let Some(name) = kind {
            request = request.kind(crate::convert::kind(py, name)?);
        }
        if let Some(importance) = importance {
            request = request.importance(importance);
        }
        if let Some(tags) = tags {
            request = request.tags(tags);
        }
        request = request.metadata(self::metadata(metadata)?);
        if let Some(id) = id {
            request = request.id(id);
        }
        if let Some(source) = source {
            request = request.source(source);
        }
        if let Some(context) = context {
            request = request.context(context);
        }
        if let Some(key) = fact_key {
            request = request.fact_key(key);
        }
        if let Some(at) = created_at {
            request = request.created_at(to_time(at, "created_at")?);
        }
        if pinned {
            request = request.pinned();
        }
        if valid_from.is_some() || valid_until.is_some() {
            request = request.valid(
                valid_from.map(|at| to_time(at, "valid_from")).transpose()?,
                valid_until
                    .map(|at| to_time(at, "valid_until"))
                    .transpose()?,
            );
        }
        if let Some(credibility) = credibility {
            request = request.credibility(credibility);
        }
        let memory = self.live()?;
        // The text is the memory's `content`: an error names it as the caller wrote it.
        block_on(py, async move {
            memory
                .remember_with(request)
                .await
                .map_err(|error| error.renamed("content", "text"))
        })
        .map(Remembered::new)
    }

    /// Remembers the turns of a dialogue in `namespace`, in order, as
    /// `Memory::dialogue` does: each turn stored as `[date] speaker: text` with its role and
    /// session in metadata, and the turns next to it in its session as its context (searched
    /// with a lower weight), each reconciled as `remember` does. Returns what happened to
    /// each turn.
    ///
    /// Each turn is a dict: `text` (required), `speaker`, `role` (`user`, `assistant`,
    /// `system` or `tool`), `session`, `at` (a datetime, RFC 3339 string or epoch seconds),
    /// `id`, `metadata`, `source`. The turns of one call form one stretch of dialogue: the
    /// first turn of a later call is not linked to the last of this one, so pass a
    /// conversation's turns together (or at least whole sessions). Every turn is checked
    /// before any is stored: a bad one refuses the call, naming the field and the turn's
    /// position, and stores nothing; a storage failure part way leaves the turns before it
    /// stored.
    #[pyo3(signature = (namespace, turns))]
    fn remember_dialogue(
        &self,
        py: Python<'_>,
        namespace: &str,
        turns: &Bound<'_, PyList>,
    ) -> PyResult<Vec<Remembered>> {
        let namespace = record_namespace(py, namespace)?;
        let mut parsed = Vec::with_capacity(turns.len());
        for (position, turn) in turns.iter().enumerate() {
            parsed.push(turn_of(py, position, &turn)?);
        }
        let memory = Arc::clone(self.live()?);
        block_on(py, async move {
            let mut dialogue = memory.dialogue(namespace);
            let at = |position: usize| {
                move |error| match error {
                    agent_memory::MemoryError::InvalidInput { field, problem } => {
                        agent_memory::MemoryError::InvalidInput {
                            field: format!("turns[{position}].{field}"),
                            problem,
                        }
                    }
                    other => other,
                }
            };
            for (position, turn) in parsed.iter().enumerate() {
                dialogue.check(turn).map_err(at(position))?;
            }
            agent_memory::retrieve::Dialogue::check_ids(&parsed)
                .map_err(|(position, error)| at(position)(error))?;
            let mut out = Vec::with_capacity(parsed.len());
            for (position, turn) in parsed.into_iter().enumerate() {
                let remembered = dialogue.add(turn).await.map_err(at(position))?;
                out.push(Remembered::new(remembered));
            }
            Ok(out)
        })
    }

    /// Stores `text` under `id` in `namespace` as given, replacing the memory with that id
    /// if there is one (its creation time and recall statistics are kept): a key-value
    /// write, without the duplicate and fact reconciliation of `remember` and without an
    /// eviction pass (`maintain` still bounds the namespace). With an `embedder`, the text
    /// is embedded first, as `remember` embeds it; a failure stores nothing. A memory that
    /// is part of a fact's history (superseded, consolidated, retracted, or ending others)
    /// is not replaced: `InvalidInputError` naming `id`; one changed by another write while
    /// it was replaced raises `ConflictError`, nothing written.
    #[pyo3(signature = (
        namespace,
        id,
        text,
        *,
        kind = None,
        importance = None,
        tags = None,
        metadata = None,
        source = None,
        context = None,
    ))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn put(
        &self,
        py: Python<'_>,
        namespace: &str,
        id: String,
        text: String,
        kind: Option<&str>,
        importance: Option<f32>,
        tags: Option<Vec<String>>,
        metadata: Option<&Bound<'_, PyAny>>,
        source: Option<String>,
        context: Option<String>,
    ) -> PyResult<()> {
        let namespace = record_namespace(py, namespace)?;
        let kind = kind
            .map(|name| crate::convert::kind(py, name))
            .transpose()?;
        let metadata = self::metadata(metadata)?;
        let store = Arc::clone(self.live()?.store());
        let inner = Arc::clone(self.live()?);
        block_on(py, async move {
            agent_memory::backend::validate_metadata(&metadata)?;
            let mut item = MemoryItem::new(namespace.clone(), text)
                .map_err(|error| error.renamed("content", "text"))?
                .with_id(id)?
                .with_metadata(metadata)?
                .with_tags(tags.unwrap_or_default())?;
            if let Some(kind) = kind {
                item = item.with_kind(kind);
            }
            if let Some(importance) = importance {
                item = item.with_importance(importance)?;
            }
            if let Some(source) = source {
                item = item.with_source(source);
            }
            if let Some(context) = context.filter(|context| !context.trim().is_empty()) {
                item = item.with_context(context);
            }
            if let Some(vector) = inner.embedding_of(&item.content).await? {
                item = item.with_embedding(vector)?;
            }
            let Some(existing) = store.get(&namespace, &item.id).await? else {
                return store.save(item).await;
            };
            // A memory of a fact's history is not written over: the others of that history
            // would name a memory that says something else.
            if existing.ended.is_some() || !existing.supersedes.is_empty() {
                return Err(agent_memory::MemoryError::invalid(
                    "id",
                    format!(
                        "memory {} in {namespace} is part of a fact's history; put does not \
                         replace it: forget it first, or put under another id",
                        existing.id
                    ),
                ));
            }
            item.created_at = existing.created_at;
            // Only over the memory as read: a supersede or consolidation that took it in
            // meanwhile is not undone.
            if store
                .save_many_if(vec![item], &[(0, existing.updated_at)])
                .await?
            {
                Ok(())
            } else {
                Err(agent_memory::MemoryError::Conflict {
                    message: format!(
                        "memory {} in {namespace} changed while it was being replaced; \
                         nothing was written",
                        existing.id
                    ),
                    source: None,
                })
            }
        })
    }

    /// Changes memory `id` of `namespace`: its `text`, `tags`, `importance` or `metadata`,
    /// only those given. Everything else stays: kind, source, credibility, the fact key and
    /// the version's validity, the pin, the dialogue context, a compressed original, the
    /// creation time and the recall statistics (`metadata` replaces the caller's keys; the
    /// library's own are kept, and refused in `metadata`). A new importance decays from
    /// the time of the update. A new text is checked as `remember` checks it and, with an
    /// `embedder`, embedded again. Returns the memory as stored. A refused change writes
    /// nothing. The change is written only over the copy read: another write in between
    /// (a pin, another process's edit) is kept, the memory read again and changed anew.
    ///
    /// With `only_current=True`, an ended memory (a superseded or retracted version, as read
    /// when the update is made) is refused with `InvalidInputError` naming `id`.
    ///
    /// Raises `NotFoundError` when there is no such memory, `InvalidInputError` naming the
    /// value out of its limits, `ConflictError` when other writes changed the memory at
    /// each of eight attempts (nothing written; the call can be made again).
    #[pyo3(signature = (namespace, id, *, text = None, tags = None, importance = None, metadata = None, only_current = false))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn update(
        &self,
        py: Python<'_>,
        namespace: &str,
        id: &str,
        text: Option<String>,
        tags: Option<Vec<String>>,
        importance: Option<f32>,
        metadata: Option<&Bound<'_, PyAny>>,
        only_current: bool,
    ) -> PyResult<Record> {
        let namespace = record_namespace(py, namespace)?;
        let mut update = agent_memory::MemoryUpdate::new();
        update.only_current = only_current;
        update.content = text;
        update.tags = tags;
        update.importance = importance;
        update.metadata = match metadata.filter(|value| !value.is_none()) {
            Some(value) => Some(self::arguments::user_metadata(value, "metadata")?),
            None => None,
        };
        let memory = self.live()?;
        block_on(py, async move {
            memory
                .update(&namespace, id, update)
                .await
                .map_err(|error| error.renamed("content", "text"))
        })
        .map(Record::new)
    }

    /// The best memories, knowledge pages and graph entities in `namespace` (and under it,
    /// unless `exact`) for `query`, best first, each with its score breakdown.
    ///
    /// Options override the memory's retrieval settings for this call: `max_results`
    /// (1 to 1000, default 20), `min_score`, `kinds` (default: every kind but
    /// `short_term`), `tags` (all required), `since`/`until` (creation time), `view`
    /// (`current`, the default, or `all` to include superseded and retracted memories),
    /// `as_of` (what was held true then), `strategy` (`hybrid`, `memory_only`,
    /// `knowledge_only`, `graph_only`), `scoring` (`{"strategy": "hybrid", "relevance":
    /// 0.7, ...}` or a strategy name), `fusion` (`weighted` or `{"fusion":
    /// "reciprocal_rank", "k": 60}`), `graph_depth`.
    #[pyo3(signature = (
        namespace,
        query,
        *,
        exact = false,
        max_results = None,
        min_score = None,
        kinds = None,
        tags = None,
        metadata = None,
        since = None,
        until = None,
        view = None,
        as_of = None,
        strategy = None,
        scoring = None,
        fusion = None,
        graph_depth = None,
    ))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn recall(
        &self,
        py: Python<'_>,
        namespace: &str,
        query: &str,
        exact: bool,
        max_results: Option<i64>,
        min_score: Option<f32>,
        kinds: Option<Vec<String>>,
        tags: Option<Vec<String>>,
        metadata: Option<&Bound<'_, PyDict>>,
        since: Option<&Bound<'_, PyAny>>,
        until: Option<&Bound<'_, PyAny>>,
        view: Option<&str>,
        as_of: Option<&Bound<'_, PyAny>>,
        strategy: Option<&Bound<'_, PyAny>>,
        scoring: Option<&Bound<'_, PyAny>>,
        fusion: Option<&Bound<'_, PyAny>>,
        graph_depth: Option<i64>,
    ) -> PyResult<Recalled> {
        // Below 1 is refused by the options' own check, with their range in the message: a
        // negative count told "at least 0" where 0 is refused too.
        let max_results = max_results.map(|n| usize::try_from(n).unwrap_or(0));
        let graph_depth = count_of(py, "graph_depth", graph_depth)?;
        let scope = scope(py, namespace, exact)?;
        let mut options = RecallOptions::default();
        if let Some(max) = max_results {
            options = options.max_results(max);
        }
        if let Some(min) = min_score {
            options = options.min_score(min);
        }
        if let Some(depth) = graph_depth {
            options = options.graph_depth(depth);
        }
        if let Some(strategy) = strategy {
            options = options.strategy(from_python(strategy, "strategy")?);
        }
        if let Some(scoring) = scoring {
            options = options.scoring(tagged(scoring, "strategy", "scoring")?);
        }
        if let Some(fusion) = fusion {
            options = options.fusion(tagged(fusion, "fusion", "fusion")?);
        }
        let has_filter = kinds.is_some()
            || tags.is_some()
            || metadata.is_some()
            || since.is_some()
            || until.is_some()
            || view.is_some()
            || as_of.is_some();
        if has_filter {
            let mut filter = RecallFilter {
                kinds: crate::convert::kinds(py, &kinds.unwrap_or_default())?,
                tags: self::tags(py, tags)?,
                since: since.map(|at| to_time(at, "since")).transpose()?,
                until: until.map(|at| to_time(at, "until")).transpose()?,
                ..RecallFilter::default()
            };
            filter.metadata.extend(conditions(py, metadata)?);
            filter.view = match (view, as_of) {
                (None, Some(at)) => RecallView::AsOf(to_time(at, "as_of")?),
                // As the command refuses them together: a time names its own view.
                (Some(_), Some(_)) => {
                    return Err(invalid(
                        py,
                        "view",
                        "view and as_of exclude each other: as_of recalls what was current then",
                    ));
                }
                (None | Some("current"), None) => RecallView::Current,
                (Some("all"), None) => RecallView::All,
                (Some(other), None) => {
                    return Err(invalid(
                        py,
                        "view",
                        format!("{other:?} is not one of current, all"),
                    ));
                }
            };
            options = options.filter(filter);
        }
        let memory = self.live()?;
        block_on(py, memory.recall_with(&scope, query, &options)).map(Recalled::new)
    }

    /// The best results rendered as prompt-ready text within `max_tokens` (estimated):
    /// memories as a bullet list, then pages and entities, then the best entity's graph
    /// neighbourhood. With `session` (a conversation's namespace), its last `turns` messages
    /// come first.
    #[pyo3(signature = (namespace, query, max_tokens = 500, *, exact = false, session = None, turns = 10))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn context(
        &self,
        py: Python<'_>,
        namespace: &str,
        query: &str,
        max_tokens: i64,
        exact: bool,
        session: Option<&str>,
        turns: i64,
    ) -> PyResult<String> {
        let max_tokens = count(py, "max_tokens", max_tokens)?;
        let turns = count(py, "turns", turns)?;
        let scope = scope(py, namespace, exact)?;
        // A conversation's namespace, refused under its own argument's name.
        let session = session
            .map(|name| {
                agent_memory::Namespace::parse(name)
                    .and_then(|namespace| namespace.require_record_namespace().map(|()| namespace))
                    .map_err(|error| {
                        to_py_err(
                            py,
                            match error {
                                agent_memory::MemoryError::InvalidInput { problem, .. } => {
                                    agent_memory::MemoryError::invalid("session", problem)
                                }
                                other => other,
                            },
                        )
                    })
            })
            .transpose()?;
        let memory = self.live()?;
        block_on(py, async move {
            match session {
                Some(session) => {
                    memory
                        .recall_context_in(&session, turns, &scope, query, max_tokens)
                        .await
                }
                None => memory.recall_context(&scope, query, max_tokens).await,
            }
        })
    }

    /// Forgets memory `id` of `namespace` and every version of its fact. Returns whether
    /// it existed.
    fn forget(&self, py: Python<'_>, namespace: &str, id: &str) -> PyResult<bool> {
        let namespace = record_namespace(py, namespace)?;
        let memory = self.live()?;
        block_on(py, memory.forget(&namespace, id))
    }

    /// Deletes every memory in `namespace` (and under it, unless `exact`); `""` is
    /// everything. Returns how many. Pages and graph entities are kept.
    #[pyo3(signature = (namespace, *, exact = false))]
    fn clear(&self, py: Python<'_>, namespace: &str, exact: bool) -> PyResult<usize> {
        let scope = scope(py, namespace, exact)?;
        let store = Arc::clone(self.live()?.store());
        block_on(py, async move { store.clear(&scope).await })
    }

    /// Memory `id` of `namespace`, or None.
    fn get(&self, py: Python<'_>, namespace: &str, id: &str) -> PyResult<Option<Record>> {
        let namespace = record_namespace(py, namespace)?;
        let store = Arc::clone(self.live()?.store());
        block_on(py, async move { store.get(&namespace, id).await })
            .map(|item| item.map(Record::new))
    }

    /// The memories in `namespace` (and under it, unless `exact`), oldest first (or newest
    /// first), matching every condition given: `kinds`, `tags`, `metadata` (keys with
    /// exactly these values), `fact_key`, `id_prefix`, `since`/`until`. `view` is `current` (default:
    /// superseded and retracted memories left out) or `all`. `after`, the last record of the
    /// previous page, lists the page after it: a large namespace is read a page of `limit`
    /// at a time, each costing what it returns, and memories saved or forgotten between
    /// pages neither repeat one nor push one off a page.
    #[pyo3(signature = (
        namespace = "",
        *,
        exact = false,
        kinds = None,
        tags = None,
        metadata = None,
        fact_key = None,
        id_prefix = None,
        since = None,
        until = None,
        limit = None,
        newest_first = false,
        view = "current",
        after = None,
    ))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn list(
        &self,
        py: Python<'_>,
        namespace: &str,
        exact: bool,
        kinds: Option<Vec<String>>,
        tags: Option<Vec<String>>,
        metadata: Option<&Bound<'_, PyDict>>,
        fact_key: Option<&str>,
        id_prefix: Option<String>,
        since: Option<&Bound<'_, PyAny>>,
        until: Option<&Bound<'_, PyAny>>,
        limit: Option<i64>,
        newest_first: bool,
        view: &str,
        after: Option<PyRef<'_, Record>>,
    ) -> PyResult<Vec<Record>> {
        let mut filter = MemoryFilter::new(scope(py, namespace, exact)?)
            .with_kinds(crate::convert::kinds(py, &kinds.unwrap_or_default())?)
            .with_time_range(
                since.map(|at| to_time(at, "since")).transpose()?,
                until.map(|at| to_time(at, "until")).transpose()?,
            );
        filter.tags = self::tags(py, tags)?;
        for (key, value) in conditions(py, metadata)? {
            filter = filter.with_metadata(key, value);
        }
        if let Some(key) = fact_key {
            filter = filter
                .with_fact_key(key)
                .map_err(|error| to_py_err(py, error))?;
        }
        if let Some(prefix) = id_prefix {
            filter = filter.with_id_prefix(prefix);
        }
        if let Some(limit) = count_of(py, "limit", limit)? {
            filter = filter.with_limit(limit);
        }
        if newest_first {
            filter = filter.newest_first();
        }
        if let Some(last) = after {
            filter = filter.after(ListPosition::of(&last.item));
        }
        filter = filter.with_view(match view {
            "current" => TimeView::Current(Utc::now()),
            "all" => TimeView::All,
            other => {
                return Err(invalid(
                    py,
                    "view",
                    format!("{other:?} is not one of current, all"),
                ));
            }
        });
        let store = Arc::clone(self.live()?.store());
        block_on(py, async move { store.list(&filter).await }).map(records)
    }

    /// The namespaces holding memories, in and under `prefix` (`""`: all), sorted.
    #[pyo3(signature = (prefix = ""))]
    fn namespaces(&self, py: Python<'_>, prefix: &str) -> PyResult<Vec<String>> {
        let scope = scope(py, prefix, false)?;
        let store = Arc::clone(self.live()?.store());
        let namespaces = block_on(py, async move { store.list_namespaces(&scope).await })?;
        Ok(namespaces.iter().map(|ns| ns.as_str().to_owned()).collect())
    }

    /// The versions of memory `id`'s fact, oldest first (the memory alone if it has no
    /// history).
    fn history(&self, py: Python<'_>, namespace: &str, id: &str) -> PyResult<Vec<Record>> {
        let namespace = record_namespace(py, namespace)?;
        let memory = self.live()?;
        block_on(py, memory.history(&namespace, id)).map(records)
    }

    /// Marks memory `new` as superseding memory `old` (same namespace). Raises
    /// `InvalidInputError` naming `new` when it already supersedes 64 memories,
    /// `ConflictError` when other writes changed one of the two at each of eight attempts.
    fn supersede(&self, py: Python<'_>, namespace: &str, old: &str, new: &str) -> PyResult<()> {
        let namespace = record_namespace(py, namespace)?;
        let memory = self.live()?;
        block_on(py, memory.supersede(&namespace, old, new))
    }

    /// Withdraws memory `id` without a replacement; it stays in its history. Raises
    /// `ConflictError` when other writes changed the memory at each of eight attempts.
    fn retract(&self, py: Python<'_>, namespace: &str, id: &str, reason: &str) -> PyResult<()> {
        let namespace = record_namespace(py, namespace)?;
        let memory = self.live()?;
        block_on(py, memory.retract(&namespace, id, reason))
    }

    /// Pins memory `id` (or unpins it with `pinned=False`). Returns whether it exists.
    /// Raises `ConflictError` when other writes changed the memory at each of eight
    /// attempts.
    #[pyo3(signature = (namespace, id, pinned = true))]
    fn pin(&self, py: Python<'_>, namespace: &str, id: &str, pinned: bool) -> PyResult<bool> {
        let namespace = record_namespace(py, namespace)?;
        let memory = self.live()?;
        block_on(py, memory.pin(&namespace, id, pinned))
    }

    /// Replaces memory `id`'s text with a shorter `text`, keeping the original. Returns
    /// whether it exists. Raises `ConflictError` when other writes changed the memory at
    /// each of eight attempts.
    fn compress(&self, py: Python<'_>, namespace: &str, id: &str, text: &str) -> PyResult<bool> {
        let namespace = record_namespace(py, namespace)?;
        let memory = self.live()?;
        block_on(py, memory.compress(&namespace, id, text))
    }

    /// Adds a knowledge-graph entity to `namespace`, or replaces the one with this `id`
    /// (its relations stay): a `name`, an `entity_type` (`person`, `project`, ...), a
    /// `description`, `tags` and `attributes` (a dict of what is known about it, e.g.
    /// `{"born": 1990}`). Recall's graph channel finds it by name and tags.
    #[pyo3(signature = (
        namespace,
        id,
        name,
        entity_type,
        *,
        description = "",
        tags = None,
        attributes = None,
    ))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn add_entity(
        &self,
        py: Python<'_>,
        namespace: &str,
        id: &str,
        name: &str,
        entity_type: &str,
        description: &str,
        tags: Option<Vec<String>>,
        attributes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let namespace = record_namespace(py, namespace)?;
        let entity = GraphEntity::new(namespace, id, name, entity_type)
            .and_then(|entity| entity.with_tags(tags.unwrap_or_default()))
            .map_err(|error| to_py_err(py, error))?
            .with_description(description);
        let entity = match graph::attributes(attributes)? {
            Some(attributes) => entity
                .with_attributes(attributes)
                .map_err(|error| to_py_err(py, error))?,
            None => entity,
        };
        graph::put_entity(py, self.live()?.graph(), entity)
    }

    /// Entity `id` of `namespace` as a dict (`id`, `namespace`, `name`, `entity_type`,
    /// `description`, `tags`, `attributes` when it has any, `created_at`, ...), or None.
    fn get_entity<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        id: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let namespace = record_namespace(py, namespace)?;
        let graph = Arc::clone(self.live()?.graph());
        let found = block_on(py, async move { graph.get_entity(&namespace, id).await })?;
        found.map(|entity| graph::as_dict(py, &entity)).transpose()
    }

    /// The entities in `namespace` (and under it, unless `exact`) as dicts, by namespace
    /// and id; `""` is every namespace. At most `limit`, those after `after` (the last
    /// entity dict of the previous page): a large graph read a page at a time.
    #[pyo3(signature = (namespace = "", *, exact = false, limit = None, after = None))]
    fn entities<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        exact: bool,
        limit: Option<i64>,
        after: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let limit = count_of(py, "limit", limit)?;
        let scope = scope(py, namespace, exact)?;
        let after = after.map(|last| graph::position(py, last)).transpose()?;
        let graph = Arc::clone(self.live()?.graph());
        let found = block_on(py, async move {
            match (&after, limit) {
                (None, None) => graph.list_entities(&scope).await,
                _ => {
                    graph
                        .list_entities_after(&scope, after.as_ref(), limit.unwrap_or(usize::MAX))
                        .await
                }
            }
        })?;
        let list = PyList::empty(py);
        for entity in &found {
            list.append(graph::as_dict(py, entity)?)?;
        }
        Ok(list)
    }

    /// Removes entity `id` and its relations. Returns whether it existed.
    fn remove_entity(&self, py: Python<'_>, namespace: &str, id: &str) -> PyResult<bool> {
        let namespace = record_namespace(py, namespace)?;
        let graph = Arc::clone(self.live()?.graph());
        block_on(py, async move { graph.remove_entity(&namespace, id).await })
    }

    /// Adds the relation `source_id -[relation_type]-> target_id` between two entities of
    /// `namespace`, with a `weight` in [0, 1] and `attributes` (a dict); adding it again
    /// replaces the weight and the attributes. A type named in `single_valued_relations`
    /// closes the current relation of that type from the same source (`Memory::relate`).
    /// Returns the relations it closed, as dicts.
    #[pyo3(signature = (
        namespace,
        source_id,
        target_id,
        relation_type,
        weight = 1.0,
        *,
        attributes = None,
    ))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn add_relation<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        source_id: &str,
        target_id: &str,
        relation_type: &str,
        weight: f32,
        attributes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let namespace = record_namespace(py, namespace)?;
        let relation = graph::relation(py, namespace, source_id, target_id, relation_type, weight)?;
        let relation = match graph::attributes(attributes)? {
            Some(attributes) => relation
                .with_attributes(attributes)
                .map_err(|error| to_py_err(py, error))?,
            None => relation,
        };
        let memory = Arc::clone(self.live()?);
        let closed = block_on(py, async move { memory.relate(relation).await })?;
        let list = PyList::empty(py);
        for relation in &closed {
            list.append(graph::as_dict(py, relation)?)?;
        }
        Ok(list)
    }

    /// The relations of entity `id`, both ways, as dicts (`source_id`, `target_id`,
    /// `relation_type`, `weight`, ...).
    fn relations<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        id: &str,
    ) -> PyResult<Bound<'py, PyList>> {
        let namespace = record_namespace(py, namespace)?;
        let graph = Arc::clone(self.live()?.graph());
        let found = block_on(py, async move { graph.relations_of(&namespace, id).await })?;
        let list = PyList::empty(py);
        for relation in &found {
            list.append(graph::as_dict(py, relation)?)?;
        }
        Ok(list)
    }

    /// The entities reachable from entity `id` within `depth` hops, nearest first, as
    /// dicts with `entity`, `hops`, `score` and `path` (the relations followed).
    #[pyo3(signature = (namespace, id, depth = 2))]
    fn related<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        id: &str,
        depth: i64,
    ) -> PyResult<Bound<'py, PyList>> {
        let depth = count(py, "depth", depth)?;
        let namespace = record_namespace(py, namespace)?;
        graph::related(py, self.live()?.graph(), namespace, id, depth)
    }

    /// Writes knowledge page `id` of `namespace`: creates it, or replaces the page with this
    /// id (keeping its creation time and access statistics). A page has a `title`, a
    /// `summary`, its `content`, `tags`, and `references` (the ids of the pages it cites,
    /// written or not). Recall's knowledge channel finds it. Returns the page as `get_page`
    /// does. With `if_updated_at` (the `updated_at` of the page dict the edit was made
    /// from), it writes only over the page as read: `ConflictError` when another write
    /// changed it since (read it again and redo the edit), `NotFoundError` when it is gone.
    #[pyo3(signature = (
        namespace,
        id,
        title,
        *,
        summary = "",
        content = "",
        tags = None,
        references = None,
        if_updated_at = None,
    ))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn put_page<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        id: &str,
        title: &str,
        summary: &str,
        content: &str,
        tags: Option<Vec<String>>,
        references: Option<Vec<String>>,
        if_updated_at: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let namespace = record_namespace(py, namespace)?;
        let read_at = pages::read_at(py, if_updated_at)?;
        let page = agent_memory::KnowledgePage::new(namespace.clone(), id, title)
            .and_then(|page| page.with_tags(tags.unwrap_or_default()))
            .and_then(|page| page.with_references(references.unwrap_or_default()))
            .map_err(|error| to_py_err(py, error))?
            .with_summary(summary)
            .with_content(content);
        pages::put(py, self.live()?.knowledge(), page, read_at)?;
        pages::get(py, self.live()?.knowledge(), namespace.clone(), id)?.ok_or_else(|| {
            to_py_err(
                py,
                agent_memory::MemoryError::not_found("page", &namespace, id),
            )
        })
    }

    /// Knowledge page `id` of `namespace` as a dict (`id`, `namespace`, `title`,
    /// `summary`, `content`, `tags`, `references`, `referrers`: the ids of the first 100
    /// pages that cite it, `referrers_truncated`: whether more do, `created_at`, `updated_at`, `access_count` once recalled, ...), or None.
    fn get_page<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        id: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let namespace = record_namespace(py, namespace)?;
        pages::get(py, self.live()?.knowledge(), namespace, id)
    }

    /// The page index of `namespace` (and under it, unless `exact`; `""` is every
    /// namespace): a dict per page with `id`, `namespace`, `title`, `summary`, `tags`,
    /// `updated_at` and `referenced_by` (how many pages cite it), by namespace, then
    /// title: the wiki's table of contents.
    #[pyo3(signature = (namespace = "", *, exact = false))]
    fn pages<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        exact: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let scope = scope(py, namespace, exact)?;
        pages::index(py, self.live()?.knowledge(), scope)
    }

    /// Removes knowledge page `id` (the pages citing it keep their references). Returns
    /// whether it existed.
    fn remove_page(&self, py: Python<'_>, namespace: &str, id: &str) -> PyResult<bool> {
        let namespace = record_namespace(py, namespace)?;
        let knowledge = Arc::clone(self.live()?.knowledge());
        block_on(
            py,
            async move { knowledge.delete_page(&namespace, id).await },
        )
    }

    /// Pairs of current memories flagged as contradicting each other: dicts with
    /// `namespace`, `older` and `newer`.
    #[pyo3(signature = (namespace = "", *, exact = false))]
    fn conflicts<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        exact: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let scope = scope(py, namespace, exact)?;
        let memory = self.live()?;
        let pairs = block_on(py, memory.conflicts(&scope))?;
        let list = PyList::empty(py);
        for pair in pairs {
            let dict = PyDict::new(py);
            dict.set_item("namespace", pair.namespace.as_str())?;
            dict.set_item("older", pair.older)?;
            dict.set_item("newer", pair.newer)?;
            list.append(dict)?;
        }
        Ok(list)
    }

    /// Counts in `namespace` and under it (`""`: everything): `total` (the current memories
    /// and the history), `current` (not ended, not past
    /// its `valid_until`: what a recall can find), `per_kind`,
    /// `per_namespace`, `mean_access`, `compressed`, `compression_rate`, `capacity_use`
    /// (with a capacity set), `recalled`, `mean_recall_score` (`None` before the first
    /// recall), `pages`, `entities`.
    #[pyo3(signature = (namespace = "", *, exact = false))]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        exact: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let scope = scope(py, namespace, exact)?;
        let memory = self.live()?;
        let stats = block_on(py, memory.stats(&scope))?;
        let json = serde_json::to_value(stats).map_err(|error| invalid(py, "stats", error))?;
        from_json(py, &json)
    }

    /// Runs TTL, decay, eviction and (when configured) compression on `namespace` and
    /// under it now, after writing pending recall statistics. Returns counts: `expired`,
    /// `decayed`, `evicted`, `compressed`, `failed_write_passes`, `conflicts_found`,
    /// `failed_statistics_writes` (background statistics writes found failed; the pass goes
    /// on) and the rest of the report.
    #[pyo3(signature = (namespace = "", *, exact = false))]
    fn maintain<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        exact: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let scope = scope(py, namespace, exact)?;
        let memory = self.live()?;
        let report = block_on(py, memory.maintain(&scope))?;
        let json = serde_json::to_value(report).map_err(|error| invalid(py, "maintain", error))?;
        from_json(py, &json)
    }

    /// Embeds the stored memories of `namespace` and under it with this memory's embedder:
    /// those without a vector of its length, or all of them with `all=True` (after a change
    /// of model or prefixes). A memory edited or deleted meanwhile is left as it is.
    /// Returns counts: `examined`, `embedded`, `skipped`.
    #[pyo3(signature = (namespace = "", *, exact = false, all = false))]
    fn reembed<'py>(
        &self,
        py: Python<'py>,
        namespace: &str,
        exact: bool,
        all: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let scope = scope(py, namespace, exact)?;
        let which = if all {
            agent_memory::Reembed::All
        } else {
            agent_memory::Reembed::Missing
        };
        let memory = self.live()?;
        let report = block_on(py, memory.reembed(&scope, which))?;
        let json = serde_json::to_value(report).map_err(|error| invalid(py, "reembed", error))?;
        from_json(py, &json)
    }

    /// Writes pending recall statistics now.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let memory = self.live()?;
        block_on(py, memory.flush())
    }

    /// Writes pending recall statistics; the memory stays usable (the store closes when
    /// the last reference to it goes). In a process forked from the one that opened it,
    /// does nothing (its other methods raise `RuntimeError` there).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.opened_by != std::process::id() {
            // A copy inherited through a fork: the parent closes it.
            return Ok(());
        }
        self.flush(py)
    }

    /// For `bench/recall.py`: recalls each of `queries` in `namespace` with default
    /// options, timing each call inside Rust (one `.await` each, no Python in between), and
    /// returns the durations in seconds: the library's own cost, to set beside `recall`'s.
    fn _time_recall(
        &self,
        py: Python<'_>,
        namespace: &str,
        queries: Vec<String>,
    ) -> PyResult<Vec<f64>> {
        let scope = scope(py, namespace, false)?;
        let memory = self.live()?;
        block_on(py, async move {
            let mut durations = Vec::with_capacity(queries.len());
            for query in &queries {
                let started = std::time::Instant::now();
                let result = memory.recall(&scope, query).await?;
                durations.push(started.elapsed().as_secs_f64());
                drop(result);
            }
            Ok(durations)
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("Memory({})", crate::results::repr(py, &self.location))
    }
}
