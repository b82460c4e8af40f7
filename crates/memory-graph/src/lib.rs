//! The knowledge graph of agent-memory, on petgraph.
