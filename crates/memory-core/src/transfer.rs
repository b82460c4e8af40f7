//! Export and import of a scope's records as versioned JSON lines, from any backend to any
//! backend (in-memory to SQLite, SQLite to PostgreSQL, ...).
//!
//! # The `agent-memory-jsonl` format, version 2
//!
//! UTF-8 text, one JSON object per line (`\n`, or `\r\n`; blank lines are ignored). The first
//! line is the [`Header`]:
//!
//! ```text
//! {"format":"agent-memory-jsonl","version":2,"scope":{"namespace":"user-1","descendants":true},"exported_at":"2026-01-02T03:04:05Z","counts":{"memories":2,"recall_stats":1,"pages":1,"entities":2,"relations":1}}
//! ```
//!
//! Every further line is one [`Record`], tagged by `"type"`, with the record's own fields
//! beside the tag (the serde form of the record type, a persistence format):
//!
//! | `type` | fields |
//! | --- | --- |
//! | `memory` | a [`MemoryItem`] |
//! | `recall_stats` | `namespace`, `id` of a memory, and its [`RecallStats`]: `recall_count`, `total_score`, `last_recall_at` |
//! | `page` | a [`KnowledgePage`] |
//! | `entity` | a [`GraphEntity`] |
//! | `relation` | a [`GraphRelation`] |
//!
//! ```text
//! {"type":"memory","id":"m1","namespace":"user-1","content":"likes green tea","kind":"semantic",...}
//! {"type":"recall_stats","namespace":"user-1","id":"m1","recall_count":3,"total_score":2.1,"last_recall_at":"2026-01-01T00:00:00Z"}
//! {"type":"relation","namespace":"user-1","source_id":"alice","target_id":"bob","relation_type":"knows","weight":0.8}
//! ```
//!
//! [`export_jsonl`] writes memories (each followed by its recall statistics when it was ever
//! recalled), then pages, entities and relations, each group in its store's listing order.
//! Readers ignore fields they do not know (a later writer of the same version may add
//! optional fields), refuse an unknown `type` and a `version` above [`VERSION`], and check
//! the header's `counts`, when present, against the records read, so a truncated file is
//! refused.
//!
//! Version 2 carries facts that change: a memory's `fact_key`, `valid_from`, `valid_until`,
//! `ended` (when and why it stopped being believed), `supersedes` and `conflicts_with`, and
//! a relation's `valid_from` / `valid_until`, each written only when set. Superseded and
//! retracted memories are exported with the rest, so the history survives the move. The
//! version changed because a version-1 reader would ignore these fields and import history
//! as current facts; version-1 files (which hold no history) still import.
//!
//! Version 2 also carries the access statistics of pages and entities (`access_count`,
//! `last_accessed`, written only when a recall returned the record) and an entity's
//! `created_at`. They are optional fields of the same version, so a file without them (a
//! version-1 file, or one written before they existed) reads with no accesses and, for an
//! entity, an unknown creation time, which a knowledge lifecycle policy never expires by
//! TTL. Imported pages and new entities keep the file's statistics; an entity the graph
//! holds already is updated in place (its relations stay) and keeps the graph's creation
//! time and statistics.
//!
//! # Atomicity
//!
//! [`import_jsonl`] reads and validates the whole input before writing anything: every
//! record is checked as its store's write path would check it (so dates outside the storable
//! range, NUL characters and out-of-range numbers are refused up front), and every relation
//! must join entities that the input or the target graph holds. A bad input, wherever its bad
//! line is, changes no store. The writes that follow go through the traits, so they are as
//! atomic as the target backend makes them (all memories are written with one `save_many`,
//! one transaction on SQLite and PostgreSQL, and a page the store holds is replaced in one
//! step by [`KnowledgeStore::put_page`]); an import interrupted by a backend failure can be
//! run again, since every write is an upsert.
//!
//! ```
//! use memory_core::transfer::{self, Record};
//! let text = "{\"format\":\"agent-memory-jsonl\",\"version\":1,\
//!     \"scope\":{\"namespace\":\"\",\"descendants\":true},\"exported_at\":\"2026-01-01T00:00:00Z\"}\n\
//!     {\"type\":\"entity\",\"namespace\":\"kb\",\"id\":\"rust\",\"name\":\"Rust\",\"entity_type\":\"language\"}\n";
//! let dump = transfer::read_jsonl(&mut text.as_bytes())?;
//! assert!(matches!(&dump.records[0], Record::Entity(entity) if entity.name == "Rust"));
//! let broken = text.replace("\"Rust\"", "\"Rust");
//! let error = transfer::read_jsonl(&mut broken.as_bytes()).unwrap_err();
//! assert!(error.to_string().contains("line 2"), "{error}");
//! # Ok::<(), memory_core::MemoryError>(())
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Write};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::validate::validate_id;
use crate::{
    EntityPosition, GraphEntity, GraphRelation, KnowledgeGraph, KnowledgePage, KnowledgeStore,
    ListPosition, MemoryError, MemoryFilter, MemoryItem, MemoryStore, Namespace, RecallStats,
    RelationPosition, Result, Scope,
};

