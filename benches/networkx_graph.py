"""The networkx reference for the graph bench (`benches/benches/graph.rs`).

Builds the bench's generated graph (100,000 entities, 1,000,000 relations, the same
xorshift sequence, so the same ids, names, types, tags, relation types and weights) in
networkx, and times the bench's two-hop query: every entity within two hops of a start,
relations followed in both directions, with the path that reaches it
(`single_source_shortest_path` with `cutoff=2` over the undirected graph, which returns
each reached entity with its path). It also times a shortest path between the same pairs
as the bench (`bidirectional_shortest_path`).

The undirected graph is built once, outside the timing, which favours networkx: the query
then reads plain adjacency dicts.

Not run by CI. To run it:

    python3 -m venv /tmp/nxvenv && /tmp/nxvenv/bin/pip install networkx
    /tmp/nxvenv/bin/python benches/networkx_graph.py
"""

import statistics
import sys
import time

import networkx as nx

ENTITIES = 100_000
RELATIONS = 1_000_000
RELATION_TYPES = [
    "related_to",
    "part_of",
    "uses",
    "works_on",
    "colleague_of",
    "depends_on",
    "mentions",
    "leads",
]
ENTITY_TYPES = [
    "person",
    "project",
    "technology",
    "concept",
    "document",
    "team",
    "service",
    "library",
    "event",
    "place",
]
NAME_WORDS = [
    "alpha", "beta", "gamma", "delta", "lang", "state", "graph", "chain", "react", "rust",
    "tokio", "vector", "memory", "agent", "prompt", "token",
]
TAG_POOL = 1_000
MASK = (1 << 64) - 1


class XorShift:
    """The bench's xorshift64, with the same wrapping arithmetic."""

    def __init__(self, seed):
        self.state = seed

    def next(self):
        x = self.state
        x ^= (x << 13) & MASK
        x ^= x >> 7
        x ^= (x << 17) & MASK
        self.state = x
        return x

    def below(self, n):
        return self.next() % n


def entity_id(i):
    return f"e{i:06d}"


def build():
    """The bench's graph as a MultiDiGraph keyed by relation type (a repeated
    source, target and type updates the weight, as `add_relation` does)."""
    rng = XorShift(0x9E37_79B9_7F4A_7C15)
    graph = nx.MultiDiGraph()
    for i in range(ENTITIES):
        first = NAME_WORDS[rng.below(len(NAME_WORDS))]
        second = NAME_WORDS[rng.below(len(NAME_WORDS))]
        kind = ENTITY_TYPES[rng.below(len(ENTITY_TYPES))]
        tags = [f"tag-{rng.below(TAG_POOL)}" for _ in range(3)]
        graph.add_node(entity_id(i), name=f"{first} {second} {i}", entity_type=kind, tags=tags)
    added = 0
    while added < RELATIONS:
        source = rng.below(ENTITIES)
        target = rng.below(ENTITIES)
        if source == target:
            continue
        relation_type = RELATION_TYPES[rng.below(len(RELATION_TYPES))]
        weight = (1 + rng.below(10)) / 10.0
        graph.add_edge(entity_id(source), entity_id(target), key=relation_type, weight=weight)
        added += 1
    return graph


def starts():
    rng = XorShift(0x0123_4567_89AB_CDEF)
    return [entity_id(rng.below(ENTITIES)) for _ in range(256)]


def time_per_call(function, arguments, rounds):
    """Mean seconds per call over `rounds` passes over `arguments`, and the median pass."""
    passes = []
    for _ in range(rounds):
        began = time.perf_counter()
        for argument in arguments:
            function(argument)
        passes.append((time.perf_counter() - began) / len(arguments))
    return statistics.median(passes)


def main():
    began = time.perf_counter()
    directed = build()
    undirected = directed.to_undirected()
    undirected = nx.Graph(undirected)
    print(
        f"networkx {nx.__version__}: built {directed.number_of_nodes()} entities and "
        f"{directed.number_of_edges()} relations in {time.perf_counter() - began:.1f}s",
        file=sys.stderr,
    )
    chosen = starts()
    nodes = undirected.nodes

    def two_hops(start):
        paths = nx.single_source_shortest_path(undirected, start, cutoff=2)
        return [(nodes[node], path) for node, path in paths.items() if node != start]

    reached = len(two_hops(chosen[0]))
    print(f"two hops from {chosen[0]} reach {reached} entities", file=sys.stderr)
    two_hop = time_per_call(two_hops, chosen, rounds=5)
    pairs = list(zip(chosen, chosen[1:] + chosen[:1]))

    def shortest(pair):
        try:
            return nx.bidirectional_shortest_path(undirected, pair[0], pair[1])
        except nx.NetworkXNoPath:
            return None

    shortest_path = time_per_call(shortest, pairs, rounds=5)
    print(f"two_hop_paths            {two_hop * 1e6:10.1f} us")
    print(f"bidirectional_shortest   {shortest_path * 1e6:10.1f} us")


if __name__ == "__main__":
    main()
