//! The native traversals of one namespace's graph: related entities by breadth-first
//! search (hops, paths, scores), multi-hop relation chains and shortest paths by a
//! bidirectional breadth-first search, each bounded by `MAX_TRAVERSAL_DEPTH` and
//! `MAX_TRAVERSAL_VISITED`.
//!
//! Every traversal walks slots (the `StableGraph`'s node indices) and the contiguous
//! half-edge arrays of the node weights, not petgraph's edge lists, marks visited entities
//! in a bit set, and builds the public forms (shared entities and relations) only for what
//! it returns.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use memory_core::{
    GraphEntity, GraphRelation, MAX_TRAVERSAL_DEPTH, MAX_TRAVERSAL_VISITED, MultiHopResult, Result,
    ScoredEntity,
};

use super::{CLOSES, HalfEdge, NamespaceGraph, Slot, not_found};

/// A multiplicative hash for slots (as rustc's `FxHasher`): slots are numbers the graph
/// hands out, not user input, so the hash needs no protection against chosen keys, and a
/// multiply is several times cheaper than the default SipHash on every visit.
#[derive(Clone, Copy, Debug, Default)]
struct SlotHasher(u64);

impl SlotHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for SlotHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.add(u64::from(*byte));
        }
    }

    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }
}

/// A map keyed by slot.
type SlotMap<V> = HashMap<Slot, V, BuildHasherDefault<SlotHasher>>;

/// A set of slots, one bit each.
struct SlotSet(Vec<u64>);

impl SlotSet {
    fn new(slots: usize) -> Self {
        Self(vec![0; slots.div_ceil(64)])
    }

    /// Adds `slot`; returns whether it was absent.
    fn insert(&mut self, slot: Slot) -> bool {
        let (word, bit) = (slot as usize / 64, 1u64 << (slot % 64));
        match self.0.get_mut(word) {
            Some(bits) if *bits & bit == 0 => {
                *bits |= bit;
                true
            }
            _ => false,
        }
    }
}

/// The bits of `value` as an unsigned integer ordered as [`f32::total_cmp`] orders floats.
fn total_order_bits(value: f32) -> u32 {
    let bits = value.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 1 << 31
    }
}

/// An entity reached by a breadth-first search: its slot, the index (in the search's list)
/// of the entity it was reached from, and the half-edge (of that entity) it was reached by.
#[derive(Clone, Copy)]
struct Reached<'graph> {
    slot: Slot,
    parent: u32,
    via: Option<&'graph HalfEdge>,
}

impl NamespaceGraph {
    /// Whether a traversal at `now` follows `half` (see [`Edge::is_current_at`](super::Edge::is_current_at)); only a
    /// relation with a `valid_until` is looked up.
    fn follows(&self, half: &HalfEdge, now: DateTime<Utc>) -> bool {
        half.kind & CLOSES == 0 || self.edge(half.edge).is_some_and(|e| e.is_current_at(now))
    }

    /// The half-edges of `slot` in traversal order.
    fn adjacency(&self, slot: Slot) -> &[HalfEdge] {
        self.node(slot).map_or(&[], |node| &node.adjacency)
    }

    /// Reads the first half-edge of each of `slots` before a level is expanded: each is two
    /// dependent cache misses (the node, then its array), and a loop doing nothing else
    /// has them all in flight at once, where the expanding loop, busy with each entity's
    /// half-edges, would wait for them one entity at a time.
    fn touch_adjacencies(&self, slots: impl Iterator<Item = Slot>) {
        let mut touched = 0u32;
        for slot in slots {
            if let Some(first) = self.adjacency(slot).first() {
                touched ^= first.kind;
            }
        }
        std::hint::black_box(touched);
    }

