//! Retrieval settings: which channels, how candidates are scored and fused, how many come
//! back, and the metadata filters every channel applies.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use memory_core::{MAX_TRAVERSAL_DEPTH, MemoryError, MemoryFilter, MemoryKind, Result, Scope, Tag};
use serde::{Deserialize, Serialize};

use crate::scoring::ScoringStrategy;

/// Longest query accepted, in bytes.
pub const DEFAULT_MAX_QUERY_BYTES: usize = 16 * 1024;
/// Most results one call may ask for.
pub const MAX_RESULTS_LIMIT: usize = 1000;
/// Most memories on each side of a hit that receive conversation context.
pub const MAX_CONTEXT_WINDOW: usize = 8;
/// Most memory hits whose neighbours are fetched for conversation context.
pub const MAX_CONTEXT_SOURCES: usize = 10;
/// Most matched entities expanded by traversal per query.
pub const MAX_EXPANDED_ENTITIES: usize = 10;
/// Most entries in [`RetrieverConfig::role_weights`] and in
/// [`RetrieverConfig::role_weights_about_agent`].
pub const MAX_WEIGHTED_ROLES: usize = 16;
/// Weight of an assistant's turn in keyword relevance by default (see
/// [`RetrieverConfig::role_weights`]).
pub const DEFAULT_ASSISTANT_WEIGHT: f32 = 0.45;
/// Weight of a user's turn in keyword relevance by default when a query asks about what the
/// agent said (see [`RetrieverConfig::role_weights_about_agent`]).
pub const DEFAULT_USER_WEIGHT_ABOUT_AGENT: f32 = 0.45;
/// The factor on the keyword relevance of a memory spoken by someone a query does not name
/// while it names another speaker, by default (see
/// [`RetrieverConfig::other_speaker_factor`]).
pub const DEFAULT_OTHER_SPEAKER_FACTOR: f32 = 0.4;
/// The factor on the score of a memory made outside the time a query names, by default (see
/// [`RetrieverConfig::outside_time_factor`]).
pub const DEFAULT_OUTSIDE_TIME_FACTOR: f32 = 0.8;
/// The factor on the keyword relevance of a memory found through its context alone, by
/// default (see [`RetrieverConfig::context_only_factor`]).
pub const DEFAULT_CONTEXT_ONLY_FACTOR: f32 = 0.95;
/// How many times its candidates the keyword search may return so that the role weights
/// choose them, by default (see [`RetrieverConfig::role_search_depth`]).
pub const DEFAULT_ROLE_SEARCH_DEPTH: usize = 2;
/// Most [`RetrieverConfig::role_search_depth`].
pub const MAX_ROLE_SEARCH_DEPTH: usize = 8;

/// Which channels a retrieval uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalStrategy {
    /// Every channel, fused (default).
    #[default]
    Hybrid,
    /// Knowledge pages only.
    KnowledgeOnly,
    /// The knowledge graph only.
    GraphOnly,
    /// Memory items only.
    MemoryOnly,
}

impl RetrievalStrategy {
    pub(super) fn memory(self) -> bool {
        matches!(self, Self::Hybrid | Self::MemoryOnly)
    }
    pub(super) fn knowledge(self) -> bool {
        matches!(self, Self::Hybrid | Self::KnowledgeOnly)
    }
    pub(super) fn graph(self) -> bool {
        matches!(self, Self::Hybrid | Self::GraphOnly)
    }
}

/// How candidates from several channels are combined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fusion", rename_all = "snake_case")]
pub enum Fusion {
    /// Score every candidate with the scoring strategy's weighted signals (default).
    #[default]
    Weighted,
    /// Reciprocal rank fusion of the channels' own rankings, `Σ 1 / (k + rank)`, normalised.
    ReciprocalRank {
        /// The RRF constant, usually 60.
        k: f32,
    },
}

