//! Tests of the BM25 index: hand-checked scores, and every search path against exhaustive
//! ranking.

use super::*;

thread_local! {
    /// How often this thread's dense searches took the pruned path.
    pub(super) static PRUNED_DENSE: Cell<usize> = const { Cell::new(0) };
    /// How many times a MaxScore walk skipped the rest of a block of postings.
    pub(super) static BLOCKS_SKIPPED: Cell<usize> = const { Cell::new(0) };
}

fn search(index: &Bm25Index<1>, text: &str) -> Vec<(f32, u32)> {
    let mut hits = Vec::new();
    index.score_terms(&index.query_terms(text), |slot, score| {
        hits.push((score, slot))
    });
    top_k(hits, 10)
}

#[test]
fn hand_checked_ranking() {
    // Hand-checked corpus: doc 0 mentions "rust" twice in a short text, doc 1 once in a
    // long text, doc 2 never; "rust" is rarer than "language".
    let mut index = Bm25Index::new(Analyzer::default(), [1.0]);
    index.insert(0, "a", ["rust rust compiler"]);
    index.insert(
        1,
        "b",
        ["rust is a language with a long description of many language features"],
    );
    index.insert(2, "c", ["python language"]);
    let hits = search(&index, "rust");
    assert_eq!(hits.iter().map(|h| h.1).collect::<Vec<_>>(), [0, 1]);
    // idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6)
    let idf = 1.6f32.ln();
    let avg = (3.0 + 7.0 + 2.0) / 3.0; // analyzed lengths: 3, 7 (stop words dropped), 2
    let tf0 = 2.0 / (1.0 - B + B * 3.0 / avg);
    let want0 = idf * tf0 / (K1 + tf0);
    assert!((hits[0].0 - want0).abs() < 1e-5, "{} vs {want0}", hits[0].0);
    let hits = search(&index, "language rust");
    assert_eq!(hits[0].1, 1, "the doc with both terms wins");
    index.remove(1);
    assert_eq!(
        search(&index, "rust")
            .iter()
            .map(|h| h.1)
            .collect::<Vec<_>>(),
        [0]
    );
    assert_eq!(index.len(), 2);
    index.insert(0, "a", ["now about go"]);
    assert!(
        search(&index, "rust").is_empty(),
        "re-inserting a slot replaces its terms"
    );
    assert!(search(&index, "").is_empty());
}

