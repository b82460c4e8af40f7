//! `export` and `import`: the project's JSON lines (`agent-memory-jsonl`, through
//! `memory_core::transfer`), the MCP reference memory server's `memory.jsonl`, and (through
//! [`crate::conversations`]) LoCoMo and LongMemEval conversations.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read, Write};

use agent_memory::transfer::{self, RecordCounts};
use agent_memory::{KnowledgeGraphExt, MemoryError, MemoryItem, Scope};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use crate::cli::{ExportArgs, ImportArgs, ImportFormat};
use crate::commands::{Outcome, Settings};
use crate::failure::Failure;
use crate::observations::{self, McpLine};

/// `export`: the namespace (or every namespace) as agent-memory-jsonl.
pub(crate) async fn export(settings: &Settings, args: ExportArgs) -> Result<Outcome, Failure> {
    if settings.json && args.output.is_none() {
        return Err(Failure::invalid(
            "output",
            "export --json writes its result on stdout, so the records need a file",
        )
        .with_hint("add --output FILE, or leave out --json to write the records on stdout"));
    }
    let scope = if args.all_namespaces {
        Scope::all()
    } else {
        settings.namespace.subtree()
    };
    let memory = settings.open().await?;
    memory.flush().await?;
    // The records go to a file beside the output and replace it only once all are written:
    // an export that fails (a store that cannot be read) leaves an existing backup whole.
    // Made once the store is open, so a store that cannot be opened touches no output.
    let partial = match &args.output {
        Some(path) => Some(Partial::create(path, &settings.store)?),
        None => None,
    };
    let mut writer: Box<dyn Write + Send> = match &partial {
        Some(partial) => Box::new(std::io::BufWriter::new(partial.writer()?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout())),
    };
    let exported = transfer::export_jsonl(
        &scope,
        Some(&**memory.store()),
        Some(&**memory.knowledge()),
        Some(&**memory.graph()),
        &mut writer,
    )
    .await;
    let flushed = writer.flush();
    drop(writer);
    let counts = match exported {
        Ok(counts) => counts,
        // A reader that stopped early (`export | head`) closed the pipe: what it read is what
        // it asked for, as for `recall x | head -1`, and not an error.
        Err(error) if args.output.is_none() && closed_pipe(&error) => {
            return Ok(Outcome {
                json: serde_json::Value::Null,
                text: String::new(),
            });
        }
        Err(error) => return Err(error.into()),
    };
    match flushed {
        Ok(()) => {}
        Err(error) if args.output.is_none() && error.kind() == std::io::ErrorKind::BrokenPipe => {
            return Ok(Outcome {
                json: serde_json::Value::Null,
                text: String::new(),
            });
        }
        Err(error) => {
            return Err(Failure::new(
                crate::failure::ErrorKind::Storage,
                format!("writing the records: {error}"),
            )
            .with_hint("check where the output goes: a full disk, a closed file"));
        }
    }
    if let Some(partial) = partial {
        partial.finish()?;
    }
    let summary = format!(
        "exported {} memories, {} pages, {} entities, {} relations",
        counts.memories, counts.pages, counts.entities, counts.relations
    );
    Ok(Outcome {
        json: json!({ "exported": counts }),
        // On stdout the records are the output; the summary would corrupt them.
        text: if args.output.is_some() {
            summary
        } else {
            String::new()
        },
    })
}

/// The files SQLite keeps beside a database, by the suffix of their name.
const SQLITE_COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// `path` with its links and its directory's resolved, whether or not it exists (a link
/// that leads nowhere yet names where it leads); `None` when its directory does not
/// exist.
fn resolved(path: &std::path::Path) -> Option<std::path::PathBuf> {
    if let Ok(found) = path.canonicalize() {
        return Some(found);
    }
    let mut path = path.to_owned();
    // A dangling link, followed a few steps at most (a loop of links ends there).
    for _ in 0..8 {
        let Ok(target) = std::fs::read_link(&path) else {
            break;
        };
        path = match path.parent() {
            Some(parent) => parent.join(target),
            None => target,
        };
    }
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.canonicalize().ok()?,
        _ => std::env::current_dir().ok()?,
    };
    Some(parent.join(name))
}