/// Settings of a retrieval.
///
/// Read from a serialized form (a Python dict, the command line's configuration file), a
/// field left out keeps its default and a field that is no setting is refused: a typo
/// would otherwise leave the setting it meant at its default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrieverConfig {
    /// Which channels.
    pub strategy: RetrievalStrategy,
    /// How each candidate is scored.
    pub scoring: ScoringStrategy,
    /// How channels are fused.
    pub fusion: Fusion,
    /// Most results returned (1 to [`MAX_RESULTS_LIMIT`]), default 20.
    pub max_results: usize,
    /// Results under this score are dropped, in `[0, 1]`, default 0.05.
    pub min_score: f32,
    /// Traversal depth from matched entities (at most [`MAX_TRAVERSAL_DEPTH`]), default 2.
    pub graph_depth: usize,
    /// Candidates each channel contributes before scoring, default 30; a recall asks for no
    /// more than [`candidates_for`](Self::candidates_for) the results it returns, and never
    /// for fewer than the results it returns.
    pub candidates_per_channel: usize,
    /// The least cosine between a memory's embedding and the query's that counts as
    /// similarity, in `[0, 1]`, default 0 (any positive cosine). With an embedder, a memory
    /// the similarity search finds at or below it is no candidate, and a candidate found
    /// by words at or below it gets no `embedding` signal. Raise it to keep memories that
    /// merely share a topic out of a recall (sentence models give unrelated texts cosines
    /// of 0.1 to 0.3).
    pub min_similarity: f32,
    /// Half-life of the recency signal, in hours, default one week.
    pub recency_half_life_hours: f64,
    /// Longest query accepted, in bytes.
    pub max_query_bytes: usize,
    /// Memories on each side of a memory hit (in time order) that receive its relevance as
    /// the `context` signal, when that signal has weight. Default 1.
    pub context_window: usize,
    /// Keyword relevance of a memory whose metadata `role` (see
    /// [`ROLE_METADATA_KEY`](crate::ROLE_METADATA_KEY)) is a key here is multiplied by its
    /// value, in `[0, 1]`; other memories count fully. Default `{"assistant": 0.45}`.
    ///
    /// An assistant's reply restates and elaborates what the user said, at length: it holds
    /// the words of a question about the user as often as the user's own statement does,
    /// and outranks it. Agents ask their memory mostly about what their users said or did,
    /// so a reply counts less, unless the query asks about the agent's own words
    /// ([`read_addressee`](Self::read_addressee)). Replies stay findable: one that alone
    /// holds the query's words still ranks first. The value was chosen by cross-validation
    /// on two conversational benchmarks (every change tried is in `benches/README.md`);
    /// memories without a role (a dialogue between people, plain `remember`) are
    /// unaffected.
    ///
    /// The default was chosen together with the reading of the addressee and the head
    /// reordering ([`head_rerank_depth`](Self::head_rerank_depth)). Without the reading, a
    /// question about what the agent said would find the user's request before the reply
    /// that answers it, and a heavier weight (0.65) served best.
    pub role_weights: BTreeMap<String, f32>,
    /// Read whether the query asks about what the agent itself said ("you mentioned", "did
    /// you say", "your suggestion", "can you remind me"; see
    /// [`asks_about_agent`](crate::asks_about_agent)); when it does, that recall weighs
    /// roles by [`role_weights_about_agent`](Self::role_weights_about_agent) instead of
    /// [`role_weights`](Self::role_weights). Default `true`.
    ///
    /// The role weights encode what an agent asks its memory most often: what its user said.
    /// A question that says it is about the agent's own words ("remind me of the hotel you
    /// recommended") is the exception the query itself names, and a reply weighed less would
    /// lose to the user's request it answers, which holds the same words. On LongMemEval's
    /// development file, lifting the weights for that recall took the questions about what
    /// the assistant said from 27.3 to 54.5 at R@1 and from 90.9 to 100 at R@10, and changed
    /// no other question; LoCoMo's speakers have no roles.
    pub read_addressee: bool,
    /// The role weights of a recall whose query asks about what the agent said
    /// ([`read_addressee`](Self::read_addressee)), in place of
    /// [`role_weights`](Self::role_weights), with the same bounds. Default `{"user":
    /// 0.45}`: the prior turned around.
    ///
    /// Such a question is answered by the agent's reply, and the user's request the reply
    /// answers holds the question's words as well, often closer together ("write a grant's
    /// aim page on ..." against the page itself), so it counts less, as a reply does for
    /// every other question. Weighing no role less (an empty map) took the questions about
    /// what the assistant said from 27.3 to 54.5 at R@1 on LongMemEval's development file;
    /// the user's turns at 0.45 take them to 63.6 (any weight from 0.2 to 0.65 ranks the
    /// same; 0.7 and above change nothing), and change no other question.
    pub role_weights_about_agent: BTreeMap<String, f32>,
    /// How many times its candidates ([`candidates_for`](Self::candidates_for)) the
    /// keyword search may return so that the role weights choose them, 1 to
    /// [`MAX_ROLE_SEARCH_DEPTH`]; 1 keeps the search's own best. Default 2
    /// ([`DEFAULT_ROLE_SEARCH_DEPTH`]).
    ///
    /// The search ranks memories by keyword relevance alone, and the role weights apply to
    /// what it returns: long replies weighing 0.45 can fill the candidates, and a user's
    /// turn the search ranks just below them, which would outrank them once weighed, is
    /// never a candidate. So when a role weighs one of the candidates below the least
    /// relevance the search returned (a memory it did not return might then weigh more),
    /// the search is asked again for `role_search_depth` times the candidates, each is
    /// weighed (role, speaker and [context](Self::context_only_factor)), and the best
    /// keep their place. Memories without a weighed role never cost the second search.
    /// Past 1,000 memories (`candidates` times the depth) the search does not go deeper.
    ///
    /// On LongMemEval's development file, whose assistant replies are long, 2 lifts R@20
    /// from 92.5 to 93.2, R@50 from 95.2 to 97.0 and recall_all@10 from 91.7 to 92.7, and
    /// leaves R@1 to R@10 as they were (three top tens change order); 4 gains one more
    /// piece of evidence at R@20. Nearly every LongMemEval question asks for the second
    /// search: in memory its median recall goes from about 22 to 33 µs (`--repeat 5`),
    /// 52 to 87 million instructions over its 96 recalls. LoCoMo's speakers have no roles:
    /// it ranks the same at the same cost, as the role weights it checks are those the
    /// weighing reads anyway. The speakers a query names
    /// ([`other_speaker_factor`](Self::other_speaker_factor)) weigh the candidates kept but
    /// never ask for the second search: they would on most of LoCoMo's questions, doubling
    /// their cost, for R@20 81.2 to 81.9 and R@50 85.7 to 87.6.
    pub role_search_depth: usize,
    /// When the query names some of the speakers of the memories it finds and not others
    /// ("what has Melanie painted?"; the `speaker` metadata the dialogue API writes, see
    /// [`SPEAKER_METADATA_KEY`](crate::SPEAKER_METADATA_KEY)), the keyword relevance of a
    /// memory spoken by someone it does not name is multiplied by this factor, in `(0, 1]`;
    /// 1 turns the reading off. Default 0.4 ([`DEFAULT_OTHER_SPEAKER_FACTOR`]).
    ///
    /// A question about a person is answered by what that person said: on LoCoMo's
    /// development split, 96% of the evidence of the questions that name one of the two
    /// speakers is that speaker's own turns, against half of the other turns the search
    /// ranked in the top 10 (the other speaker answers, asks and mentions the name). A
    /// question naming every speaker, or none, favours no one; chat roles (`user`,
    /// `assistant`) name no one (see [`read_addressee`](Self::read_addressee) and
    /// [`role_weights`](Self::role_weights) for those). It lowers, it does not filter: the
    /// other speaker's turn that alone holds the question's words still ranks.
    pub other_speaker_factor: f32,
    /// When the query names a time ("yesterday", "last week", "in June", "on 8 December
    /// 2023"; see [`time_window`](crate::time_window)), the memory channel also searches the
    /// memories made then, and the score of a memory made before that time is multiplied by
    /// this factor, in `(0, 1]` (marked [`Signal::Time`](memory_core::Signal::Time) in its
    /// breakdown). 1 turns the reading of times off. Default 0.8.
    ///
    /// A time in a question is a strong hint ("what did I cook a couple of days ago?"), but
    /// not a filter: the expression can be read wrongly, or be quoted from an older
    /// conversation ("what did she do last weekend?" about a weekend months ago), and a
    /// memory that alone holds the question's words must still be found.
    pub outside_time_factor: f32,
    /// The keyword relevance of a memory whose own words (its content) hold none of the
    /// query's terms is multiplied by this factor, in `(0, 1]`: such a memory was found
    /// through the context indexed beside it alone (the dialogue API indexes each turn with
    /// its neighbours' words, see [`CONTEXT_FIELD_WEIGHT`](memory_core::CONTEXT_FIELD_WEIGHT)).
    /// The words of a time the query names by its distance from now are not counted when
    /// [`time_words_as_phrase`](Self::time_words_as_phrase) reads them as a time: "last
    /// week" in a memory says nothing of what the question asks about. 1 turns it off;
    /// 0.95 is the default ([`DEFAULT_CONTEXT_ONLY_FACTOR`]).
    ///
    /// A turn that says the question's words itself is better evidence than one that sits
    /// beside them ("do the above companies trade old ones?" after a list of rare items):
    /// the context lets a short reply be found through the question it answers, and this
    /// keeps it behind the turns that tell the same thing in their own words. At 0.95, on
    /// LongMemEval's development file R@1 goes from 45.0 to 46.0 and R@10 from 88.7 to
    /// 89.7; LoCoMo's development split ranks the same at every cut-off (its short replies
    /// hold their own words). Lower factors cost LoCoMo (0.9: R@20 81.2 to 81.1; 0.8:
    /// R@10 75.9 to 75.7), and from 0.85 down LongMemEval its R@1.
    ///
    /// The search tells which hits were found through their context alone
    /// ([`SearchHit::in_own_words`](memory_core::SearchHit::in_own_words), asked with
    /// [`SearchQuery::own_words`](memory_core::SearchQuery::own_words) when below 1):
    /// SQLite and PostgreSQL know it from the fields they score; the in-memory store looks
    /// it up for the hits it returns (5 % more instructions per LoCoMo recall, 7 % per
    /// LongMemEval one). A hit whose search did not tell has its text analysed, so every
    /// backend ranks alike.
    pub context_only_factor: f32,
    /// When the query names a time by its distance from now ("last Saturday", "two weeks
    /// ago", "yesterday"; not a date) and memories in scope were made then, leave the
    /// expression's words out of the keyword search: the time is searched as a time
    /// ([`outside_time_factor`](Self::outside_time_factor) above 0 and below 1 reads it),
    /// and those words in a memory speak of another day ("last Saturday", said a month
    /// ago). When no memory was made then, the words are searched as written, and so are
    /// those of an expression anchored by a day ("last weekend before April 10"), which
    /// quotes what was said that day. Each such expression costs the recall one store
    /// listing (at most 4). Default `false`.
    ///
    /// Off by default because questions may quote a memory's own words long after
    /// ("what did John volunteer at last weekend?", about a weekend months ago): on
    /// LoCoMo's development file, whose questions quote the conversation, R@5 and R@10
    /// fall by 0.1 and 0.2. [`time_words_as_phrase`](Self::time_words_as_phrase) (on by
    /// default) keeps such a quote; this setting, when on, overrides it and leaves the
    /// words out everywhere.
    pub drop_time_words: bool,
    /// When the query names a time by its distance from now and memories in scope were
    /// made then (as for [`drop_time_words`](Self::drop_time_words)), its words count only
    /// for a memory whose own words hold the expression as written: "two weeks ago" in a
    /// memory matches a question about "two weeks ago", while "three weeks ago" or "a few
    /// weeks ago" does not match its "weeks" and "ago". A memory quoting the question's
    /// "last weekend" months later is still found by it. Costs such a recall a second
    /// keyword search, with the words, beside the one without them, and for each memory
    /// that search scores higher a look at where the expression's words stand in it: the
    /// in-memory store tells from its index
    /// ([`MemoryStore::term_positions`](memory_core::MemoryStore::term_positions)); the text of
    /// a memory in another store is read. Default `true`.
    ///
    /// On LongMemEval's development file it lifts R@1 from 44.0 to 45.0 and NDCG@10 from
    /// 76.3 to 77.1 (R@5 and R@10 unchanged; recall_any@5 falls from 99.0 to 97.9: one
    /// question's session had been found through "a few weeks ago" for "a couple of days
    /// ago"); LoCoMo's evidence ranks are unchanged.
    pub time_words_as_phrase: bool,
    /// Rank the newer of two facts that answer the same question first: of two
    /// [semantic](memory_core::MemoryKind::Semantic) memories found for a query that name the
    /// same people or things the query names and each hold another of its words, the older
    /// is marked stale (scored [`STALE_FACTOR`](crate::STALE_FACTOR) times, below the newer).
    /// Facts change and a question about one wants its current value, even when the two
    /// statements are worded too differently for a conflict to be detected when the newer
    /// was written. Episodic memories (dialogue turns, events) are never compared. Default
    /// `true`.
    pub newer_facts_first: bool,
    /// How many of the best results are put in order again by how fully and how closely
    /// their own text holds the query's words ([`TermReranker`](crate::TermReranker)'s
    /// measure), when no reranker is set; 0 turns it off, at most
    /// [`MAX_HEAD_RERANK_DEPTH`]. Default 4.
    ///
    /// A search scores a memory by its text and the turns around it (its context), so the
    /// turn that says something and the turn next to it score alike: the question is which
    /// of the two holds the words itself. Only memories with a context move (stale ones keep
    /// their places). The reordering only swaps results among the first
    /// `head_rerank_depth`: each keeps the score of the place it takes (the swap is the
    /// [`Signal::Rerank`](memory_core::Signal::Rerank) contribution in its breakdown), so the
    /// scores and the results below the head stay as they were. A recall of fewer results
    /// than the depth is ordered over the whole head before it is cut, so it returns the
    /// best of the head (a recall of one result may return the fused second). Depth and weight were chosen by cross-validation on two conversational
    /// benchmarks (every change tried is in `benches/README.md`): a deeper reordering moved
    /// results the search had right.
    pub head_rerank_depth: usize,
    /// The term measure's share of the order among the head, in `[0, 1]`: the head is
    /// ordered by `(1 - weight) * score + weight * term measure` (then weighed by
    /// [`head_question_factor`](Self::head_question_factor) and
    /// [`head_answer_bonus`](Self::head_answer_bonus)). Default 0.5. 0 turns the whole
    /// reordering off, its factor and bonuses with it, as a depth below 2 does.
    pub head_rerank_weight: f32,
    /// How much a result of the head whose every sentence asks a question counts in the
    /// head's order, in `(0, 1]`: its key is multiplied by `1 - (1 - factor) * share`, the
    /// share being that of its sentences that end with a question mark. 1 turns it off.
    /// Default 0.75 ([`DEFAULT_HEAD_QUESTION_FACTOR`]).
    ///
    /// A question tells less than a statement, and the turns around a statement often ask
    /// about it in its own words ("are there any women on her team?" after "half of them
    /// are women"). It orders the head only, like the term measure: scores, the results
    /// below the head and which results are returned stay as they were. Weighing a
    /// question's relevance itself down lifted LoCoMo and cost LongMemEval's R@5; in the
    /// head it lifted R@1 on both (chosen by cross-validation over both; every change tried
    /// is in `benches/README.md`).
    pub head_question_factor: f32,
    /// What a result of the head that states what the query asks for gains in the head's
    /// order, in `[0, 1]`, added to its key: a number, in digits or in words ("10",
    /// "three", "a couple", "twice", "weekly"), when the query asks for a quantity ("how
    /// many", "how much", "how often", "how long", "number of";
    /// [`asks_for_quantity`](crate::asks_for_quantity)), a time (a date, "yesterday", "last
    /// Saturday", read like the time a query names) when it asks for one ("when", "what
    /// year", "how long ago"; [`asks_for_time`](crate::asks_for_time)). A date stamp before
    /// a turn is not its own words. 0 turns it off. Default 0.1
    /// ([`DEFAULT_HEAD_ANSWER_BONUS`]); a configuration may still call it
    /// `head_quantity_bonus`, its name when it read quantities only.
    ///
    /// The answer to "how many women are on her team?" states a number ("a team of 10,
    /// half of them women"), the answer to "when did she go to the support group?" a time
    /// ("I went yesterday"), and the turns around each often repeat the question's words
    /// without it. Like the question factor, it orders the head only. Chosen by
    /// cross-validation on two conversational benchmarks: every bonus from 0.05 to 0.4 ranks
    /// the quantities the same; for times 0.1 and 0.2 rank best (every change tried is in
    /// `benches/README.md`).
    #[serde(alias = "head_quantity_bonus")]
    pub head_answer_bonus: f32,
    /// What a dialogue turn of the head gains in the head's order when the turn before it
    /// asked a question in the query's words (its last question, the one a reply answers),
    /// in `[0, 1]`, added to its key: it replies to
    /// what the query asks ("What's your favourite style of dance?" before "Contemporary is
    /// my top pick"). The dialogue API records where the turn before ends in the turn's
    /// context ([`CONTEXT_BEFORE_METADATA_KEY`](crate::CONTEXT_BEFORE_METADATA_KEY)); other
    /// memories gain nothing. 0 turns it off. Default 0.05 ([`DEFAULT_HEAD_REPLY_BONUS`]).
    ///
    /// People answer the questions they are asked, and the turn that asks holds the words a
    /// later question about it uses, while the reply holds the answer: the reply is found
    /// through its context and, reordered by its own words, lost to the turn that
    /// introduced the subject. Like the other readings of the head, it orders the head
    /// only. Chosen by cross-validation on two conversational benchmarks: every fold chose
    /// 0.05 over 0.03 and 0.07; 0.1 and above cost the other set (every change tried is in
    /// `benches/README.md`).
    pub head_reply_bonus: f32,
}

