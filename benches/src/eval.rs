//! Retrieval evaluation on LoCoMo conversations (the JSONL format of its development split)
//! and LongMemEval haystacks (the benchmark's own JSON, read by [`read_longmemeval`]).
//!
//! Protocol (as the data's READMEs give it): each conversation, or each LongMemEval
//! question's haystack, is its own namespace; its turns are remembered through the public
//! dialogue API ([`Memory::dialogue`]: text `[date] speaker: text`, the session's time as
//! creation time, the speaker, its chat role when it is one (`user`, `assistant`), the
//! session and the turn id in metadata, and the turns next to it in its session as the
//! memory's context, which search indexes with a lower weight); the clock is set to the question's date (LongMemEval) or the
//! conversation's last timestamp (LoCoMo); each question is answered with one recall against
//! that namespace only. Recall@k is the share of a question's evidence turns in the top k,
//! averaged over questions; Hit@k the share of questions with any evidence in the top k;
//! NDCG@10 weighs each evidence turn by its rank. Where questions name their evidence
//! sessions (LongMemEval), the turn ranking is mapped to sessions as the benchmark's own
//! scorer does (the cut grows until k distinct sessions are covered): recall_any@k is the
//! share of questions with an evidence session among them, recall_all@k with all of them.
//!
//! Turns are written with [`Memory::remember_with`] under [`EvalOptions::facts`] (by default
//! [`FactsConfig::default`]: a repeated turn is merged into the stored one, which then
//! stands for both, and a turn that contradicts a stored one is flagged); the report counts
//! what it did ([`WriteCounts`]), and [`FactsConfig::off`] stores every turn as it comes.
//!
//! Questions are answered through [`Retriever::retrieve_with`](agent_memory::retrieve::Retriever::retrieve_with), which records no recall
//! statistics, so the order of questions cannot change the results.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::sync::Arc;
use std::time::Instant;

use agent_memory::retrieve::{
    FactsConfig, Memory, Outcome, RecallFilter, Remember, Remembered, RetrieverConfig, Role,
    Turn as DialogueTurn,
};
use agent_memory::{
    ManualClock, MemoryError, MemoryKind, MemoryStore, Namespace, Result, RetrievalSource,
};
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};

mod longmemeval;

pub use self::longmemeval::{Haystack, each_longmemeval, read_longmemeval};

/// The cut-offs reported.
pub const KS: [usize; 5] = [1, 5, 10, 20, 50];

/// The session cut-offs reported (LongMemEval).
pub const SESSION_KS: [usize; 2] = [5, 10];

/// One dialogue turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Conversation id.
    pub conv_id: String,
    /// Turn id such as `D1:3`.
    pub dia_id: String,
    /// Session number.
    pub session: usize,
    /// Position of the turn in its session, from 0.
    #[serde(default)]
    pub turn: usize,
    /// Human-readable session date.
    pub date: String,
    /// ISO-8601 session time, if known.
    pub timestamp: Option<String>,
    /// Who spoke.
    pub speaker: String,
    /// What was said.
    pub text: String,
    /// Caption of a shared image, if any.
    pub blip_caption: Option<String>,
    /// The session's id in the source data, when it has one (LongMemEval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// One question with its evidence turns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// Question id.
    pub qid: String,
    /// Conversation id.
    pub conv_id: String,
    /// The question.
    pub question: String,
    /// The reference answer (unused by retrieval).
    #[serde(default, deserialize_with = "any_to_string")]
    pub answer: String,
    /// `dia_id`s of the turns that answer it.
    pub evidence: Vec<String>,
    /// LoCoMo: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; LongMemEval: the
    /// question type.
    #[serde(deserialize_with = "any_to_string")]
    pub category: String,
    /// When the question is asked (the clock of its recall), if the data says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_at: Option<DateTime<Utc>>,
    /// The ids of the sessions that answer it, when the data names them (LongMemEval).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_sessions: Vec<String>,
}

fn any_to_string<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<String, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(match value {
        serde_json::Value::String(text) => text,
        other => other.to_string(),
    })
}