/// An export's output file while it is written: a file beside it, renamed over it once every
/// record is written and synced, and removed if the export fails. An output that is no
/// regular file (a device, a pipe, `/dev/stdout`), or one beside which no file can be made,
/// is written in place, as a shell's redirection would.
struct Partial {
    /// The file the records are written to.
    file: File,
    /// Its path, when it is a file beside the output; `None` when it is the output.
    path: Option<std::path::PathBuf>,
    /// The output it becomes (a link's target, so the link stays).
    output: std::path::PathBuf,
    /// Whether it became the output.
    done: bool,
}

impl Partial {
    /// The file the records of `output` are written to, refused when `output` is the store
    /// being exported (the export would have emptied it, and then replaced it with its
    /// records) or one of SQLite's files beside it (`-wal`, `-shm`, `-journal`: replacing
    /// one breaks the open store), by its own name or through a link.
    fn create(
        output: &std::path::Path,
        store: &agent_memory::StoreLocation,
    ) -> Result<Self, Failure> {
        if let agent_memory::StoreLocation::Sqlite(store) = store
            && let (Ok(store), Some(same)) = (store.canonicalize(), resolved(output))
        {
            let what = if same == store {
                Some("the store being exported".to_owned())
            } else {
                SQLITE_COMPANIONS.iter().find_map(|suffix| {
                    let mut companion = store.clone().into_os_string();
                    companion.push(suffix);
                    (same.as_os_str() == companion)
                        .then(|| format!("the {suffix} file of the store being exported"))
                })
            };
            if let Some(what) = what {
                return Err(
                    Failure::invalid("output", format!("{} is {what}", output.display()))
                        .with_hint("export to another file"),
                );
            }
        }
        let in_place = || {
            File::create(output)
                .map(|file| Self {
                    file,
                    path: None,
                    output: output.to_owned(),
                    done: false,
                })
                .map_err(|error| {
                    Failure::invalid(
                        "output",
                        format!("cannot create {}: {error}", output.display()),
                    )
                })
        };
        // A link's target is replaced, not the link.
        let target = match std::fs::symlink_metadata(output) {
            Ok(meta) if meta.file_type().is_symlink() => match output.canonicalize() {
                Ok(target) => target,
                Err(_) => return in_place(),
            },
            _ => output.to_owned(),
        };
        let existing = match std::fs::metadata(&target) {
            Ok(meta) if !meta.is_file() => return in_place(),
            Ok(meta) => Some(meta.permissions()),
            Err(_) => None,
        };
        let Some(name) = target.file_name() else {
            return in_place();
        };
        let mut partial_name = std::ffi::OsString::from(".");
        partial_name.push(name);
        partial_name.push(format!(".partial-{}", std::process::id()));
        let path = target.with_file_name(partial_name);
        let Ok(file) = File::create(&path) else {
            return in_place();
        };
        let partial = Self {
            file,
            path: Some(path),
            output: target,
            done: false,
        };
        // A private backup stays private.
        if let (Some(permissions), Some(path)) = (existing, &partial.path) {
            let _ = std::fs::set_permissions(path, permissions);
        }
        Ok(partial)
    }

    /// A handle to write the records through.
    fn writer(&self) -> Result<File, Failure> {
        self.file.try_clone().map_err(|error| self.failed(&error))
    }

    /// A write of the records that failed.
    fn failed(&self, error: &std::io::Error) -> Failure {
        Failure::new(
            crate::failure::ErrorKind::Storage,
            format!("writing {}: {error}", self.output.display()),
        )
        .with_hint("check where the output goes: a full disk, a closed file")
    }

