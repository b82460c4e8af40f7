//! British spellings, read as American.
//!
//! A user writes "my favourite colour" and the agent asks its memory for "favorite color":
//! language models mostly write American English, the people they talk to often do not.
//! The stemmer keeps "colour" and "color" apart, so the analyzer reads the common British
//! spellings as the American ones before stemming, with their inflections ("colours",
//! "organised", "travelling", "centres"). Four patterns and a few words of their own:
//!
//! - `-our`: "colour", "favourite", "neighbourhood", read with `-or`;
//! - `-ise` and `-yse`: "organise", "realising", "analysed", read with `-ize`, `-yze`, for
//!   a list of verbs only ("promise", "exercise", "advise" and "surprise" are spelt so in
//!   both), and only before a verb's endings ("organism" is not "organizm");
//! - `-re`: "centre", "theatres", "fibre", "centred", read with `-er`;
//! - a doubled `l` before an ending: "travelled", "cancelling", "modeller", read with one;
//! - words of their own: "grey", "programme", "catalogue", "jewellery", "licence",
//!   "defence", "practise", "mould", "plough", "aluminium", "manoeuvre".
//!
//! Every British spelling listed starts with the same two letters as its American one, so the
//! analyzer's filtered scan, which asks about a word's first two bytes, finds it as the full
//! scan does (a test checks). Forms that are American words of their own are left out
//! ("tyre", "kerb", "cheque" and "storey" are other words in American English), and so are
//! those whose first letters change ("aeroplane", "pyjamas", "moustache", "sceptical").

/// `-our` words: the British root ending in "our". A word that is the root followed by one
/// of [`OUR_ENDINGS`] is read with "or".
const OUR_ROOTS: &[&str] = &[
    "armour",
    "behaviour",
    "candour",
    "clamour",
    "colour",
    "endeavour",
    "favour",
    "flavour",
    "harbour",
    "honour",
    "humour",
    "labour",
    "neighbour",
    "odour",
    "parlour",
    "rumour",
    "savour",
    "splendour",
    "valour",
    "vapour",
    "vigour",
];

const OUR_ENDINGS: &[&str] = &[
    "", "s", "ed", "ing", "ful", "fully", "less", "ite", "ites", "able", "ably", "er", "ers",
    "hood", "hoods", "ly", "y", "al",
];

/// `-ise` and `-yse` verbs: the British root up to its "s". A word that is the root
/// followed by one of [`ISE_ENDINGS`] is read with "z".
const ISE_ROOTS: &[&str] = &[
    "agonis",
    "analys",
    "apologis",
    "authoris",
    "capitalis",
    "categoris",
    "centralis",
    "characteris",
    "civilis",
    "criticis",
    "customis",
    "emphasis",
    "energis",
    "familiaris",
    "finalis",
    "generalis",
    "globalis",
    "harmonis",
    "hospitalis",
    "idealis",
    "immunis",
    "legalis",
    "localis",
    "maximis",
    "memoris",
    "minimis",
    "mobilis",
    "modernis",
    "moisturis",
    "normalis",
    "optimis",
    "organis",
    "paralys",
    "personalis",
    "popularis",
    "prioritis",
    "realis",
    "recognis",
    "sanitis",
    "socialis",
    "specialis",
    "stabilis",
    "standardis",
    "sterilis",
    "summaris",
    "sympathis",
    "symbolis",
    "synchronis",
    "utilis",
    "visualis",
];

const ISE_ENDINGS: &[&str] = &[
    "e", "ed", "es", "ing", "er", "ers", "ation", "ations", "able",
];

/// `-re` words: the British spelling without its "re". A word that is the root and "re",
/// "res" or "red" is read with "er", "ers", "ered" ("centre", "fibres", "centred").
const RE_ROOTS: &[&str] = &[
    "calib", "cent", "fib", "lit", "lust", "meag", "met", "sab", "scept", "somb", "spect", "theat",
];

/// Verbs that double their final `l` in British English: the root with one `l`. A word that
/// is the root, another "l" and one of [`LL_ENDINGS`] is read with one `l`.
const LL_ROOTS: &[&str] = &[
    "cancel", "channel", "counsel", "dial", "duel", "equal", "fuel", "label", "level", "marvel",
    "model", "panel", "pedal", "quarrel", "rival", "shovel", "signal", "snorkel", "travel",
    "total", "tunnel", "yodel",
];

const LL_ENDINGS: &[&str] = &["ed", "ing", "er", "ers", "or", "ors", "ous"];

