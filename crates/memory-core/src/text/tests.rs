//! Unit tests of the text analyzer: English and CJK terms, stop words, odd input.

use super::stop::STOP_SLOTS;
use super::*;

#[test]
fn stop_words_are_sorted_for_binary_search() {
    let mut sorted = STOP_WORDS.to_vec();
    sorted.sort_unstable();
    assert_eq!(sorted, STOP_WORDS);
}

#[test]
fn english() {
    let analyzer = Analyzer::default();
    let cases: &[(&str, &[&str])] = &[
        ("The cats are running!", &["cat", "run"]),
        (
            "Caroline's adoption agencies",
            &["carolin", "adopt", "agenc"],
        ),
        (
            "I'm going to the LGBTQ support group",
            &["go", "lgbtq", "support", "group"],
        ),
        ("version 3.5 of GPT-4", &["version", "35", "gpt", "4"]),
        ("", &[]),
        ("  !!! ", &[]),
    ];
    for (text, want) in cases {
        assert_eq!(analyzer.terms(text), *want, "{text}");
    }
    assert_eq!(Analyzer::plain().terms("The Cats"), ["the", "cats"]);
}

#[test]
fn cjk() {
    let analyzer = Analyzer::default();
    assert_eq!(
        analyzer.terms("LangGraph 的 StateGraph 状态管理原理？"),
        [
            "langgraph",
            "stategraph",
            "状态",
            "态管",
            "管理",
            "理原",
            "原理"
        ]
    );
    assert_eq!(analyzer.terms("猫"), ["猫"]);
    assert_eq!(analyzer.terms("的"), Vec::<String>::new());
    assert_eq!(
        analyzer.terms("用户喜欢Rust编程"),
        ["用户", "户喜", "喜欢", "rust", "编程"]
    );
}

#[test]
fn odd_input_never_panics() {
    let analyzer = Analyzer::default();
    let long = "a".repeat(100);
    for text in [
        "\u{0}\u{1}",
        "🙂🙂 emoji",
        "Ünïcödé ÇAFÉ",
        "ﾃｽﾄ",
        "\u{202e}rtl",
        long.as_str(),
    ] {
        let _ = analyzer.terms(text);
    }
    assert!(analyzer.terms(&long).is_empty());
    assert_eq!(analyzer.terms("ÇAFÉ"), ["çafé"]);
}

/// A word is one term however it was typed: composed or decomposed accents, full-width
/// or ligature letters, a final sigma or a capital one, `ß` or `SS`, the Turkish dotted
/// capital. So a memory is found by its own words written another way.
#[test]
fn a_word_is_one_term_however_it_is_typed() {
    let analyzer = Analyzer::default();
    for (one, other) in [
        ("café", "cafe\u{301}"),
        ("CAFÉ", "cafe\u{301}"),
        ("ΝΊΚΟΣ", "Νίκος"),
        ("Straße", "STRASSE"),
        ("İstanbul", "istanbul"),
        ("ＧＰＴ４", "gpt4"),
        ("ﬁle", "file"),
        ("ｃａｔｓ", "cat"),
    ] {
        assert_eq!(
            analyzer.terms(one),
            analyzer.terms(other),
            "{one} / {other}"
        );
        assert!(!analyzer.terms(one).is_empty(), "{one}");
    }
    assert_ne!(analyzer.terms("Paris"), analyzer.terms("Pâris"));
}

