//! [`RuleEnricher`]: entities and relations by rules, no model.

use async_trait::async_trait;
use memory_core::text::is_stop_word;
use memory_core::{MemoryItem, Result, Tag};

use super::{Enricher, Enrichment, EntityMention, RelationMention};

/// Entities per memory at most: a long text keeps its first names.
const MAX_ENTITIES: usize = 16;
/// Stated relations per memory at most: each end a relation names is an entity, written
/// when the graph has none of that name, so the relations are bounded as the entities are.
const MAX_RELATIONS: usize = 16;

/// The months, in order: the first twelve words of the facts module's month and day list.
const MONTHS: &[&str] = crate::facts::MONTHS_AND_DAYS.split_at(12).0;

/// The weekdays: the seven words after the months in the facts module's list.
const DAYS: &[&str] = crate::facts::MONTHS_AND_DAYS.split_at(12).1.split_at(7).0;

/// Capitalised words that are no names besides the [`DAYS`]: greetings and pronoun forms
/// that the stop-word list does not hold.
const NOT_NAMES: &[&str] = &[
    "hey", "hi", "hello", "thanks", "thank", "wow", "yes", "yeah", "oh", "ok", "okay", "sure",
    "im", "ive", "id", "ill", "lol", "omg", "pm", "am",
];

/// Words that often start a sentence capitalised without being names: a single capitalised
/// word at the start of a sentence is a name unless it is one of these, a stop word, or
/// ends like an adverb, a participle or a past tense (`-ly`, `-ing`, `-ed`).
const SENTENCE_STARTERS: &[&str] = &[
    "yesterday",
    "today",
    "tomorrow",
    "tonight",
    "great",
    "sounds",
    "glad",
    "love",
    "loved",
    "just",
    "wow",
    "nice",
    "cool",
    "awesome",
    "good",
    "sorry",
    "maybe",
    "also",
    "well",
    "yep",
    "nope",
    "haha",
    "btw",
    "congrats",
    "congratulations",
    "happy",
    "hope",
    "let",
    "lets",
    "anyway",
    "right",
    "exactly",
    "true",
    "agreed",
    "same",
    "last",
    "next",
    "since",
    "now",
    "ah",
    "hmm",
    "please",
    "remember",
    "know",
    "see",
    "look",
    "check",
    "tell",
    "keep",
    "try",
    "make",
    "take",
    "give",
    "get",
    "go",
    "come",
    "went",
    "got",
    "made",
    "took",
    "saw",
    "heard",
    "felt",
    "thought",
    "first",
    "finally",
    "recently",
    "currently",
    "definitely",
    "absolutely",
    "totally",
    "actually",
    "really",
    "still",
    "even",
    "never",
    "always",
    "often",
    "sometimes",
    "usually",
    "thank",
    "cheers",
    "welcome",
    "fun",
    "amazing",
    "beautiful",
    "wonderful",
    "interesting",
    "cute",
    "lovely",
    "perfect",
    "sure",
    "course",
    "speaking",
    "talking",
    "guess",
    "wish",
    "bye",
    "see",
    "new",
    "big",
    "little",
    "some",
    "many",
    "most",
    "much",
    "every",
    "each",
    "both",
    "one",
    "two",
    "three",
    "another",
    "other",
    "mine",
    "yours",
    "ours",
    "theirs",
    "something",
    "anything",
    "everything",
    "nothing",
    "someone",
    "anyone",
    "everyone",
    "somebody",
    "people",
    "life",
    "family",
    "work",
    "music",
    "art",
    "things",
    "thing",
    "time",
    "day",
    "week",
    "year",
    "kids",
    "dear",
    "hey",
    "hiya",
    "morning",
    "evening",
    "night",
    "wait",
    "whoa",
    "yay",
    "aww",
    "omg",
    "lol",
    "uh",
    "um",
    "wanna",
    "gonna",
    "gotta",
];

fn is_sentence_starter(word: &str) -> bool {
    let lower: String = word
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect();
    SENTENCE_STARTERS.contains(&lower.as_str())
        || ["ly", "ing", "ed"]
            .iter()
            .any(|suffix| lower.len() > suffix.len() + 2 && lower.ends_with(suffix))
}