/// Deepest [`RetrieverConfig::head_rerank_depth`].
pub const MAX_HEAD_RERANK_DEPTH: usize = 100;

/// Default [`RetrieverConfig::head_rerank_depth`].
pub const DEFAULT_HEAD_RERANK_DEPTH: usize = 4;

/// Default [`RetrieverConfig::head_rerank_weight`].
pub const DEFAULT_HEAD_RERANK_WEIGHT: f32 = 0.5;

/// Default [`RetrieverConfig::head_question_factor`].
pub const DEFAULT_HEAD_QUESTION_FACTOR: f32 = 0.75;

/// Default [`RetrieverConfig::head_answer_bonus`].
pub const DEFAULT_HEAD_ANSWER_BONUS: f32 = 0.1;

/// Default [`RetrieverConfig::head_reply_bonus`].
pub const DEFAULT_HEAD_REPLY_BONUS: f32 = 0.05;

/// Candidates per result a channel contributes at most (see
/// [`RetrieverConfig::candidates_for`]).
pub const CANDIDATES_PER_RESULT: usize = 2;

/// Fewest candidates a channel contributes whatever the results asked for (see
/// [`RetrieverConfig::candidates_for`]).
pub const MIN_CANDIDATES: usize = 10;

impl RetrieverConfig {
    /// The candidates each channel contributes to a recall returning at most `results`:
    /// [`candidates_per_channel`](Self::candidates_per_channel), but no more than
    /// [`CANDIDATES_PER_RESULT`] per result (at least [`MIN_CANDIDATES`]), and never fewer
    /// than `results`, so that a recall asking for more results than
    /// `candidates_per_channel` returns as many as match (a recall of 50 results searches 50
    /// candidates, not 30). Fusion can lift a candidate that relevance alone ranks below the
    /// results asked for (recency, importance, a context), not one ranked far below them: on
    /// the development sets, 20 candidates gave LoCoMo the same top 10 as 30 (Recall@10
    /// 75.1) and LongMemEval nearly the same (86.8 against 87.3, one evidence turn), while 10
    /// lost both (72.6 and 79.7). A search for fewer candidates prunes more: in two
    /// alternating runs of the recall bench, a recall of 10 results over 100,000 memories
    /// took 46 to 48 µs with 20 candidates against 51 to 53 µs with 30, and 14 to 15 against
    /// 16 to 18 µs over 10,000. Forty candidates for the default 20 results would lift
    /// Recall@20 on both sets (LoCoMo 80.9 to 81.6, LongMemEval 91.1 to 91.6) for a sixth
    /// more instructions per recall (183,400 to 213,800), over the latency budget.
    pub fn candidates_for(&self, results: usize) -> usize {
        self.candidates_per_channel
            .min(
                results
                    .saturating_mul(CANDIDATES_PER_RESULT)
                    .max(MIN_CANDIDATES),
            )
            .max(results)
    }
}

