//! Whose words a query asks about: the agent's ([`asks_about_agent`]; a question about what
//! the agent itself said is not served by the role weights, which favour what the user said,
//! see [`RetrieverConfig::read_addressee`](crate::RetrieverConfig::read_addressee)), or those
//! of the speakers it names ([`Speakers`]; see
//! [`RetrieverConfig::other_speaker_factor`](crate::RetrieverConfig::other_speaker_factor)).

use crate::MAX_SPEAKER_BYTES;

/// The longest query read, in words: who is asked about is said early in a question.
const MAX_WORDS: usize = 256;

/// The longest query searched for a speaker's first word byte by byte (see
/// `Speakers::named_in`); a longer one is read word by word.
const SCANNED_QUERY_BYTES: usize = 1024;

/// Past forms of the verbs of telling, advising and giving: "you *mentioned*", "you *told*
/// me", "you'd *recommended*".
const TOLD: &[&str] = &[
    "advised",
    "answered",
    "called",
    "described",
    "explained",
    "gave",
    "given",
    "listed",
    "mentioned",
    "named",
    "noted",
    "offered",
    "outlined",
    "proposed",
    "provided",
    "recommended",
    "replied",
    "said",
    "shared",
    "showed",
    "shown",
    "suggested",
    "taught",
    "told",
    "wrote",
];

/// Their plain forms, after "did": "did you *say*".
const TELL: &[&str] = &[
    "advise",
    "answer",
    "call",
    "describe",
    "explain",
    "give",
    "list",
    "mention",
    "name",
    "note",
    "offer",
    "outline",
    "propose",
    "provide",
    "recommend",
    "reply",
    "say",
    "share",
    "show",
    "suggest",
    "teach",
    "tell",
    "write",
];

/// What one says, after "your": "your *recommendation*".
const SAID: &[&str] = &[
    "advice",
    "answer",
    "answers",
    "explanation",
    "explanations",
    "instructions",
    "recommendation",
    "recommendations",
    "reply",
    "replies",
    "response",
    "responses",
    "suggestion",
    "suggestions",
    "tips",
];

/// Words that may stand between the speaker and the verb: "you *also* mentioned", "I *had*
/// told you".
const BETWEEN: &[&str] = &[
    "actually",
    "already",
    "also",
    "earlier",
    "first",
    "had",
    "have",
    "initially",
    "just",
    "once",
    "originally",
    "previously",
    "specifically",
];

/// Whether `query` asks about what the one it addresses said earlier: the agent, in a
/// conversation between a user and an agent.
///
/// The reading is deterministic and English only. A query asks about the agent's words when
/// it names the agent telling something in the past ("you mentioned", "you told me", "did
/// you say", "you'd recommended", "your suggestion"), or asks to be reminded ("can you remind
/// me ...") without saying that the asker was the one who told it ("remind me what I told
/// you"). A request for something new ("can you suggest ...", "do you have any tips?") is
/// not about earlier words. Only the first 256 words are read.
///
/// ```
/// use memory_retrieve::asks_about_agent;
///
/// assert!(asks_about_agent("How many eggs did you say the omelette needs?"));
/// assert!(asks_about_agent("Can you remind me which hotel was near the station?"));
/// assert!(!asks_about_agent("Can you remind me what I told you about my sister?"));
/// assert!(!asks_about_agent("Can you suggest a hotel near the station?"));
/// ```
pub fn asks_about_agent(query: &str) -> bool {
    // Most queries hold neither word: they are passed over without reading their words.
    if !holds(query, "you") && !holds(query, "remind") {
        return false;
    }
    // One lowercased copy, its words borrowed from it.
    let lower = query.to_lowercase().replace('\u{2019}', "'");
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|word| !word.is_empty())
        .take(MAX_WORDS)
        .collect();
    let mut reminded = false;
    let mut told_by_asker = false;
    for (at, &word) in words.iter().enumerate() {
        match word {
            "you" | "you'd" | "you've" => {
                let did = at > 0 && matches!(words[at - 1], "did" | "didn't");
                match verb_after(&words, at) {
                    Some(verb) if TOLD.contains(&verb) => return true,
                    Some(verb) if did && TELL.contains(&verb) => return true,
                    _ => {}
                }
            }
            // "your suggestion", "your last suggestion"
            "your"
                if words[at + 1..]
                    .iter()
                    .take(2)
                    .any(|next| SAID.contains(next)) =>
            {
                return true;
            }
            "i" | "i'd" | "i've" => {
                let did = at > 0 && matches!(words[at - 1], "did" | "didn't");
                told_by_asker |= verb_after(&words, at)
                    .is_some_and(|verb| TOLD.contains(&verb) || (did && TELL.contains(&verb)));
            }
            "remind" => reminded |= words.get(at + 1) == Some(&"me"),
            _ => {}
        }
    }
    reminded && !told_by_asker
}

