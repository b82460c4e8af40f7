//! A generated changing-facts benchmark: people whose city, employer, phone number,
//! favourite food, pet and car change over time, stated in varied words among distractors,
//! with the current value (and the value held at any time) known by construction.
//!
//! [`generate`] makes, from a seed, [`FactsSpec::subjects`] people with distinct names (a
//! first name from a list, shared once the list runs out, and a generated family name of
//! their own). Each has every [attribute](ATTRIBUTES), which takes a first value and then
//! changes [`FactsSpec::min_changes`] to [`FactsSpec::max_changes`] times, each value new
//! for that person, at increasing times over three years; each statement is worded by one
//! of the attribute's paraphrase templates ("Ava Tezoranic lives in Berlin.", "Ava
//! Tezoranic moved to the city of Lisbon.", ...). Each person also gets distractors: stable
//! facts that never change ("... was born in 1983."), small talk, and
//! [near misses](FactsSpec::near_misses) that share an attribute's words without stating it
//! ("Ava Tezoranic's sister lives in Oslo."). All of it goes into one namespace in time
//! order, each write at its statement's time.
//!
//! Each (person, attribute) is asked once now ("Where does Ava Tezoranic live, in which
//! city?"), expecting its last value, and once as of a time between two of its changes,
//! expecting the value held then. [`run`] answers them under a [`FactsMode`]:
//!
//! - **top-1 current**: the best memory of the recall states the current value;
//! - **stale above current**: a memory stating an older value of the attribute ranks above
//!   the current statement in the top [`FactsSpec::k`] (or is there when the current one
//!   is not);
//! - **history exact** (fact keys only): [`Memory::history`] of the current statement lists
//!   every statement of the attribute, in order;
//! - **as-of top-1**: the best memory of a recall as of the question's time states the
//!   value held then.
//!
//! The write side is scored too: merged writes, flagged writes, and how many flags link two
//! values of one attribute (true) or anything else (false).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use agent_memory::inmem::InMemoryStore;
use agent_memory::retrieve::{
    FactsConfig, Memory, Outcome, RecallFilter, RecallView, Remember, RetrieverConfig,
};
use agent_memory::{ManualClock, MemoryKind, Namespace, Result, RetrievalSource};
use chrono::{DateTime, Duration, Utc};

use crate::corpus::Rng;

/// What to generate, and how deep each recall looks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactsSpec {
    /// People (at most [`MAX_SUBJECTS`]).
    pub subjects: usize,
    /// Fewest changes of each attribute after its first value (at least 1).
    pub min_changes: usize,
    /// Most changes of each attribute after its first value (1 to 6).
    pub max_changes: usize,
    /// Stable facts and small talk per person (at most 12, each different).
    pub distractors: usize,
    /// Near misses per person: statements sharing an attribute's words about something
    /// else (a sister's city, a rented car).
    pub near_misses: usize,
    /// Results per recall, the list in which stale statements are looked for.
    pub k: usize,
    /// The seed of everything generated.
    pub seed: u64,
}

impl Default for FactsSpec {
    /// 200 people, 2 to 5 changes per attribute, 4 distractors and 2 near misses each
    /// (about 6,000 memories in one namespace), top 10.
    fn default() -> Self {
        Self {
            subjects: 200,
            min_changes: 2,
            max_changes: 5,
            distractors: 4,
            near_misses: 2,
            k: 10,
            seed: 42,
        }
    }
}

/// The most people [`generate`] makes.
pub const MAX_SUBJECTS: usize = 10_000;

/// A family name of two or three syllables and an ending, capitalised ("Rantezic").
fn family_name(rng: &mut Rng) -> String {
    let syllables = 2 + rng.below(2);
    let mut name: String = (0..syllables).map(|_| pick(rng, &SYLLABLES)).collect();
    name.push_str(pick(rng, &ENDINGS));
    let mut chars = name.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// An attribute of a person that changes.
#[derive(Debug)]
pub struct Attribute {
    /// Its name, the second part of the fact key (`ava_novak.city`).
    pub name: &'static str,
    /// The question, `{s}` the person.
    pub question: &'static str,
    /// Ways of stating it, `{s}` the person and `{v}` the value; each shares a word with
    /// the question.
    pub templates: &'static [&'static str],
    /// Its values (phone numbers are generated instead).
    pub values: &'static [&'static str],
}