/// Reads a JSONL file of `T`, naming the line of any malformed record.
///
/// # Errors
/// I/O and parse errors as [`MemoryError::Serialization`].
pub fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &std::path::Path) -> Result<Vec<T>> {
    let file = std::fs::File::open(path)
        .map_err(|e| MemoryError::serialization(format!("open {}", path.display()), e))?;
    let mut out = Vec::new();
    for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line =
            line.map_err(|e| MemoryError::serialization(format!("read {}", path.display()), e))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(&line).map_err(|e| {
            MemoryError::serialization(format!("{} line {}", path.display(), number + 1), e)
        })?);
    }
    Ok(out)
}

/// How turns are written into memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    /// `[date] speaker: text` (and the image caption), as the reference numbers.
    DatedSpeaker,
    /// `speaker: text` (and the image caption).
    Speaker,
}

/// Evaluation settings.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// Retrieval settings for every question. The ranking measured is the recall a user
    /// with these settings gets (`max_results`, 20 by default), followed, for the cut-offs
    /// beyond it (R@50), by the further results of a recall asking for the largest k.
    pub config: RetrieverConfig,
    /// How turns are written.
    pub format: TextFormat,
    /// Print progress to stderr.
    pub progress: bool,
    /// Print each question whose evidence is not in the top 10, with what was found instead.
    pub show_misses: bool,
    /// Write turns through the dialogue API ([`Memory::dialogue`]: each turn dated, with its
    /// speaker, and its neighbours in the session as context); off, each turn is written
    /// alone with [`Memory::remember_with`] in [`EvalOptions::format`].
    pub turn_context: bool,
    /// Ask each question this many times (at least once): the latency figures cover every
    /// ask, which steadies them on a busy machine; the metrics come from the first.
    pub repeat: usize,
    /// Keep each question's ranking in the report ([`Report::ranked`]).
    pub keep_ranked: bool,
    /// The questions (by id) whose first results are kept with their score breakdown
    /// ([`Report::explained`]): why a miss ranked where it did.
    pub explain: Vec<String>,
    /// How `remember` reconciles each turn with the stored ones (default
    /// [`FactsConfig::default`]; [`FactsConfig::off`] stores every turn as it comes).
    pub facts: FactsConfig,
    /// Print each turn merged into another or flagged as contradicting one, with both texts.
    pub show_facts: bool,
    /// Enrich every turn with the rule-based enricher (entities and mention links in the
    /// graph, followed by the graph channel); the enrichment is flushed after each
    /// conversation's ingest and counted in its time.
    pub enrich: bool,
    /// Rerank with the default reranker (`TermReranker`) under these settings.
    pub rerank: Option<agent_memory::retrieve::RerankConfig>,
    /// Add the embedding channel with this provider (the `eval` binary's `--embeddings on`:
    /// an OpenAI-compatible `/embeddings` service): every turn is embedded as it is
    /// remembered, every question as it is asked, and recall scores with the weights an
    /// embedder switches the default scoring to.
    pub embedder: Option<Arc<dyn agent_memory::EmbeddingProvider>>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            config: RetrieverConfig::default(),
            format: TextFormat::DatedSpeaker,
            progress: false,
            show_misses: false,
            turn_context: true,
            repeat: 1,
            keep_ranked: false,
            explain: Vec::new(),
            facts: FactsConfig::default(),
            show_facts: false,
            enrich: false,
            rerank: None,
            embedder: None,
        }
    }
}

/// Recall@k and Hit@k in percent, keyed `recall@k` / `hit@k`, plus the question count.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Questions counted.
    pub questions: usize,
    /// `recall@1`, `recall@5`, ..., `hit@1`, ... in percent.
    #[serde(flatten)]
    pub values: BTreeMap<String, f64>,
}

/// The result of one evaluation.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    /// Over all questions.
    pub overall: Metrics,
    /// Per question category.
    pub per_category: BTreeMap<String, Metrics>,
    /// Query latency in microseconds: mean, median, p95.
    pub latency_us: BTreeMap<String, f64>,
    /// Total ingest time, milliseconds, and turns ingested.
    pub ingest: BTreeMap<String, f64>,
    /// Each question's ranking, when [`EvalOptions::keep_ranked`] is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranked: Vec<Ranked>,
    /// The questions of [`EvalOptions::explain`], each with its first results explained.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explained: Vec<Explained>,
    /// What `remember` did with the turns.
    #[serde(default)]
    pub writes: WriteCounts,
}