/// Most distinct speakers read among a recall's hits: a dialogue has a few.
const MAX_SPEAKERS: usize = 16;

/// Chat roles, which name no one: a question about a "user" or an "assistant" is read by
/// [`asks_about_agent`] and the role weights, not as naming a speaker.
const ROLES: [&str; 4] = ["user", "assistant", "system", "tool"];

/// The speakers a query names, among those of the memories it found.
#[derive(Debug, Default)]
pub(crate) struct Speakers<'a> {
    named: Vec<&'a str>,
    /// Every speaker read, the first `distinct` ([`MAX_SPEAKERS`] at most): only those can
    /// be told apart as named or not. Inline: a recall reads this for every hit.
    read: [&'a str; MAX_SPEAKERS],
    distinct: usize,
}

impl<'a> Speakers<'a> {
    /// The speakers among `speakers` (the `speaker` metadata of the hits, repeats allowed)
    /// whose names `query` holds, every word of the name in order ("Melanie", "Melanie's",
    /// "Dr. Ada Lovelace"). A query written in lower case ("what has melanie painted?")
    /// matches in any case; one that capitalises a word past its first writes names as
    /// names, so a capitalised part of a name matches only a capitalised word ("When will
    /// Will call?" names Will once, not twice). Empty unless the query names some of them
    /// and not all: a question naming every speaker, or none, favours no one. Roles
    /// ([`ROLES`]) name no one; at most [`MAX_SPEAKERS`] distinct speakers are read, and a
    /// name longer than [`MAX_SPEAKER_BYTES`] (which the dialogue API refuses, but a
    /// memory's own metadata may hold) is not read: the work stays bounded by the query's
    /// length whatever the metadata holds.
    pub(crate) fn named_in(query: &str, speakers: impl IntoIterator<Item = &'a str>) -> Self {
        // Borrowed and kept inline: a recall reads this for every hit.
        let mut seen = [""; MAX_SPEAKERS];
        let mut distinct = 0;
        let mut named = Vec::new();
        let mut unnamed = false;
        // The query's words, and whether it capitalises one past the first: read once a
        // name's first word is found in it.
        let mut read: Option<(Vec<&str>, bool)> = None;
        for speaker in speakers {
            if speaker.len() > MAX_SPEAKER_BYTES || seen[..distinct].contains(&speaker) {
                continue;
            }
            let Some(place) = seen.get_mut(distinct) else {
                break;
            };
            *place = speaker;
            distinct += 1;
            let mut parts = words_of(speaker);
            let Some(first) = parts.next() else { continue };
            let length = 1 + parts.count();
            if is_role(speaker) {
                continue;
            }
            // An ASCII first word is looked for in the query first: at every byte of a
            // question (the fastest for a short text), among the words of a long one (each
            // compared once, by length then bytes), where a search at every byte would cost
            // the query's length times the name's, for each speaker.
            let said = (!first.is_ascii()
                || if query.len() <= SCANNED_QUERY_BYTES {
                    holds(query, first)
                } else {
                    words_of(query)
                        .take(MAX_WORDS)
                        .any(|word| word.eq_ignore_ascii_case(first))
                })
                && {
                    let (words, cased) = read.get_or_insert_with(|| {
                        let words: Vec<&str> = words_of(query).take(MAX_WORDS).collect();
                        let cased = words
                            .iter()
                            .skip(1)
                            .any(|word| word.chars().next().is_some_and(char::is_uppercase));
                        (words, cased)
                    });
                    let cased = *cased;
                    words.windows(length).any(|window| {
                        window.iter().zip(words_of(speaker)).all(|(word, part)| {
                            same_word(word, part) && (!cased || same_capital(word, part))
                        })
                    })
                };
            if said {
                named.push(speaker);
            } else {
                unnamed = true;
            }
        }
        if !unnamed {
            named.clear();
        }
        Self {
            named,
            read: seen,
            distinct,
        }
    }

