//! Words the stemmer would merge with a word of another meaning, kept apart.
//!
//! Snowball strips suffixes by rule, and a few common English words lose a suffix that is
//! part of their meaning: "friendly" becomes "friend", so a question about "my friend" met
//! every "family-friendly restaurant" and "eco-friendly" product before the memory telling
//! of a friend; "publication" becomes "public", "experiment" and "experience" both become
//! "experi", "business" becomes "busi" with "busy", "several" becomes "sever" with
//! "severe", "position" becomes "posit" with "positive", "important" becomes "import",
//! "digital" becomes "digit", "polite" becomes "polit" with "politics".
//! The analyzer reads each form listed here as the term given, never stemmed: a term of its
//! own, or the term of the word it does belong with ("publication" with "publish",
//! "conversion" with "convert").
//!
//! The list holds such merges among the common words of conversational English: adjectives
//! made from nouns with "-ly" ("friendly", "lovely", "lively"), adverbs whose meaning has
//! left their adjective ("hardly", "lately", "nearly", "shortly", "barely", "really"), and
//! nouns whose Snowball stem is another word's ("seasoning" is not "season", "topping" is
//! not "top"). It leaves out merges that are a matter of degree ("weekly" and "week",
//! "costly" and "cost", "fitness" and "fit") and "likely", which stays with "like": a
//! question hedging with "likely" ("would Melanie likely enjoy...") met the memory saying
//! what she likes, and keeping it apart lost two such questions' evidence on the
//! conversational benchmark (benches/README.md).
//!
//! Every term keeps its form's first two letters and is never longer than it (a test
//! checks), which the analyzer's filtered scan relies on.

/// The forms and the term each is read as, sorted by form (a test checks), so a form is
/// found by binary search.
pub(super) const FORMS: &[(&str, &str)] = &[
    ("animal", "animal"),
    ("animals", "animal"),
    ("authorities", "authority"),
    ("authority", "authority"),
    ("barely", "barely"),
    ("business", "business"),
    ("businesses", "business"),
    ("conversion", "convert"),
    ("conversions", "convert"),
    ("customer", "customer"),
    ("customers", "customer"),
    ("definitely", "definitely"),
    ("digital", "digital"),
    ("digitally", "digital"),
    ("experiment", "experiment"),
    ("experimental", "experiment"),
    ("experimentation", "experiment"),
    ("experimented", "experiment"),
    ("experimenting", "experiment"),
    ("experiments", "experiment"),
    ("friendly", "friendly"),
    ("hardly", "hardly"),
    ("hospitality", "hospitality"),
    ("importance", "important"),
    ("important", "important"),
    ("importantly", "important"),
    ("lately", "lately"),
    ("lively", "lively"),
    ("lovely", "lovely"),
    ("marinate", "marinate"),
    ("marinated", "marinate"),
    ("marinates", "marinate"),
    ("marinating", "marinate"),
    ("nearly", "nearly"),
    ("organic", "organic"),
    ("polite", "polite"),
    ("politely", "polite"),
    ("politeness", "polite"),
    ("position", "position"),
    ("positioned", "position"),
    ("positioning", "position"),
    ("positions", "position"),
    ("publication", "publish"),
    ("publications", "publish"),
    ("really", "really"),
    ("seasoning", "seasoning"),
    ("seasonings", "seasoning"),
    ("several", "several"),
    ("shortly", "shortly"),
    ("topping", "topping"),
    ("toppings", "topping"),
    ("wellness", "wellness"),
    ("wonderful", "wonderful"),
    ("wonderfully", "wonderful"),
];

/// The term `word` (lowercase ASCII) is read as when the stemmer would merge it with a word
/// of another meaning.
pub(super) fn term(word: &str) -> Option<&'static str> {
    // No form is shorter than six bytes or longer than fifteen.
    if !(6..=15).contains(&word.len()) {
        return None;
    }
    FORMS
        .binary_search_by(|(form, _)| form.cmp(&word))
        .ok()
        .map(|found| FORMS[found].1)
}
