//! Unit tests of the namespace graph and its indexes.

use super::*;

fn ns() -> Namespace {
    Namespace::parse("unit").unwrap()
}

fn entity(id: &str, name: &str, kind: &str, tags: &[&str]) -> GraphEntity {
    GraphEntity::new(ns(), id, name, kind)
        .unwrap()
        .with_tags(tags.iter().copied())
        .unwrap()
}

fn relation(from: &str, to: &str, kind: &str, weight: f32) -> GraphRelation {
    GraphRelation::new(ns(), from, to, kind, weight).unwrap()
}

/// A tiny deterministic generator for operation sequences.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn limit_tags_dedups_then_truncates() {
    let tags = |raw: &[&str]| -> Vec<Tag> { raw.iter().map(|t| Tag::new(t).unwrap()).collect() };
    let check = |input: &[&str], max: usize, want: &[&str]| {
        assert_eq!(
            limit_tags(tags(input), max),
            tags(want),
            "{input:?} max {max}"
        );
    };
    check(&["a", "b", "c"], 2, &["a", "b"]);
    check(&["a", "a", "b", "c"], 2, &["a", "b"]);
    check(&["a", "b"], 8, &["a", "b"]);
    check(&[], 3, &[]);
}

#[test]
fn prepared_keywords_drop_blanks_and_normalise_tags() {
    let keywords = ["  State Graph ", "", "   ", "c++"].map(String::from);
    let prepared = PreparedKeyword::prepare_all(&keywords);
    assert_eq!(prepared.len(), 2);
    assert_eq!(prepared[0].lower, "state graph");
    assert_eq!(
        prepared[0].tag.as_ref().map(Tag::as_str),
        Some("state-graph")
    );
    assert_eq!(prepared[1].lower, "c++");
    assert!(prepared[1].tag.is_none());
}

#[test]
fn indexes_follow_updates_and_removals() {
    let mut graph = NamespaceGraph::new(ns());
    graph
        .insert_entity(entity("a", "Alpha", "Project", &["x", "y"]))
        .unwrap();
    graph
        .insert_entity(entity("b", "Beta", "person", &["y"]))
        .unwrap();
    graph.check_invariants().unwrap();
    let find = |graph: &NamespaceGraph, keyword: &str| -> Vec<String> {
        let prepared = PreparedKeyword::prepare_all(&[keyword.to_owned()]);
        graph
            .matching(&prepared)
            .iter()
            .map(|entity| entity.id.clone())
            .collect()
    };
    assert_eq!(find(&graph, "alp"), ["a"]);
    assert_eq!(find(&graph, "project"), ["a"]);
    assert_eq!(find(&graph, "y"), ["a", "b"]);

    graph
        .update_entity(entity("a", "Gamma", "thing", &["z"]))
        .unwrap();
    graph.check_invariants().unwrap();
    assert!(find(&graph, "alp").is_empty());
    assert!(find(&graph, "project").is_empty());
    assert_eq!(find(&graph, "y"), ["b"]);
    assert_eq!(find(&graph, "gam"), ["a"]);

    graph.set_tags("b", vec![Tag::new("q").unwrap()]).unwrap();
    graph.check_invariants().unwrap();
    assert!(find(&graph, "y").is_empty());

    assert!(graph.remove_entity("a"));
    graph.check_invariants().unwrap();
    assert!(find(&graph, "z").is_empty());
    assert!(!graph.names.iter().any(|(_, name, _, _)| name == "gamma"));
    assert!(!graph.entity_types.contains_key("thing"));
}

#[test]
fn relation_lookup_uses_either_side() {
    // A hub with many outgoing relations and a target with few incoming ones, and the
    // reverse: the lookup must find the edge whichever list it scans.
    let mut graph = NamespaceGraph::new(ns());
    graph.insert_entity(entity("hub", "Hub", "x", &[])).unwrap();
    for i in 0..50 {
        let id = format!("leaf{i}");
        graph.insert_entity(entity(&id, &id, "x", &[])).unwrap();
        graph
            .add_relation(&relation("hub", &id, "links", 0.5))
            .unwrap();
        graph
            .add_relation(&relation(&id, "hub", "links", 0.5))
            .unwrap();
    }
    graph
        .add_relation(&relation("hub", "leaf7", "links", 0.9))
        .unwrap();
    graph
        .add_relation(&relation("leaf7", "hub", "links", 0.1))
        .unwrap();
    assert_eq!(
        graph.relation_count(),
        100,
        "re-adding only updates weights"
    );
    let of_leaf = graph.relations_of("leaf7");
    assert_eq!(of_leaf.len(), 2);
    assert_eq!(of_leaf[0].weight, 0.1, "outgoing first");
    assert_eq!(of_leaf[1].weight, 0.9);
    assert!(graph.remove_relation("hub", "leaf7", "links"));
    assert!(graph.remove_relation("leaf7", "hub", "links"));
    assert!(!graph.remove_relation("leaf7", "hub", "links"));
    assert!(!graph.remove_relation("leaf7", "nobody", "links"));
    graph.check_invariants().unwrap();
}