/// A word joined by `.`, `:` or `_` is its pieces, each found by its own word: a missing
/// space after a full stop, an address, an identifier. Numbers stay whole.
#[test]
fn joined_words_are_their_pieces() {
    let analyzer = Analyzer::default();
    for (joined, apart) in [
        (
            "She moved to Paris.She loves it",
            "She moved to Paris. She loves it",
        ),
        ("jane.doe@acme.com", "jane doe @ acme com"),
        ("snake_case", "snake case"),
        ("file_name.py", "file name py"),
        ("note:urgent", "note urgent"),
        ("Mr.Smith's car", "Mr. Smith's car"),
        ("__init__", "init"),
        ("Ünïcödé_Straße.ΝΊΚΟΣ", "Ünïcödé Straße ΝΊΚΟΣ"),
    ] {
        assert_eq!(analyzer.terms(joined), analyzer.terms(apart), "{joined}");
    }
    assert_eq!(analyzer.terms("version 3.5"), ["version", "35"]);
    assert_eq!(analyzer.terms("v1.2_beta"), analyzer.terms("v12 beta"));
    // However many pieces a word has, it is read without recursion.
    let long = "ab_".repeat(200_000);
    let terms = analyzer.terms(&long);
    assert_eq!(terms.len(), 200_000);
    assert!(terms.iter().all(|term| term == "ab"));
}

/// The next value of a xorshift generator: generated test text, the same on every run.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn ascii_fast_path_matches_unicode_segmentation() {
    let alphabet: &[u8] = b"aZ9_'.:,;- \n!@\"x1";
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        let seed = xorshift(&mut seed);
        let len = (seed % 12) as usize;
        let text: String = (0..len)
            .map(|i| alphabet[((seed >> (i * 5)) % alphabet.len() as u64) as usize] as char)
            .collect();
        let slow: Vec<&str> = text
            .split_word_bounds()
            .filter(|segment| segment.chars().any(char::is_alphanumeric))
            .collect();
        let mut fast = Vec::new();
        ascii_words(&text, |segment, plain| {
            let alphanumeric = segment.bytes().all(|byte| byte.is_ascii_alphanumeric());
            assert_eq!(plain, alphanumeric, "{segment:?}");
            fast.push(segment);
        });
        assert_eq!(fast, slow, "{text:?}");
    }
    for text in [
        "can't",
        "3.5 a.b.c 1,000,000 a:b 1:2 a'1 __x x__ a.1",
        "title:x* \"q\"",
    ] {
        let slow: Vec<&str> = text
            .split_word_bounds()
            .filter(|s| s.chars().any(char::is_alphanumeric))
            .collect();
        let mut fast = Vec::new();
        ascii_words(text, |segment, _| fast.push(segment));
        assert_eq!(fast, slow, "{text:?}");
    }
}

#[test]
fn surface() {
    assert_eq!(
        surface_words("StateGraph 状态管理, Hello"),
        ["stategraph", "状态管理", "hello"]
    );
}

#[test]
fn query_terms_keep_each_term_once_in_order_of_first_use() {
    let analyzer = Analyzer::default();
    // Few terms (scanned) and many (hashed once there are more than a few), each repeated.
    for count in [3usize, 15, 16, 17, 60, 200] {
        let words: Vec<String> = (0..count).map(|i| format!("w{i}x")).collect();
        let text = format!("{} {}", words.join(" "), words.join(" "));
        let mut expected: Vec<String> = Vec::new();
        analyzer.for_each_term(&text, |term| {
            if !expected.iter().any(|kept| kept == term) {
                expected.push(term.to_owned());
            }
        });
        expected.truncate(MAX_QUERY_TERMS);
        assert_eq!(analyzer.query_terms(&text), expected, "{count} words");
        assert_eq!(
            analyzer.query_terms(&text).len(),
            count.min(MAX_QUERY_TERMS)
        );
    }
    assert_eq!(
        analyzer.query_terms("Cats cat CAT cats' dogs"),
        ["cat", "dog"]
    );
}