/// The `format` of the header line.
pub const FORMAT: &str = "agent-memory-jsonl";
/// The format version this build writes, and the newest it reads.
pub const VERSION: u32 = 2;
/// Longest line read, in bytes; a longer one is [`MemoryError::LimitExceeded`].
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The first line of an export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version, [`VERSION`] when written by this build.
    pub version: u32,
    /// The scope that was exported; every record lies inside it.
    pub scope: Scope,
    /// When the export was written.
    pub exported_at: DateTime<Utc>,
    /// How many records of each type follow; checked on import when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<RecordCounts>,
}

/// How many records of each type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordCounts {
    /// Memory items.
    #[serde(default)]
    pub memories: usize,
    /// Recall statistics of memory items.
    #[serde(default)]
    pub recall_stats: usize,
    /// Knowledge pages.
    #[serde(default)]
    pub pages: usize,
    /// Graph entities.
    #[serde(default)]
    pub entities: usize,
    /// Graph relations.
    #[serde(default)]
    pub relations: usize,
}

/// "2 memories, 0 recall statistics, 1 page, 0 entities, 0 relations".
impl std::fmt::Display for RecordCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |count: usize, one: &'static str, many: &'static str| {
            if count == 1 { one } else { many }
        };
        write!(
            f,
            "{} {}, {} recall statistics, {} {}, {} {}, {} {}",
            self.memories,
            plural(self.memories, "memory", "memories"),
            self.recall_stats,
            self.pages,
            plural(self.pages, "page", "pages"),
            self.entities,
            plural(self.entities, "entity", "entities"),
            self.relations,
            plural(self.relations, "relation", "relations"),
        )
    }
}

impl RecordCounts {
    fn add(&mut self, record: &Record) {
        match record {
            Record::Memory(_) => self.memories += 1,
            Record::RecallStats(_) => self.recall_stats += 1,
            Record::Page(_) => self.pages += 1,
            Record::Entity(_) => self.entities += 1,
            Record::Relation(_) => self.relations += 1,
        }
    }

    /// The total over all types.
    pub fn total(&self) -> usize {
        self.memories + self.recall_stats + self.pages + self.entities + self.relations
    }
}

/// The recall statistics of one memory item, as a line of the export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallStatsRecord {
    /// The memory's namespace.
    pub namespace: Namespace,
    /// The memory's id.
    pub id: String,
    /// See [`RecallStats::recall_count`].
    pub recall_count: u64,
    /// See [`RecallStats::total_score`].
    pub total_score: f64,
    /// See [`RecallStats::last_recall_at`].
    #[serde(default)]
    pub last_recall_at: Option<DateTime<Utc>>,
}

impl RecallStatsRecord {
    /// The line for `stats` of memory `id` in `namespace`.
    pub fn new(namespace: Namespace, id: impl Into<String>, stats: RecallStats) -> Self {
        Self {
            namespace,
            id: id.into(),
            recall_count: stats.recall_count,
            total_score: stats.total_score,
            last_recall_at: stats.last_recall_at,
        }
    }