#[test]
fn random_operations_keep_indexes_consistent() {
    let names = ["Alpha", "alpine", "Beta", "状态", "Gamma ray", "delta"];
    let kinds = ["person", "Person", "project", "tech"];
    let tag_pool = ["a", "b", "c", "d", "e"];
    for seed in 1..=20u64 {
        let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut graph = NamespaceGraph::new(ns());
        for _ in 0..400 {
            let id = format!("e{}", rng.below(25));
            let other = format!("e{}", rng.below(25));
            let name = names[rng.below(names.len() as u64) as usize];
            let kind = kinds[rng.below(kinds.len() as u64) as usize];
            let tags: Vec<&str> = (0..rng.below(4))
                .map(|_| tag_pool[rng.below(tag_pool.len() as u64) as usize])
                .collect();
            match rng.below(7) {
                0 | 1 => {
                    let _ = graph.insert_entity(entity(&id, name, kind, &tags));
                }
                2 => {
                    let _ = graph.update_entity(entity(&id, name, kind, &tags));
                }
                3 => {
                    graph.remove_entity(&id);
                }
                4 => {
                    let kind = ["knows", "uses"][rng.below(2) as usize];
                    let _ = graph.add_relation(&relation(&id, &other, kind, 0.5));
                }
                5 => {
                    graph.remove_relation(&id, &other, "knows");
                }
                _ => {
                    let tags = tags.iter().map(|t| Tag::new(t).unwrap()).collect();
                    let _ = graph.set_tags(&id, limit_tags(tags, 2));
                }
            }
            if let Err(problem) = graph.check_invariants() {
                panic!("seed {seed}: {problem}");
            }
        }
        // Every relation listed joins two live entities and is unique.
        let relations = graph.sorted_relations();
        for pair in relations.windows(2) {
            assert_ne!(
                (
                    &pair[0].source_id,
                    &pair[0].relation_type,
                    &pair[0].target_id
                ),
                (
                    &pair[1].source_id,
                    &pair[1].relation_type,
                    &pair[1].target_id
                )
            );
        }
        for relation in &relations {
            assert!(graph.entity(&relation.source_id).is_some());
            assert!(graph.entity(&relation.target_id).is_some());
        }
        let degrees: usize = graph
            .sorted_entities()
            .iter()
            .map(|e| graph.degree(&e.id))
            .sum();
        let self_loops = relations
            .iter()
            .filter(|r| r.source_id == r.target_id)
            .count();
        assert_eq!(degrees, 2 * relations.len() - self_loops);
        let count = graph.entity_count();
        assert_eq!(graph.clear(), count);
        graph.check_invariants().unwrap();
        assert_eq!(graph.relation_count(), 0);
    }
}

#[test]
fn self_loops_count_once() {
    let mut graph = NamespaceGraph::new(ns());
    graph.insert_entity(entity("a", "A", "x", &[])).unwrap();
    graph.insert_entity(entity("b", "B", "x", &[])).unwrap();
    graph
        .add_relation(&relation("a", "a", "self", 1.0))
        .unwrap();
    graph
        .add_relation(&relation("b", "a", "knows", 1.0))
        .unwrap();
    assert_eq!(graph.degree("a"), 2);
    assert_eq!(graph.relations_of("a").len(), 2);
    assert_eq!(graph.neighbour_count("a"), Some(1));
    assert_eq!(graph.neighbour_count("ghost"), None);
    assert!(graph.remove_entity("a"));
    graph.check_invariants().unwrap();
    assert_eq!(graph.degree("b"), 0);
}