#[test]
fn an_english_stem_keeps_its_first_two_letters_and_is_never_longer() {
    // The words the Snowball English stemmer changes most: its exceptions, "y" endings,
    // doubled consonants and long derivational suffixes. An irregular verb form is stemmed
    // as its verb, whose letters the stem keeps.
    let words = [
        "dying",
        "lying",
        "tying",
        "skies",
        "skis",
        "idly",
        "gently",
        "ugly",
        "early",
        "only",
        "singly",
        "news",
        "howe",
        "atlas",
        "cosmos",
        "bias",
        "andes",
        "inning",
        "outing",
        "canning",
        "herring",
        "earring",
        "proceed",
        "exceed",
        "succeed",
        "happiness",
        "generously",
        "conditional",
        "relational",
        "agreed",
        "feed",
        "bled",
        "hopping",
        "fizzed",
        "yearly",
        "yelling",
        "ycleped",
        "abeyance",
        "communism",
        "generalization",
        "arsenal",
        "sensibility",
        "cried",
        "ties",
        "says",
        "flies",
        "running",
        "caresses",
    ];
    let analyzer = Analyzer::default();
    let forms = super::irregular::FORMS.iter().map(|(form, _)| *form);
    for written in words.into_iter().chain(forms) {
        let word = super::irregular::lemma(written).unwrap_or(written);
        for stem in analyzer.terms(written) {
            let (stem_bytes, word_bytes) = (stem.as_bytes(), word.as_bytes());
            assert_eq!(stem_bytes[0], word_bytes[0], "{word} -> {stem}");
            let second = (stem_bytes[1], word_bytes[1]);
            assert!(
                second.0 == second.1 || second == (b'i', b'y'),
                "{word} -> {stem}"
            );
            assert!(stem.len() <= word.len(), "{word} -> {stem}");
        }
    }
}

#[test]
fn a_filtered_scan_finds_the_same_terms_at_the_same_positions() {
    let analyzer = Analyzer::default();
    // Unicode text, segmented by UAX #29; then ASCII text, where words of letters and digits
    // turned away by the filter are never copied (upper case, stop words in capitals,
    // digits, possessives, joiners and underscores around them).
    let texts = [
        "Yesterday I was lying in the skies of Caroline's dreams, running and crying; \
         the agencies' generously funded adoption programs. 東京で日本語 ÇAFÉ résumé 3.5 GPT-4 \
         she went, he bought; Ran's Went’s",
        "YESTERDAY The Lying THE skies OF Caroline's DREAMS, Running AND crying; THE \
         agencies' Generously funded ADOPTION programs 3.5 GPT-4 snake_case a:b 35 Dying x \
         WENT Bought ran GONE",
    ];
    // "went" and "ran" start otherwise than "go" and "run": the filter is asked again.
    let sought = [
        "lie", "sky", "run", "adopt", "generous", "caf", "35", "日本", "die", "x", "go", "buy",
    ];
    let wanted: Vec<String> = sought
        .iter()
        .flat_map(|word| analyzer.terms(word))
        .collect();
    let mut first = [false; 256];
    for term in &wanted {
        first[usize::from(term.as_bytes()[0])] = true;
    }
    for text in texts {
        let all: Vec<(usize, String)> = analyzer
            .terms(text)
            .into_iter()
            .enumerate()
            .filter(|(_, term)| wanted.contains(term))
            .collect();
        let mut found = Vec::new();
        let position = std::cell::Cell::new(0usize);
        let mut stemmed = 0;
        analyzer.for_each_term_where(
            text,
            |byte, _| first[usize::from(byte)],
            |term| {
                stemmed += 1;
                if wanted.iter().any(|wanted| wanted == term) {
                    found.push((position.get(), term.to_owned()));
                }
                position.set(position.get() + 1);
            },
            || position.set(position.get() + 1),
        );
        assert_eq!(found, all, "{text}");
        assert!(all.len() >= 6, "{all:?}");
        assert_eq!(position.get(), analyzer.terms(text).len(), "{text}");
        assert!(stemmed < position.get(), "some words were skipped");
    }
}

#[test]
fn the_filter_sees_the_first_two_bytes_of_the_lowercased_word() {
    let analyzer = Analyzer::default();
    for text in ["Running x GPT4 Caroline's", "Running x GPT4 Caroline's 東"] {
        let mut seen = Vec::new();
        analyzer.for_each_term_where(
            text,
            |first, second| {
                seen.push((first, second));
                false
            },
            |_| {},
            || {},
        );
        assert_eq!(
            seen,
            [(b'r', b'u'), (b'x', 0), (b'g', b'p'), (b'c', b'a')][..],
            "{text}"
        );
    }
}