/// How many results of a question [`EvalOptions::explain`] keeps.
pub const EXPLAINED_RESULTS: usize = 30;

/// A question's first results ([`EXPLAINED_RESULTS`] at most) with their score breakdown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Explained {
    /// The question's id.
    pub qid: String,
    /// The question.
    pub question: String,
    /// Its evidence turns.
    pub evidence: Vec<String>,
    /// The results, best first.
    pub results: Vec<ExplainedResult>,
}

/// One result of an [`Explained`] question.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExplainedResult {
    /// The turn's id.
    pub id: String,
    /// Its final score.
    pub score: f32,
    /// Each signal that took part: its name, value and contribution to the score.
    pub signals: Vec<(String, f32, f32)>,
    /// The text recalled (the turn, as stored).
    pub text: String,
}

impl Explained {
    /// The question and its results as text, one result a line: rank, whether it is
    /// evidence (`*`), id, score, the signals that contributed, and the text's first 120
    /// characters.
    pub fn render(&self) -> String {
        let mut out = format!(
            "{} {:?} (evidence: {})\n",
            self.qid,
            self.question,
            self.evidence.join(", ")
        );
        for (rank, result) in self.results.iter().enumerate() {
            let mark = if self.evidence.contains(&result.id) {
                '*'
            } else {
                ' '
            };
            let signals: Vec<String> = result
                .signals
                .iter()
                .filter(|(_, _, contribution)| *contribution != 0.0)
                .map(|(name, value, contribution)| format!("{name}={value:.3}/{contribution:+.3}"))
                .collect();
            let text: String = result.text.chars().take(120).collect();
            out.push_str(&format!(
                "{:3} {mark} {} {:.4} [{}] {text:?}\n",
                rank + 1,
                result.id,
                result.score,
                signals.join(" ")
            ));
        }
        out
    }
}

/// What `remember` did with the turns of an evaluation: how many it stored, merged into a
/// stored turn (that turn's id then never ranks), or flagged as contradicting stored turns.
/// Nearly nothing contradicts in a conversation benchmark, so flags there are false flags.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WriteCounts {
    /// Turns remembered.
    pub writes: usize,
    /// Turns merged into a stored duplicate (nothing new stored).
    pub merged: usize,
    /// Turns whose write reported at least one conflict.
    pub flagged: usize,
    /// Conflicts reported, over all turns.
    pub conflicts: usize,
    /// Turns that superseded or were outdated by a stored one.
    pub superseded: usize,
    /// Evidence turns of the questions that were merged into another turn.
    pub evidence_merged: usize,
    /// Questions with at least one evidence turn merged into another turn.
    pub questions_with_merged_evidence: usize,
    /// Each merged turn and the turn it was merged into, `conversation/turn` ids.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merges: Vec<(String, String)>,
    /// Each flagged turn and a stored turn it was flagged against, `conversation/turn` ids.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<(String, String)>,
}

impl WriteCounts {
    /// Flagged writes in percent of writes.
    pub fn flag_rate(&self) -> f64 {
        100.0 * self.flagged as f64 / self.writes.max(1) as f64
    }

    /// Counts one write's outcome; `conv_id` prefixes the ids kept.
    fn add(&mut self, conv_id: &str, turn_id: &str, remembered: &Remembered) {
        self.writes += 1;
        match &remembered.outcome {
            Outcome::Merged { into } => {
                self.merged += 1;
                self.merges
                    .push((format!("{conv_id}/{turn_id}"), format!("{conv_id}/{into}")));
            }
            Outcome::Superseded { .. } | Outcome::Outdated { .. } => self.superseded += 1,
            Outcome::Added => {}
        }
        if !remembered.conflicts.is_empty() {
            self.flagged += 1;
            self.conflicts += remembered.conflicts.len();
            for conflict in &remembered.conflicts {
                self.flags.push((
                    format!("{conv_id}/{turn_id}"),
                    format!("{conv_id}/{}", conflict.id),
                ));
            }
        }
    }
}

/// One question's ranking, for rescoring elsewhere.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Ranked {
    /// Question id.
    pub qid: String,
    /// The turn ids returned, best first.
    pub turns: Vec<String>,
    /// The sessions of those turns, in order of first appearance.
    pub sessions: Vec<String>,
}