    /// Whether a memory spoken by `speaker` (`None`: no speaker) is spoken by someone the
    /// query does not name while it names others. A speaker that was not read (past the
    /// first [`MAX_SPEAKERS`], or too long a name) is not told apart, so it is no other.
    pub(crate) fn is_other(&self, speaker: Option<&str>) -> bool {
        !self.named.is_empty()
            && speaker.is_some_and(|speaker| {
                !is_role(speaker)
                    && !self.named.contains(&speaker)
                    && self.read[..self.distinct].contains(&speaker)
            })
    }
}

/// Whether `speaker` is a chat role ([`ROLES`]), in any case.
fn is_role(speaker: &str) -> bool {
    ROLES.iter().any(|role| speaker.eq_ignore_ascii_case(role))
}

/// The words of `text`: its runs of letters and digits.
fn words_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
}

/// Whether two words are the same in any case; stops at the first difference, and
/// allocates nothing.
fn same_word(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        // A final sigma is a sigma: `str::to_lowercase` writes one at a word's end.
        let fold = |c: char| if c == 'ς' { 'σ' } else { c };
        a.chars()
            .flat_map(char::to_lowercase)
            .map(fold)
            .eq(b.chars().flat_map(char::to_lowercase).map(fold))
    }
}

/// Whether `word` starts with a capital when `part` (of a name) does.
fn same_capital(word: &str, part: &str) -> bool {
    let capital = |text: &str| text.chars().next().is_some_and(char::is_uppercase);
    !capital(part) || capital(word)
}

/// Whether `text` holds the ASCII `needle` in any ASCII case.
fn holds(text: &str, needle: &str) -> bool {
    let (text, needle) = (text.as_bytes(), needle.as_bytes());
    let Some(first) = needle.first().map(u8::to_ascii_lowercase) else {
        return true;
    };
    text.windows(needle.len()).any(|window| {
        window[0].to_ascii_lowercase() == first && window.eq_ignore_ascii_case(needle)
    })
}

/// The word after the speaker at `at`, past up to two words such as "also" or "had".
fn verb_after<'a>(words: &[&'a str], at: usize) -> Option<&'a str> {
    let mut next = at + 1;
    while next <= at + 2 && words.get(next).is_some_and(|word| BETWEEN.contains(word)) {
        next += 1;
    }
    words.get(next).copied()
}

#[cfg(test)]
mod tests {
    use super::{Speakers, asks_about_agent};