/// Words of their own, and their American spelling, sorted by the British (a test checks).
pub(super) const WORDS: &[(&str, &str)] = &[
    ("aluminium", "aluminum"),
    ("anaemia", "anemia"),
    ("anaemic", "anemic"),
    ("catalogue", "catalog"),
    ("catalogued", "cataloged"),
    ("catalogues", "catalogs"),
    ("cosy", "cozy"),
    ("defence", "defense"),
    ("defences", "defenses"),
    ("grey", "gray"),
    ("greyish", "grayish"),
    ("jewellery", "jewelry"),
    ("licence", "license"),
    ("licences", "licenses"),
    ("manoeuvre", "maneuver"),
    ("manoeuvres", "maneuvers"),
    ("mould", "mold"),
    ("mouldy", "moldy"),
    ("offence", "offense"),
    ("offences", "offenses"),
    ("plough", "plow"),
    ("practise", "practice"),
    ("practised", "practiced"),
    ("practises", "practices"),
    ("practising", "practicing"),
    ("programme", "program"),
    ("programmes", "programs"),
    ("woollen", "woolen"),
];

/// For each lowercase first letter, a bit per lowercase second letter: set where a British
/// spelling read starts with those two letters. Most words are turned away by it in a few
/// cycles (a query's words may miss the stem cache).
const STARTS: [u32; 26] = starts();

const fn starts() -> [u32; 26] {
    let mut starts = [0u32; 26];
    let lists: [&[&str]; 4] = [OUR_ROOTS, ISE_ROOTS, RE_ROOTS, LL_ROOTS];
    let mut list = 0;
    while list < lists.len() {
        let mut index = 0;
        while index < lists[list].len() {
            let bytes = lists[list][index].as_bytes();
            starts[(bytes[0] - b'a') as usize] |= 1 << (bytes[1] - b'a');
            index += 1;
        }
        list += 1;
    }
    let mut index = 0;
    while index < WORDS.len() {
        let bytes = WORDS[index].0.as_bytes();
        starts[(bytes[0] - b'a') as usize] |= 1 << (bytes[1] - b'a');
        index += 1;
    }
    starts
}

/// The American spelling of `word` (lowercase ASCII), if it is a British one this module
/// reads.
pub(super) fn american(word: &str) -> Option<String> {
    // The shortest British spelling read is "cosy"; the longest root and ending fit in 24.
    if !(4..=24).contains(&word.len()) {
        return None;
    }
    let (first, second) = (word.as_bytes()[0], word.as_bytes()[1]);
    if !first.is_ascii_lowercase()
        || !second.is_ascii_lowercase()
        || STARTS[usize::from(first - b'a')] & (1 << (second - b'a')) == 0
    {
        return None;
    }
    if let Ok(found) = WORDS.binary_search_by(|(british, _)| british.cmp(&word)) {
        return Some(WORDS[found].1.to_owned());
    }
    for root in OUR_ROOTS {
        if let Some(ending) = word.strip_prefix(root)
            && OUR_ENDINGS.contains(&ending)
        {
            let stem = &root[..root.len() - 3];
            return Some(format!("{stem}or{ending}"));
        }
    }
    for root in ISE_ROOTS {
        if let Some(ending) = word.strip_prefix(root)
            && ISE_ENDINGS.contains(&ending)
        {
            let stem = &root[..root.len() - 1];
            return Some(format!("{stem}z{ending}"));
        }
    }
    for root in RE_ROOTS {
        if let Some(ending) = word
            .strip_prefix(root)
            .and_then(|rest| rest.strip_prefix("re"))
            && ["", "s", "d"].contains(&ending)
        {
            let ending = if ending == "d" { "ed" } else { ending };
            return Some(format!("{root}er{ending}"));
        }
    }
    for root in LL_ROOTS {
        if let Some(ending) = word
            .strip_prefix(root)
            .and_then(|rest| rest.strip_prefix('l'))
            && LL_ENDINGS.contains(&ending)
        {
            return Some(format!("{root}{ending}"));
        }
    }
    None
}

/// Every British spelling this module reads (for the analyzer's fingerprint and the tests).
pub(super) fn british_forms() -> impl Iterator<Item = String> {
    let words = WORDS.iter().map(|(british, _)| (*british).to_owned());
    let our = OUR_ROOTS.iter().flat_map(|root| {
        OUR_ENDINGS
            .iter()
            .map(move |ending| format!("{root}{ending}"))
    });
    let ise = ISE_ROOTS.iter().flat_map(|root| {
        ISE_ENDINGS
            .iter()
            .map(move |ending| format!("{root}{ending}"))
    });
    let re = RE_ROOTS
        .iter()
        .flat_map(|root| ["", "s", "d"].map(|ending| format!("{root}re{ending}")));
    let ll = LL_ROOTS.iter().flat_map(|root| {
        LL_ENDINGS
            .iter()
            .map(move |ending| format!("{root}l{ending}"))
    });
    words.chain(our).chain(ise).chain(re).chain(ll)
}