/// The deterministic enricher: no model, the same output for the same text.
///
/// - **Speakers**: the `speaker` (or `role`, other than `user`/`assistant`/`system`) of the
///   memory's metadata, and a transcript line's `Name:` label, as `person` entities.
/// - **Names**: runs of capitalised words ("Caroline", "New York", "Rust Foundation"); a
///   single capitalised word that starts a sentence counts unless it is a common sentence
///   opener ("Yesterday", "Thanks", "Really", words ending in `-ly`, `-ing`, `-ed`), except
///   when it is written capitalised elsewhere in the text too or is a possessive.
/// - **Terms**: CamelCase words ("StateGraph", "LangGraph") and kebab-case words of at
///   least two parts of letters ("state-machine") as `concept` entities.
/// - **Dates**: "8 May 2023", "May 8, 2023" and ISO dates as `date` entities (named by the
///   ISO date, so each spelling reaches one entity).
/// - **Relations**: "X's `<word>` Y" with X and Y names ("Caroline's sister Anna") relates X
///   to Y by the word (`sister`).
///
/// Each entity is tagged with its name normalised as a tag ([`Tag::new`]: lowercase, words
/// joined by `-`, CamelCase split), so that tag matching finds it under that spelling too.
#[derive(Clone, Copy, Debug, Default)]
pub struct RuleEnricher;

#[async_trait]
impl Enricher for RuleEnricher {
    async fn enrich(&self, memories: &[MemoryItem]) -> Result<Vec<Enrichment>> {
        Ok(memories.iter().map(RuleEnricher::enrich_one).collect())
    }
}

/// One word of the text, with where it stands.
#[derive(Debug)]
struct Word<'a> {
    text: &'a str,
    /// The word starts a sentence (or the text, or follows a `:` label).
    starts_sentence: bool,
    /// A possessive `'s` followed the word (and was cut off).
    possessive: bool,
    /// Punctuation followed the word (it ends a run of capitalised words).
    ends_run: bool,
}

impl RuleEnricher {
    /// The enrichment of one memory.
    pub fn enrich_one(item: &MemoryItem) -> Enrichment {
        let mut out = Enrichment::default();
        let add = |out: &mut Enrichment, name: &str, entity_type: &str| {
            let name = name.trim();
            let Ok(tag) = Tag::new(name) else { return };
            if out.entities.len() >= MAX_ENTITIES
                || out
                    .entities
                    .iter()
                    .any(|known| Tag::new(&known.name).is_ok_and(|t| t == tag))
            {
                return;
            }
            out.entities.push(EntityMention {
                name: name.to_owned(),
                entity_type: entity_type.to_owned(),
                tags: vec![tag.as_str().to_owned()],
            });
        };
        for key in ["speaker", "role"] {
            if let Some(speaker) = item.metadata_value(key).and_then(|v| v.as_str())
                && !matches!(speaker, "user" | "assistant" | "system" | "tool")
            {
                add(&mut out, speaker, "person");
            }
        }
        let text = item.content.as_str();
        let body = strip_date_note(text);
        let (label, body) = split_label(body);
        if let Some(label) = label {
            add(&mut out, label, "person");
        }
        for date in dates(text) {
            add(&mut out, &date, "date");
        }
        let words = words(body);
        // A set: each single capitalised word opening a sentence is looked up in it.
        let capitalised_inside: std::collections::HashSet<&str> = words
            .iter()
            .filter(|word| !word.starts_sentence && is_capitalised(word.text))
            .map(|word| word.text)
            .collect();
        let mut names: Vec<(usize, String, bool)> = Vec::new();
        let mut at = 0;
        while at < words.len() {
            let word = &words[at];
            if !is_name_word(word.text) {
                at += 1;
                continue;
            }
            let start = at;
            let mut end = at + 1;
            while end < words.len()
                && !words[end - 1].ends_run
                && !words[end - 1].possessive
                && is_name_word(words[end].text)
            {
                end += 1;
            }
            let run: Vec<&str> = words[start..end].iter().map(|w| w.text).collect();
            let single_at_start = run.len() == 1 && word.starts_sentence;
            let keep = !single_at_start
                || words[end - 1].possessive
                || capitalised_inside.contains(&word.text)
                || !is_sentence_starter(word.text);
            if keep {
                names.push((start, run.join(" "), words[end - 1].possessive));
            }
            at = end;
        }
        for (_, name, _) in &names {
            add(&mut out, name, "name");
        }
        // "X's `<word>` Y": X related to Y by the word.
        for (index, (start, name, possessive)) in names.iter().enumerate() {
            if out.relations.len() >= MAX_RELATIONS {
                break;
            }
            if !possessive {
                continue;
            }
            let run_len = name.split(' ').count();
            let relation_at = start + run_len;
            let Some(relation) = words.get(relation_at) else {
                continue;
            };
            let relation_word = relation.text.to_lowercase();
            if relation.ends_run
                || is_capitalised(relation.text)
                || is_stop_word(&relation_word)
                || !relation_word.chars().all(char::is_alphabetic)
            {
                continue;
            }
            if let Some((_, target, _)) = names
                .get(index + 1)
                .filter(|(next, _, _)| *next == relation_at + 1)
            {
                out.relations.push(RelationMention {
                    source: name.clone(),
                    target: target.clone(),
                    relation_type: relation_word,
                });
            }
        }
        for word in &words {
            let bare = word.text;
            if is_camel_case(bare) || is_kebab_term(bare) {
                add(&mut out, bare, "concept");
            }
        }
        out
    }
}