#[derive(Default)]
struct Sums {
    questions: usize,
    recall: [f64; KS.len()],
    hit: [f64; KS.len()],
    ndcg: f64,
    session_questions: usize,
    any: [f64; SESSION_KS.len()],
    all: [f64; SESSION_KS.len()],
}

impl Sums {
    fn add(&mut self, ranked: &[String], evidence: &[String]) {
        self.questions += 1;
        for (slot, k) in KS.iter().enumerate() {
            let top = &ranked[..ranked.len().min(*k)];
            let found = evidence.iter().filter(|e| top.contains(e)).count();
            self.recall[slot] += found as f64 / evidence.len().max(1) as f64;
            self.hit[slot] += f64::from(u8::from(found > 0));
        }
        self.ndcg += ndcg_at(ranked, evidence, 10);
    }

    fn add_sessions(&mut self, sessions: &[String], evidence: &[String]) {
        if evidence.is_empty() {
            return;
        }
        self.session_questions += 1;
        for (slot, k) in SESSION_KS.iter().enumerate() {
            let top = &sessions[..sessions.len().min(*k)];
            let found = evidence.iter().filter(|e| top.contains(e)).count();
            self.any[slot] += f64::from(u8::from(found > 0));
            self.all[slot] += f64::from(u8::from(found == evidence.len()));
        }
    }

    fn metrics(&self) -> Metrics {
        let mut values = BTreeMap::new();
        let n = self.questions.max(1) as f64;
        for (slot, k) in KS.iter().enumerate() {
            values.insert(format!("recall@{k}"), 100.0 * self.recall[slot] / n);
            values.insert(format!("hit@{k}"), 100.0 * self.hit[slot] / n);
        }
        values.insert("ndcg@10".into(), 100.0 * self.ndcg / n);
        if self.session_questions > 0 {
            let n = self.session_questions as f64;
            for (slot, k) in SESSION_KS.iter().enumerate() {
                values.insert(format!("recall_any@{k}"), 100.0 * self.any[slot] / n);
                values.insert(format!("recall_all@{k}"), 100.0 * self.all[slot] / n);
            }
        }
        Metrics {
            questions: self.questions,
            values,
        }
    }
}

/// NDCG@k with binary relevance: each evidence turn at rank `i` (from 1) gains
/// `1 / log2(i + 1)`, over the best possible gain.
fn ndcg_at(ranked: &[String], evidence: &[String], k: usize) -> f64 {
    let gain = |rank: usize| 1.0 / ((rank + 1) as f64).log2();
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, id)| evidence.contains(id))
        .map(|(at, _)| gain(at + 1))
        .sum();
    let ideal: f64 = (1..=evidence.len().min(k)).map(gain).sum();
    if ideal > 0.0 { dcg / ideal } else { 0.0 }
}

/// The sessions of a turn ranking in order of first appearance (the cut grows until each
/// new session is covered).
fn session_ranking(ranked: &[String], session_of: &HashMap<&str, &str>) -> Vec<String> {
    let mut sessions: Vec<String> = Vec::new();
    for turn in ranked {
        if let Some(session) = session_of.get(turn.as_str())
            && !sessions.iter().any(|seen| seen == session)
        {
            sessions.push((*session).to_owned());
        }
    }
    sessions
}

fn parse_time(turn: &Turn) -> Option<DateTime<Utc>> {
    let text = turn.timestamp.as_deref()?;
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S")
        .ok()
        .map(|t| t.and_utc())
}

fn turn_text(turn: &Turn, format: TextFormat) -> String {
    let mut text = match format {
        TextFormat::DatedSpeaker => format!("[{}] {}: {}", turn.date, turn.speaker, turn.text),
        TextFormat::Speaker => format!("{}: {}", turn.speaker, turn.text),
    };
    append_caption(&mut text, turn);
    text
}

/// Appends the caption of the image a turn shares, if any.
fn append_caption(text: &mut String, turn: &Turn) {
    if let Some(caption) = turn
        .blip_caption
        .as_deref()
        .filter(|c| !c.trim().is_empty())
    {
        text.push_str(" [shares an image: ");
        text.push_str(caption);
        text.push(']');
    }
}