/// The attributes every person has.
pub const ATTRIBUTES: [Attribute; 6] = [
    Attribute {
        name: "city",
        question: "Where does {s} live, in which city?",
        templates: &[
            "{s} lives in {v}.",
            "{s} moved to the city of {v}.",
            "{s}'s home city is now {v}.",
            "These days {s} is living in {v}.",
            "{s} just relocated to {v}, a new city.",
        ],
        values: &[
            "Berlin",
            "Lisbon",
            "Toronto",
            "Osaka",
            "Nairobi",
            "Madrid",
            "Oslo",
            "Denver",
            "Krakow",
            "Melbourne",
            "Dublin",
            "Seoul",
            "Austin",
            "Porto",
            "Vienna",
            "Helsinki",
            "Bogota",
            "Chicago",
            "Prague",
            "Auckland",
        ],
    },
    Attribute {
        name: "employer",
        question: "Where does {s} work, for which company?",
        templates: &[
            "{s} works at {v}.",
            "{s} started working for {v}.",
            "{s} took a job at the company {v}.",
            "{s} is now at {v}, a new company.",
            "{s}'s new work is at {v}.",
        ],
        values: &[
            "Northwind",
            "Globex",
            "Initech",
            "Contoso",
            "Vandelay",
            "Hooli",
            "Soylent",
            "Tyrell",
            "Cyberdyne",
            "Aperture",
            "Wonka",
            "Oscorp",
            "Monarch",
            "Prestige",
            "Zenith",
            "Bluth",
            "Stratton",
            "Nakatomi",
            "Gekko",
            "Dunder",
        ],
    },
    Attribute {
        name: "phone",
        question: "What is {s}'s phone number?",
        templates: &[
            "{s}'s phone number is {v}.",
            "{s} got a new phone number: {v}.",
            "You can reach {s} by phone at {v}.",
            "{s} changed numbers; the new one is {v}.",
        ],
        values: &[],
    },
    Attribute {
        name: "food",
        question: "What is {s}'s favourite food?",
        templates: &[
            "{s}'s favourite food is {v}.",
            "These days {s} says the best food is {v}.",
            "{s} has a new favourite: {v}.",
            "{s} loves {v} more than any other food.",
        ],
        values: &[
            "sushi",
            "lasagna",
            "ramen",
            "paella",
            "tacos",
            "dumplings",
            "risotto",
            "falafel",
            "pho",
            "curry",
            "pierogi",
            "moussaka",
            "gnocchi",
            "burritos",
            "shakshuka",
            "biryani",
            "goulash",
            "ceviche",
            "pancakes",
            "kimchi",
        ],
    },
    Attribute {
        name: "pet",
        question: "What is {s}'s pet called?",
        templates: &[
            "{s}'s pet is named {v}.",
            "{s} adopted a pet called {v}.",
            "{s} has a new pet, {v}.",
            "The pet {s} looks after now is called {v}.",
        ],
        values: &[
            "Biscuit", "Luna", "Pepper", "Ziggy", "Mochi", "Rex", "Clover", "Nutmeg", "Olive",
            "Pickles", "Waffles", "Shadow", "Juniper", "Tofu", "Marble", "Pixel", "Sprout",
            "Gizmo", "Hazel", "Cosmo",
        ],
    },
    Attribute {
        name: "car",
        question: "What car does {s} drive?",
        templates: &[
            "{s} drives a {v}.",
            "{s} bought a new car, a {v}.",
            "{s}'s car is a {v} now.",
            "{s} is driving a {v} these days.",
        ],
        values: &[
            "Toyota Corolla",
            "Honda Civic",
            "Ford Focus",
            "Tesla Model 3",
            "Volvo XC60",
            "Mazda CX-5",
            "Subaru Outback",
            "Kia Niro",
            "Skoda Octavia",
            "Fiat Panda",
            "Renault Clio",
            "Hyundai Ioniq",
            "Nissan Leaf",
            "Audi A4",
            "Jeep Wrangler",
            "Mini Cooper",
            "Peugeot 208",
            "Volkswagen Golf",
            "Citroen C3",
            "Lexus RX",
        ],
    },
];