/// The text without a leading `[...]` note (a transcript line's date).
fn strip_date_note(text: &str) -> &str {
    let trimmed = text.trim_start();
    if let Some(rest) = trimmed.strip_prefix('[')
        && let Some(close) = rest.find(']')
        && close < 80
    {
        return &rest[close + 1..];
    }
    trimmed
}

/// A transcript line's speaker label (`Caroline: ...`) and the rest.
fn split_label(text: &str) -> (Option<&str>, &str) {
    let trimmed = text.trim_start();
    if let Some(colon) = trimmed.find(':') {
        let label = &trimmed[..colon];
        let words: Vec<&str> = label.split_whitespace().collect();
        if !words.is_empty()
            && words.len() <= 3
            && words.iter().all(|word| is_capitalised(word))
            && !words.iter().any(|w| w.chars().any(|c| c.is_ascii_digit()))
        {
            return (Some(label.trim()), &trimmed[colon + 1..]);
        }
    }
    (None, trimmed)
}

/// The words of `text`, split at whitespace, with the punctuation around them removed.
fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut starts_sentence = true;
    for raw in text.split_whitespace() {
        let trimmed = raw.trim_start_matches(|c: char| !c.is_alphanumeric());
        let core = trimmed.trim_end_matches(|c: char| !c.is_alphanumeric());
        let tail = &trimmed[core.len()..];
        let (core, possessive) = match core
            .strip_suffix("'s")
            .or_else(|| core.strip_suffix("\u{2019}s"))
        {
            Some(stripped) => (stripped, true),
            None => (core, false),
        };
        let ends_sentence = tail.contains(['.', '!', '?', ':', ';']);
        let ends_run = !tail.is_empty();
        if !core.is_empty() {
            out.push(Word {
                text: core,
                starts_sentence,
                possessive,
                ends_run,
            });
        }
        starts_sentence = ends_sentence;
    }
    out
}

fn is_capitalised(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
}

/// A capitalised word that can be part of a name: letters (an inner `-`, `'` or `.`
/// allowed), not a stop word, weekday, month or interjection, not "I".
fn is_name_word(word: &str) -> bool {
    if !is_capitalised(word) || word.chars().count() < 2 {
        return false;
    }
    if !word
        .chars()
        .all(|c| c.is_alphabetic() || matches!(c, '-' | '\'' | '.'))
    {
        return false;
    }
    let lower: String = word
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect();
    !is_stop_word(&lower)
        && !DAYS.contains(&lower.as_str())
        && !NOT_NAMES.contains(&lower.as_str())
        && !MONTHS.contains(&lower.as_str())
}

/// `StateGraph`, `LangGraph`, `iPhone`: a lowercase letter followed by an uppercase one,
/// letters and digits only.
fn is_camel_case(word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    chars.len() >= 4
        && chars.iter().all(|c| c.is_alphanumeric())
        && chars
            .windows(2)
            .any(|pair| pair[0].is_lowercase() && pair[1].is_uppercase())
        && chars.iter().filter(|c| c.is_uppercase()).count() < chars.len() - 1
}

/// `state-machine`, `kebab-case`: two or more parts of at least two letters each, joined
/// by `-`, lowercase.
fn is_kebab_term(word: &str) -> bool {
    let parts: Vec<&str> = word.split('-').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|part| part.len() >= 2 && part.chars().all(|c| c.is_ascii_lowercase()))
        && parts.iter().any(|part| part.len() >= 4)
}