impl Default for RetrieverConfig {
    fn default() -> Self {
        Self {
            strategy: RetrievalStrategy::Hybrid,
            scoring: ScoringStrategy::default(),
            fusion: Fusion::Weighted,
            max_results: 20,
            min_score: 0.05,
            graph_depth: 2,
            candidates_per_channel: 30,
            recency_half_life_hours: 24.0 * 7.0,
            max_query_bytes: DEFAULT_MAX_QUERY_BYTES,
            min_similarity: 0.0,
            context_window: 1,
            role_weights: BTreeMap::from([("assistant".to_owned(), DEFAULT_ASSISTANT_WEIGHT)]),
            read_addressee: true,
            role_weights_about_agent: BTreeMap::from([(
                "user".to_owned(),
                DEFAULT_USER_WEIGHT_ABOUT_AGENT,
            )]),
            role_search_depth: DEFAULT_ROLE_SEARCH_DEPTH,
            other_speaker_factor: DEFAULT_OTHER_SPEAKER_FACTOR,
            outside_time_factor: DEFAULT_OUTSIDE_TIME_FACTOR,
            context_only_factor: DEFAULT_CONTEXT_ONLY_FACTOR,
            drop_time_words: false,
            time_words_as_phrase: true,
            newer_facts_first: true,
            head_rerank_depth: DEFAULT_HEAD_RERANK_DEPTH,
            head_rerank_weight: DEFAULT_HEAD_RERANK_WEIGHT,
            head_question_factor: DEFAULT_HEAD_QUESTION_FACTOR,
            head_answer_bonus: DEFAULT_HEAD_ANSWER_BONUS,
            head_reply_bonus: DEFAULT_HEAD_REPLY_BONUS,
        }
    }
}