    /// The statistics.
    pub fn stats(&self) -> RecallStats {
        RecallStats {
            recall_count: self.recall_count,
            total_score: self.total_score,
            last_recall_at: self.last_recall_at,
        }
    }

    fn validate(&self) -> Result<()> {
        self.namespace.require_record_namespace()?;
        validate_id("id", &self.id)?;
        if !self.total_score.is_finite() || self.total_score < 0.0 {
            return Err(MemoryError::invalid(
                "total_score",
                format!("{} is not a finite number >= 0", self.total_score),
            ));
        }
        // Every backend stores counts as signed 64-bit integers.
        if i64::try_from(self.recall_count).is_err() {
            return Err(MemoryError::invalid(
                "recall_count",
                format!("{} is larger than 2^63 - 1", self.recall_count),
            ));
        }
        // Every backend stores times as signed 64-bit nanoseconds since the epoch.
        if let Some(at) = self.last_recall_at
            && at.timestamp_nanos_opt().is_none()
        {
            return Err(MemoryError::invalid(
                "last_recall_at",
                format!("{at} is outside the storable range (years 1677 to 2262)"),
            ));
        }
        Ok(())
    }
}

/// One line after the header, tagged by `"type"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// A memory item.
    Memory(MemoryItem),
    /// The recall statistics of a memory item.
    RecallStats(RecallStatsRecord),
    /// A knowledge page.
    Page(KnowledgePage),
    /// A graph entity.
    Entity(GraphEntity),
    /// A graph relation.
    Relation(GraphRelation),
}

impl Record {
    /// The namespace the record belongs to.
    pub fn namespace(&self) -> &Namespace {
        match self {
            Record::Memory(item) => &item.namespace,
            Record::RecallStats(stats) => &stats.namespace,
            Record::Page(page) => &page.namespace,
            Record::Entity(entity) => &entity.namespace,
            Record::Relation(relation) => &relation.namespace,
        }
    }

    /// Checks the record as its store's write path would.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the bad field.
    pub fn validate(&self) -> Result<()> {
        match self {
            Record::Memory(item) => item.validate(),
            Record::RecallStats(stats) => stats.validate(),
            Record::Page(page) => page.validate(),
            Record::Entity(entity) => entity.validate(),
            Record::Relation(relation) => relation.validate(),
        }
    }
}

/// A whole export, read and validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Dump {
    /// The header line.
    pub header: Header,
    /// The records, in file order.
    pub records: Vec<Record>,
}

/// What an import wrote, and what it left out because no store of that kind was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Records written.
    pub imported: RecordCounts,
    /// Records skipped: memories and recall statistics without a memory store, pages without
    /// a knowledge store, entities and relations without a graph.
    pub skipped: RecordCounts,
    /// Records read but not written because what they describe exists neither in the input
    /// nor in the store: recall statistics of a memory that is in neither.
    pub ignored: RecordCounts,
}

/// How many memories, entities or relations an export reads at a time.
const EXPORT_PAGE: usize = 512;