#[test]
fn pruned_top_k_equals_exhaustive_ranking() {
    use memory_core::text::Analyzer;
    let words = [
        "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta",
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for round in 0..1200 {
        // Even rounds take the pruning path, odd rounds the small-index path.
        let small = if round % 2 == 0 { 0 } else { SMALL_INDEX_DOCS };
        let mut index = Bm25Index::new(Analyzer::plain(), [1.0, 0.3]).with_small_index_docs(small);
        // Some rounds span many blocks of postings, so whole blocks are skipped.
        let docs = 1 + next(if round % 5 == 4 { 900 } else { 120 });
        let mut ids = Vec::new();
        for slot in 0..docs {
            // Skewed word choice so some terms are frequent and some rare.
            let mut text: Vec<&str> = (0..1 + next(12))
                .map(|_| words[next(words.len()).min(next(words.len()))])
                .collect();
            // Some rounds have a word in every document, as a speaker's name is in
            // every turn of a conversation.
            if round % 4 == 1 {
                text.push("speaker");
            }
            let context: Vec<&str> = (0..next(4)).map(|_| words[next(words.len())]).collect();
            // Ids that differ in their first 8 bytes, and ids that share them (ties then
            // need the whole id).
            let id = if round % 3 == 0 {
                format!("shared-prefix-{:03}", (slot * 7919) % 1000)
            } else {
                format!("id{:03}", (slot * 7919) % 1000)
            };
            index.insert(slot as u32, &id, [&text.join(" "), &context.join(" ")]);
            ids.push(id);
        }
        for _ in 0..next(docs / 3 + 1) {
            index.remove(next(docs) as u32);
        }
        // Some freed slots are filled again: their postings go back inside the lists.
        if round % 2 == 0 {
            for _ in 0..next(docs / 6 + 1) {
                let slot = next(docs);
                let text: Vec<&str> = (0..1 + next(6)).map(|_| words[next(words.len())]).collect();
                index.insert(slot as u32, &ids[slot], [&text.join(" "), ""]);
            }
        }
        index.check_blocks();
        let mut query: Vec<String> = (0..1 + next(4))
            .map(|_| words[next(words.len())].to_owned())
            .collect();
        if round % 4 == 1 && next(2) == 0 {
            query.push("speaker".to_owned());
        }
        let k = 1 + next(15);
        let odd_only = round % 3 == 0 || round % 7 == 0;
        // Every match scored, passed through `weigh`, sorted: the reference of the pruned walks.
        let exhaustive = |weigh: &dyn Fn(u32, f32) -> Option<f32>| {
            let mut all = Vec::new();
            index.score_terms(&index.query_terms(&query.join(" ")), |slot, score| {
                if let Some(score) = weigh(slot, score) {
                    all.push((score, slot));
                }
            });
            all.sort_by(|a: &(f32, u32), b: &(f32, u32)| {
                b.0.total_cmp(&a.0)
                    .then_with(|| ids[a.1 as usize].cmp(&ids[b.1 as usize]))
            });
            all.truncate(k);
            all
        };
        let all = exhaustive(&|slot, score| (!odd_only || slot % 2 == 1).then_some(score));
        let pruned = index.top_k(
            &index.query_terms(&query.join(" ")),
            k,
            |slot| !odd_only || slot % 2 == 1,
            |slot| ids.get(slot as usize).map(String::as_str),
        );
        let want: Vec<u32> = all.iter().map(|h| h.1).collect();
        let got: Vec<u32> = pruned.iter().map(|h| h.1).collect();
        assert_eq!(
            got, want,
            "round {round}: query {query:?}, k {k}: {pruned:?} {all:?}"
        );
        for (a, b) in pruned.iter().zip(&all) {
            assert_eq!(a.0.to_bits(), b.0.to_bits(), "round {round}: the same bits");
        }
        // Some rounds ask for every match: no size is computed from `k` unchecked.
        if round % 10 == 9 {
            let mut every = 0;
            index.score_terms(&index.query_terms(&query.join(" ")), |slot, _| {
                every += usize::from(!odd_only || slot % 2 == 1);
            });
            let got = index.top_k(
                &index.query_terms(&query.join(" ")),
                usize::MAX,
                |slot| !odd_only || slot % 2 == 1,
                |slot| ids.get(slot as usize).map(String::as_str),
            );
            assert_eq!(got.len(), every, "round {round}: every match");
            assert_eq!(got[..all.len()], all[..], "round {round}: the best first");
        }
        // Weighted: factors that reorder the matches (up to 2.25), and slots left out.
        let accept = |slot: u32| !slot.is_multiple_of(11);
        let factor = |slot: u32, score: f32| match slot % 13 {
            0 => score * 2.25,
            1 => score * 1.5,
            _ => score,
        };
        let weighted =
            exhaustive(&|slot: u32, score: f32| accept(slot).then(|| factor(slot, score)));
        // Some calls say "below what is needed" when the factor cannot lift the score there.
        let got = index.top_k_weighted(
            &index.query_terms(&query.join(" ")),
            k,
            2.25,
            accept,
            |slot, score, needed| {
                let weighed = factor(slot, score);
                (weighed >= needed || slot % 3 != 0).then_some(weighed)
            },
            |slot| ids.get(slot as usize).map(String::as_str),
        );
        assert_eq!(
            got, weighted,
            "round {round}: weighted, query {query:?}, k {k}"
        );
    }
    // Both small-index paths ran: the pruned one (rare terms first) and the full one.
    let pruned = PRUNED_DENSE.with(Cell::get);
    assert!(pruned >= 15, "the pruned dense path ran {pruned} times");
    // And the walks skipped blocks of postings by their bounds.
    let skipped = BLOCKS_SKIPPED.with(Cell::get);
    assert!(skipped >= 10, "blocks were skipped {skipped} times");
}

#[test]
fn tie_keys_order_like_ids() {
    let ids = [
        "",
        "a",
        "ab",
        "abc",
        "abcdefgh",
        "abcdefghi",
        "abcdefgz",
        "abcdefghijklmnop",
        "abcdefghijklmnoq",
        "abcdefghijklmnopq",
        "b",
        "é",
        "\u{1}",
    ];
    for a in ids {
        for b in ids {
            let (ka, kb) = (tie_key(a), tie_key(b));
            if ka != kb {
                assert_eq!(ka.cmp(&kb), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }
    // Ids that share their first eight bytes (generated ids written within 17 seconds of
    // each other do) are still told apart by the key.
    assert!(tie_key("0005ad1c2e3f4a01") < tie_key("0005ad1c2e3f4a02"));
}

/// A field longer than a posting can hold is scored from the dense lengths.
#[test]
fn long_fields_score_exactly() {
    let mut index = Bm25Index::new(Analyzer::plain(), [1.0]);
    let long = "filler ".repeat(70_000) + "needle";
    index.insert(0, "a", [&long]);
    index.insert(1, "b", ["needle in a short text"]);
    let hits = search(&index, "needle");
    assert_eq!(hits.iter().map(|h| h.1).collect::<Vec<_>>(), [1, 0]);
    let mut exhaustive = Vec::new();
    index.score_terms(&index.query_terms("needle"), |slot, score| {
        exhaustive.push((slot, score));
    });
    exhaustive.sort_by_key(|(slot, _)| *slot);
    assert_eq!(hits[1].0, exhaustive[0].1);
    // Length 70,001 in the score, not 65,535: shorter than that would score higher.
    let n = 2.0f32;
    let avg = (70_001.0 + 5.0) / n;
    let idf = ((n - 2.0 + 0.5) / (2.0 + 0.5f32)).ln_1p();
    let weighted = 1.0 / ((1.0 - B) + B * 70_001.0 / avg);
    assert!((exhaustive[0].1 - idf * weighted / (K1 + weighted)).abs() < 1e-6);
}

#[test]
fn fields_weigh() {
    let mut index = Bm25Index::new(Analyzer::default(), [3.0, 1.0]);
    index.insert(0, "a", ["graph", "other words here"]);
    index.insert(1, "b", ["other", "graph words here"]);
    let mut hits = Vec::new();
    index.score_terms(&index.query_terms("graph"), |slot, score| {
        hits.push((score, slot))
    });
    assert_eq!(
        top_k(hits, 2)[0].1,
        0,
        "a title match outranks a body match"
    );
}

#[test]
fn top_k_orders_and_breaks_ties() {
    let scored = vec![
        (0.5, "b"),
        (0.9, "c"),
        (0.5, "a"),
        (f32::NAN, "n"),
        (0.1, "d"),
    ];
    let top = top_k(scored, 3);
    let keys: Vec<&str> = top.iter().map(|t| t.1).collect();
    assert_eq!(
        keys,
        ["n", "c", "a"],
        "total order: NaN sorts above everything, never panics"
    );
    assert!(top_k(vec![(1.0, 1)], 0).is_empty());
}

/// Removing many documents at once leaves the index exactly as removing them one by one:
/// the same postings, statistics and rankings, whatever is removed (free slots included).
#[test]
fn remove_many_equals_removing_one_by_one() {
    let words = [
        "rust", "tokio", "memory", "graph", "search", "index", "agent", "page",
    ];
    let build = || {
        let mut index = Bm25Index::new(Analyzer::default(), [1.0]);
        for slot in 0..200u32 {
            let text: Vec<&str> = (0..6)
                .map(|i| words[(slot as usize * 7 + i * (slot as usize % 5 + 1)) % words.len()])
                .collect();
            index.insert(slot, &format!("id-{slot:04}"), [&text.join(" ")]);
        }
        index
    };
    let removed: Vec<u32> = (0..200)
        .filter(|slot| slot % 3 == 0 || slot % 7 == 1)
        .collect();
    let mut one_by_one = build();
    for slot in &removed {
        one_by_one.remove(*slot);
    }
    let mut at_once = build();
    // A slot twice and a slot never used are skipped.
    let mut asked = removed.clone();
    asked.extend([removed[0], 5_000]);
    at_once.remove_many(&asked);
    assert_eq!(at_once.len(), one_by_one.len());
    assert_eq!(at_once.len(), 200 - removed.len());
    assert_eq!(at_once.total_len, one_by_one.total_len);
    for word in words {
        let (a, b) = (search(&at_once, word), search(&one_by_one, word));
        assert_eq!(a, b, "{word}");
        assert!(a.iter().all(|(_, slot)| !removed.contains(slot)), "{word}");
    }
    let remaining = |index: &Bm25Index<1>| {
        let mut terms: Vec<(String, Vec<u32>)> = index
            .postings
            .iter()
            .map(|(term, list)| (term.to_owned(), list.list.iter().map(|p| p.slot).collect()))
            .collect();
        terms.sort();
        terms
    };
    assert_eq!(remaining(&at_once), remaining(&one_by_one));
}

/// The weighted walk weighs a small share of the matches of a large index when few documents
/// get a large factor, as a page search's boosts are.
#[test]
fn weighted_top_k_weighs_few_matches() {
    let mut index = Bm25Index::new(Analyzer::plain(), [1.0]);
    let mut ids = Vec::new();
    for slot in 0..20_000u32 {
        let rare = if slot % 97 == 0 { " rare" } else { "" };
        let text = format!("common word{} filler{}{rare}", slot % 13, slot % 7);
        ids.push(format!("doc{slot:05}"));
        index.insert(slot, &ids[slot as usize], [&text]);
    }
    let terms = index.query_terms("common rare word3");
    let mut matches = 0;
    index.score_terms(&terms, |_, _| matches += 1);
    let mut weighed = 0;
    let got = index.top_k_weighted(
        &terms,
        10,
        2.25,
        |_| true,
        |slot, score, _| {
            weighed += 1;
            Some(if slot % 1000 == 0 {
                score * 2.25
            } else {
                score
            })
        },
        |slot| ids.get(slot as usize).map(String::as_str),
    );
    assert_eq!(got.len(), 10);
    assert!(
        weighed * 20 < matches,
        "weighed {weighed} of {matches} matches"
    );
}

/// Where a term weighs most in few documents (a heavy field, as a page's title), the walk
/// skips the blocks of postings that hold it only in the light field, and still returns
/// exactly the exhaustive ranking, also after removals and reused slots loosened the bounds.
#[test]
fn block_bounds_skip_blocks_and_keep_the_ranking() {
    let mut index = Bm25Index::new(Analyzer::plain(), [3.0, 1.0]);
    let mut ids = Vec::new();
    let text = |slot: u32| {
        let title = if slot.is_multiple_of(500) {
            "topic"
        } else {
            "heading"
        };
        let body = format!("topic filler{} words{} more text here", slot % 7, slot % 11);
        (title, body)
    };
    for slot in 0..20_000u32 {
        ids.push(format!("doc{slot:05}"));
        let (title, body) = text(slot);
        index.insert(slot, &ids[slot as usize], [title, &body]);
    }
    let exhaustive = |index: &Bm25Index<2>, terms: &[String], k: usize| {
        let mut all = Vec::new();
        index.score_terms(terms, |slot, score| all.push((score, slot)));
        all.sort_by(|a: &(f32, u32), b: &(f32, u32)| {
            b.0.total_cmp(&a.0)
                .then_with(|| ids[a.1 as usize].cmp(&ids[b.1 as usize]))
        });
        all.truncate(k);
        all
    };
    let id_of = |slot: u32| ids.get(slot as usize).map(String::as_str);
    for round in 0..2 {
        for query in ["topic", "topic words3", "topic filler2 words5"] {
            let terms = index.query_terms(query);
            let before = BLOCKS_SKIPPED.with(Cell::get);
            let got = index.top_k(&terms, 10, |_| true, id_of);
            let skipped = BLOCKS_SKIPPED.with(Cell::get) - before;
            assert_eq!(
                got,
                exhaustive(&index, &terms, 10),
                "round {round}: {query}"
            );
            // The heavy field is rare: most blocks of the term's postings cannot reach it.
            if query == "topic" {
                assert!(skipped > 100, "round {round}: {skipped} blocks skipped");
            }
        }
        // Removals shift the lists and free slots; refilling them inserts inside the lists.
        for slot in (0..20_000u32).step_by(37) {
            index.remove(slot);
        }
        for slot in (0..20_000u32).step_by(74) {
            let (title, body) = text(slot);
            index.insert(slot, &ids[slot as usize], [title, &body]);
        }
        index.check_blocks();
    }
}

#[test]
fn a_reused_slot_takes_its_place_in_every_posting_list() {
    let mut index = Bm25Index::new(Analyzer::default(), [1.0]);
    for slot in 0..6u32 {
        index.insert(slot, &format!("d{slot}"), ["shared words here"]);
    }
    index.remove(2);
    index.remove(4);
    // Slots below the last one: placed by the search, not appended.
    index.insert(4, "d4", ["shared words again"]);
    index.insert(2, "d2", ["shared"]);
    // Replacing a slot's terms in place keeps one posting.
    index.insert(3, "d3", ["shared words"]);
    for term in ["share", "word"] {
        let Some(entry) = index.postings.get(term) else {
            panic!("{term} is indexed");
        };
        let slots: Vec<u32> = entry.list.iter().map(|posting| posting.slot).collect();
        assert!(slots.windows(2).all(|w| w[0] < w[1]), "{term}: {slots:?}");
    }
    assert_eq!(index.doc_freq("share"), 6);
    assert_eq!(index.doc_freq("word"), 5);
    let mut hits: Vec<u32> = search(&index, "shared").iter().map(|h| h.1).collect();
    hits.sort_unstable();
    assert_eq!(hits, [0, 1, 2, 3, 4, 5]);
}

/// A term whose last document goes is forgotten and its id reused: a later term takes the
/// id without inheriting its postings or bounds, and a rewritten slot keeps only its new
/// terms.
#[test]
fn term_ids_are_freed_and_reused() {
    let mut index = Bm25Index::new(Analyzer::default(), [1.0]);
    index.insert(0, "a", ["alpha alpha alpha"]);
    index.insert(1, "b", ["gamma"]);
    assert_eq!(index.doc_freq("alpha"), 1);
    index.remove(0);
    assert_eq!(index.doc_freq("alpha"), 0);
    assert!(search(&index, "alpha").is_empty());
    assert_eq!(index.postings.free.len(), 1, "alpha's id is free");
    index.insert(2, "c", ["beta"]);
    assert!(index.postings.free.is_empty(), "beta took the free id");
    assert_eq!(index.doc_freq("beta"), 1);
    assert_eq!(index.doc_freq("alpha"), 0);
    let beta = index.postings.get("beta").map(|list| list.max_tf);
    assert_eq!(beta, Some([1]), "a reused id starts from empty bounds");
    // Rewriting a slot drops the terms it no longer holds.
    index.insert(1, "b", ["delta"]);
    assert_eq!(index.doc_freq("gamma"), 0);
    assert_eq!(index.doc_freq("delta"), 1);
    let mut live: Vec<&str> = index.postings.iter().map(|(term, _)| term).collect();
    live.sort_unstable();
    assert_eq!(live, ["beta", "delta"]);
    index.check_blocks();
}

/// Where a query's terms stand, read from the terms kept in order, is exactly what reading
/// the text gives: for generated texts of mixed words (stop words, possessives, joiners,
/// accents, CJK, overlong words), query term lists short and long, with repeats and terms
/// no document holds, through removals, slot reuse and compaction's renumbering.
#[test]
fn term_positions_are_the_analyzers_reading() {
    let pieces = [
        "the",
        "cat",
        "cats",
        "running",
        "ran",
        "Caroline's",
        "owner",
        "don't",
        "3.5",
        "e-mail",
        "café",
        "Straße",
        "東京で日本語",
        "猫",
        "and",
        "of",
        "snake_case",
        "GPT-4",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "happily",
        "went",
        "a",
        "I",
        ",",
        ".",
        "\n",
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |below: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below as u64) as usize
    };
    let analyzer = Analyzer::default();
    let mut index = Bm25Index::new(analyzer, [1.0, 0.3]);
    let mut texts: Vec<Option<String>> = Vec::new();
    for round in 0..400 {
        let slot = next(60);
        if texts.len() <= slot {
            texts.resize(slot + 1, None);
        }
        if next(5) == 0 {
            index.remove(slot as u32);
            texts[slot] = None;
        } else {
            let length = next(if round % 3 == 0 { 120 } else { 30 });
            let text: Vec<&str> = (0..length).map(|_| pieces[next(pieces.len())]).collect();
            let text = text.join(if round % 2 == 0 { " " } else { "" });
            index.insert_ordered(slot as u32, &format!("id-{slot}"), [&text, "cat context"]);
            texts[slot] = Some(text);
        }
        if round % 97 == 96 {
            // Compaction's renumbering: the live slots packed to the front, in order.
            let live: Vec<usize> = (0..texts.len()).filter(|at| texts[*at].is_some()).collect();
            let mut map = vec![u32::MAX; texts.len()];
            for (new, old) in live.iter().enumerate() {
                map[*old] = new as u32;
            }
            index.remap(&map, live.len());
            texts = live.iter().map(|old| texts[*old].take()).collect();
        }
        let query: Vec<&str> = (0..1 + next(12))
            .map(|_| pieces[next(pieces.len())])
            .collect();
        let mut terms = analyzer.query_terms(&query.join(" "));
        if next(3) == 0 {
            terms.push("zebra".into());
            terms.extend(terms.clone());
        }
        for (slot, text) in texts.iter().enumerate() {
            let sought = index.sought(&terms);
            let told = index.term_positions(slot as u32, &sought);
            // Whether the first field holds a term, from the postings: the same reading,
            // the context's "cat" not counted.
            let holds = index.first_field_holds(&terms, [slot as u32]);
            match text {
                Some(text) => {
                    let read = analyzer.term_positions(text, &terms);
                    assert_eq!(holds, [!read.is_empty()], "{text:?} {terms:?}");
                    assert_eq!(told, Some(read), "{text:?} {terms:?}");
                }
                None => {
                    assert_eq!(told, None, "free slot {slot}");
                    assert_eq!(holds, [false], "free slot {slot}");
                }
            }
        }
    }
    // A document indexed without its order tells nothing.
    index.insert(0, "plain", ["the cat ran", ""]);
    assert_eq!(
        index.term_positions(0, &index.sought(&["cat".to_owned()])),
        None
    );
    // Whether its first field holds a term is read from the postings all the same.
    assert_eq!(
        index.first_field_holds(&["cat", "ran", "dog"], [0, 1, 0]),
        [true, false, true]
    );
    assert_eq!(index.first_field_holds(&["dog"], [0]), [false]);
}

#[test]
fn the_ranking_key_orders_as_total_cmp_then_slot() {
    let scores = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        3.25,
        3.25,
    ];
    let mut held: Vec<(f32, u32)> = scores
        .iter()
        .enumerate()
        .flat_map(|(at, score)| [(*score, at as u32), (*score, u32::MAX - at as u32)])
        .collect();
    let mut by_key = held.clone();
    held.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    by_key.sort_by_key(|&(score, slot)| super::descending(score, slot));
    let bits = |list: &[(f32, u32)]| -> Vec<(u32, u32)> {
        list.iter()
            .map(|(score, slot)| (score.to_bits(), *slot))
            .collect()
    };
    assert_eq!(bits(&by_key), bits(&held));
}