const FIRST_NAMES: [&str; 40] = [
    "Ava", "Ben", "Chloe", "Dmitri", "Elena", "Farah", "Gustavo", "Hana", "Ivan", "Julia", "Kenji",
    "Lena", "Marco", "Nadia", "Oscar", "Priya", "Quentin", "Rosa", "Samir", "Tara", "Umar", "Vera",
    "Wei", "Ximena", "Yusuf", "Zoe", "Amara", "Bruno", "Clara", "Diego", "Esther", "Felix",
    "Greta", "Hugo", "Ines", "Jonas", "Kira", "Luca", "Mila", "Noor",
];

/// Syllables of the generated family names: every person's is their own.
const SYLLABLES: [&str; 20] = [
    "ka", "lo", "mi", "ran", "te", "su", "vo", "ne", "pa", "ri", "do", "ber", "gal", "tor", "en",
    "ma", "zo", "li", "dar", "vik",
];

/// Endings of the generated family names.
const ENDINGS: [&str; 8] = ["son", "ez", "ski", "ova", "ic", "ard", "ini", "berg"];

/// Facts about a person that never change, `{s}` the person and `{x}` a value drawn from
/// the list beside it.
const STABLE: [(&str, &[&str]); 6] = [
    (
        "{s} was born in {x}.",
        &[
            "1961", "1968", "1974", "1979", "1983", "1987", "1990", "1995",
        ],
    ),
    (
        "{s} has a sister named {x}.",
        &[
            "Ada", "Bea", "Cora", "Dora", "Edie", "Flora", "Gwen", "Iris",
        ],
    ),
    (
        "{s} enjoys {x} on weekends.",
        &[
            "hiking", "chess", "pottery", "cycling", "baking", "climbing",
        ],
    ),
    (
        "{s} speaks {x} fluently.",
        &["Portuguese", "Japanese", "Swahili", "Polish", "Turkish"],
    ),
    (
        "{s} is allergic to {x}.",
        &["peanuts", "pollen", "cats", "shellfish", "penicillin"],
    ),
    (
        "{s} studied {x} at university.",
        &["physics", "history", "law", "architecture", "medicine"],
    ),
];

/// Small talk about a person.
const CHAT: [&str; 6] = [
    "{s} said the weather was lovely this morning.",
    "{s} mentioned being tired after a long week.",
    "{s} laughed about the traffic on the way in.",
    "{s} asked how the project was going.",
    "{s} recommended a podcast about history.",
    "{s} sent a photo from the weekend.",
];

/// Statements that share an attribute's words without stating it: (template, the
/// attribute whose values fill `{x}`).
const NEAR_MISSES: [(&str, usize); 6] = [
    ("{s}'s sister lives in {x}.", 0),
    ("{s} visited the city of {x} on a business trip.", 0),
    ("{s} had a meeting with the company {x} about an order.", 1),
    ("{s} wrote down a courier's phone number, {x}.", 2),
    ("{s}'s neighbour has a pet named {x}.", 4),
    ("{s} rented a car, a {x}, for the holiday.", 5),
];

/// One generated memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// Its id.
    pub id: String,
    /// Its text.
    pub text: String,
    /// When it was said (its creation time).
    pub at: DateTime<Utc>,
    /// The fact (index into [`FactSet::facts`]) and the version it states; `None` for a
    /// distractor.
    pub states: Option<(usize, usize)>,
}

/// One attribute of one person, with every value it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// The person.
    pub subject: String,
    /// Index into [`ATTRIBUTES`].
    pub attribute: usize,
    /// Its fact key, `person.attribute`.
    pub key: String,
    /// The question asking for it.
    pub question: String,
    /// Each value in turn, with the index of its statement in [`FactSet::statements`].
    pub versions: Vec<(String, usize)>,
}

/// A question about a fact as of a time between two of its changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsOfQuestion {
    /// Index into [`FactSet::facts`].
    pub fact: usize,
    /// When the question is about.
    pub at: DateTime<Utc>,
    /// The version held then.
    pub version: usize,
}

/// A generated benchmark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactSet {
    /// Every memory, in time order (the order they are written).
    pub statements: Vec<Statement>,
    /// Every (person, attribute).
    pub facts: Vec<Fact>,
    /// One as-of question per fact.
    pub as_of: Vec<AsOfQuestion>,
    /// When the questions about now are asked: after the last statement.
    pub now: DateTime<Utc>,
}

fn pick<'a>(rng: &mut Rng, list: &[&'a str]) -> &'a str {
    list[rng.below(list.len())]
}