    #[test]
    fn the_speakers_a_question_names_are_read_among_those_found() {
        let found = ["Caroline", "Melanie", "Caroline", "Dr. Ada Lovelace"];
        let named = Speakers::named_in("What has melanie's sister painted?", found);
        assert!(!named.is_other(Some("Melanie")));
        assert!(named.is_other(Some("Caroline")));
        assert!(named.is_other(Some("Dr. Ada Lovelace")));
        // A memory without a speaker is no one else's.
        assert!(!named.is_other(None));
        // A long query is read word by word, with the same answer.
        let long = format!("{} What has Melanie's sister painted?", "word ".repeat(210));
        let named = Speakers::named_in(&long, found);
        assert!(!named.is_other(Some("Melanie")));
        assert!(named.is_other(Some("Caroline")));
        let named = Speakers::named_in(&"melanies ".repeat(300), found);
        assert!(
            !named.is_other(Some("Caroline")),
            "no one named: no one else"
        );

        let named = Speakers::named_in("what did dr ada lovelace build?", found);
        assert!(!named.is_other(Some("Dr. Ada Lovelace")));
        assert!(named.is_other(Some("Melanie")));
        // Part of a name is not the name.
        let named = Speakers::named_in("What did Ada build?", found);
        assert!(!named.is_other(Some("Melanie")));
    }

    #[test]
    fn speakers_past_those_read_are_not_told_apart() {
        // The first MAX_SPEAKERS distinct speakers are read; the query names one of them
        // and one past them.
        let found: Vec<String> = (0..20).map(|n| format!("speaker{n}")).collect();
        let named = Speakers::named_in(
            "what did speaker3 and speaker19 say?",
            found.iter().map(String::as_str),
        );
        assert!(!named.is_other(Some("speaker3")));
        assert!(named.is_other(Some("speaker4")));
        assert!(
            !named.is_other(Some("speaker19")),
            "named, though past those read: not weighed as another's"
        );
        assert!(
            !named.is_other(Some("speaker17")),
            "never read: not told apart"
        );
    }

    #[test]
    fn a_name_longer_than_a_dialogue_accepts_is_not_read() {
        // A memory's own metadata may hold any speaker; the dialogue API refuses one longer
        // than MAX_SPEAKER_BYTES, and reading such names would cost a recall their length
        // for every word of the query.
        let long = format!("é{}", "a".repeat(super::MAX_SPEAKER_BYTES));
        let query = format!("what did {long} and Melanie say?");
        let found = [long.as_str(), "Melanie", "Caroline"];
        let named = Speakers::named_in(&query, found);
        assert!(!named.is_other(Some("Melanie")));
        assert!(named.is_other(Some("Caroline")));
        assert!(
            !named.is_other(Some(long.as_str())),
            "not read: not told apart"
        );
        // Only the long name named: nobody read is named, so no one is favoured.
        let query = format!("what did {long} say?");
        let named = Speakers::named_in(&query, found);
        assert!(!named.is_other(Some("Caroline")));
        assert!(!named.is_other(Some("Melanie")));
    }

    #[test]
    fn names_beyond_ascii_match_in_any_case() {
        let found = ["Ōtani Shōhei", "Νίκος", "Zoë"];
        let named = Speakers::named_in("what did Ōtani Shōhei say to ΝΊΚΟΣ?", found);
        assert!(!named.is_other(Some("Ōtani Shōhei")));
        assert!(!named.is_other(Some("Νίκος")), "a final sigma is a sigma");
        assert!(named.is_other(Some("Zoë")));
    }

    #[test]
    fn a_capitalised_query_names_with_capitals() {
        let found = ["Will", "Melanie"];
        // "will" the verb is not Will when the query writes names with capitals...
        let named = Speakers::named_in("When will Melanie call Jon?", found);
        assert!(named.is_other(Some("Will")));
        assert!(!named.is_other(Some("Melanie")));
        let named = Speakers::named_in("When will Will call Jon?", found);
        assert!(named.is_other(Some("Melanie")));
        assert!(!named.is_other(Some("Will")));
        // ... and a query in lower case matches in any case.
        let named = Speakers::named_in("when will melanie call?", found);
        assert!(!named.is_other(Some("Melanie")));
        assert!(!named.is_other(Some("Will")), "both named: no one favoured");
    }