    /// Breadth-first traversal, with the results of the trait's default `get_related`.
    pub(crate) fn related(&self, id: &str, depth: usize) -> Result<Vec<ScoredEntity>> {
        let now = Utc::now();
        let start = self
            .slot(id)
            .ok_or_else(|| not_found(id, &self.namespace))?;
        let depth = depth.min(MAX_TRAVERSAL_DEPTH);
        let mut visited = SlotSet::new(self.node_bound());
        visited.insert(start);
        let mut visited_count = 1usize;
        // `reached[0]` is the start; each level is a range of `reached`.
        let mut reached = vec![Reached {
            slot: start,
            parent: u32::MAX,
            via: None,
        }];
        let mut hops_of = vec![0u32];
        let mut level = 0..1;
        'levels: for hops in 1..=depth {
            let next_start = reached.len();
            self.touch_adjacencies(reached[level.clone()].iter().map(|entry| entry.slot));
            for parent in level.clone() {
                let current = reached[parent].slot;
                for half in self.adjacency(current) {
                    if !self.follows(half, now) || !visited.insert(half.other) {
                        continue;
                    }
                    visited_count += 1;
                    reached.push(Reached {
                        slot: half.other,
                        parent: u32::try_from(parent).unwrap_or(u32::MAX),
                        via: Some(half),
                    });
                    hops_of.push(u32::try_from(hops).unwrap_or(u32::MAX));
                    if visited_count > MAX_TRAVERSAL_VISITED {
                        break 'levels;
                    }
                }
            }
            if reached.len() == next_start {
                break;
            }
            level = next_start..reached.len();
        }
        // Tight passes over the reached entities, each reading one slot per entity, so the
        // loads of different entities overlap: the shared entities with their id keys, then
        // the shared relations that reached them, then the products of the path weights.
        let found = &reached[1..];
        let mut entities: Vec<Option<(Arc<GraphEntity>, u64)>> = found
            .iter()
            .map(|entry| {
                self.node(entry.slot)
                    .map(|node| (Arc::clone(&node.entity), node.key))
            })
            .collect();
        let mut relations: Vec<Option<Arc<GraphRelation>>> = found
            .iter()
            .map(|entry| entry.via.and_then(|half| self.shared_relation(half)))
            .collect();
        // `distance_score` multiplies the weights in path order starting from 1: the
        // product of a parent's path times the last weight is the same float.
        let mut products = vec![1.0f32; reached.len()];
        // Whether an entity's relation is on other paths too (it has children): when not,
        // its path takes the reference instead of counting one more and dropping this one.
        let mut has_children = vec![false; reached.len()];
        for (index, entry) in found.iter().enumerate() {
            let weight = entry.via.map_or(1.0, |half| half.weight);
            products[index + 1] = products[entry.parent as usize] * weight;
            has_children[entry.parent as usize] = true;
        }
        // The order of `sort_scored`: hops, score descending, id. The search reached the
        // entities level by level, so each level is a contiguous slice already in hop order;
        // within a level, one integer per entity sorts by score and id at once: the score's
        // bits in `f32::total_cmp` order (inverted for descending), the id's first eight
        // bytes, then the entity's index. Only entities of equal score whose ids share
        // their first eight bytes are then compared by whole id.
        let mut scores = vec![0.0f32; found.len()];
        let mut keyed: Vec<u128> = Vec::with_capacity(found.len());
        for (index, entity) in entities.iter().enumerate() {
            let Some((_, id_key)) = entity else {
                continue;
            };
            let hops = hops_of[index + 1];
            let score = (products[index + 1] / (1.0 + hops as f32)).clamp(0.0, 1.0);
            scores[index] = score;
            keyed.push(
                (u128::from(!total_order_bits(score)) << 96)
                    | (u128::from(*id_key) << 32)
                    | index as u128,
            );
        }
        let index_of = |entry: u128| (entry & u128::from(u32::MAX)) as usize;
        for level in
            keyed.chunk_by_mut(|a, b| hops_of[index_of(*a) + 1] == hops_of[index_of(*b) + 1])
        {
            level.sort_unstable();
            for run in level.chunk_by_mut(|a, b| a >> 32 == b >> 32) {
                if run.len() > 1 {
                    run.sort_unstable_by(|a, b| {
                        self.cmp_ids(found[index_of(*a)].slot, found[index_of(*b)].slot)
                    });
                }
            }
        }
        let mut out = Vec::with_capacity(keyed.len());
        for entry in keyed {
            let index = index_of(entry);
            let (hops, score) = (hops_of[index + 1], scores[index]);
            let Some((entity, _)) = entities[index].take() else {
                continue;
            };
            // The path, from the reached entity back to the start, then reversed.
            let mut path = Vec::with_capacity(hops as usize);
            path.extend(if has_children[index + 1] {
                relations[index].clone()
            } else {
                relations[index].take()
            });
            let mut parent = found[index].parent as usize;
            while parent != 0 {
                path.extend(relations[parent - 1].iter().cloned());
                parent = found[parent - 1].parent as usize;
            }
            path.reverse();
            out.push(ScoredEntity {
                entity,
                hops: hops as usize,
                path,
                score,
            });
        }
        Ok(out)
    }

    /// The multi-hop query (follow relation types in order), with the results of the
    /// trait's default `multi_hop`: each hop stops expanding entities once it holds
    /// `MAX_TRAVERSAL_VISITED` paths, and an entity is reached only with a path. The caller
    /// checks the chain's length.
    pub(crate) fn multi_hop(
        &self,
        start: &str,
        relation_types: &[String],
    ) -> Result<MultiHopResult> {
        let now = Utc::now();
        let start_slot = self
            .slot(start)
            .ok_or_else(|| not_found(start, &self.namespace))?;
        type States<'a> = BTreeMap<&'a str, (Slot, Vec<Vec<Slot>>)>;
        let mut states: States<'_> =
            BTreeMap::from([(self.node_id(start_slot), (start_slot, vec![Vec::new()]))]);
        for relation_type in relation_types {
            let mut next: States<'_> = BTreeMap::new();
            let Some(&wanted) = self.relation_type_ids.get(relation_type.as_str()) else {
                states = next;
                break;
            };
            let mut path_count = 0usize;
            for (slot, node_paths) in states.values() {
                // The hop holds as many paths as it may: the entities left are not expanded.
                if path_count >= MAX_TRAVERSAL_VISITED {
                    break;
                }
                let Some(node) = self.node(*slot) else {
                    continue;
                };
                // Outgoing half-edges are ordered by type, then target id.
                let outgoing = node.outgoing();
                let first = outgoing.partition_point(|half| {
                    half.relation_type() != wanted
                        && self.relation_types[half.relation_type() as usize].as_ref()
                            < relation_type.as_str()
                });
                for half in outgoing[first..]
                    .iter()
                    .take_while(|half| half.relation_type() == wanted)
                {
                    if !self.follows(half, now) {
                        continue;
                    }
                    let room = MAX_TRAVERSAL_VISITED - path_count;
                    if room == 0 {
                        break;
                    }
                    // An entity is reached only with a path to it.
                    let entry = next
                        .entry(self.node_id(half.other))
                        .or_insert_with(|| (half.other, Vec::new()));
                    for path in node_paths.iter().take(room) {
                        let mut extended = Vec::with_capacity(path.len() + 1);
                        extended.extend_from_slice(path);
                        extended.push(half.edge);
                        entry.1.push(extended);
                        path_count += 1;
                    }
                }
            }
            states = next;
            if states.is_empty() {
                break;
            }
        }
        let results = states.keys().map(|id| (*id).to_owned()).collect();
        let paths = states
            .into_values()
            .flat_map(|(_, paths)| paths)
            .map(|path| self.relations(path))
            .collect();
        Ok(MultiHopResult { results, paths })
    }

    /// A shortest path by a bidirectional breadth-first search, the same path the trait's
    /// default (one-sided) search returns.
    ///
    /// The two searches expand whole levels, the cheaper frontier first (fewer half-edges
    /// to read), until they meet: with `a` levels from `from` and `b` from `to`, the
    /// distance is `a + b`. Several shortest paths may exist; the default search returns
    /// the one its breadth-first tree holds. Every shortest path lies in the set of
    /// entities whose two distances add up to the distance, and the parent the default
    /// search gives such an entity is in that set too, so a breadth-first search from
    /// `from` restricted to the set, in the same expansion order, gives every entity of it
    /// the same parent: the path to `to` is the default's.
    ///
    /// Limits: at most `MAX_TRAVERSAL_DEPTH` hops; each side stops expanding once it has
    /// reached more than `MAX_TRAVERSAL_VISITED` entities, and the search gives up when
    /// both have. Either side reaches far fewer entities than the one-sided search, so
    /// this search finds every path the default finds, and some the default gives up on.
    pub(crate) fn shortest_path(&self, from: &str, to: &str) -> Result<Option<Vec<GraphRelation>>> {
        let now = Utc::now();
        let from_slot = self
            .slot(from)
            .ok_or_else(|| not_found(from, &self.namespace))?;
        let to_slot = self
            .slot(to)
            .ok_or_else(|| not_found(to, &self.namespace))?;
        if from_slot == to_slot {
            return Ok(Some(Vec::new()));
        }
        let Some((distance, forward, backward, meeting)) = self.meet(from_slot, to_slot, now)
        else {
            return Ok(None);
        };
        let path = self.first_shortest_path(
            from_slot, to_slot, distance, &forward, &backward, meeting, now,
        );
        Ok(path.map(|edges| self.relations(edges)))
    }

    /// The two searches of [`shortest_path`](Self::shortest_path): the distance, each
    /// side's distances, and the level (from `from`) where they met.
    fn meet(
        &self,
        from: Slot,
        to: Slot,
        now: DateTime<Utc>,
    ) -> Option<(usize, Distances, Distances, usize)> {
        let mut sides = [Side::new(from), Side::new(to)];
        loop {
            let levels = sides[0].level + sides[1].level;
            if levels >= MAX_TRAVERSAL_DEPTH {
                return None;
            }
            let open = |side: &Side| {
                !side.frontier.is_empty() && side.distances.len() <= MAX_TRAVERSAL_VISITED
            };
            let pick = match (open(&sides[0]), open(&sides[1])) {
                (false, false) => return None,
                (true, false) => 0,
                (false, true) => 1,
                (true, true) => {
                    let cost = |side: &Side| -> usize {
                        side.frontier
                            .iter()
                            .map(|&slot| self.adjacency(slot).len())
                            .sum()
                    };
                    usize::from(cost(&sides[1]) < cost(&sides[0]))
                }
            };
            let [forward, backward] = &mut sides;
            let (side, other) = if pick == 0 {
                (forward, &*backward)
            } else {
                (backward, &*forward)
            };
            let met = side.expand(self, other, now);
            if met {
                let [forward, backward] = sides;
                let distance = forward.level + backward.level;
                return Some((
                    distance,
                    forward.distances,
                    backward.distances,
                    forward.level,
                ));
            }
        }
    }

    /// The path the default search finds, given both searches' distances (see
    /// [`shortest_path`](Self::shortest_path)): a breadth-first search from `from` over the
    /// entities on shortest paths only, level by level, in traversal order.
    #[expect(
        clippy::too_many_arguments,
        reason = "the state of one search, passed once"
    )]
    fn first_shortest_path(
        &self,
        from: Slot,
        to: Slot,
        distance: usize,
        forward: &Distances,
        backward: &Distances,
        meeting: usize,
        now: DateTime<Utc>,
    ) -> Option<Vec<Slot>> {
        // `on_path[slot]` = its distance from `from`, for entities on a shortest path.
        let mut on_path = Distances::default();
        let mut layers: Vec<Vec<Slot>> = vec![Vec::new(); distance + 1];
        for (&slot, &level) in forward {
            if level as usize == meeting
                && backward.get(&slot) == Some(&((distance - meeting) as u32))
            {
                layers[meeting].push(slot);
                on_path.insert(slot, level);
            }
        }
        // Towards `from`: an entity one level nearer `from` and adjacent to the layer.
        for level in (0..meeting).rev() {
            let (lower, higher) = layers.split_at_mut(level + 1);
            for &slot in &higher[0] {
                for half in self.adjacency(slot) {
                    if forward.get(&half.other) == Some(&(level as u32))
                        && self.follows(half, now)
                        && !on_path.contains_key(&half.other)
                    {
                        on_path.insert(half.other, level as u32);
                        lower[level].push(half.other);
                    }
                }
            }
        }
        // Towards `to`: an entity one level nearer `to` and adjacent to the layer.
        for level in meeting + 1..=distance {
            let (lower, higher) = layers.split_at_mut(level);
            for &slot in &lower[level - 1] {
                for half in self.adjacency(slot) {
                    if backward.get(&half.other) == Some(&((distance - level) as u32))
                        && self.follows(half, now)
                        && !on_path.contains_key(&half.other)
                    {
                        on_path.insert(half.other, level as u32);
                        higher[0].push(half.other);
                    }
                }
            }
        }
        // The restricted search, in the default's expansion order.
        let mut parents: SlotMap<(Slot, Slot)> = SlotMap::default();
        let mut level_nodes = vec![from];
        for level in 1..=distance {
            let mut next = Vec::new();
            for &current in &level_nodes {
                for half in self.adjacency(current) {
                    if on_path.get(&half.other) != Some(&(level as u32))
                        || parents.contains_key(&half.other)
                        || !self.follows(half, now)
                    {
                        continue;
                    }
                    parents.insert(half.other, (current, half.edge));
                    next.push(half.other);
                }
            }
            level_nodes = next;
        }
        let mut edges = Vec::with_capacity(distance);
        let mut cursor = to;
        while cursor != from {
            let &(parent, edge) = parents.get(&cursor)?;
            edges.push(edge);
            cursor = parent;
        }
        edges.reverse();
        Some(edges)
    }
}