/// Runs the evaluation over `turns` and `queries`, every conversation in `store` at once
/// (see [`Evaluation`] for one at a time).
///
/// # Errors
/// Store errors; [`MemoryError::InvalidInput`] for an invalid config.
pub async fn evaluate(
    turns: &[Turn],
    queries: &[Query],
    store: Arc<dyn MemoryStore>,
    options: &EvalOptions,
) -> Result<Report> {
    let mut by_conv: BTreeMap<&str, Vec<&Turn>> = BTreeMap::new();
    for turn in turns {
        by_conv.entry(turn.conv_id.as_str()).or_default().push(turn);
    }
    let mut questions: HashMap<&str, Vec<&Query>> = HashMap::new();
    for query in queries {
        questions
            .entry(query.conv_id.as_str())
            .or_default()
            .push(query);
    }
    let mut evaluation = Evaluation::new(store, options)?;
    evaluation.expect(by_conv.len(), queries.len());
    for (conv_id, conv_turns) in &by_conv {
        let asked = questions
            .get(conv_id)
            .map(Vec::as_slice)
            .unwrap_or_default();
        evaluation.conversation(conv_id, conv_turns, asked).await?;
    }
    Ok(evaluation.finish())
}

/// An evaluation under way: each conversation is remembered, then its questions are asked
/// ([`conversation`](Self::conversation)), and [`finish`](Self::finish) gives the report.
/// A conversation can be forgotten once its questions are answered
/// ([`forget`](Self::forget)): every namespace ranks by its own statistics, so the
/// rankings are the same, and the store then holds one conversation at a time, which is
/// how a LongMemEval file of any size is measured ([`each_longmemeval`]).
pub struct Evaluation {
    memory: Memory,
    clock: Arc<ManualClock>,
    /// The memory's own settings, as `recall` uses them: an embedder switches the default
    /// scoring to the weights with embedding similarity.
    config: RetrieverConfig,
    /// For the cut-offs beyond the results a recall returns: the same recall asked for more.
    deep: Option<RetrieverConfig>,
    options: EvalOptions,
    overall: Sums,
    per_category: BTreeMap<String, Sums>,
    ranked: Vec<Ranked>,
    explained: Vec<Explained>,
    latencies: Vec<f64>,
    ingest_ms: f64,
    turns: usize,
    writes: WriteCounts,
    conversations: usize,
    /// The conversations and questions to come, for the progress lines, when known.
    expected: Option<(usize, usize)>,
}

impl std::fmt::Debug for Evaluation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Evaluation")
            .field("conversations", &self.conversations)
            .field("questions", &self.overall.questions)
            .field("turns", &self.turns)
            .finish_non_exhaustive()
    }
}

impl Evaluation {
    /// An evaluation storing its memories in `store`, with `options`.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] for an invalid config.
    pub fn new(store: Arc<dyn MemoryStore>, options: &EvalOptions) -> Result<Self> {
        let mut config = options.config.clone();
        // Every result is ranked, however low its score.
        config.min_score = 0.0;
        config.validate()?;
        let clock = Arc::new(ManualClock::new(DateTime::<Utc>::UNIX_EPOCH));
        let mut builder = Memory::builder()
            .store(store)
            .clock(clock.clone())
            .retriever_config(config)
            .facts(options.facts.clone());
        if options.enrich {
            builder = builder.enricher(Arc::new(agent_memory::retrieve::RuleEnricher));
        }
        if let Some(rerank) = options.rerank {
            builder = builder.reranker_with(Arc::new(agent_memory::retrieve::TermReranker), rerank);
        }
        if let Some(embedder) = &options.embedder {
            builder = builder.embedder(embedder.clone());
        }
        let memory = builder.build()?;
        let config = memory.retriever().config().clone();
        let deep = (config.max_results < KS[KS.len() - 1]).then(|| RetrieverConfig {
            max_results: KS[KS.len() - 1],
            ..config.clone()
        });
        Ok(Self {
            memory,
            clock,
            config,
            deep,
            options: options.clone(),
            overall: Sums::default(),
            per_category: BTreeMap::new(),
            ranked: Vec::new(),
            explained: Vec::new(),
            latencies: Vec::new(),
            ingest_ms: 0.0,
            turns: 0,
            writes: WriteCounts::default(),
            conversations: 0,
            expected: None,
        })
    }

