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
//!
//! The stemmer leaves comparatives alone too, so "how much older is my grandma?" never met
//! "she is old" or "at 32 I'm still young". The comparative and superlative forms of common
//! gradable adjectives ("older", "youngest", "bigger", "cheapest", "heavier") are read as
//! their adjective. "Earlier", "later" and their superlatives are left out: they mostly
//! place something in the conversation's own time ("as I said earlier", "talk later") or
//! ask for an order ("from earliest to latest"), not say that something is early; "better"
//! and "best" as "good" moved rankings the wrong way on measurement; and forms that are
//! mostly nouns ("thinner", "cooler", "lighter") are left out.

/// The forms and the word (a verb, a noun in the singular, or an adjective) each is a form
/// of, sorted by form (a test checks), so a form is found by binary search.
pub(super) const FORMS: &[(&str, &str)] = &[
    ("ate", "eat"),
    ("became", "become"),
    ("began", "begin"),
    ("begun", "begin"),
    ("bent", "bend"),
    ("bigger", "big"),
    ("biggest", "big"),
    ("bled", "bleed"),
    ("blew", "blow"),
    ("bought", "buy"),
    ("brighter", "bright"),
    ("brightest", "bright"),
    ("broke", "break"),
    ("broken", "break"),
    ("brought", "bring"),
    ("built", "build"),
    ("burnt", "burn"),
    ("busier", "busy"),
    ("busiest", "busy"),
    ("came", "come"),
    ("caught", "catch"),
    ("cheaper", "cheap"),
    ("cheapest", "cheap"),
    ("children", "child"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("cleaner", "clean"),
    ("cleanest", "clean"),
    ("closer", "close"),
    ("closest", "close"),
    ("colder", "cold"),
    ("coldest", "cold"),
    ("darker", "dark"),
    ("darkest", "dark"),
    ("dealt", "deal"),
    ("deeper", "deep"),
    ("deepest", "deep"),
    ("drank", "drink"),
    ("drawn", "draw"),
    ("dreamt", "dream"),
    ("drew", "draw"),
    ("driven", "drive"),
    ("drove", "drive"),
    ("dug", "dig"),
    ("easier", "easy"),
    ("easiest", "easy"),
    ("eaten", "eat"),
    ("fallen", "fall"),
    ("faster", "fast"),
    ("fastest", "fast"),
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
    ("fresher", "fresh"),
    ("freshest", "fresh"),
    ("froze", "freeze"),
    ("frozen", "freeze"),
    ("funnier", "funny"),
    ("funniest", "funny"),
    ("gave", "give"),
    ("geese", "goose"),
    ("given", "give"),
    ("gone", "go"),
    ("got", "get"),
    ("gotten", "get"),
    ("greater", "great"),
    ("greatest", "great"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("halves", "half"),
    ("happier", "happy"),
    ("happiest", "happy"),
    ("harder", "hard"),
    ("hardest", "hard"),
    ("healthier", "healthy"),
    ("healthiest", "healthy"),
    ("heard", "hear"),
    ("heavier", "heavy"),
    ("heaviest", "heavy"),
    ("held", "hold"),
    ("hid", "hide"),
    ("hidden", "hide"),
    ("higher", "high"),
    ("highest", "high"),
    ("hotter", "hot"),
    ("hottest", "hot"),
    ("hung", "hang"),
    ("kept", "keep"),
    ("knew", "know"),
    ("knives", "knife"),
    ("known", "know"),
    ("larger", "large"),
    ("largest", "large"),
    ("learnt", "learn"),
    ("led", "lead"),
    ("lent", "lend"),
    ("loaves", "loaf"),
    ("longer", "long"),
    ("longest", "long"),
    ("lost", "lose"),
    ("louder", "loud"),
    ("loudest", "loud"),
    ("made", "make"),
    ("meant", "mean"),
    ("men", "man"),
    ("met", "meet"),
    ("mice", "mouse"),
    ("newer", "new"),
    ("newest", "new"),
    ("nicer", "nice"),
    ("nicest", "nice"),
    ("older", "old"),
    ("oldest", "old"),
    ("paid", "pay"),
    ("poorer", "poor"),
    ("poorest", "poor"),
    ("prettier", "pretty"),
    ("prettiest", "pretty"),
    ("quieter", "quiet"),
    ("quietest", "quiet"),
    ("ran", "run"),
    ("rang", "ring"),
    ("richer", "rich"),
    ("richest", "rich"),
    ("ridden", "ride"),
    ("rode", "ride"),
    ("safer", "safe"),
    ("safest", "safe"),
    ("said", "say"),
    ("sang", "sing"),
    ("sank", "sink"),
    ("seen", "see"),
    ("sent", "send"),
    ("shelves", "shelf"),
    ("shook", "shake"),
    ("shorter", "short"),
    ("shortest", "short"),
    ("shown", "show"),
    ("simpler", "simple"),
    ("simplest", "simple"),
    ("slept", "sleep"),
    ("slid", "slide"),
    ("slower", "slow"),
    ("slowest", "slow"),
    ("smaller", "small"),
    ("smallest", "small"),
    ("smarter", "smart"),
    ("smartest", "smart"),
    ("softer", "soft"),
    ("softest", "soft"),
    ("sold", "sell"),
    ("sought", "seek"),
    ("spent", "spend"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("stole", "steal"),
    ("stolen", "steal"),
    ("stood", "stand"),
    ("stronger", "strong"),
    ("strongest", "strong"),
    ("struck", "strike"),
    ("sung", "sing"),
    ("swam", "swim"),
    ("sweeter", "sweet"),
    ("sweetest", "sweet"),
    ("swept", "sweep"),
    ("taken", "take"),
    ("taller", "tall"),
    ("tallest", "tall"),
    ("taught", "teach"),
    ("teeth", "tooth"),
    ("thicker", "thick"),
    ("thickest", "thick"),
    ("thieves", "thief"),
    ("thought", "think"),
    ("threw", "throw"),
    ("thrown", "throw"),
    ("tinier", "tiny"),
    ("tiniest", "tiny"),
    ("told", "tell"),
    ("took", "take"),
    ("tougher", "tough"),
    ("toughest", "tough"),
    ("understood", "understand"),
    ("warmer", "warm"),
    ("warmest", "warm"),
    ("weaker", "weak"),
    ("weakest", "weak"),
    ("went", "go"),
    ("wept", "weep"),
    ("wider", "wide"),
    ("widest", "wide"),
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
    ("younger", "young"),
    ("youngest", "young"),
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
