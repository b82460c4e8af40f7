//! Tests of memory items, filters and queries.

use super::*;
use crate::vector::{cosine_similarity, exact_dot_and_norm};

fn ns() -> Namespace {
    Namespace::parse("u/a").unwrap()
}

#[test]
fn cosine_similarity_is_exact_enough_and_total() {
    let close = |a: Option<f32>, b: f32| a.is_some_and(|a| (a - b).abs() < 1e-6);
    assert!(close(cosine_similarity(&[1.0, 0.0], &[3.0, 0.0]), 1.0));
    assert!(close(cosine_similarity(&[1.0, 0.0], &[0.0, 2.0]), 0.0));
    assert!(close(cosine_similarity(&[1.0, 0.0], &[-1.0, 0.0]), -1.0));
    assert_eq!(cosine_similarity(&[1.0, 0.0], &[1.0, 0.0, 0.0]), None);
    assert_eq!(cosine_similarity(&[], &[]), None);
    assert_eq!(cosine_similarity(&[0.0; 16], &[1.0; 16]), None);
    assert_eq!(cosine_similarity(&[1.0; 16], &[0.0; 16]), None);
    // Beyond f32's range for squares, and below it: the exact fallback still compares.
    let huge = [3e30f32; 20];
    let tiny = [2e-30f32; 20];
    assert!(close(cosine_similarity(&huge, &huge), 1.0));
    assert!(close(cosine_similarity(&tiny, &tiny), 1.0));
    assert!(close(cosine_similarity(&tiny, &[-1.0; 20]), -1.0));
    // Against the exact f64 value, on pseudo-random vectors of embedding length.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    };
    for length in [1, 7, 8, 9, 384, 1536] {
        let a: Vec<f32> = (0..length).map(|_| next()).collect();
        let b: Vec<f32> = (0..length).map(|_| next()).collect();
        let (dot, norm_b) = exact_dot_and_norm(&a, &b);
        let norm_a = exact_dot_and_norm(&a, &a).1;
        let exact = (dot / (norm_a.sqrt() * norm_b.sqrt())) as f32;
        let fast = cosine_similarity(&a, &b).expect("comparable");
        assert!((fast - exact).abs() < 1e-5, "{length}: {fast} vs {exact}");
    }
}

#[test]
fn construction_validates() {
    assert!(MemoryItem::new(ns(), "   ").is_err());
    assert!(MemoryItem::new(Namespace::root(), "x").is_err());
    assert!(MemoryItem::new(ns(), "x".repeat(DEFAULT_MAX_CONTENT_BYTES + 1)).is_err());
    let item = MemoryItem::new(ns(), "hello").unwrap();
    assert!(item.clone().with_id("").is_err());
    assert!(item.clone().with_importance(f32::NAN).is_err());
    assert!(item.clone().with_importance(1.5).is_err());
    assert!(item.clone().with_credibility(-0.1).is_err());
    assert!(item.clone().with_metadata(serde_json::json!([1])).is_err());
    assert!(item.clone().with_embedding(vec![]).is_err());
    assert!(item.clone().with_embedding(vec![f32::NAN]).is_err());
    assert!(item.clone().with_tags(["ok", "bad!"]).is_err());
    let mut mutated = item.clone();
    mutated.importance = f32::INFINITY;
    let error = mutated.validate().unwrap_err();
    assert!(error.to_string().contains("importance"), "{error}");
}

#[test]
fn serde_round_trip() {
    let item = MemoryItem::new(ns(), "likes rust")
        .unwrap()
        .with_kind(MemoryKind::Semantic)
        .with_tags(["Rust Lang"])
        .unwrap()
        .with_metadata(serde_json::json!({"speaker": "x"}))
        .unwrap()
        .with_embedding(vec![0.1, 0.2])
        .unwrap()
        .with_source("chat");
    let text = serde_json::to_string(&item).unwrap();
    let back: MemoryItem = serde_json::from_str(&text).unwrap();
    assert_eq!(back, item);
    assert!(text.contains("\"semantic\""));
}

#[test]
fn kinds_parse() {
    for kind in MemoryKind::ALL {
        assert_eq!(MemoryKind::parse(kind.as_str()).unwrap(), kind);
    }
    assert!(MemoryKind::parse("other").is_err());
}

#[test]
fn filter_matches() {
    let item = MemoryItem::new(ns(), "x")
        .unwrap()
        .with_id("m-1")
        .unwrap()
        .with_tags(["a"])
        .unwrap()
        .with_metadata(serde_json::json!({"k": 1}))
        .unwrap();
    assert!(MemoryFilter::new(ns()).matches(&item));
    assert!(!MemoryFilter::new(Namespace::parse("u").unwrap()).matches(&item));
    assert!(MemoryFilter::new(Namespace::parse("u").unwrap().subtree()).matches(&item));
    assert!(MemoryFilter::new(ns()).with_id_prefix("m-").matches(&item));
    assert!(!MemoryFilter::new(ns()).with_id_prefix("n").matches(&item));
    assert!(
        !MemoryFilter::new(ns())
            .with_kinds([MemoryKind::Semantic])
            .matches(&item)
    );
    assert!(
        MemoryFilter::new(ns())
            .with_tags(["A"])
            .unwrap()
            .matches(&item)
    );
    assert!(
        !MemoryFilter::new(ns())
            .with_tags(["b"])
            .unwrap()
            .matches(&item)
    );
    assert!(
        MemoryFilter::new(ns())
            .with_metadata("k", serde_json::json!(1))
            .matches(&item)
    );
    assert!(
        !MemoryFilter::new(ns())
            .with_metadata("k", serde_json::json!(2))
            .matches(&item)
    );
    let later = item.created_at + chrono::Duration::seconds(1);
    assert!(
        !MemoryFilter::new(ns())
            .with_time_range(Some(later), None)
            .matches(&item)
    );
    assert!(
        !MemoryFilter::new(ns())
            .with_time_range(None, Some(item.created_at))
            .matches(&item)
    );
}