    /// Tells the progress lines how many conversations and questions are to come.
    pub fn expect(&mut self, conversations: usize, questions: usize) {
        self.expected = Some((conversations, questions));
    }

    /// The namespace conversation `conv_id` is remembered in.
    fn namespace(conv_id: &str) -> Result<Namespace> {
        Namespace::parse("locomo")?.child(&sanitize(conv_id))
    }

    /// Remembers conversation `conv_id` (its `turns`, in order), then asks each of
    /// `questions` against it and counts the rankings.
    ///
    /// # Errors
    /// Store errors.
    pub async fn conversation(
        &mut self,
        conv_id: &str,
        turns: &[&Turn],
        questions: &[&Query],
    ) -> Result<()> {
        let namespace = Self::namespace(conv_id)?;
        let options = &self.options;
        let memory = &self.memory;
        let started = Instant::now();
        let mut last = DateTime::<Utc>::UNIX_EPOCH;
        let mut merged_here: HashSet<&str> = HashSet::new();
        let mut dialogue = memory.dialogue(namespace.clone());
        for turn in turns {
            let at = parse_time(turn).unwrap_or(last);
            last = last.max(at);
            // A dialogue refuses a turn with nothing said (a chat log may hold one).
            if options.turn_context && turn.text.trim().is_empty() && turn.blip_caption.is_none() {
                continue;
            }
            let remembered = if options.turn_context {
                // As an application with a chat log would: the dialogue API, which dates each
                // turn, names its speaker and gives it its neighbours as context.
                let mut text = turn.text.clone();
                append_caption(&mut text, turn);
                let mut line = DialogueTurn::new(turn.speaker.clone(), text)
                    .id(turn.dia_id.clone())
                    .at(at)
                    .session(turn.session.to_string())
                    .metadata(serde_json::json!({"dia_id": turn.dia_id}))
                    .source("locomo");
                // LongMemEval's turns are spoken by `user` and `assistant`, LoCoMo's by people.
                if let Some(role) = Role::parse(&turn.speaker) {
                    line = line.role(role);
                }
                dialogue.add(line).await?
            } else {
                let request = Remember::new(namespace.clone(), turn_text(turn, options.format))
                    .id(turn.dia_id.clone())
                    .kind(MemoryKind::Episodic)
                    .created_at(at)
                    .metadata(serde_json::json!({"dia_id": turn.dia_id, "speaker": turn.speaker, "session": turn.session}))
                    .source("locomo");
                memory.remember_with(request).await?
            };
            if options.show_facts {
                show_reconciled(turn, &remembered, turns);
            }
            if remembered.id != turn.dia_id {
                merged_here.insert(turn.dia_id.as_str());
            }
            self.writes.add(conv_id, &turn.dia_id, &remembered);
        }
        memory.flush().await?;
        self.ingest_ms += started.elapsed().as_secs_f64() * 1000.0;
        self.turns += turns.len();
        let session_of: HashMap<&str, &str> = turns
            .iter()
            .filter_map(|turn| Some((turn.dia_id.as_str(), turn.session_id.as_deref()?)))
            .collect();
        for query in questions {
            let lost = query
                .evidence
                .iter()
                .filter(|e| merged_here.contains(e.as_str()))
                .count();
            self.writes.evidence_merged += lost;
            self.writes.questions_with_merged_evidence += usize::from(lost > 0);
            self.clock.set(query.asked_at.unwrap_or(last));
            // Each ask is timed to its answer, not to the drop of the answer; the metrics
            // come from the first.
            let scope = namespace.exact();
            let ask = async |config: &RetrieverConfig| {
                memory
                    .retriever()
                    .retrieve_with(&scope, &query.question, &RecallFilter::default(), config)
                    .await
            };
            let mut first = None;
            for _ in 0..options.repeat.max(1) {
                let started = Instant::now();
                let answer = ask(&self.config).await?;
                self.latencies.push(started.elapsed().as_secs_f64() * 1e6);
                first.get_or_insert(answer);
            }
            let Some(result) = first else { continue };
            if options.explain.contains(&query.qid) {
                self.explained.push(explain(query, &result.items));
            }
            let mut ranked: Vec<String> = memory_ids(&result.items).collect();
            if let Some(deep) = &self.deep {
                // Not timed: a user asks once, for the results they want.
                let further = ask(deep).await?;
                let shown: HashSet<String> = ranked.iter().cloned().collect();
                ranked.extend(memory_ids(&further.items).filter(|id| !shown.contains(id)));
            }
            if options.show_misses {
                show_miss(query, &ranked, turns);
            }
            let sessions = session_ranking(&ranked, &session_of);
            let category = self.per_category.entry(query.category.clone()).or_default();
            for sums in [&mut self.overall, category] {
                sums.add(&ranked, &query.evidence);
                sums.add_sessions(&sessions, &query.evidence_sessions);
            }
            if options.keep_ranked {
                self.ranked.push(Ranked {
                    qid: query.qid.clone(),
                    turns: ranked,
                    sessions,
                });
            }
        }
        self.conversations += 1;
        if options.progress {
            let so_far = self.overall.metrics();
            let (of_conversations, of_questions) = match self.expected {
                Some((conversations, questions)) => {
                    (format!("/{conversations}"), format!(" of {questions}"))
                }
                None => (String::new(), String::new()),
            };
            eprintln!(
                "[{}{of_conversations}] {conv_id}: {} turns, {} questions; running R@10 {:.1} ({}{of_questions} questions)",
                self.conversations,
                turns.len(),
                questions.len(),
                so_far.values.get("recall@10").copied().unwrap_or(0.0),
                self.overall.questions,
            );
        }
        Ok(())
    }