/// Writes every record of `scope` held by the given stores to `writer` as
/// `agent-memory-jsonl` (see the [module docs](self)). A store that is `None` contributes
/// nothing. Returns the counts written (also in the header).
///
/// Memories, entities and relations are read a page at a time (each page after the last
/// record of the one before) and written, as they are read, to a temporary file in
/// [`std::env::temp_dir`]; the header, whose counts come first, is written to `writer`
/// once they are known, then the records are copied after it. The memory an export takes
/// so does not grow with the store (pages are read whole: a scope's pages are few; the
/// entities written are remembered by a 64-bit hash of namespace and id, 8 bytes each). The
/// temporary file is readable by its owner alone and is removed when the export ends,
/// whether it succeeded or not; on Unix it is removed as soon as it is open, so other
/// processes cannot read it and a killed export leaves nothing behind. Where no
/// temporary file can be made (a read-only temporary directory), the records wait in
/// memory instead. A store
/// written meanwhile is exported as each page stood when it was read; the header's counts
/// always match the records written.
///
/// An export can always be imported: a relation whose entities were not both written (an
/// entity added, with a relation to it, after the entities were read) is left out, as
/// [`import_jsonl`] refuses a relation whose entity is neither in its input nor in the
/// graph. An entity removed after the entities were read takes its relations with it, so
/// its relations are not read.
///
/// # Errors
/// The stores' errors; [`MemoryError::Storage`] when writing the temporary file or
/// `writer` fails.
pub async fn export_jsonl(
    scope: &Scope,
    memories: Option<&dyn MemoryStore>,
    knowledge: Option<&dyn KnowledgeStore>,
    graph: Option<&dyn KnowledgeGraph>,
    writer: &mut (dyn Write + Send),
) -> Result<RecordCounts> {
    let mut spool = Spool::create();
    if let Some(store) = memories {
        let mut after: Option<ListPosition> = None;
        loop {
            let mut filter = MemoryFilter::new(scope.clone()).with_limit(EXPORT_PAGE);
            if let Some(position) = after.take() {
                filter = filter.after(position);
            }
            let page = store.list(&filter).await?;
            let last_page = page.len() < EXPORT_PAGE;
            after = page.last().map(ListPosition::of);
            let stats = page_stats(store, &page).await?;
            for (item, stats) in page.into_iter().zip(stats) {
                let (namespace, id) = (item.namespace.clone(), item.id.clone());
                spool.put(&Record::Memory(item))?;
                if let Some(stats) = stats.filter(|stats| *stats != RecallStats::default()) {
                    spool.put(&Record::RecallStats(RecallStatsRecord::new(
                        namespace, id, stats,
                    )))?;
                }
            }
            if last_page {
                break;
            }
        }
    }
    if let Some(store) = knowledge {
        for page in store.list_pages(scope).await? {
            spool.put(&Record::Page(page))?;
        }
    }
    if let Some(graph) = graph {
        let mut exported = HashSet::new();
        let mut after: Option<EntityPosition> = None;
        loop {
            let page = graph
                .list_entities_after(scope, after.as_ref(), EXPORT_PAGE)
                .await?;
            let last_page = page.len() < EXPORT_PAGE;
            after = page.last().map(EntityPosition::of);
            for entity in page {
                exported.insert(entity_key(&entity.namespace, &entity.id));
                spool.put(&Record::Entity(entity))?;
            }
            if last_page {
                break;
            }
        }
        let mut after: Option<RelationPosition> = None;
        loop {
            let page = graph
                .list_relations_after(scope, after.as_ref(), EXPORT_PAGE)
                .await?;
            let last_page = page.len() < EXPORT_PAGE;
            after = page.last().map(RelationPosition::of);
            for relation in page {
                let ends = [&relation.source_id, &relation.target_id];
                if ends
                    .iter()
                    .all(|id| exported.contains(&entity_key(&relation.namespace, id)))
                {
                    spool.put(&Record::Relation(relation))?;
                }
            }
            if last_page {
                break;
            }
        }
    }
    let header = Header {
        format: FORMAT.to_owned(),
        version: VERSION,
        scope: scope.clone(),
        exported_at: Utc::now(),
        counts: Some(spool.counts),
    };
    let mut line = serde_json::to_vec(&header)?;
    line.push(b'\n');
    write_line(writer, &line, 1)?;
    spool.copy_to(writer)?;
    writer
        .flush()
        .map_err(|error| MemoryError::storage("export: flushing the output", error))?;
    Ok(spool.counts)
}

/// An entity's key among those an export wrote: a hash of its namespace and id (the same
/// in every run, so an export does not depend on a random seed). Two entities share one
/// with a chance of about one in 2⁶⁴ per pair; a relation then joining an entity that was
/// not written is refused on import as it was before the check.
fn entity_key(namespace: &Namespace, id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (namespace.as_str(), id).hash(&mut hasher);
    hasher.finish()
}

