//! In-memory backends of agent-memory: indexed stores, BM25 search, conversation memory.