    /// Forgets conversation `conv_id`: its memories, and the entities and links its
    /// enrichment wrote. Its rankings stay counted.
    ///
    /// # Errors
    /// Store errors.
    pub async fn forget(&self, conv_id: &str) -> Result<()> {
        let scope = Self::namespace(conv_id)?.exact();
        self.memory.flush().await?;
        self.memory.store().clear(&scope).await?;
        if self.options.enrich {
            self.memory.graph().clear(&scope).await?;
        }
        Ok(())
    }

    /// The report over every conversation so far.
    pub fn finish(self) -> Report {
        let mut latencies = self.latencies;
        latencies.sort_by(f64::total_cmp);
        let pick = |q: f64| {
            latencies
                .get(((latencies.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(0.0)
        };
        let mean = if latencies.is_empty() {
            0.0
        } else {
            latencies.iter().sum::<f64>() / latencies.len() as f64
        };
        Report {
            overall: self.overall.metrics(),
            per_category: self
                .per_category
                .into_iter()
                .map(|(category, sums)| (category_name(&category), sums.metrics()))
                .collect(),
            latency_us: BTreeMap::from([
                ("mean".into(), mean),
                ("median".into(), pick(0.5)),
                ("p95".into(), pick(0.95)),
            ]),
            ingest: BTreeMap::from([
                ("total_ms".into(), self.ingest_ms),
                ("turns".into(), self.turns as f64),
            ]),
            ranked: self.ranked,
            explained: self.explained,
            writes: self.writes,
        }
    }
}

/// Prints `query` when none of its evidence is in the first ten of `ranked`, with what was
/// found instead.
fn show_miss(query: &Query, ranked: &[String], turns: &[&Turn]) {
    if query
        .evidence
        .iter()
        .any(|e| ranked.iter().take(10).any(|r| r == e))
    {
        return;
    }
    let text_of = |id: &str| {
        turns
            .iter()
            .find(|t| t.dia_id == id)
            .map(|t| t.text.as_str())
            .unwrap_or("?")
    };
    eprintln!("MISS {} [{}] {}", query.qid, query.category, query.question);
    for e in &query.evidence {
        eprintln!("   want {e}: {}", text_of(e));
    }
    for r in ranked.iter().take(2) {
        eprintln!("   got  {r}: {}", text_of(r));
    }
}

/// The ids of the memories among `items`, in rank order.
fn memory_ids(items: &[agent_memory::ScoredItem]) -> impl Iterator<Item = String> + '_ {
    items.iter().filter_map(|item| match &item.record {
        RetrievalSource::Memory(memory) => Some(memory.id.clone()),
        _ => None,
    })
}

/// `query`'s first results ([`EXPLAINED_RESULTS`] at most) with their score breakdown.
fn explain(query: &Query, items: &[agent_memory::ScoredItem]) -> Explained {
    let results = items
        .iter()
        .take(EXPLAINED_RESULTS)
        .map(|item| ExplainedResult {
            id: item.record.id().to_owned(),
            score: item.score,
            signals: item
                .breakdown
                .signals
                .iter()
                .map(|signal| {
                    (
                        format!("{:?}", signal.name).to_lowercase(),
                        signal.value,
                        signal.contribution,
                    )
                })
                .collect(),
            text: item.record.text(),
        })
        .collect();
    Explained {
        qid: query.qid.clone(),
        question: query.question.clone(),
        evidence: query.evidence.clone(),
        results,
    }
}

/// Prints a turn that was merged into another or flagged against others, with their texts.
fn show_reconciled(turn: &Turn, remembered: &Remembered, conv_turns: &[&Turn]) {
    let text_of = |id: &str| {
        conv_turns
            .iter()
            .find(|t| t.dia_id == id)
            .map_or("?", |t| t.text.as_str())
    };
    if let Outcome::Merged { into } = &remembered.outcome {
        eprintln!(
            "MERGED {}/{} into {into}\n   new: {}\n   old: {}",
            turn.conv_id,
            turn.dia_id,
            turn.text,
            text_of(into)
        );
    }
    for conflict in &remembered.conflicts {
        eprintln!(
            "FLAGGED {}/{} against {} ({})\n   new: {}\n   old: {}",
            turn.conv_id,
            turn.dia_id,
            conflict.id,
            conflict.reason,
            turn.text,
            text_of(&conflict.id)
        );
    }
}

fn sanitize(conv_id: &str) -> String {
    conv_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn category_name(category: &str) -> String {
    match category {
        "1" => "1-multi-hop".into(),
        "2" => "2-temporal".into(),
        "3" => "3-open-domain".into(),
        "4" => "4-single-hop".into(),
        other => other.to_owned(),
    }
}

/// The report as a table.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    out.push_str("| split | questions | R@1 | R@5 | R@10 | R@20 | R@50 | H@1 | H@5 | H@10 | H@20 | NDCG@10 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let mut rows: Vec<(&str, &Metrics)> = vec![("overall", &report.overall)];
    rows.extend(
        report
            .per_category
            .iter()
            .map(|(name, m)| (name.as_str(), m)),
    );
    for (name, metrics) in &rows {
        let v = |key: &str| metrics.values.get(key).copied().unwrap_or(0.0);
        out.push_str(&format!(
            "| {name} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            metrics.questions,
            v("recall@1"),
            v("recall@5"),
            v("recall@10"),
            v("recall@20"),
            v("recall@50"),
            v("hit@1"),
            v("hit@5"),
            v("hit@10"),
            v("hit@20"),
            v("ndcg@10"),
        ));
    }
    if report.overall.values.contains_key("recall_any@5") {
        out.push_str("\nsessions (from the turn ranking):\n\n| split | any@5 | any@10 | all@5 | all@10 |\n|---|---:|---:|---:|---:|\n");
        for (name, metrics) in &rows {
            let v = |key: &str| metrics.values.get(key).copied().unwrap_or(0.0);
            out.push_str(&format!(
                "| {name} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
                v("recall_any@5"),
                v("recall_any@10"),
                v("recall_all@5"),
                v("recall_all@10"),
            ));
        }
    }
    let l = |key: &str| report.latency_us.get(key).copied().unwrap_or(0.0);
    let w = &report.writes;
    out.push_str(&format!(
        "\nwrites: {}, merged: {}, flagged: {} ({:.1}%), conflicts: {}, superseded: {}; evidence turns merged away: {} (in {} questions)\n",
        w.writes,
        w.merged,
        w.flagged,
        w.flag_rate(),
        w.conflicts,
        w.superseded,
        w.evidence_merged,
        w.questions_with_merged_evidence,
    ));
    out.push_str(&format!(
        "query latency: mean {:.1} us, median {:.1} us, p95 {:.1} us; ingest {:.0} ms for {} turns\n",
        l("mean"), l("median"), l("p95"),
        report.ingest.get("total_ms").copied().unwrap_or(0.0),
        report.ingest.get("turns").copied().unwrap_or(0.0),
    ));
    out
}