/// The dates of `text` as ISO dates (`2023-05-08`): "8 May 2023", "8 May, 2023", "May 8,
/// 2023", "May 8 2023" and `2023-05-08`.
fn dates(text: &str) -> Vec<String> {
    let tokens: Vec<String> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']' | '(' | ')'))
        .filter(|token| !token.is_empty())
        .map(|token| {
            token
                .trim_end_matches(['.', '!', '?', ';', ':'])
                .to_lowercase()
        })
        .collect();
    let month = |token: &str| {
        MONTHS
            .iter()
            .position(|m| *m == token || (token.len() >= 3 && m.starts_with(token)))
            .map(|index| index + 1)
    };
    let day = |token: &str| {
        let digits = token.trim_end_matches(|c: char| c.is_alphabetic());
        digits.parse::<u32>().ok().filter(|d| (1..=31).contains(d))
    };
    let year = |token: &str| {
        token
            .parse::<i32>()
            .ok()
            .filter(|y| (1000..=2999).contains(y))
    };
    let mut out = Vec::new();
    for (at, token) in tokens.iter().enumerate() {
        let next = |offset: usize| tokens.get(at + offset).map(String::as_str);
        if let Some(m) = month(token) {
            // May 8, 2023
            if let (Some(d), Some(y)) = (next(1).and_then(day), next(2).and_then(year)) {
                out.push(format!("{y:04}-{m:02}-{d:02}"));
            }
        } else if let Some(d) = day(token) {
            // 8 May 2023
            if let (Some(m), Some(y)) = (next(1).and_then(month), next(2).and_then(year)) {
                out.push(format!("{y:04}-{m:02}-{d:02}"));
            }
        } else if token.len() == 10 && token.as_bytes().get(4) == Some(&b'-') {
            let parts: Vec<&str> = token.split('-').collect();
            if let [y, m, d] = parts.as_slice()
                && let (Some(y), Ok(m), Some(d)) = (year(y), m.parse::<u32>(), day(d))
                && (1..=12).contains(&m)
            {
                out.push(format!("{y:04}-{m:02}-{d:02}"));
            }
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use memory_core::Namespace;

    use super::*;

    #[test]
    fn a_long_text_states_a_bounded_number_of_relations() {
        // Every stated relation's end becomes an entity: 5,000 had meant 10,000 entities
        // from one memory, past its cap of 16 mentions.
        let name = |at: usize| -> String {
            let letters: String = [at / 676, at / 26 % 26, at % 26]
                .iter()
                .map(|&digit| char::from(b'a' + digit as u8))
                .collect();
            format!("N{letters}")
        };
        let text: String = (0..5_000)
            .map(|at| format!("{}'s friend {}. ", name(at), name(at + 5_000)))
            .collect();
        let item = MemoryItem::new(Namespace::parse("u").unwrap(), text).unwrap();
        let found = RuleEnricher::enrich_one(&item);
        assert_eq!(found.entities.len(), MAX_ENTITIES);
        assert_eq!(found.relations.len(), MAX_RELATIONS);
    }

    #[test]
    fn the_shared_list_gives_the_months_and_the_weekdays() {
        assert_eq!(MONTHS.first(), Some(&"january"));
        assert_eq!(MONTHS.last(), Some(&"december"));
        assert_eq!(
            DAYS,
            [
                "monday",
                "tuesday",
                "wednesday",
                "thursday",
                "friday",
                "saturday",
                "sunday"
            ]
        );
        assert!(!is_name_word("Monday") && !is_name_word("Sunday"));
    }

    fn check(
        text: &str,
        metadata: serde_json::Value,
        names: &[&str],
        relations: &[(&str, &str, &str)],
    ) {
        let item = MemoryItem::new(Namespace::parse("t").unwrap(), text)
            .unwrap()
            .with_metadata(metadata)
            .unwrap();
        let found = RuleEnricher::enrich_one(&item);
        let got: Vec<&str> = found.entities.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(got, names, "entities of {text:?}");
        let got: Vec<(&str, &str, &str)> = found
            .relations
            .iter()
            .map(|r| {
                (
                    r.source.as_str(),
                    r.target.as_str(),
                    r.relation_type.as_str(),
                )
            })
            .collect();
        assert_eq!(got, relations, "relations of {text:?}");
    }

    #[test]
    fn finds_entities_and_relations() {
        let none = serde_json::json!({});
        check(
            "[1:56 pm on 8 May, 2023] Caroline: I went to the LGBTQ support group yesterday.",
            none.clone(),
            &["Caroline", "2023-05-08", "LGBTQ"],
            &[],
        );
        check(
            "Caroline's sister Anna moved to New York last week.",
            none.clone(),
            &["Caroline", "Anna", "New York"],
            &[("Caroline", "Anna", "sister")],
        );
        check(
            "We built the agent on LangGraph with a state-machine design.",
            none.clone(),
            &["LangGraph", "state-machine"],
            &[],
        );
        check(
            "Yesterday was great. Thanks for asking! Really.",
            none.clone(),
            &[],
            &[],
        );
        check(
            "Anna paints sunsets. Painting relaxes her.",
            none.clone(),
            &["Anna"],
            &[],
        );
        check(
            "hello there",
            serde_json::json!({"speaker": "Melanie"}),
            &["Melanie"],
            &[],
        );
        check(
            "Meeting on 2024-02-29 and May 3, 2024",
            serde_json::json!({"role": "user"}),
            &["2024-02-29", "2024-05-03"],
            &[],
        );
    }
}