/// Generates the benchmark of `spec`: the same spec gives the same set.
pub fn generate(spec: &FactsSpec) -> FactSet {
    let mut rng = Rng::new(spec.seed);
    let start = DateTime::<Utc>::from_timestamp(1_609_459_200, 0).unwrap_or_default(); // 2021-01-01
    let span_minutes = 3 * 365 * 24 * 60;
    // Family names are each person's own; first names are dealt from the shuffled list,
    // shared only once it runs out.
    let mut names: Vec<String> = Vec::new();
    let mut taken = HashSet::new();
    let mut first_names: Vec<&str> = Vec::new();
    while names.len() < spec.subjects.min(MAX_SUBJECTS) {
        let family = family_name(&mut rng);
        if !taken.insert(family.clone()) {
            continue;
        }
        if first_names.is_empty() {
            first_names = FIRST_NAMES.to_vec();
        }
        let first = first_names.swap_remove(rng.below(first_names.len()));
        names.push(format!("{first} {family}"));
    }
    let most = spec.max_changes.clamp(1, 6);
    let changes = spec.min_changes.clamp(1, most)..=most;
    let mut statements: Vec<Statement> = Vec::new();
    let mut facts: Vec<Fact> = Vec::new();
    let mut as_of = Vec::new();
    for (person, name) in names.iter().enumerate() {
        let slug = name.to_lowercase().replace(' ', "_");
        for (attribute_index, attribute) in ATTRIBUTES.iter().enumerate() {
            let fact = facts.len();
            let count = 1 + changes.start() + rng.below(changes.end() - changes.start() + 1);
            // Increasing times at least a day apart (a change can run past the three years).
            let mut minutes: Vec<i64> =
                (0..count).map(|_| rng.below(span_minutes) as i64).collect();
            minutes.sort_unstable();
            for at in 1..minutes.len() {
                minutes[at] = minutes[at].max(minutes[at - 1] + 24 * 60);
            }
            let mut used: HashSet<String> = HashSet::new();
            let mut versions = Vec::new();
            for (version, minute) in minutes.iter().enumerate() {
                let value = loop {
                    let value = if attribute.values.is_empty() {
                        format!("555-{:04}", rng.below(10_000))
                    } else {
                        pick(&mut rng, attribute.values).to_owned()
                    };
                    if used.insert(value.clone()) {
                        break value;
                    }
                };
                let text = pick(&mut rng, attribute.templates)
                    .replace("{s}", name)
                    .replace("{v}", &value);
                versions.push((value, statements.len()));
                statements.push(Statement {
                    id: format!("p{person}-{}-v{version}", attribute.name),
                    text,
                    at: start + Duration::minutes(*minute),
                    states: Some((fact, version)),
                });
            }
            let version = rng.below(count - 1);
            let (from, until) = (minutes[version], minutes[version + 1]);
            as_of.push(AsOfQuestion {
                fact,
                at: start
                    + Duration::minutes(from + 1 + rng.below((until - from - 1) as usize) as i64),
                version,
            });
            facts.push(Fact {
                subject: name.clone(),
                attribute: attribute_index,
                key: format!("{slug}.{}", attribute.name),
                question: attribute.question.replace("{s}", name),
                versions,
            });
        }
        let distractor = |text: String, rng: &mut Rng, statements: &mut Vec<Statement>| {
            let n = statements.len();
            statements.push(Statement {
                id: format!("p{person}-d{n}"),
                text,
                at: start + Duration::minutes(rng.below(span_minutes) as i64),
                states: None,
            });
        };
        // Distractors of one person differ: a repeated one would merge.
        let mut kinds: Vec<usize> = (0..STABLE.len() + CHAT.len()).collect();
        for _ in 0..spec.distractors.min(kinds.len()) {
            let text = match kinds.swap_remove(rng.below(kinds.len())) {
                stable if stable < STABLE.len() => {
                    let (template, values) = STABLE[stable];
                    template
                        .replace("{s}", name)
                        .replace("{x}", pick(&mut rng, values))
                }
                chat => CHAT[chat - STABLE.len()].replace("{s}", name),
            };
            distractor(text, &mut rng, &mut statements);
        }
        for _ in 0..spec.near_misses {
            let (template, attribute) = NEAR_MISSES[rng.below(NEAR_MISSES.len())];
            let values = ATTRIBUTES[attribute].values;
            let value = if values.is_empty() {
                format!("555-{:04}", rng.below(10_000))
            } else {
                pick(&mut rng, values).to_owned()
            };
            let text = template.replace("{s}", name).replace("{x}", &value);
            distractor(text, &mut rng, &mut statements);
        }
    }
    // Time order, the statements' indexes in the facts following.
    let mut order: Vec<usize> = (0..statements.len()).collect();
    order.sort_by(|&a, &b| {
        (statements[a].at, &statements[a].id).cmp(&(statements[b].at, &statements[b].id))
    });
    let mut position = vec![0; statements.len()];
    for (at, &index) in order.iter().enumerate() {
        position[index] = at;
    }
    for fact in &mut facts {
        for (_, index) in &mut fact.versions {
            *index = position[*index];
        }
    }
    let statements: Vec<Statement> = order.into_iter().map(|i| statements[i].clone()).collect();
    let now = statements
        .last()
        .map_or(start, |last| last.at + Duration::days(1));
    FactSet {
        statements,
        facts,
        as_of,
        now,
    }
}