    #[test]
    fn naming_everyone_or_no_one_favours_no_one() {
        let found = ["Caroline", "Melanie"];
        for query in [
            "When did Caroline and Melanie go to the festival together?",
            "Who went to the festival?",
            "",
        ] {
            let named = Speakers::named_in(query, found);
            assert!(!named.is_other(Some("Caroline")), "{query}");
            assert!(!named.is_other(Some("Melanie")), "{query}");
        }
        // Only the speakers found count: the question names one of them.
        let named = Speakers::named_in("What did Caroline and Jon bake?", found);
        assert!(named.is_other(Some("Melanie")));
        assert!(!named.is_other(Some("Caroline")));
    }

    #[test]
    fn roles_name_no_one() {
        let found = ["user", "assistant", "Melanie", "Caroline"];
        let named = Speakers::named_in("What did the assistant tell the user?", found);
        assert!(!named.is_other(Some("Melanie")));
        let named = Speakers::named_in("What did Melanie say to the user?", found);
        assert!(named.is_other(Some("Caroline")));
        assert!(!named.is_other(Some("user")));
        assert!(!named.is_other(Some("Assistant")));
    }

    #[test]
    fn many_speakers_are_read_up_to_a_bound() {
        let names: Vec<String> = (0..1000).map(|n| format!("speaker{n}")).collect();
        let named = Speakers::named_in("what did speaker3 say?", names.iter().map(String::as_str));
        assert!(named.is_other(Some("speaker4")));
        assert!(!named.is_other(Some("speaker3")));
        // Past the bound a name is not read.
        let named =
            Speakers::named_in("what did speaker999 say?", names.iter().map(String::as_str));
        assert!(!named.is_other(Some("speaker4")));
    }

    #[test]
    fn the_agent_telling_in_the_past_is_read() {
        for query in [
            "You mentioned some resources for guided imagery, which website was free?",
            "I remember you told me to dilute tea tree oil. What ratio?",
            "How many eggs did you say we need for the recipe?",
            "What was the name of the designer you'd recommended?",
            "Which book you’ve also suggested was about habits?",
            "you had previously listed three options, what was the second?",
            "What was your recommendation for the trip?",
            "Can you repeat your last suggestion?",
            "WHAT DID YOU TELL ME ABOUT THE VISA?",
            "Didn't you mention a cheaper flight?",
            "Can you remind me of the Instagram handle of the designer?",
            "Remind me: which museum was open late?",
        ] {
            assert!(asks_about_agent(query), "{query}");
        }
    }

    #[test]
    fn requests_and_the_askers_own_words_are_not() {
        for query in [
            "",
            "   ",
            "Do you have any helpful tips for getting around Tokyo?",
            "Can you suggest some activities for my commute?",
            "Can you recommend some recent publications?",
            "Could you tell me where I parked?",
            "What did I say about my sister's wedding?",
            "I mentioned cooking something for my friend. What was it?",
            "Can you remind me what I told you about my trip?",
            "Remind me what I'd mentioned about the budget.",
            "How many years older is my grandma than me?",
            "Where did you go?",
            "you",
            "your",
            "remind",
            "Thank you, I said that already.",
        ] {
            assert!(!asks_about_agent(query), "{query}");
        }
    }

    #[test]
    fn an_explicit_telling_by_the_agent_wins_over_the_askers() {
        assert!(asks_about_agent(
            "I told you my budget and you suggested a hotel: which one?"
        ));
    }

    #[test]
    fn long_and_odd_input_is_read_without_panicking() {
        let long = "you ".repeat(100_000) + "mentioned";
        // The telling lies past the words read.
        assert!(!asks_about_agent(&long));
        assert!(asks_about_agent(&format!(
            "{} you mentioned",
            "word ".repeat(200)
        )));
        for query in ["\u{0}you\u{0}said", "ÿou said", "you'd", "'''", "did you"] {
            let _ = asks_about_agent(query);
        }
        assert!(asks_about_agent("\u{0}you\u{0}said"));
    }
}