#[test]
fn the_stop_word_table_holds_exactly_the_stop_words() {
    assert!(
        STOP_WORDS.len() * 2 < STOP_SLOTS,
        "the table stays under half full"
    );
    for word in STOP_WORDS {
        assert!(is_stop_word(word), "{word}");
    }
    let mut others: Vec<String> = Vec::new();
    for word in STOP_WORDS {
        others.push(format!("{word}s"));
        others.push(format!("{word}\0"));
        others.push(word[..word.len() - 1].to_owned());
        others.push(word.to_uppercase());
    }
    for word in &others {
        let expected = STOP_WORDS.contains(&word.as_str());
        assert_eq!(is_stop_word(word), expected, "{word:?}");
    }
    // Words of ASCII letters and digits in any case, as the filtered scan asks before
    // lowercasing them.
    for word in STOP_WORDS.iter().map(|word| word.to_string()).chain(others) {
        if !word.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
            continue;
        }
        let expected = STOP_WORDS.contains(&word.to_ascii_lowercase().as_str());
        for spelled in [word.clone(), word.to_ascii_uppercase(), capitalized(&word)] {
            assert_eq!(
                stop::is_plain_stop_word(spelled.as_bytes()),
                expected,
                "{spelled:?}"
            );
        }
    }
    assert!(!stop::is_plain_stop_word(b""));
    for word in [
        "",
        "caroline",
        "adoption",
        "aaaaaaaaaaaaaaaaaaaaaaaa",
        "é",
        "the the",
    ] {
        assert!(!is_stop_word(word), "{word:?}");
    }
}

/// `word` with its first letter in upper case.
fn capitalized(word: &str) -> String {
    let mut out = word.to_owned();
    if let Some(first) = out.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    out
}

/// What [`Analyzer::scan`] reports for `text`: each term, and `None` for each word skipped.
fn scanned(analyzer: &Analyzer, text: &str, filter: fn(u8, u8) -> bool) -> Vec<Option<String>> {
    let out = std::cell::RefCell::new(Vec::new());
    analyzer.scan(
        text,
        filter,
        |term| out.borrow_mut().push(Some(term.to_owned())),
        || out.borrow_mut().push(None),
    );
    out.into_inner()
}

/// The same, every word read the Unicode way.
fn scanned_unicode(
    analyzer: &Analyzer,
    text: &str,
    mut filter: fn(u8, u8) -> bool,
) -> Vec<Option<String>> {
    let out = std::cell::RefCell::new(Vec::new());
    analyzer.scan_unicode(
        text,
        &mut Vec::new(),
        &mut String::new(),
        &mut filter,
        &mut |term| out.borrow_mut().push(Some(term.to_owned())),
        &mut || out.borrow_mut().push(None),
    );
    out.into_inner()
}

#[test]
fn mixed_text_reads_as_the_unicode_path_reads_it() {
    // ASCII that joins or splits words, whitespace, and characters that are not ASCII:
    // accented letters, a curly apostrophe, a dash, CJK, a combining accent, a zero-width
    // joiner, an emoji, a Devanagari vowel sign, a no-break space.
    let pieces: &[&str] = &[
        "a",
        "Z",
        "9",
        "_",
        "'",
        ".",
        ":",
        ",",
        " ",
        "  ",
        "\n",
        "\r\n",
        "\u{c}",
        "\t",
        "-",
        "x1",
        "é",
        "É",
        "’",
        "—",
        "中",
        "文",
        "\u{301}",
        "\u{200d}",
        "🙂",
        "\u{93e}",
        "\u{a0}",
        "ß",
        "running",
        "the",
        "Café",
        "don’t",
        "3.5",
        "colour",
        "Travelled",
        "organised",
        "centre",
    ];
    let filters: [fn(u8, u8) -> bool; 2] = [|_, _| true, |first, _| first == b'r' || first == b'c'];
    let analyzers = [Analyzer::default(), Analyzer::plain()];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for round in 0..40_000 {
        let seed = xorshift(&mut seed);
        let len = (seed % 14) as usize;
        let mut pick = seed;
        let text: String = (0..len)
            .map(|_| {
                pick = pick.rotate_left(7) ^ 0x9e37_79b9_7f4a_7c15;
                pieces[(pick % pieces.len() as u64) as usize]
            })
            .collect();
        let analyzer = &analyzers[round % 2];
        let filter = filters[(round / 2) % 2];
        assert_eq!(
            scanned(analyzer, &text, filter),
            scanned_unicode(analyzer, &text, filter),
            "{text:?}"
        );
    }
}