    /// Syncs the records and puts them in the output's place. Where the file beside cannot
    /// be renamed over the output (a file mounted in place), they are copied into it.
    fn finish(mut self) -> Result<(), Failure> {
        let Some(path) = self.path.clone() else {
            self.done = true;
            return self.file.sync_all().or_else(|error| {
                // A device or a pipe takes no sync.
                if error.kind() == std::io::ErrorKind::InvalidInput {
                    Ok(())
                } else {
                    Err(self.failed(&error))
                }
            });
        };
        self.file.sync_all().map_err(|error| self.failed(&error))?;
        if std::fs::rename(&path, &self.output).is_err() {
            std::fs::copy(&path, &self.output).map_err(|error| self.failed(&error))?;
            let _ = std::fs::remove_file(&path);
        }
        self.done = true;
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if let (false, Some(path)) = (self.done, &self.path) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Whether `error` comes from writing to a pipe whose reader has gone.
fn closed_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|error| error.kind() == std::io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// A progress bar on standard error: drawn only on a terminal and without `--json`.
pub(crate) fn progress(settings: &Settings, length: Option<u64>, template: &str) -> ProgressBar {
    let target = if settings.json {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let bar = ProgressBar::with_draw_target(length, target);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// `import`: reads the whole input, checks it, then writes it.
pub(crate) async fn import(settings: &Settings, args: ImportArgs) -> Result<Outcome, Failure> {
    let (reader, length): (Box<dyn BufRead + Send>, Option<u64>) = if args.input.as_os_str() == "-"
    {
        (Box::new(BufReader::new(std::io::stdin())), None)
    } else {
        let file = File::open(&args.input).map_err(|error| {
            Failure::invalid(
                "input",
                format!("cannot open {}: {error}", args.input.display()),
            )
            .with_hint("pass an existing file, or `-` to read standard input")
        })?;
        let length = file.metadata().ok().map(|metadata| metadata.len());
        (Box::new(BufReader::new(file)), length)
    };
    let bar = progress(
        settings,
        length,
        "{spinner} reading {bytes}/{total_bytes} [{bar:30}] {msg}",
    );
    let mut reader = bar.wrap_read(reader);
    // Blank lines before the first record are allowed by every format; they are kept, so
    // each importer numbers the lines as the file does.
    let mut start = Vec::new();
    let mut number = 0;
    let first = loop {
        // LongMemEval's JSON list may be one line of any size: it is read as JSON, not as
        // lines, so its opening is enough to tell it.
        if starts_a_list(&mut reader)? {
            break "[".to_owned();
        }
        if start.len() > transfer::MAX_LINE_BYTES {
            return Err(Failure::invalid(
                "input",
                format!(
                    "more than {} bytes of blank lines before the first record",
                    transfer::MAX_LINE_BYTES
                ),
            ));
        }
        let before = start.len();
        number += 1;
        if !read_line_within(&mut reader, &mut start, number)? {
            break String::new();
        }
        let line = &start[before..];
        if !line.iter().all(u8::is_ascii_whitespace) {
            break String::from_utf8_lossy(line).into_owned();
        }
    };
    let format = match args.format {
        ImportFormat::Auto => detect(&first)?,
        other => other,
    };
    let mut input = Cursor::new(start).chain(reader);
    let outcome = match format {
        ImportFormat::McpMemory => import_mcp(settings, &mut input, &bar).await,
        ImportFormat::Locomo => {
            crate::conversations::import(settings, &mut input, &bar, false).await
        }
        ImportFormat::Longmemeval => {
            crate::conversations::import(settings, &mut input, &bar, true).await
        }
        ImportFormat::Auto | ImportFormat::AgentMemory => {
            import_native(settings, &mut input, &bar).await
        }
    };
    bar.finish_and_clear();
    outcome
}

/// Appends the next line of `reader` (newline included) to `into`: false at the end of the
/// input. A line longer than [`transfer::MAX_LINE_BYTES`] (the native format's limit) is
/// refused, naming its `number`, without reading the rest of it; a LongMemEval list opens
/// on a line of its own or is told apart before ([`starts_a_list`]).
pub(crate) fn read_line_within(
    reader: &mut dyn BufRead,
    into: &mut Vec<u8>,
    number: usize,
) -> Result<bool, Failure> {
    let before = into.len();
    let limit = u64::try_from(transfer::MAX_LINE_BYTES)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let read = Read::take(&mut *reader, limit)
        .read_until(b'\n', into)
        .map_err(|error| Failure::invalid("input", format!("reading line {number}: {error}")))?;
    if into.len() - before > transfer::MAX_LINE_BYTES && into.last() != Some(&b'\n') {
        return Err(Failure::invalid(
            "input",
            format!(
                "line {number} is longer than {} bytes",
                transfer::MAX_LINE_BYTES
            ),
        ));
    }
    Ok(read > 0)
}

/// Line `number` (`bytes`) as text; refused by its number when it is not UTF-8.
pub(crate) fn utf8_line(bytes: &[u8], number: usize) -> Result<&str, Failure> {
    std::str::from_utf8(bytes)
        .map_err(|error| Failure::invalid("input", format!("line {number} is not UTF-8: {error}")))
}

/// Whether what `reader` holds next, past spaces and tabs on this line, opens a JSON list
/// (`[`); nothing is consumed but those spaces.
fn starts_a_list(reader: &mut dyn BufRead) -> Result<bool, Failure> {
    loop {
        let buffer = reader
            .fill_buf()
            .map_err(|error| Failure::invalid("input", format!("reading the input: {error}")))?;
        let Some(&byte) = buffer.first() else {
            return Ok(false);
        };
        match byte {
            b' ' | b'\t' => reader.consume(1),
            b'[' => return Ok(true),
            _ => return Ok(false),
        }
    }
}

/// The format of an input from its first line.
fn detect(first: &str) -> Result<ImportFormat, Failure> {
    if first.trim_start().starts_with('[') {
        return Ok(ImportFormat::Longmemeval);
    }
    let value: serde_json::Value = serde_json::from_str(first.trim()).map_err(|error| {
        Failure::invalid("input", format!("line 1 is not JSON: {error}")).with_hint(
            "import reads JSON lines: an `agent-memory export`, or an MCP memory server's memory.jsonl",
        )
    })?;
    if value.get("format").and_then(|f| f.as_str()) == Some(transfer::FORMAT) {
        Ok(ImportFormat::AgentMemory)
    } else if matches!(
        value.get("type").and_then(|t| t.as_str()),
        Some("entity" | "relation")
    ) {
        Ok(ImportFormat::McpMemory)
    } else if value.get("conv_id").is_some() && value.get("dia_id").is_some() {
        Ok(ImportFormat::Locomo)
    } else {
        Err(Failure::invalid(
            "input",
            "line 1 is neither an agent-memory-jsonl header nor an MCP memory entity or relation",
        )
        .with_hint("choose the format with --format agent-memory or --format mcp-memory"))
    }
}

async fn import_native(
    settings: &Settings,
    input: &mut (dyn BufRead + Send),
    bar: &ProgressBar,
) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    bar.set_message("checking and writing");
    let mut noting = NotingNamespaces {
        inner: input,
        line: Vec::new(),
        memories: BTreeMap::new(),
    };
    let report = transfer::import_jsonl(
        &mut noting,
        Some(&**memory.store()),
        Some(&**memory.knowledge()),
        Some(&**memory.graph()),
    )
    .await?;
    let counts = report.imported;
    // Kept within the capacity (and the rest of the eviction policy), as remembered
    // memories are: each namespace written is counted as that many writes, for one pass.
    if counts.memories > 0 {
        for (namespace, written) in noting.finish() {
            if let Ok(namespace) = agent_memory::Namespace::parse(&namespace) {
                memory.written(&namespace, written).await;
            }
        }
    }
    Ok(Outcome {
        json: json!({
            "format": "agent-memory",
            "imported": counts,
            "skipped": report.skipped,
            "ignored": report.ignored,
        }),
        text: summary(&counts),
    })
}

/// A native import's input, noting the namespace of each memory line as the import reads
/// it: the import writes the stores directly, and the namespaces it wrote are then given
/// the upkeep a write gets.
struct NotingNamespaces<'a> {
    /// The input.
    inner: &'a mut (dyn BufRead + Send),
    /// The line read so far.
    line: Vec<u8>,
    /// The memory lines per namespace.
    memories: BTreeMap<String, usize>,
}

impl NotingNamespaces<'_> {
    /// The memory lines per namespace, the last line (without a line end) counted too.
    fn finish(mut self) -> BTreeMap<String, usize> {
        note_line(&mut self.line, &mut self.memories);
        self.memories
    }
}

/// Notes `bytes`, read from the input: each line they end is looked at.
fn note_bytes(bytes: &[u8], line: &mut Vec<u8>, memories: &mut BTreeMap<String, usize>) {
    let mut rest = bytes;
    while let Some(end) = rest.iter().position(|byte| *byte == b'\n') {
        line.extend_from_slice(&rest[..end]);
        note_line(line, memories);
        rest = &rest[end + 1..];
    }
    line.extend_from_slice(rest);
}

/// Counts `line` in `memories` when it is a memory's, and empties it. A line that is no
/// record is the import's to refuse.
fn note_line(line: &mut Vec<u8>, memories: &mut BTreeMap<String, usize>) {
    /// The two fields of a line looked at.
    #[derive(serde::Deserialize)]
    struct Line {
        #[serde(rename = "type")]
        kind: Option<String>,
        namespace: Option<String>,
    }
    if let Ok(Line {
        kind: Some(kind),
        namespace: Some(namespace),
    }) = serde_json::from_slice::<Line>(line)
        && kind == "memory"
    {
        *memories.entry(namespace).or_default() += 1;
    }
    line.clear();
}

impl Read for NotingNamespaces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let available = self.inner.fill_buf()?;
        let read = available.len().min(buf.len());
        buf[..read].copy_from_slice(&available[..read]);
        note_bytes(&buf[..read], &mut self.line, &mut self.memories);
        self.inner.consume(read);
        Ok(read)
    }
}