/// The recall statistics of a page of memories, in its order: one
/// [`recall_stats_many`](MemoryStore::recall_stats_many) per namespace the page holds.
async fn page_stats(
    store: &dyn MemoryStore,
    page: &[MemoryItem],
) -> Result<Vec<Option<RecallStats>>> {
    let mut by_namespace: std::collections::BTreeMap<&Namespace, Vec<usize>> =
        std::collections::BTreeMap::new();
    for (at, item) in page.iter().enumerate() {
        by_namespace.entry(&item.namespace).or_default().push(at);
    }
    let mut out = vec![None; page.len()];
    for (namespace, at) in by_namespace {
        let ids: Vec<String> = at.iter().map(|at| page[*at].id.clone()).collect();
        let stats = store.recall_stats_many(namespace, &ids).await?;
        for (at, stats) in at.into_iter().zip(stats) {
            out[at] = stats;
        }
    }
    Ok(out)
}

/// The records of an export as they are read: in a temporary file removed on drop, or in
/// memory where no temporary file can be made (a read-only temporary directory).
struct Spool {
    sink: Sink,
    counts: RecordCounts,
    line: Vec<u8>,
}

enum Sink {
    /// The temporary file, and its path.
    File(std::io::BufWriter<std::fs::File>, std::path::PathBuf),
    /// The lines themselves.
    Memory(Vec<u8>),
    /// Copied out (or never made).
    Done,
}

impl Spool {
    /// A spool in the system's temporary directory.
    fn create() -> Self {
        Self::create_in(&std::env::temp_dir())
    }

    /// A spool in a new file of `dir`, or in memory when none can be made there.
    fn create_in(dir: &std::path::Path) -> Self {
        let path = dir.join(format!("agent-memory-export-{}.jsonl", crate::new_id()));
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create_new(true);
        // The spool holds every exported memory: readable by its owner alone.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let sink = match options.open(&path) {
            Ok(file) => {
                // On Unix its name goes at once: the file stays readable and writable through
                // its handle, no other process can open it, and a process killed mid-export
                // leaves no copy behind.
                #[cfg(unix)]
                let _ = std::fs::remove_file(&path);
                Sink::File(std::io::BufWriter::new(file), path)
            }
            Err(_) => Sink::Memory(Vec::new()),
        };
        Self {
            sink,
            counts: RecordCounts::default(),
            line: Vec::new(),
        }
    }

    /// Appends the record's line and counts it.
    fn put(&mut self, record: &Record) -> Result<()> {
        // The line's number in the export: the header is line 1.
        let number = self.counts.total() + 2;
        self.line.clear();
        serde_json::to_writer(&mut self.line, record).map_err(|error| {
            MemoryError::serialization(format!("export line {number}: encoding"), error)
        })?;
        self.line.push(b'\n');
        let written = match &mut self.sink {
            Sink::File(file, _) => file.write_all(&self.line),
            Sink::Memory(lines) => {
                lines.extend_from_slice(&self.line);
                Ok(())
            }
            Sink::Done => Ok(()),
        };
        written.map_err(|error| {
            MemoryError::storage(
                format!("export line {number}: writing the temporary file"),
                error,
            )
        })?;
        self.counts.add(record);
        Ok(())
    }

    /// Copies every line put so far to `writer`.
    fn copy_to(&mut self, writer: &mut (dyn Write + Send)) -> Result<()> {
        use std::io::Seek;
        let failed = |error: std::io::Error| {
            MemoryError::storage("export: reading the temporary file back", error)
        };
        let copied = match std::mem::replace(&mut self.sink, Sink::Done) {
            Sink::File(file, path) => {
                let mut file = file
                    .into_inner()
                    .map_err(|error| failed(error.into_error()))?;
                file.rewind().map_err(failed)?;
                let copied = std::io::copy(&mut file, writer).map(|_| ());
                drop(file);
                let _ = std::fs::remove_file(path);
                copied
            }
            Sink::Memory(lines) => writer.write_all(&lines),
            Sink::Done => Ok(()),
        };
        copied.map_err(|error| MemoryError::storage("export: writing the records", error))
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        if let Sink::File(file, path) = std::mem::replace(&mut self.sink, Sink::Done) {
            // Closed first: some systems keep an open file from being removed.
            drop(file);
            let _ = std::fs::remove_file(path);
        }
    }
}