/// Distances from one end, by slot.
type Distances = SlotMap<u32>;

/// One side of the bidirectional search.
struct Side {
    distances: Distances,
    frontier: Vec<Slot>,
    /// The level of `frontier`.
    level: usize,
}

impl Side {
    fn new(start: Slot) -> Self {
        Self {
            distances: Distances::from_iter([(start, 0)]),
            frontier: vec![start],
            level: 0,
        }
    }

    /// Expands the frontier by one level; returns whether the new level touches `other`.
    fn expand(&mut self, graph: &NamespaceGraph, other: &Side, now: DateTime<Utc>) -> bool {
        let level = u32::try_from(self.level + 1).unwrap_or(u32::MAX);
        let mut next = Vec::new();
        let mut met = false;
        graph.touch_adjacencies(self.frontier.iter().copied());
        for &slot in &self.frontier {
            for half in graph.adjacency(slot) {
                if self.distances.contains_key(&half.other) || !graph.follows(half, now) {
                    continue;
                }
                self.distances.insert(half.other, level);
                next.push(half.other);
                met |= other.distances.contains_key(&half.other);
            }
        }
        self.frontier = next;
        self.level += 1;
        met
    }
}

impl std::fmt::Debug for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Side")
            .field("reached", &self.distances.len())
            .field("level", &self.level)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_order_bits_order_like_total_cmp() {
        let values = [
            f32::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            f32::MIN_POSITIVE,
            0.25,
            1.0,
            f32::INFINITY,
        ];
        for a in values {
            for b in values {
                assert_eq!(
                    total_order_bits(a).cmp(&total_order_bits(b)),
                    a.total_cmp(&b),
                    "{a} {b}"
                );
            }
        }
    }

    #[test]
    fn slot_set_inserts_once() {
        let mut set = SlotSet::new(130);
        assert!(set.insert(0));
        assert!(set.insert(129));
        assert!(!set.insert(129));
        assert!(!set.insert(500), "out of range is never inserted");
    }
}