impl BufRead for NotingNamespaces<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        // What `fill_buf` returned is still buffered: reading it again reads nothing.
        if let Ok(available) = self.inner.fill_buf() {
            let taken = amount.min(available.len());
            note_bytes(&available[..taken], &mut self.line, &mut self.memories);
        }
        self.inner.consume(amount);
    }
}

fn summary(counts: &RecordCounts) -> String {
    format!(
        "imported {} memories, {} pages, {} entities, {} relations",
        counts.memories, counts.pages, counts.entities, counts.relations
    )
}

/// The type of an entity a relation of an imported MCP memory file names without the file
/// declaring it.
const UNKNOWN_TYPE: &str = "unknown";

/// Imports a `memory.jsonl` into the namespace: all lines are read and checked before the
/// first write, so a bad line changes nothing.
async fn import_mcp(
    settings: &Settings,
    input: &mut (dyn BufRead + Send),
    bar: &ProgressBar,
) -> Result<Outcome, Failure> {
    let namespace = &settings.namespace;
    // Entities by name, in file order of first appearance; a repeated entity adds its
    // observations to the first.
    let mut entities: BTreeMap<String, (usize, observations::McpEntity)> = BTreeMap::new();
    let mut relations = Vec::new();
    let mut bytes = Vec::new();
    let mut number = 0;
    loop {
        bytes.clear();
        if !read_line_within(input, &mut bytes, number + 1)? {
            break;
        }
        number += 1;
        let line = utf8_line(&bytes, number)?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: McpLine = serde_json::from_str(line.trim()).map_err(|error| {
            Failure::invalid("input", format!("line {number}: {error}")).with_hint(
                "each line must be {\"type\":\"entity\",\"name\",\"entityType\",\"observations\"} or {\"type\":\"relation\",\"from\",\"to\",\"relationType\"}",
            )
        })?;
        match parsed {
            McpLine::Entity(entity) => {
                let at = |error: Failure| Failure {
                    message: format!("line {number}: {}", error.message),
                    ..error
                };
                observations::entity(namespace, &entity).map_err(at)?;
                for text in &entity.observations {
                    observations::observation(namespace, &entity.name, text).map_err(at)?;
                }
                match entities.get_mut(&entity.name) {
                    Some((_, known)) => known.observations.extend(entity.observations),
                    None => {
                        entities.insert(entity.name.clone(), (number, entity));
                    }
                }
            }
            McpLine::Relation(relation) => {
                observations::relation(namespace, &relation).map_err(|error| Failure {
                    message: format!("line {number}: {}", error.message),
                    ..error
                })?;
                relations.push((number, relation));
            }
        }
    }
    let memory = settings.open().await?;
    let graph = memory.graph();
    // The reference server keeps a relation whose ends were never created, and a graph
    // here needs both ends: such an end is created, typed `unknown` (`UNKNOWN_TYPE`), so
    // the file imports whole rather than refused or cut.
    let mut known: HashSet<String> = entities.keys().cloned().collect();
    let mut missing: Vec<(usize, observations::McpEntity)> = Vec::new();
    for (number, relation) in &relations {
        for end in [&relation.from, &relation.to] {
            if known.contains(end.as_str()) {
                continue;
            }
            if graph.get_entity(namespace, end).await?.is_none() {
                missing.push((
                    *number,
                    observations::McpEntity {
                        name: end.clone(),
                        entity_type: UNKNOWN_TYPE.to_owned(),
                        observations: Vec::new(),
                    },
                ));
            }
            known.insert(end.clone());
        }
    }
    let created_ends = missing.len();
    let mut ordered: Vec<_> = entities.into_values().collect();
    ordered.extend(missing);
    ordered.sort_by_key(|(number, _)| *number);
    let total = ordered.len() + relations.len() + 1;
    bar.set_length(total as u64);
    bar.set_position(0);
    if let Ok(style) = ProgressStyle::with_template("{spinner} writing {pos}/{len} [{bar:30}]") {
        bar.set_style(style);
    }
    // The observations built and embedded first: an embedding service that fails (the
    // step most likely to) fails the import before anything is written.
    let mut items: Vec<MemoryItem> = Vec::new();
    for (_, entity) in &ordered {
        for text in &entity.observations {
            items.push(observations::observation(namespace, &entity.name, text)?);
        }
    }
    // Duplicate observations of one entity share an id: keep one. One already stored (a
    // file imported again) stays as it is, as `add_observations` leaves it: writing it anew
    // would reset its creation time, its edits and its statistics, and make an ended one
    // current again.
    let mut seen = HashSet::new();
    items.retain(|item| seen.insert(item.id.clone()));
    let observation_count = items.len();
    if !items.is_empty() {
        let ids: Vec<String> = items.iter().map(|item| item.id.clone()).collect();
        let stored: HashSet<String> = memory
            .store()
            .get_many(namespace, &ids)
            .await?
            .into_iter()
            .map(|item| item.id)
            .collect();
        items.retain(|item| !stored.contains(&item.id));
    }
    let items = if items.is_empty() {
        items
    } else {
        observations::embedded(&memory, items).await?
    };
    for (_, entity) in &ordered {
        let graph_entity = observations::entity(namespace, entity)?;
        match graph.add_entity(graph_entity.clone()).await {
            Err(MemoryError::AlreadyExists { .. }) => {
                // The format names an entity (its id here) and its type, nothing else: an
                // entity already stored keeps its name, description, tags and attributes,
                // and takes the file's type.
                match graph.get_entity(namespace, &graph_entity.id).await? {
                    Some(mut stored) => {
                        if stored.entity_type != graph_entity.entity_type {
                            stored.entity_type = graph_entity.entity_type;
                            graph.update_entity(stored).await?;
                        }
                    }
                    // Removed since: the file's (added again, or over one added since).
                    None => agent_memory::write_entity(graph, graph_entity).await?,
                }
            }
            other => other?,
        }
        bar.inc(1);
    }
    if !items.is_empty() {
        let written = items.len();
        memory.store().save_many(items).await?;
        // Kept within the capacity, as remembered memories are.
        memory.written(namespace, written).await;
    }
    bar.inc(1);
    for (_, relation) in &relations {
        graph
            .add_relation_keeping_attributes(observations::relation(namespace, relation)?)
            .await?;
        bar.inc(1);
    }
    Ok(Outcome {
        json: json!({
            "format": "mcp-memory",
            "namespace": namespace.as_str(),
            "imported": {
                "entities": ordered.len(),
                "relations": relations.len(),
                "observations": observation_count,
            },
            "created_ends": created_ends,
        }),
        text: format!(
            "imported {} entities ({created_ends} of them ends of relations the file does not declare, typed {UNKNOWN_TYPE}), {} relations, {} observations into {}",
            ordered.len(),
            relations.len(),
            observation_count,
            namespace
        ),
    })
}