#[test]
fn only_kinds_and_view_names_filters_decided_by_kind_end_and_validity() {
    let now = Utc::now();
    let base = || MemoryFilter::new(ns().exact());
    assert!(base().only_kinds_and_view());
    assert!(
        base()
            .with_kinds([MemoryKind::Episodic])
            .with_view(TimeView::Current(now))
            .only_kinds_and_view()
    );
    assert!(base().with_view(TimeView::AsOf(now)).only_kinds_and_view());
    for narrowed in [
        base().with_id_prefix("m"),
        base().with_tags(["rust"]).unwrap(),
        base().with_metadata("k", serde_json::json!(1)),
        base().with_fact_key("user.city").unwrap(),
        base().with_time_range(Some(now), None),
        base().with_time_range(None, Some(now)),
    ] {
        assert!(!narrowed.only_kinds_and_view(), "{narrowed:?}");
    }
}

#[test]
fn a_list_position_orders_by_time_then_id_then_namespace() {
    let t = Utc::now();
    let position = ListPosition::new(t, "m5", ns()).unwrap();
    let at = |namespace: &str, id: &str, offset: i64| {
        MemoryItem::new(Namespace::parse(namespace).unwrap(), "x")
            .and_then(|item| item.with_id(id))
            .map(|item| item.with_created_at(t + chrono::Duration::seconds(offset)))
            .unwrap()
    };
    // Later time, a later id at the same time, the same id in a later namespace.
    for later in [at("u/a", "a", 1), at("u/a", "m6", 0), at("u/b", "m5", 0)] {
        assert!(position.precedes(&later, false), "{later:?}");
        assert!(!position.precedes(&later, true), "{later:?}");
    }
    for earlier in [at("u/z", "z", -1), at("u/z", "m4", 0), at("u", "m5", 0)] {
        assert!(!position.precedes(&earlier, false), "{earlier:?}");
        assert!(position.precedes(&earlier, true), "{earlier:?}");
    }
    let itself = at("u/a", "m5", 0);
    assert!(!position.precedes(&itself, false) && !position.precedes(&itself, true));
    assert_eq!(ListPosition::of(&itself), position);
    // The filter applies it, in the listing's direction.
    let filter = MemoryFilter::new(Scope::all()).after(position.clone());
    assert!(filter.matches(&at("u/a", "m6", 0)) && !filter.matches(&itself));
    assert!(filter.clone().newest_first().matches(&at("u/a", "m4", 0)));
    assert!(!filter.only_kinds_and_view());
}

#[test]
fn a_list_position_is_checked_when_made_and_when_read() {
    let t = Utc::now();
    for bad in ["", "a\u{0}b", &"x".repeat(crate::MAX_ID_LEN + 1)] {
        let error = ListPosition::new(t, bad, ns()).unwrap_err();
        assert!(matches!(&error, MemoryError::InvalidInput { field, .. } if field == "after"));
    }
    let far = DateTime::<Utc>::MAX_UTC;
    assert!(ListPosition::new(far, "m", ns()).is_err());
    let position = ListPosition::new(t, "m1", ns()).unwrap();
    let json = serde_json::to_string(&position).unwrap();
    assert_eq!(
        serde_json::from_str::<ListPosition>(&json).unwrap(),
        position
    );
    let tampered = json.replace("m1", "");
    assert!(serde_json::from_str::<ListPosition>(&tampered).is_err());
    let filter = MemoryFilter::new(ns().exact()).after(position);
    let json = serde_json::to_string(&filter).unwrap();
    assert_eq!(serde_json::from_str::<MemoryFilter>(&json).unwrap(), filter);
}

/// Replacing the metadata keeps the reserved keys the new metadata does not name: an edit
/// does not unpin a memory, drop its context or lose its original text.
#[test]
fn new_metadata_keeps_the_reserved_keys() {
    let item = MemoryItem::new(ns(), "the long original text of a memory")
        .unwrap()
        .with_context("what it answers")
        .with_pinned(true)
        .compressed("short text")
        .unwrap()
        .with_metadata(serde_json::json!({"speaker": "x"}))
        .unwrap();
    let edited = item
        .clone()
        .with_metadata(serde_json::json!({"topic": "tea"}))
        .unwrap();
    assert_eq!(edited.context(), "what it answers");
    assert!(edited.is_pinned());
    assert_eq!(edited.original(), "the long original text of a memory");
    assert_eq!(edited.metadata["topic"], "tea");
    assert!(
        edited.metadata.get("speaker").is_none(),
        "the user's keys are replaced"
    );
    let unpinned = item
        .with_metadata(serde_json::json!({"_pinned": false}))
        .unwrap();
    assert!(!unpinned.is_pinned(), "a reserved key named is set");
    assert_eq!(unpinned.context(), "what it answers");
}
