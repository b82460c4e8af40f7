//! Whose words a query asks about ([`asks_about_agent`]): a question about what the agent
//! itself said is not served by the role weights, which favour what the user said (see
//! [`RetrieverConfig::read_addressee`](crate::RetrieverConfig::read_addressee)).

/// The longest query read, in words: who is asked about is said early in a question.
const MAX_WORDS: usize = 256;

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
    use super::asks_about_agent;

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