#[test]
fn an_irregular_verb_form_is_read_as_its_verb() {
    let analyzer = Analyzer::default();
    for (form, verb) in [
        ("went", "going"),
        ("bought", "buys"),
        ("Met", "meeting"),
        ("won", "win"),
        ("flew", "flying"),
        ("written", "writes"),
        ("chose", "choosing"),
        ("children", "child"),
        ("Feet", "foot"),
    ] {
        assert_eq!(analyzer.terms(form), analyzer.terms(verb), "{form}");
    }
    // Comparatives and superlatives are read as their adjective.
    for (form, adjective) in [
        ("older", "old"),
        ("Youngest", "young"),
        ("bigger", "big"),
        ("cheapest", "cheap"),
        ("heavier", "heavy"),
    ] {
        assert_eq!(analyzer.terms(form), analyzer.terms(adjective), "{form}");
    }
    assert_eq!(analyzer.terms("earlier"), ["earlier"]);
    // Words that are as often something else are left alone, and nothing is read as a verb
    // without stemming.
    assert_eq!(analyzer.terms("saw left"), ["saw", "left"]);
    assert_eq!(Analyzer::plain().terms("went"), ["went"]);
    // The table: sorted forms (binary search), lowercase, distinct from their verbs, no stop
    // words, and between three and ten bytes (the bounds `lemma` checks first).
    let forms = super::irregular::FORMS;
    assert!(forms.windows(2).all(|pair| pair[0].0 < pair[1].0));
    for (form, verb) in forms {
        assert!(form.bytes().all(|byte| byte.is_ascii_lowercase()), "{form}");
        assert!(verb.bytes().all(|byte| byte.is_ascii_lowercase()), "{verb}");
        assert_ne!(form, verb);
        assert!(!is_stop_word(form), "{form}");
        assert!((3..=10).contains(&form.len()), "{form}");
        assert_eq!(super::irregular::lemma(form), Some(*verb));
    }
    // Every form whose verb starts otherwise is flagged for the filter's second question.
    for (form, verb) in forms {
        let (form, verb) = (form.as_bytes(), verb.as_bytes());
        if form[..2] != verb[..2] {
            assert!(super::irregular::may_start_differently(form[0], form[1]));
        }
    }
    assert!(!super::irregular::may_start_differently(b'r', b'u'));
    assert!(!super::irregular::may_start_differently(b'3', b'5'));
}