fn write_line(writer: &mut (dyn Write + Send), line: &[u8], number: usize) -> Result<()> {
    writer
        .write_all(line)
        .map_err(|error| MemoryError::storage(format!("export line {number}: writing"), error))
}

/// Reads and validates a whole `agent-memory-jsonl` input without writing anywhere.
///
/// # Errors
/// [`MemoryError::InvalidInput`] for a missing or foreign header, an unsupported version, a
/// record that fails validation or lies outside the header's scope, or counts that differ
/// from the header's; [`MemoryError::Serialization`] for a line that is not valid UTF-8 or
/// not the JSON of a record; [`MemoryError::LimitExceeded`] for a line longer than
/// [`MAX_LINE_BYTES`]. Every message names the line. Never panics.
pub fn read_jsonl(reader: &mut dyn BufRead) -> Result<Dump> {
    read_numbered(reader, MAX_LINE_BYTES).map(|(header, records)| Dump {
        header,
        records: records.into_iter().map(|(_, record)| record).collect(),
    })
}

/// Imports an `agent-memory-jsonl` input into the given stores, all or nothing when the
/// input is at fault.
///
/// The whole input is read and validated first (see [`read_jsonl`]), then checked against
/// the stores: every relation must join entities that the input or the graph holds, every
/// ended memory's successor (what superseded it, the summary it was consolidated into) must
/// be a memory the input or the store holds, and no memory of the input may be its own
/// successor's successor, through the input or through stored memories (a loop would keep
/// its memories out of recall for good). Nothing is written if
/// any line is bad. Then memories are saved in one
/// [`save_many`](MemoryStore::save_many) call (replacing items with the same id; one
/// transaction on the SQL backends), recall statistics set, pages added (replacing pages with
/// the same id), entities added or updated, and relations added. Records whose store is
/// `None` are counted as skipped; recall statistics of a memory that neither the input nor
/// the store holds are counted as ignored and not written.
///
/// # Errors
/// As [`read_jsonl`]; [`MemoryError::InvalidInput`] naming the line for a relation to an
/// entity that neither the input nor the graph holds, or for a memory whose successor is
/// missing or whose successors loop; then the stores' own errors (a store
/// that fails while writing may leave the records written before the failure, and the
/// import can be run again: every write is an upsert).
pub async fn import_jsonl(
    reader: &mut (dyn BufRead + Send),
    memories: Option<&dyn MemoryStore>,
    knowledge: Option<&dyn KnowledgeStore>,
    graph: Option<&dyn KnowledgeGraph>,
) -> Result<ImportReport> {
    let (_, records) = read_numbered(reader, MAX_LINE_BYTES)?;
    let mut report = ImportReport::default();
    // Memories first, so their statistics find them.
    let mut items: Vec<MemoryItem> = Vec::new();
    let mut lines: Vec<usize> = Vec::new();
    let mut rest: Vec<(usize, Record)> = Vec::new();
    for (line, record) in records {
        match record {
            Record::Memory(item) if memories.is_some() => {
                items.push(item);
                lines.push(line);
            }
            other => rest.push((line, other)),
        }
    }
    if let Some(store) = memories {
        check_successors(&items, &lines, store).await?;
    }
    // Relations last: the input may give a relation before the entities it joins (the
    // format fixes no order), and each end must be stored when the relation is written.
    rest.sort_by_key(|(_, record)| matches!(record, Record::Relation(_)));
    let ignored = check_references(&items, &rest, memories, graph).await?;
    if let Some(store) = memories
        && !items.is_empty()
    {
        let count = items.len();
        store.save_many(items).await?;
        report.imported.memories += count;
    }
    for (index, (line, record)) in rest.iter().enumerate() {
        if ignored.contains(&index) {
            report.ignored.add(record);
            continue;
        }
        let written = match (record, memories, knowledge, graph) {
            (Record::RecallStats(stats), Some(store), _, _) => store
                .set_recall_stats(&stats.namespace, &stats.id, stats.stats())
                .await
                .map(|()| true),
            (Record::Page(page), _, Some(store), _) => {
                import_page(store, page).await.map(|()| true)
            }
            (Record::Entity(entity), _, _, Some(graph)) => {
                crate::write_entity(graph, entity.clone())
                    .await
                    .map(|()| true)
            }
            (Record::Relation(relation), _, _, Some(graph)) => {
                graph.add_relation(relation.clone()).await.map(|()| true)
            }
            _ => Ok(false),
        }
        .map_err(|error| at_line(error, *line))?;
        if written {
            report.imported.add(record);
        } else {
            report.skipped.add(record);
        }
    }
    Ok(report)
}