/// How the statements are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactsMode {
    /// Each statement of an attribute carries its fact key; the default [`FactsConfig`].
    Keys,
    /// No fact keys; the default [`FactsConfig`]: duplicates merge, the rule detector flags
    /// conflicts, and recall ranks the older of a flagged pair lower.
    Detector,
    /// No fact keys and [`FactsConfig::off`]: every statement is stored as it comes, and
    /// recall ranks the newer of two facts answering the question first
    /// ([`RetrieverConfig::newer_facts_first`], the default).
    Recall,
    /// No fact keys, [`FactsConfig::off`] and no [`RetrieverConfig::newer_facts_first`]:
    /// statements ranked by relevance alone.
    Baseline,
}

impl FactsMode {
    /// Every mode, in the order reported.
    pub const ALL: [FactsMode; 4] = [
        FactsMode::Keys,
        FactsMode::Detector,
        FactsMode::Recall,
        FactsMode::Baseline,
    ];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            FactsMode::Keys => "fact keys",
            FactsMode::Detector => "detector (no keys)",
            FactsMode::Recall => "newer facts first only (no keys, no detector)",
            FactsMode::Baseline => "no detection (baseline)",
        }
    }
}

/// The results of one mode, as counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FactsReport {
    /// The mode's name.
    pub mode: &'static str,
    /// Statements written.
    pub writes: usize,
    /// Writes merged into a stored memory.
    pub merged: usize,
    /// Writes that superseded a stored memory.
    pub superseded: usize,
    /// Writes that reported at least one conflict.
    pub flagged: usize,
    /// Reported conflicts between two values of one fact.
    pub true_flags: usize,
    /// Reported conflicts between anything else.
    pub false_flags: usize,
    /// Changes (statements after a fact's first) flagged against some older value.
    pub changes_flagged: usize,
    /// Changes written.
    pub changes: usize,
    /// Questions about now.
    pub questions: usize,
    /// ... whose best memory states the current value.
    pub top1_current: usize,
    /// ... with an older value above the current one in the top k.
    pub stale_above_current: usize,
    /// ... whose current statement a later statement of something else was flagged against
    /// (recall ranks it as stale when both are candidates).
    pub current_falsely_flagged: usize,
    /// ... whose current statement's history is exact; `None` when not measured.
    pub history_exact: Option<usize>,
    /// Questions as of a time.
    pub as_of_questions: usize,
    /// ... whose best memory states the value held then.
    pub as_of_correct: usize,
    /// Per attribute: questions about now and their top-1 current count.
    pub per_attribute: BTreeMap<&'static str, (usize, usize)>,
    /// Milliseconds of writing.
    pub ingest_ms: f64,
    /// Mean microseconds per recall.
    pub recall_us: f64,
}

