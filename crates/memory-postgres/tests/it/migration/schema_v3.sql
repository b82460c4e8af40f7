-- The schema as memory-postgres schema version 3 (the release before facts that change)
-- created it, frozen here: the statements its `migrate` ran on an empty schema, in order
-- (`CREATE SCHEMA`, the version table, then migrations 1, 2 and 3 exactly as released).
-- `{s}` stands for the quoted schema name. Never edit: it is what databases in the field hold.
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.schema_version (
    version    integer PRIMARY KEY,
    summary    text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- Migration 1
CREATE TABLE {s}.memories (
    rid            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ns             text COLLATE "C" NOT NULL,
    id             text COLLATE "C" NOT NULL,
    content        text NOT NULL,
    kind           text NOT NULL,
    importance     real NOT NULL,
    metadata       jsonb NOT NULL,
    tags           text[] COLLATE "C" NOT NULL,
    source         text,
    credibility    real NOT NULL,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL,
    last_accessed  bigint,
    access_count   bigint NOT NULL DEFAULT 0,
    embedding      real[],
    recall_count   bigint NOT NULL DEFAULT 0,
    recall_total   double precision NOT NULL DEFAULT 0,
    last_recall_at bigint,
    terms          tsvector NOT NULL,
    term_freqs     jsonb NOT NULL,
    doc_len        integer NOT NULL,
    context_len    integer NOT NULL,
    UNIQUE (ns, id)
);
-- The lengths are included so the BM25 statistics of a scope are an index-only scan.
CREATE INDEX memories_by_time ON {s}.memories (ns, created_at, id)
    INCLUDE (doc_len, context_len);
CREATE INDEX memories_terms ON {s}.memories USING gin (terms);
CREATE INDEX memories_tags ON {s}.memories USING gin (tags);
CREATE INDEX memories_metadata ON {s}.memories USING gin (metadata jsonb_path_ops);

CREATE TABLE {s}.pages (
    rid         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ns          text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    title       text NOT NULL,
    title_key   text COLLATE "C" NOT NULL,
    summary     text NOT NULL,
    content     text NOT NULL,
    tags        text[] COLLATE "C" NOT NULL,
    refs        text[] COLLATE "C" NOT NULL,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL,
    terms       tsvector NOT NULL,
    term_freqs  jsonb NOT NULL,
    title_len   integer NOT NULL,
    summary_len integer NOT NULL,
    tags_len    integer NOT NULL,
    content_len integer NOT NULL,
    UNIQUE (ns, id)
);
CREATE INDEX pages_by_title ON {s}.pages (ns, title_key, id)
    INCLUDE (title_len, summary_len, tags_len, content_len);
CREATE INDEX pages_terms ON {s}.pages USING gin (terms);
CREATE INDEX pages_tags ON {s}.pages USING gin (tags);
CREATE TABLE {s}.page_refs (
    ns        text COLLATE "C" NOT NULL,
    source_id text COLLATE "C" NOT NULL,
    target_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (ns, target_id, source_id),
    FOREIGN KEY (ns, source_id) REFERENCES {s}.pages (ns, id) ON DELETE CASCADE
);
CREATE INDEX page_refs_by_source ON {s}.page_refs (ns, source_id);

CREATE TABLE {s}.entities (
    ns          text COLLATE "C" NOT NULL,
    id          text COLLATE "C" NOT NULL,
    name        text NOT NULL,
    name_key    text COLLATE "C" NOT NULL,
    entity_type text NOT NULL,
    type_key    text COLLATE "C" NOT NULL,
    description text NOT NULL,
    tags        text[] COLLATE "C" NOT NULL,
    PRIMARY KEY (ns, id)
);
CREATE INDEX entities_tags ON {s}.entities USING gin (tags);
CREATE INDEX entities_by_type ON {s}.entities (ns, type_key);
CREATE TABLE {s}.relations (
    ns            text COLLATE "C" NOT NULL,
    source_id     text COLLATE "C" NOT NULL,
    target_id     text COLLATE "C" NOT NULL,
    relation_type text COLLATE "C" NOT NULL,
    weight        real NOT NULL,
    PRIMARY KEY (ns, source_id, relation_type, target_id),
    FOREIGN KEY (ns, source_id) REFERENCES {s}.entities (ns, id) ON DELETE CASCADE,
    FOREIGN KEY (ns, target_id) REFERENCES {s}.entities (ns, id) ON DELETE CASCADE
);
CREATE INDEX relations_by_target ON {s}.relations (ns, target_id, relation_type, source_id);

-- key 'analyzer': the fingerprint of the analyzer that built the terms columns.
CREATE TABLE {s}.meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- Migration 2
DROP INDEX {s}.memories_terms;
ALTER TABLE {s}.memories ALTER COLUMN terms TYPE text[] COLLATE "C"
    USING tsvector_to_array(terms);
CREATE INDEX memories_terms ON {s}.memories USING gin (terms);
DROP INDEX {s}.pages_terms;
ALTER TABLE {s}.pages ALTER COLUMN terms TYPE text[] COLLATE "C"
    USING tsvector_to_array(terms);
CREATE INDEX pages_terms ON {s}.pages USING gin (terms);

-- Migration 3
ALTER TABLE {s}.memories ADD COLUMN metadata_exact text;
