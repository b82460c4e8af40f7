//! Keyword extraction, hybrid scoring, retrieval, eviction and the high-level Memory API of agent-memory.