fn percent(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// Writes `set` in one namespace of a fresh in-memory store under `mode`, asks every
/// question, and scores the answers (see the [module docs](self)).
///
/// # Errors
/// Store errors.
pub async fn run(set: &FactSet, mode: FactsMode, k: usize) -> Result<FactsReport> {
    let clock = Arc::new(ManualClock::new(DateTime::<Utc>::UNIX_EPOCH));
    let config = RetrieverConfig {
        max_results: k.max(1),
        min_score: 0.0,
        newer_facts_first: mode != FactsMode::Baseline,
        ..RetrieverConfig::default()
    };
    config.validate()?;
    let facts_config = match mode {
        FactsMode::Keys | FactsMode::Detector => FactsConfig::default(),
        FactsMode::Recall | FactsMode::Baseline => FactsConfig::off(),
    };
    let memory = Memory::builder()
        .store(Arc::new(InMemoryStore::new()))
        .clock(clock.clone())
        .retriever_config(config.clone())
        .facts(facts_config)
        .build()?;
    let namespace = Namespace::parse("facts")?;
    let mut report = FactsReport {
        mode: mode.name(),
        ..FactsReport::default()
    };
    // Where each statement lives (its own id, or the memory it merged into), and what each
    // stored memory states.
    let mut lives_in: Vec<String> = Vec::with_capacity(set.statements.len());
    let mut states: HashMap<String, (usize, usize)> = HashMap::new();
    // Stored memories that a later write about something else was flagged against.
    let mut falsely_flagged: HashSet<String> = HashSet::new();
    let started = Instant::now();
    for statement in &set.statements {
        clock.set(statement.at);
        let mut request = Remember::new(namespace.clone(), statement.text.clone())
            .id(statement.id.clone())
            .kind(MemoryKind::Semantic)
            .created_at(statement.at);
        if let (FactsMode::Keys, Some((fact, _))) = (mode, statement.states) {
            request = request.fact_key(set.facts[fact].key.clone());
        }
        let remembered = memory.remember_with(request).await?;
        report.writes += 1;
        match &remembered.outcome {
            Outcome::Merged { .. } => report.merged += 1,
            Outcome::Superseded { .. } | Outcome::Outdated { .. } => report.superseded += 1,
            Outcome::Added => {}
        }
        if let Some(states_now) = statement.states {
            states.entry(remembered.id.clone()).or_insert(states_now);
        }
        let is_change = statement.states.is_some_and(|(_, version)| version > 0);
        report.changes += usize::from(is_change);
        let mut change_flagged = false;
        report.flagged += usize::from(!remembered.conflicts.is_empty());
        for conflict in &remembered.conflicts {
            let rival = states.get(&conflict.id);
            match (statement.states, rival) {
                (Some((fact, version)), Some(&(rival_fact, rival_version)))
                    if fact == rival_fact && version != rival_version =>
                {
                    report.true_flags += 1;
                    change_flagged |= rival_version < version;
                }
                _ => {
                    report.false_flags += 1;
                    falsely_flagged.insert(conflict.id.clone());
                }
            }
        }
        report.changes_flagged += usize::from(is_change && change_flagged);
        lives_in.push(remembered.id);
    }
    report.ingest_ms = started.elapsed().as_secs_f64() * 1000.0;

    clock.set(set.now);
    let mut recalls = 0usize;
    let started = Instant::now();
    let mut history_exact = 0;
    for (index, fact) in set.facts.iter().enumerate() {
        let last = fact.versions.len() - 1;
        let ranked = ranked_ids(
            &memory,
            &namespace,
            &fact.question,
            RecallView::Current,
            &config,
        )
        .await?;
        recalls += 1;
        let version_at = |at: usize| {
            states
                .get(&ranked[at])
                .filter(|(of, _)| *of == index)
                .map(|(_, version)| *version)
        };
        let current_at = (0..ranked.len()).find(|&at| version_at(at) == Some(last));
        let stale_above = (0..current_at.unwrap_or(ranked.len()))
            .any(|at| version_at(at).is_some_and(|version| version < last));
        let top1 = !ranked.is_empty() && version_at(0) == Some(last);
        report.questions += 1;
        report.top1_current += usize::from(top1);
        report.current_falsely_flagged +=
            usize::from(falsely_flagged.contains(&lives_in[fact.versions[last].1]));
        report.stale_above_current += usize::from(stale_above);
        let entry = report
            .per_attribute
            .entry(ATTRIBUTES[fact.attribute].name)
            .or_default();
        entry.0 += 1;
        entry.1 += usize::from(top1);
        if mode == FactsMode::Keys {
            let mut expected: Vec<&str> = Vec::new();
            for (_, statement) in &fact.versions {
                let id = lives_in[*statement].as_str();
                if !expected.contains(&id) {
                    expected.push(id);
                }
            }
            let current = lives_in[fact.versions[last].1].as_str();
            let history: Vec<String> = memory
                .history(&namespace, current)
                .await?
                .into_iter()
                .map(|item| item.id)
                .collect();
            history_exact += usize::from(history == expected);
        }
    }
    if mode == FactsMode::Keys {
        report.history_exact = Some(history_exact);
    }
    for question in &set.as_of {
        let fact = &set.facts[question.fact];
        let ranked = ranked_ids(
            &memory,
            &namespace,
            &fact.question,
            RecallView::AsOf(question.at),
            &config,
        )
        .await?;
        recalls += 1;
        report.as_of_questions += 1;
        report.as_of_correct += usize::from(
            ranked
                .first()
                .and_then(|id| states.get(id))
                .is_some_and(|&state| state == (question.fact, question.version)),
        );
    }
    report.recall_us = started.elapsed().as_secs_f64() * 1e6 / recalls.max(1) as f64;
    Ok(report)
}

/// The ids of the memories a recall of `question` in `namespace` returns, best first.
/// Through [`Retriever::retrieve_with`](agent_memory::retrieve::Retriever::retrieve_with),
/// which records no recall statistics: questions cannot change each other's answers.
async fn ranked_ids(
    memory: &Memory,
    namespace: &Namespace,
    question: &str,
    view: RecallView,
    config: &RetrieverConfig,
) -> Result<Vec<String>> {
    let filter = RecallFilter {
        view,
        ..RecallFilter::default()
    };
    let result = memory
        .retriever()
        .retrieve_with(&namespace.exact(), question, &filter, config)
        .await?;
    Ok(result
        .items
        .into_iter()
        .filter_map(|item| match item.record {
            RetrievalSource::Memory(memory) => Some(memory.id.clone()),
            _ => None,
        })
        .collect())
}

/// The reports as markdown tables: one row per mode, then top-1 current per attribute.
pub fn render(set: &FactSet, reports: &[FactsReport]) -> String {
    let mut out = String::new();
    let subjects: HashSet<&str> = set.facts.iter().map(|f| f.subject.as_str()).collect();
    let _ = writeln!(
        out,
        "changing facts: {} people, {} facts, {} memories ({} statements of a fact), {} questions about now, {} as of a time\n",
        subjects.len(),
        set.facts.len(),
        set.statements.len(),
        set.statements.iter().filter(|s| s.states.is_some()).count(),
        set.facts.len(),
        set.as_of.len(),
    );
    out.push_str("| mode | top-1 current | stale above current | history exact | as-of top-1 | current falsely flagged | merged | flagged writes | true flags | false flags | changes flagged |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in reports {
        let history = r.history_exact.map_or_else(
            || "n/a".to_owned(),
            |exact| format!("{:.1}", percent(exact, r.questions)),
        );
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {history} | {:.1} | {:.1} | {} | {} ({:.1}%) | {} | {} | {:.1}% |",
            r.mode,
            percent(r.top1_current, r.questions),
            percent(r.stale_above_current, r.questions),
            percent(r.as_of_correct, r.as_of_questions),
            percent(r.current_falsely_flagged, r.questions),
            r.merged,
            r.flagged,
            percent(r.flagged, r.writes),
            r.true_flags,
            r.false_flags,
            percent(r.changes_flagged, r.changes),
        );
    }
    out.push_str("\ntop-1 current by attribute:\n\n| attribute |");
    for r in reports {
        let _ = write!(out, " {} |", r.mode);
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(reports.len()));
    out.push('\n');
    for attribute in &ATTRIBUTES {
        let _ = write!(out, "| {} |", attribute.name);
        for r in reports {
            let (questions, top1) = r
                .per_attribute
                .get(attribute.name)
                .copied()
                .unwrap_or_default();
            let _ = write!(out, " {:.1} |", percent(top1, questions));
        }
        out.push('\n');
    }
    out.push('\n');
    for r in reports {
        let _ = writeln!(
            out,
            "{}: {} writes in {:.0} ms, {:.0} us per recall",
            r.mode, r.writes, r.ingest_ms, r.recall_us
        );
    }
    out.push_str(
        "\ntop-1 current: the best memory of a recall now states the current value. \
         stale above current: an older value ranks above the current one in the top k. \
         history exact: history() of the current statement lists all its versions in order. \
         as-of top-1: the best memory of a recall as of a time between two changes states the \
         value held then. current falsely flagged: a later memory about something else was \
         flagged against the current statement, so recall ranks it as stale when both are found. true flags link two values of \
         one fact; changes flagged: changes flagged against an older value.\n",
    );
    out
}