/// Checks the lifecycle links of the memories to import before anything is written, as
/// `supersede` and `consolidate` check theirs: the memory each ended one names as its
/// successor (what superseded it, the summary it was consolidated into) is in the input or
/// in the store, in its namespace, and no line of successors through a memory of the input
/// comes back to where it began, whether it runs through the input alone or through stored
/// memories too (each memory of such a loop would be out of recall for good). A stored memory
/// the input holds too is read as the input gives it, as the import will write it. A loop
/// among stored memories alone is the store's and no reason to refuse. `lines` are the
/// items' lines.
async fn check_successors(
    items: &[MemoryItem],
    lines: &[usize],
    store: &dyn MemoryStore,
) -> Result<()> {
    let line = |index: usize| lines.get(index).copied().unwrap_or_default();
    // The walk's memories: the input's first, then the stored ones it reaches, each read
    // once, a level of successors at a time (one read per namespace and level).
    let mut nodes: Vec<(Namespace, String, Option<String>)> = items
        .iter()
        .map(|item| (item.namespace.clone(), item.id.clone(), successor(item)))
        .collect();
    let mut index_of: HashMap<(Namespace, String), usize> = nodes
        .iter()
        .enumerate()
        .map(|(index, (namespace, id, _))| ((namespace.clone(), id.clone()), index))
        .collect();
    let mut frontier: Vec<usize> = (0..items.len()).collect();
    while !frontier.is_empty() {
        let mut wanted: BTreeMap<Namespace, Vec<(String, usize)>> = BTreeMap::new();
        // Each successor asked for once per level, by the first memory naming it.
        let mut asked: HashSet<(Namespace, String)> = HashSet::new();
        for &node in &frontier {
            let (namespace, _, next) = &nodes[node];
            if let Some(next) = next {
                let key = (namespace.clone(), next.clone());
                if !index_of.contains_key(&key) && asked.insert(key) {
                    wanted
                        .entry(namespace.clone())
                        .or_default()
                        .push((next.clone(), node));
                }
            }
        }
        frontier = Vec::new();
        for (namespace, links) in wanted {
            let ids: Vec<String> = links.iter().map(|(id, _)| id.clone()).collect();
            let stored: HashMap<String, MemoryItem> = store
                .get_many(&namespace, &ids)
                .await?
                .into_iter()
                .map(|item| (item.id.clone(), item))
                .collect();
            for (id, from) in links {
                match stored.get(&id) {
                    Some(item) => {
                        index_of.insert((namespace.clone(), id.clone()), nodes.len());
                        frontier.push(nodes.len());
                        nodes.push((namespace.clone(), id, successor(item)));
                    }
                    // A stored memory naming a successor that is gone is the store's.
                    None if from >= items.len() => {}
                    None => {
                        return Err(MemoryError::invalid(
                            &format!("import line {}", line(from)),
                            format!(
                                "memory {} in {namespace} ended into {id}, which is neither \
                                 in the input nor in the store",
                                items[from].id
                            ),
                        ));
                    }
                }
            }
        }
    }
    let next_of = |node: usize| {
        let (namespace, _, next) = &nodes[node];
        next.as_ref()
            .and_then(|next| index_of.get(&(namespace.clone(), next.clone())).copied())
    };
    // Loops among the successors: each memory is walked once (0 not yet, 1 on the walk
    // under way, 2 done); a memory has one successor at most, so a walk is a line.
    let mut state = vec![0u8; nodes.len()];
    for start in 0..items.len() {
        let mut path = Vec::new();
        let mut current = Some(start);
        while let Some(node) = current {
            match state[node] {
                2 => break,
                1 => {
                    // The loop is the path from `node` on; it is the input's when one of
                    // its memories is.
                    let from = path.iter().position(|&on| on == node).unwrap_or_default();
                    if let Some(&index) = path[from..].iter().find(|&&on| on < items.len()) {
                        return Err(MemoryError::invalid(
                            &format!("import line {}", line(index)),
                            format!(
                                "memory {} in {} is its own successor's successor: the \
                                 memories ended into one another in a loop",
                                items[index].id, items[index].namespace
                            ),
                        ));
                    }
                    break;
                }
                _ => {}
            }
            state[node] = 1;
            path.push(node);
            current = next_of(node);
        }
        for node in path {
            state[node] = 2;
        }
    }
    Ok(())
}