impl RetrieverConfig {
    /// Checks every setting.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the bad field.
    pub fn validate(&self) -> Result<()> {
        self.scoring.validate()?;
        if self.max_results == 0 || self.max_results > MAX_RESULTS_LIMIT {
            return Err(MemoryError::invalid(
                "max_results",
                format!("must be 1 to {MAX_RESULTS_LIMIT}"),
            ));
        }
        memory_core::backend::validate_unit("min_score", self.min_score)?;
        memory_core::backend::validate_unit("min_similarity", self.min_similarity)?;
        if self.graph_depth > MAX_TRAVERSAL_DEPTH {
            return Err(MemoryError::invalid(
                "graph_depth",
                format!("must be at most {MAX_TRAVERSAL_DEPTH}"),
            ));
        }
        if self.candidates_per_channel == 0 || self.candidates_per_channel > 10_000 {
            return Err(MemoryError::invalid(
                "candidates_per_channel",
                "must be 1 to 10000",
            ));
        }
        if !(self.recency_half_life_hours.is_finite() && self.recency_half_life_hours > 0.0) {
            return Err(MemoryError::invalid(
                "recency_half_life_hours",
                "must be a finite number > 0",
            ));
        }
        if let Fusion::ReciprocalRank { k } = self.fusion
            && !(k.is_finite() && k >= 0.0)
        {
            return Err(MemoryError::invalid(
                "fusion.k",
                "must be a finite number >= 0",
            ));
        }
        if self.context_window > MAX_CONTEXT_WINDOW {
            return Err(MemoryError::invalid(
                "context_window",
                format!("must be at most {MAX_CONTEXT_WINDOW}"),
            ));
        }
        role_weights("role_weights", &self.role_weights)?;
        role_weights("role_weights_about_agent", &self.role_weights_about_agent)?;
        if !(1..=MAX_ROLE_SEARCH_DEPTH).contains(&self.role_search_depth) {
            return Err(MemoryError::invalid(
                "role_search_depth",
                format!("must be 1 to {MAX_ROLE_SEARCH_DEPTH}"),
            ));
        }
        lowering_factor("outside_time_factor", self.outside_time_factor)?;
        lowering_factor("other_speaker_factor", self.other_speaker_factor)?;
        lowering_factor("context_only_factor", self.context_only_factor)?;
        if self.head_rerank_depth > MAX_HEAD_RERANK_DEPTH {
            return Err(MemoryError::invalid(
                "head_rerank_depth",
                format!("must be at most {MAX_HEAD_RERANK_DEPTH}"),
            ));
        }
        memory_core::backend::validate_unit("head_rerank_weight", self.head_rerank_weight)?;
        lowering_factor("head_question_factor", self.head_question_factor)?;
        memory_core::backend::validate_unit("head_answer_bonus", self.head_answer_bonus)?;
        memory_core::backend::validate_unit("head_reply_bonus", self.head_reply_bonus)?;
        if self.max_query_bytes == 0 {
            return Err(MemoryError::invalid(
                "max_query_bytes",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

/// Checks a factor that lowers a score: in `(0, 1]` (1 lowers nothing; 0 would drop what it
/// should only lower).
/// Checks a map of role weights: at most [`MAX_WEIGHTED_ROLES`] roles of 1 to 64 bytes, each
/// weight in `[0, 1]`; an error names `field`.
fn role_weights(field: &str, weights: &BTreeMap<String, f32>) -> Result<()> {
    if weights.len() > MAX_WEIGHTED_ROLES {
        return Err(MemoryError::invalid(
            field,
            format!("at most {MAX_WEIGHTED_ROLES} roles"),
        ));
    }
    for (role, weight) in weights {
        if role.is_empty() || role.len() > 64 {
            return Err(MemoryError::invalid(field, "a role must be 1 to 64 bytes"));
        }
        if !(weight.is_finite() && (0.0..=1.0).contains(weight)) {
            return Err(MemoryError::invalid(
                field,
                format!("the weight of {role:?} must be in [0, 1]"),
            ));
        }
    }
    Ok(())
}

fn lowering_factor(field: &str, factor: f32) -> Result<()> {
    if factor.is_finite() && factor > 0.0 && factor <= 1.0 {
        Ok(())
    } else {
        Err(MemoryError::invalid(field, "must be in (0, 1]"))
    }
}

/// Metadata conditions applied in every channel.
///
/// Knowledge pages and graph entities count as [`MemoryKind::Semantic`]; pages are matched
/// on their `updated_at` by a time range; entities carry no time and no metadata, so a time
/// range or a metadata condition leaves them out of the results. The graph is still walked
/// for the memories it links to, which every condition filters as it does any memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecallFilter {
    /// Only these memory kinds. Empty: long-term, episodic and semantic (the conversation's
    /// short-term messages are left out unless asked for).
    pub kinds: Vec<MemoryKind>,
    /// Only records created (pages: updated) at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only records created (pages: updated) before this time.
    pub until: Option<DateTime<Utc>>,
    /// Only records carrying all of these tags.
    pub tags: Vec<Tag>,
    /// Only memories whose metadata holds each of these keys with exactly this value
    /// (`{"user": "ann", "channel": "email"}`; a value compares as JSON, so `1` is not
    /// `"1"`). Knowledge pages and graph entities carry no metadata, so a condition here
    /// leaves them out of the results; the graph is still walked for the memories it links
    /// to, which the condition filters as it does every memory. At most
    /// [`MAX_METADATA_CONDITIONS`] keys of 1 to [`MAX_METADATA_KEY_BYTES`] bytes.
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// Which memories by time: the current ones (default), those held true at a time, or
    /// all, superseded and retracted ones included and marked [`Signal::Stale`](memory_core::Signal::Stale).
    pub view: RecallView,
}

/// The time view of a recall (see [`TimeView`](memory_core::TimeView), which it becomes at
/// the recall's clock time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "view", content = "at", rename_all = "snake_case")]
pub enum RecallView {
    /// What is believed now: superseded, retracted and expired memories are left out.
    #[default]
    Current,
    /// What was held true at this time: the memories that held then (by their validity,
    /// else their creation), and the graph's relations valid then. Pages and entities are
    /// records without a time of their own in the world (one written today may tell of
    /// 2015), so they are found as they read now.
    AsOf(DateTime<Utc>),
    /// Every memory; those no longer current rank below the current ones, marked.
    All,
}

impl RecallView {
    /// The store view at `now`.
    pub fn at(self, now: DateTime<Utc>) -> memory_core::TimeView {
        match self {
            RecallView::Current => memory_core::TimeView::Current(now),
            RecallView::AsOf(at) => memory_core::TimeView::AsOf(at),
            RecallView::All => memory_core::TimeView::All,
        }
    }
}

/// The most metadata conditions one recall's filter holds ([`RecallFilter::metadata`]).
pub const MAX_METADATA_CONDITIONS: usize = 32;

/// The longest metadata key a recall's filter names, in bytes ([`RecallFilter::metadata`]).
pub const MAX_METADATA_KEY_BYTES: usize = 256;

impl RecallFilter {
    /// Only memories whose metadata holds `key` with exactly `value`, beside the conditions
    /// already set (see [`metadata`](Self::metadata)).
    pub fn with_metadata(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Checks the filter: its [metadata](Self::metadata) conditions are at most
    /// [`MAX_METADATA_CONDITIONS`], each key 1 to [`MAX_METADATA_KEY_BYTES`] bytes.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `metadata`.
    pub fn validate(&self) -> Result<()> {
        if self.metadata.len() > MAX_METADATA_CONDITIONS {
            return Err(MemoryError::invalid(
                "metadata",
                format!("at most {MAX_METADATA_CONDITIONS} conditions"),
            ));
        }
        if let Some(key) = self
            .metadata
            .keys()
            .find(|key| key.is_empty() || key.len() > MAX_METADATA_KEY_BYTES)
        {
            return Err(MemoryError::invalid(
                "metadata",
                format!("the key {key:?} is not 1 to {MAX_METADATA_KEY_BYTES} bytes"),
            ));
        }
        Ok(())
    }

    /// The memory-store filter of a recall in `scope` at `now`: the kinds (by default those
    /// recalled), the creation-time range, the tags, the metadata and the time view. Every
    /// channel that reads memories reads them through it.
    pub(super) fn memory_filter(&self, scope: &Scope, now: DateTime<Utc>) -> MemoryFilter {
        let mut filter = MemoryFilter::new(scope.clone())
            .with_time_range(self.since, self.until)
            .with_kinds(self.kinds())
            .with_view(self.view.at(now));
        filter.tags = self.tags.clone();
        filter.metadata = self
            .metadata
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        filter
    }

    /// Whether pages and entities may answer: they are semantic records and carry no
    /// metadata, so a kind filter without semantic records or a metadata condition leaves
    /// them out.
    pub(super) fn admits_pages_and_entities(&self) -> bool {
        self.metadata.is_empty() && self.allows_semantic()
    }

    pub(super) fn kinds(&self) -> Vec<MemoryKind> {
        if self.kinds.is_empty() {
            vec![
                MemoryKind::LongTerm,
                MemoryKind::Episodic,
                MemoryKind::Semantic,
            ]
        } else {
            self.kinds.clone()
        }
    }

    pub(super) fn allows_semantic(&self) -> bool {
        self.kinds.is_empty() || self.kinds.contains(&MemoryKind::Semantic)
    }

    pub(super) fn in_range(&self, at: DateTime<Utc>) -> bool {
        self.since.is_none_or(|since| at >= since) && self.until.is_none_or(|until| at < until)
    }
}