#[test]
fn removals_keep_other_slots_and_petgraph_edges_in_step() {
    let mut graph = NamespaceGraph::new(ns());
    for id in ["a", "b", "c"] {
        graph.insert_entity(entity(id, id, "x", &[])).unwrap();
    }
    graph
        .add_relation(&relation("a", "b", "knows", 1.0))
        .unwrap();
    graph
        .add_relation(&relation("b", "c", "knows", 1.0))
        .unwrap();
    graph
        .add_relation(&relation("c", "a", "knows", 1.0))
        .unwrap();
    let (b, c) = (graph.slot("b").unwrap(), graph.slot("c").unwrap());
    let b_to_c = graph.find_edge(b, c, "knows").unwrap();

    assert!(graph.remove_entity("a"));
    graph.check_invariants().unwrap();
    assert_eq!(graph.graph.node_count(), 2);
    assert_eq!(
        graph.graph.edge_count(),
        1,
        "petgraph dropped a's relations"
    );
    assert_eq!(graph.relation_count(), 1);
    assert_eq!((graph.slot("b"), graph.slot("c")), (Some(b), Some(c)));
    assert_eq!(graph.find_edge(b, c, "knows"), Some(b_to_c));
    assert_eq!(graph.degree("b"), 1);
    assert_eq!(graph.degree("c"), 1);

    // A new entity takes a free slot; the survivors keep theirs.
    graph.insert_entity(entity("d", "d", "x", &[])).unwrap();
    graph
        .add_relation(&relation("d", "b", "knows", 0.5))
        .unwrap();
    graph.check_invariants().unwrap();
    assert_eq!((graph.slot("b"), graph.slot("c")), (Some(b), Some(c)));
    let related: Vec<String> = graph
        .related("d", 2)
        .unwrap()
        .iter()
        .map(|found| found.entity.id.clone())
        .collect();
    assert_eq!(related, ["b", "c"]);

    assert!(graph.remove_relation("b", "c", "knows"));
    graph.check_invariants().unwrap();
    assert_eq!(graph.graph.edge_count(), 1);
    assert_eq!(graph.degree("c"), 0);
}

#[cfg(target_pointer_width = "64")]
#[test]
fn node_slots_stay_small() {
    // The node weight plus petgraph's two `u32` edge links: traversals read one slot per
    // expanded entity, so a slot should not straddle cache lines more than it must.
    assert_eq!(std::mem::size_of::<Node>(), 48);
    assert_eq!(std::mem::size_of::<Option<Node>>(), 48);
}

/// Keyword matching against the rule applied to every entity, on ids added out of order
/// (many sharing their first eight bytes) and names sharing long prefixes: both the few
/// matches path and the many matches path, keywords shorter and longer than eight bytes.
#[test]
fn matching_agrees_with_the_rule_on_every_entity() {
    let words = [
        "memory agent",
        "memory alpha",
        "Mémoire",
        "状态图",
        "rust",
        "Rust tokio",
    ];
    let kinds = ["person", "Project"];
    let tag_pool = ["x", "y", "tag-1", "tag-2"];
    let keywords = [
        "m",
        "memory",
        "memory a",
        "memory ag",
        "MEMORY ALPHA 1",
        "memory alpha 123",
        "mémoire",
        "状态",
        "rust tok",
        "rust tokio 7",
        "project",
        "tag-1",
        "Tag 2",
        "zzz",
        "memory alpha 5999",
    ];
    for seed in 1..=6u64 {
        let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut graph = NamespaceGraph::new(ns());
        let count = 600;
        for _ in 0..count {
            // Ids in random order; the long ones share their first eight bytes.
            let n = rng.below(100_000);
            let id = if rng.below(2) == 0 {
                format!("entity-{n:06}")
            } else {
                format!("e{n}")
            };
            let name = format!("{} {n}", words[rng.below(words.len() as u64) as usize]);
            let kind = kinds[rng.below(2) as usize];
            let tags: Vec<&str> = (0..rng.below(3))
                .map(|_| tag_pool[rng.below(tag_pool.len() as u64) as usize])
                .collect();
            let _ = graph.insert_entity(entity(&id, &name, kind, &tags));
        }
        // Some removals leave free slots behind.
        for entity in graph.sorted_entities().iter().step_by(7) {
            graph.remove_entity(&entity.id);
        }
        graph.check_invariants().unwrap();
        let all = graph.sorted_entities();
        // Whole names: one or two matches among hundreds, the path without the bit set.
        let mut keywords: Vec<String> = keywords.iter().map(|k| (*k).to_owned()).collect();
        keywords.extend(all.iter().take(3).map(|e| e.name.to_uppercase()));
        for first in 0..keywords.len() {
            for chosen in [
                &keywords[first..=first],
                &keywords[first..(first + 2).min(keywords.len())],
            ] {
                let chosen = chosen.to_vec();
                let want: Vec<&str> = all
                    .iter()
                    .filter(|e| {
                        chosen
                            .iter()
                            .any(|k| memory_core::backend::entity_matches_keyword(e, k))
                    })
                    .map(|e| e.id.as_str())
                    .collect();
                let found = graph.matching(&PreparedKeyword::prepare_all(&chosen));
                let got: Vec<&str> = found.iter().map(|e| e.id.as_str()).collect();
                assert_eq!(got, want, "seed {seed}, keywords {chosen:?}");
            }
        }
    }
}