#[test]
fn a_british_spelling_is_read_as_the_american() {
    let analyzer = Analyzer::default();
    for (british, american) in [
        ("colour", "color"),
        ("Favourite", "favorite"),
        ("neighbourhood", "neighborhood"),
        ("organised", "organized"),
        ("realising", "realizing"),
        ("analysed", "analyzed"),
        ("centres", "centers"),
        ("theatre", "theater"),
        ("fibre", "fiber"),
        ("travelled", "traveled"),
        ("travelling", "traveling"),
        ("cancelled", "canceled"),
        ("grey", "gray"),
        ("programme", "program"),
        ("jewellery", "jewelry"),
        ("practising", "practicing"),
    ] {
        assert_eq!(
            analyzer.terms(british),
            analyzer.terms(american),
            "{british}"
        );
    }
    // Words spelt so on both sides of the Atlantic, and words that only look like a root
    // with an ending, are left alone.
    for (word, stem) in [
        ("promise", "promis"),
        ("exercise", "exercis"),
        ("colourist", "colourist"),
        ("meter", "meter"),
    ] {
        assert_eq!(analyzer.terms(word), [stem], "{word}");
    }
    assert_eq!(Analyzer::plain().terms("colour"), ["colour"]);
    // The table of words of their own is sorted (binary search); every spelling read keeps
    // its first two letters, so the filtered scan finds it, and its stem keeps them too.
    let table = super::spelling::WORDS;
    assert!(table.windows(2).all(|pair| pair[0].0 < pair[1].0));
    let words: Vec<String> = super::spelling::british_forms().collect();
    assert!(words.len() > 500, "{}", words.len());
    for british in &words {
        let american =
            super::spelling::american(british).unwrap_or_else(|| panic!("{british} is not read"));
        assert_ne!(&american, british);
        assert_eq!(
            american.as_bytes()[..2],
            british.as_bytes()[..2],
            "{british}"
        );
        assert!(!is_stop_word(british), "{british}");
        for stem in analyzer.terms(british) {
            assert_eq!(
                stem.as_bytes()[..2],
                british.as_bytes()[..2],
                "{british} -> {stem}"
            );
            assert!(stem.len() <= british.len(), "{british} -> {stem}");
        }
    }
    let filtered = |text: &str| {
        let mut found = Vec::new();
        analyzer.for_each_term_where(
            text,
            |first, _| first == b'c',
            |t| found.push(t.to_owned()),
            || {},
        );
        found
    };
    assert_eq!(filtered("the colours were grey"), analyzer.terms("colors"));
}

#[test]
fn a_word_the_stemmer_would_merge_with_another_meaning_is_kept_apart() {
    let analyzer = Analyzer::default();
    // Each pair stems to one term with Snowball alone.
    for (word, other) in [
        ("friendly", "friends"),
        ("eco-friendly", "friend"),
        ("publications", "public"),
        ("experiments", "experience"),
        ("business", "busy"),
        ("several", "severe"),
        ("position", "positive"),
        ("important", "imports"),
        ("seasoning", "season"),
        ("toppings", "top"),
        ("lately", "late"),
        ("really", "real"),
        ("digital", "digit"),
        ("politeness", "politics"),
    ] {
        assert_ne!(analyzer.terms(word), analyzer.terms(other), "{word}");
        assert_eq!(
            Analyzer::default().terms(&format!("{word} {other}")).len(),
            analyzer.terms(word).len() + analyzer.terms(other).len()
        );
    }
    // The forms of one word still meet, and a form read with the word it belongs with
    // meets that word.
    for (form, word) in [
        ("Friendly", "friendly"),
        ("importance", "importantly"),
        ("experimenting", "experiment"),
        ("businesses", "business"),
        ("publication", "published"),
        ("conversions", "convert"),
        ("marinated", "marinating"),
    ] {
        assert_eq!(analyzer.terms(form), analyzer.terms(word), "{form}");
    }
    // Merges of degree stay: "weekly" is about weeks, and "likely" stays with "like".
    assert_eq!(analyzer.terms("weekly"), analyzer.terms("week"));
    assert_eq!(analyzer.terms("likely"), analyzer.terms("like"));
    assert_eq!(Analyzer::plain().terms("friendly"), ["friendly"]);
    // The table: sorted forms (binary search), lowercase, no stop words, between six and
    // fifteen bytes (the bounds `term` checks first); each term keeps its form's first two
    // letters (the filtered scan asks about them) and is never longer.
    let forms = super::apart::FORMS;
    assert!(forms.windows(2).all(|pair| pair[0].0 < pair[1].0));
    for (form, term) in forms {
        assert!(form.bytes().all(|byte| byte.is_ascii_lowercase()), "{form}");
        assert!(!is_stop_word(form), "{form}");
        assert!((6..=15).contains(&form.len()), "{form}");
        assert_eq!(form.as_bytes()[..2], term.as_bytes()[..2], "{form}");
        assert!(term.len() <= form.len(), "{form}");
        assert_eq!(super::apart::term(form), Some(*term));
        assert_eq!(analyzer.terms(form), [*term]);
    }
}