/// The memory `item` was ended into, if any.
fn successor(item: &MemoryItem) -> Option<String> {
    item.ended
        .as_ref()
        .and_then(crate::Ended::successor)
        .map(str::to_owned)
}

/// Checks what the records refer to before anything is written: every relation (when a graph
/// is given) must join entities of its namespace that the input or the graph holds. Returns
/// the indexes in `rest` of the recall statistics to ignore, whose memory neither `items` nor
/// the memory store holds.
async fn check_references(
    items: &[MemoryItem],
    rest: &[(usize, Record)],
    memories: Option<&dyn MemoryStore>,
    graph: Option<&dyn KnowledgeGraph>,
) -> Result<HashSet<usize>> {
    let mut ignored = HashSet::new();
    if let Some(store) = memories {
        let input: HashSet<(&Namespace, &str)> = items
            .iter()
            .map(|item| (&item.namespace, item.id.as_str()))
            .collect();
        for (index, (_, record)) in rest.iter().enumerate() {
            if let Record::RecallStats(stats) = record
                && !input.contains(&(&stats.namespace, stats.id.as_str()))
                && store
                    .recall_stats(&stats.namespace, &stats.id)
                    .await?
                    .is_none()
            {
                ignored.insert(index);
            }
        }
    }
    if let Some(graph) = graph {
        let mut known: HashSet<(&Namespace, &str)> = rest
            .iter()
            .filter_map(|(_, record)| match record {
                Record::Entity(entity) => Some((&entity.namespace, entity.id.as_str())),
                _ => None,
            })
            .collect();
        for (line, record) in rest {
            let Record::Relation(relation) = record else {
                continue;
            };
            for id in [&relation.source_id, &relation.target_id] {
                let key = (&relation.namespace, id.as_str());
                if known.contains(&key) {
                    continue;
                }
                if graph.get_entity(&relation.namespace, id).await?.is_none() {
                    return Err(MemoryError::invalid(
                        &format!("import line {line}"),
                        format!(
                            "relation {} -[{}]-> {} in {}: entity {id} is neither in the input nor in the graph",
                            relation.source_id,
                            relation.relation_type,
                            relation.target_id,
                            relation.namespace
                        ),
                    ));
                }
                known.insert(key);
            }
        }
    }
    Ok(ignored)
}

/// Adds the page, or replaces the stored one whole with the exported creation time and
/// statistics (update_page would keep the stored ones), in one step of the store.
async fn import_page(store: &dyn KnowledgeStore, page: &KnowledgePage) -> Result<()> {
    store.put_page(page.clone()).await
}

/// Prefixes the messages that describe the input with its line.
fn at_line(error: MemoryError, line: usize) -> MemoryError {
    match error {
        MemoryError::InvalidInput { field, problem } => MemoryError::InvalidInput {
            field: format!("import line {line}: {field}"),
            problem,
        },
        other => other,
    }
}

mod reader;

use self::reader::read_numbered;

#[cfg(test)]
mod tests;
