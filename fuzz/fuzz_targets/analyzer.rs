//! Fuzz the text analyzer, keyword extractor, tag and namespace parsers: never panic, and
//! keep their output invariants.
#![no_main]

use agent_memory::text::{Analyzer, MAX_TERM_BYTES, surface_words};
use agent_memory::{KeywordExtractor, Namespace, Tag};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for analyzer in [Analyzer::default(), Analyzer::plain()] {
        for term in analyzer.terms(&text) {
            assert!(!term.is_empty(), "empty term from {text:?}");
            assert!(
                term.len() <= MAX_TERM_BYTES.max(8),
                "oversized term {term:?}"
            );
            assert!(
                !term.chars().any(char::is_whitespace),
                "term with whitespace {term:?}"
            );
            // Analysing a term again is stable for the plain analyzer.
            if analyzer == Analyzer::plain() && term.chars().all(|c| c.is_ascii_alphanumeric()) {
                assert_eq!(analyzer.terms(&term), vec![term.clone()]);
            }
        }
    }
    let _ = surface_words(&text);
    let keywords = agent_memory::retrieve::AnalyzerKeywordExtractor.extract(&text);
    assert!(keywords.len() <= agent_memory::retrieve::MAX_KEYWORDS);
    if let Ok(tag) = Tag::new(&text) {
        assert_eq!(
            Tag::new(tag.as_str()).ok().as_ref(),
            Some(&tag),
            "tags are normalised idempotently"
        );
    }
    if let Ok(ns) = Namespace::parse(&text) {
        assert_eq!(
            Namespace::parse(ns.as_str()).ok().as_ref(),
            Some(&ns),
            "namespaces round-trip"
        );
    }
});
