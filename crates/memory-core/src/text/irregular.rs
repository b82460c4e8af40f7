//! Irregular English forms, read as the word they are a form of.
//!
//! The Snowball stemmer works on suffixes, so "went", "bought" or "met" keep their own stems
//! and never meet "go", "buy" or "meet". A question asks in the base form ("When did Nate
//! win the tournament?") and the memory answering it tells in the past ("I won it last
//! week"), so the analyzer reads the past forms and participles of common irregular verbs as
//! their verb before stemming, and the irregular plurals of nouns ("children", "feet") as
//! their singular. The table leaves out forms that are as often another word ("saw",
//! "left", "bit", "rose", "sat", "shot", "lay", "bore", "tore", "lit", "spelt", "leaves"):
//! reading "left" as "leave" matched every "on the left", and "saw" the tool. Forms that are
//! stop words ("was", "did", "had") never reach it.

/// The forms and the word (a verb, or a noun in the singular) each is a form of, sorted by
/// form (a test checks), so a form is found by binary search.
pub(super) const FORMS: &[(&str, &str)] = &[
    ("ate", "eat"),
    ("became", "become"),
    ("began", "begin"),
    ("begun", "begin"),
    ("bent", "bend"),
    ("bled", "bleed"),
    ("blew", "blow"),
    ("bought", "buy"),
    ("broke", "break"),
    ("broken", "break"),
    ("brought", "bring"),
    ("built", "build"),
    ("burnt", "burn"),
    ("came", "come"),
    ("caught", "catch"),
    ("children", "child"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("dealt", "deal"),
    ("drank", "drink"),
    ("drawn", "draw"),
    ("dreamt", "dream"),
    ("drew", "draw"),
    ("driven", "drive"),
    ("drove", "drive"),
    ("dug", "dig"),
    ("eaten", "eat"),
    ("fallen", "fall"),
    ("fed", "feed"),
    ("feet", "foot"),
    ("fell", "fall"),
    ("felt", "feel"),
    ("fled", "flee"),
    ("flew", "fly"),
    ("flown", "fly"),
    ("forgave", "forgive"),
    ("forgiven", "forgive"),
    ("forgot", "forget"),
    ("forgotten", "forget"),
    ("fought", "fight"),
    ("found", "find"),
    ("froze", "freeze"),
    ("frozen", "freeze"),
    ("gave", "give"),
    ("geese", "goose"),
    ("given", "give"),
    ("gone", "go"),
    ("got", "get"),
    ("gotten", "get"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("halves", "half"),
    ("heard", "hear"),
    ("held", "hold"),
    ("hid", "hide"),
    ("hidden", "hide"),
    ("hung", "hang"),
    ("kept", "keep"),
    ("knew", "know"),
    ("knives", "knife"),
    ("known", "know"),
    ("learnt", "learn"),
    ("led", "lead"),
    ("lent", "lend"),
    ("loaves", "loaf"),
    ("lost", "lose"),
    ("made", "make"),
    ("meant", "mean"),
    ("men", "man"),
    ("met", "meet"),
    ("mice", "mouse"),
    ("paid", "pay"),
    ("ran", "run"),
    ("rang", "ring"),
    ("ridden", "ride"),
    ("rode", "ride"),
    ("said", "say"),
    ("sang", "sing"),
    ("sank", "sink"),
    ("seen", "see"),
    ("sent", "send"),
    ("shelves", "shelf"),
    ("shook", "shake"),
    ("shown", "show"),
    ("slept", "sleep"),
    ("slid", "slide"),
    ("sold", "sell"),
    ("sought", "seek"),
    ("spent", "spend"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("stole", "steal"),
    ("stolen", "steal"),
    ("stood", "stand"),
    ("struck", "strike"),
    ("sung", "sing"),
    ("swam", "swim"),
    ("swept", "sweep"),
    ("taken", "take"),
    ("taught", "teach"),
    ("teeth", "tooth"),
    ("thieves", "thief"),
    ("thought", "think"),
    ("threw", "throw"),
    ("thrown", "throw"),
    ("told", "tell"),
    ("took", "take"),
    ("understood", "understand"),
    ("went", "go"),
    ("wept", "weep"),
    ("wives", "wife"),
    ("woke", "wake"),
    ("woken", "wake"),
    ("wolves", "wolf"),
    ("women", "woman"),
    ("won", "win"),
    ("wore", "wear"),
    ("worn", "wear"),
    ("written", "write"),
    ("wrote", "write"),
];

/// The word `word` (lowercase ASCII) is an irregular form of, if it is one ("went": "go").
pub(super) fn lemma(word: &str) -> Option<&'static str> {
    // No form is shorter than three bytes or longer than ten.
    if !(3..=10).contains(&word.len()) {
        return None;
    }
    FORMS
        .binary_search_by(|(form, _)| form.cmp(&word))
        .ok()
        .map(|found| FORMS[found].1)
}

/// For each lowercase first letter, a bit per lowercase second letter: set where some form
/// starts with those two letters and the word it is a form of does not ("went" and "go").
/// Only such a word can be turned away by a filter on the first two bytes of the terms
/// sought, yet stem to one of them; [`may_start_differently`] tells them apart for a few cycles.
const DIFFERENT_STARTS: [u32; 26] = different_starts();

const fn different_starts() -> [u32; 26] {
    let mut starts = [0u32; 26];
    let mut index = 0;
    while index < FORMS.len() {
        let (form, verb) = (FORMS[index].0.as_bytes(), FORMS[index].1.as_bytes());
        if form[0] != verb[0] || form[1] != verb[1] {
            starts[(form[0] - b'a') as usize] |= 1 << (form[1] - b'a');
        }
        index += 1;
    }
    starts
}

/// Whether a word starting with the lowercase bytes `first` and `second` may be a form of a
/// word that starts otherwise.
pub(super) fn may_start_differently(first: u8, second: u8) -> bool {
    first.is_ascii_lowercase()
        && second.is_ascii_lowercase()
        && DIFFERENT_STARTS[usize::from(first - b'a')] & (1 << (second - b'a')) != 0
}
