//! The graph's traversals, each one recursive query (one round trip): the breadth-first walk
//! of `get_related`, the relation chains of `multi_hop` and the breadth-first search of
//! `shortest_path`, with the results of memory-core's default algorithms.

use std::collections::HashMap;
use std::sync::Arc;

use memory_core::backend::{distance_score, sort_scored};
use memory_core::{
    GraphRelation, MAX_TRAVERSAL_DEPTH, MAX_TRAVERSAL_VISITED, MemoryError, MultiHopResult,
    Namespace, Result, ScoredEntity,
};
use tokio_postgres::types::ToSql;

use crate::database::Database;
use crate::error::{Context, corrupt};
use crate::sql::{decode_time, time_bound};

use super::row::{decode_attributes, decode_entity};

/// The breadth-first walk of
/// [`KnowledgeGraph::get_related`](memory_core::KnowledgeGraph::get_related); `$1` namespace,
/// `$2` start, `$3` depth, `$4` the most entities reached, `$5` now (nanoseconds): only
/// relations current then (`valid_until` open or later) are followed.
///
/// The working table of each iteration is one level: a row per entity reached at that level
/// (with its rank in the level, its parent and the relation that reached it) plus one `meta`
/// row carrying the ids visited so far. The recursive term reads the level through an inner
/// `WITH` (PostgreSQL allows the recursive reference once, so the inner CTE lets the term use
/// it for both the frontier and the visited set). Candidates are the relations of the level's
/// entities to entities not visited yet; `DISTINCT ON` keeps, for each newly reached entity,
/// the first candidate in exploration order `(parent rank, outgoing before incoming, relation
/// type)` and `row_number()` ranks the new level in that order, which is the order the trait's
/// default algorithm discovers entities in.
const GET_RELATED: &str = r#"
WITH RECURSIVE walk (node, hops, rank, parent, rel_source, rel_target, rel_type, rel_weight,
                     rel_from, rel_until, visited, meta) AS (
    SELECT $2::text COLLATE "C", 0, 0::bigint, NULL::text COLLATE "C", NULL::text COLLATE "C",
           NULL::text COLLATE "C", NULL::text COLLATE "C", NULL::real, NULL::bigint,
           NULL::bigint, NULL::text[], false
    UNION ALL
    SELECT NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ARRAY[$2::text COLLATE "C"],
           true
    UNION ALL (
        WITH level AS (SELECT * FROM walk),
        seen AS (SELECT l.visited FROM level l WHERE l.meta),
        candidates AS (
            SELECT l.node AS parent, l.rank AS parent_rank, l.hops + 1 AS hops, x.dir,
                   x.rel_source, x.rel_target, x.rel_type, x.rel_weight, x.rel_from,
                   x.rel_until, x.other
            FROM level l CROSS JOIN LATERAL (
                SELECT 0 AS dir, r.source_id AS rel_source, r.target_id AS rel_target,
                       r.relation_type AS rel_type, r.weight AS rel_weight,
                       r.valid_from AS rel_from, r.valid_until AS rel_until, r.target_id AS other
                FROM {s}.relations r WHERE r.ns = $1::text AND r.source_id = l.node
                  AND (r.valid_until IS NULL OR r.valid_until > $5::bigint)
                UNION ALL
                SELECT 1, r.source_id, r.target_id, r.relation_type, r.weight, r.valid_from,
                       r.valid_until, r.source_id
                FROM {s}.relations r
                WHERE r.ns = $1::text AND r.target_id = l.node AND r.source_id <> l.node
                  AND (r.valid_until IS NULL OR r.valid_until > $5::bigint)
            ) AS x
            WHERE NOT l.meta AND l.hops < $3::integer
              AND (SELECT cardinality(s.visited) FROM seen s) <= $4::integer
        ),
        fresh AS (
            SELECT DISTINCT ON (c.other) c.* FROM candidates c
            WHERE c.other NOT IN (SELECT unnest(s.visited) FROM seen s)
            ORDER BY c.other, c.parent_rank, c.dir, c.rel_type
        ),
        ranked AS (
            SELECT f.*, row_number() OVER (ORDER BY f.parent_rank, f.dir, f.rel_type, f.other)
                   AS rank
            FROM fresh f
        )
        SELECT r.other, r.hops, r.rank, r.parent, r.rel_source, r.rel_target, r.rel_type,
               r.rel_weight, r.rel_from, r.rel_until, NULL::text[], false
        FROM ranked r
        UNION ALL
        SELECT NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
               s.visited || ARRAY(SELECT r.other FROM ranked r), true
        FROM seen s WHERE EXISTS (SELECT 1 FROM ranked)
    )
)
SELECT w.node, w.hops, w.parent, w.rel_source, w.rel_target, w.rel_type, w.rel_weight,
       w.rel_from, w.rel_until, e.ns, e.id, e.name, e.entity_type, e.description, e.tags,
       e.created_at, e.access_count, e.last_accessed, e.attributes, ra.attributes
FROM walk w JOIN {s}.entities e ON e.ns = $1::text AND e.id = w.node
LEFT JOIN {s}.relations ra ON ra.ns = $1::text AND ra.source_id = w.rel_source
     AND ra.target_id = w.rel_target AND ra.relation_type = w.rel_type
WHERE NOT w.meta AND w.hops > 0
ORDER BY w.hops, w.rank
LIMIT $4::integer
"#;

/// The relation chains of [`KnowledgeGraph::multi_hop`](memory_core::KnowledgeGraph::multi_hop);
/// `$1` namespace, `$2` start, `$3` the relation types in order, `$4` the most paths kept per
/// hop, `$5` now (nanoseconds): only relations current then are followed.
///
/// `paths` holds the paths, as the ids along them and the weights and validity bounds of
/// their relations. The default algorithm extends, hop by hop, the paths of each entity in id
/// order, along its relations of the hop's type in target order (for each relation, the
/// entity's paths in order), keeps the first `$4` extensions in that order and expands no
/// entity after those; each entity's paths stay in the order they were added (parent id, then
/// the parent path's own rank), numbered from 1 (`rank`).
///
/// The extensions are never all built: a level of `$4` paths ending at one entity with `$4`
/// relations of the hop's type would make `$4`² of them. `counted` counts the level's paths
/// per entity (`paths`) and, once per entity, its relations of the hop's type (`degree`);
/// `placed` adds `through`, the extensions of the entities up to this one, so
/// `through - paths * own` is `before`, those of the earlier entities. A path of rank `r`
/// whose `before + r` is at most `$4` is extended along the entity's first
/// `($4 - before - r) / paths + 1` relations: exactly the extensions the default keeps, and
/// no relation of an entity past the limit is read. A level has at most `$4` paths, so the
/// work of a hop is counting the relations of at most `$4` entities plus building the paths
/// kept. The results are the ends of the paths kept (each entity's path of rank 1), so an
/// entity whose every path the limit dropped is not a result, as in the default.
///
/// The rows: one of kind 0 when the start exists; the results (kind 1) in id order; the paths
/// (kind 2) by end entity and rank.
const MULTI_HOP: &str = r#"
WITH RECURSIVE paths (node, step, rank, nodes, weights, froms, untils) AS (
    SELECT $2::text COLLATE "C", 0, 1::bigint, ARRAY[$2::text COLLATE "C"], ARRAY[]::real[],
           ARRAY[]::bigint[], ARRAY[]::bigint[]
    UNION ALL (
        WITH level AS (SELECT * FROM paths),
        counted AS (
            SELECT l.*, count(*) OVER (PARTITION BY l.node) AS paths,
                   CASE WHEN l.rank = 1 THEN (
                       SELECT count(*) FROM {s}.relations r
                       WHERE r.ns = $1::text AND r.source_id = l.node
                         AND r.relation_type = ($3::text[])[l.step + 1]
                         AND (r.valid_until IS NULL OR r.valid_until > $5::bigint)
                   ) END AS degree
            FROM level l WHERE l.step < cardinality($3::text[])
        ),
        placed AS (
            SELECT c.*, (sum(c.paths * c.degree) OVER (ORDER BY c.node))::bigint AS through,
                   max(c.degree) OVER (PARTITION BY c.node) AS own
            FROM counted c
        ),
        extended AS (
            SELECT x.target_id AS node, p.step + 1 AS step, p.node AS parent,
                   p.rank AS parent_rank, p.nodes || x.target_id AS nodes,
                   p.weights || x.weight AS weights,
                   array_append(p.froms, x.valid_from) AS froms,
                   array_append(p.untils, x.valid_until) AS untils
            FROM placed p CROSS JOIN LATERAL (
                SELECT r.target_id, r.weight, r.valid_from, r.valid_until
                FROM {s}.relations r
                WHERE r.ns = $1::text AND r.source_id = p.node
                  AND r.relation_type = ($3::text[])[p.step + 1]
                  AND (r.valid_until IS NULL OR r.valid_until > $5::bigint)
                ORDER BY r.target_id
                LIMIT greatest(($4::bigint - p.rank - (p.through - p.paths * p.own))
                               / p.paths + 1, 0)
            ) AS x
            WHERE $4::bigint - p.rank - (p.through - p.paths * p.own) >= 0
        )
        SELECT e.node, e.step,
               row_number() OVER (PARTITION BY e.node ORDER BY e.parent, e.parent_rank),
               e.nodes, e.weights, e.froms, e.untils
        FROM extended e
    )
)
SELECT 0 AS kind, e.id AS node, 0::bigint AS rank, NULL::text[] AS nodes,
       NULL::real[] AS weights, NULL::bigint[] AS froms, NULL::bigint[] AS untils,
       NULL::text[] AS attributes
FROM {s}.entities e WHERE e.ns = $1::text AND e.id = $2::text
UNION ALL
SELECT 1, p.node, 0, NULL, NULL, NULL, NULL, NULL FROM paths p
WHERE p.step = cardinality($3::text[]) AND p.rank = 1
UNION ALL
SELECT 2, p.node, p.rank, p.nodes, p.weights, p.froms, p.untils,
       ARRAY(SELECT (SELECT ra.attributes FROM {s}.relations ra
                     WHERE ra.ns = $1::text AND ra.source_id = p.nodes[i]
                       AND ra.target_id = p.nodes[i + 1]
                       AND ra.relation_type = ($3::text[])[i])
             FROM generate_series(1, cardinality(p.nodes) - 1) AS i ORDER BY i)
FROM paths p
WHERE p.step = cardinality($3::text[])
ORDER BY 1, 2, 3
"#;

/// The breadth-first search of
/// [`KnowledgeGraph::shortest_path`](memory_core::KnowledgeGraph::shortest_path); `$1`
/// namespace, `$2` from, `$3` to, `$4` the most hops, `$5` the most entities reached, `$6`
/// now (nanoseconds): only relations current then are followed.
///
/// `walk` is [`GET_RELATED`]'s level-by-level walk, which reaches every entity through the
/// relation the default search reaches it by, plus each entity's parent's rank, and stops
/// once `$3` is reached. The default search expands entities one by one and stops before
/// expanding one when more than `$5` entities were reached: `found` keeps `$3` only if the
/// entities reached before its parent was expanded (all those of earlier levels, and those
/// of its level reached from parents ranked before its own) number at most `$5`. `path`
/// follows the parents back to the start.
///
/// One row: whether each end exists, and the path's relations (source, target, type, weight,
/// `valid_from`, `valid_until` and attributes arrays, start first; `NULL` when there is
/// none). The attributes are read by joining the path's relations at the end, not carried
/// through the walk.
const SHORTEST_PATH: &str = r#"
WITH RECURSIVE walk (node, hops, rank, parent, parent_rank, rel_source, rel_target, rel_type,
                     rel_weight, rel_from, rel_until, visited, meta) AS (
    SELECT $2::text COLLATE "C", 0, 0::bigint, NULL::text COLLATE "C", 0::bigint,
           NULL::text COLLATE "C", NULL::text COLLATE "C", NULL::text COLLATE "C", NULL::real,
           NULL::bigint, NULL::bigint, NULL::text[], false
    UNION ALL
    SELECT NULL, 0, 0, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL,
           ARRAY[$2::text COLLATE "C"], true
    UNION ALL (
        WITH level AS (SELECT * FROM walk),
        seen AS (SELECT l.visited FROM level l WHERE l.meta),
        candidates AS (
            SELECT l.node AS parent, l.rank AS parent_rank, l.hops + 1 AS hops, x.dir,
                   x.rel_source, x.rel_target, x.rel_type, x.rel_weight, x.rel_from,
                   x.rel_until, x.other
            FROM level l CROSS JOIN LATERAL (
                SELECT 0 AS dir, r.source_id AS rel_source, r.target_id AS rel_target,
                       r.relation_type AS rel_type, r.weight AS rel_weight,
                       r.valid_from AS rel_from, r.valid_until AS rel_until, r.target_id AS other
                FROM {s}.relations r WHERE r.ns = $1::text AND r.source_id = l.node
                  AND (r.valid_until IS NULL OR r.valid_until > $6::bigint)
                UNION ALL
                SELECT 1, r.source_id, r.target_id, r.relation_type, r.weight, r.valid_from,
                       r.valid_until, r.source_id
                FROM {s}.relations r
                WHERE r.ns = $1::text AND r.target_id = l.node AND r.source_id <> l.node
                  AND (r.valid_until IS NULL OR r.valid_until > $6::bigint)
            ) AS x
            WHERE NOT l.meta AND l.hops < $4::integer
              AND (SELECT cardinality(s.visited) FROM seen s) <= $5::integer
              AND NOT EXISTS (SELECT 1 FROM seen s WHERE $3::text = ANY(s.visited))
        ),
        fresh AS (
            SELECT DISTINCT ON (c.other) c.* FROM candidates c
            WHERE c.other NOT IN (SELECT unnest(s.visited) FROM seen s)
            ORDER BY c.other, c.parent_rank, c.dir, c.rel_type
        ),
        ranked AS (
            SELECT f.*, row_number() OVER (ORDER BY f.parent_rank, f.dir, f.rel_type, f.other)
                   AS rank
            FROM fresh f
        )
        SELECT r.other, r.hops, r.rank, r.parent, r.parent_rank, r.rel_source, r.rel_target,
               r.rel_type, r.rel_weight, r.rel_from, r.rel_until, NULL::text[], false
        FROM ranked r
        UNION ALL
        SELECT NULL, 0, 0, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL,
               s.visited || ARRAY(SELECT r.other FROM ranked r), true
        FROM seen s WHERE EXISTS (SELECT 1 FROM ranked)
    )
),
found AS (
    SELECT w.* FROM walk w
    WHERE NOT w.meta AND w.hops > 0 AND w.node = $3::text
      AND 1 + (SELECT count(*) FROM walk x
               WHERE NOT x.meta AND x.hops > 0
                 AND (x.hops < w.hops OR (x.hops = w.hops AND x.parent_rank < w.parent_rank)))
          <= $5::integer
),
path (node, parent, hops, rel_source, rel_target, rel_type, rel_weight, rel_from,
      rel_until) AS (
    SELECT f.node, f.parent, f.hops, f.rel_source, f.rel_target, f.rel_type, f.rel_weight,
           f.rel_from, f.rel_until
    FROM found f
    UNION ALL
    SELECT w.node, w.parent, w.hops, w.rel_source, w.rel_target, w.rel_type, w.rel_weight,
           w.rel_from, w.rel_until
    FROM path p JOIN walk w
      ON NOT w.meta AND w.hops > 0 AND w.hops = p.hops - 1 AND w.node = p.parent
)
SELECT EXISTS (SELECT 1 FROM {s}.entities e WHERE e.ns = $1::text AND e.id = $2::text),
       EXISTS (SELECT 1 FROM {s}.entities e WHERE e.ns = $1::text AND e.id = $3::text),
       (SELECT array_agg(p.rel_source ORDER BY p.hops) FROM path p),
       (SELECT array_agg(p.rel_target ORDER BY p.hops) FROM path p),
       (SELECT array_agg(p.rel_type ORDER BY p.hops) FROM path p),
       (SELECT array_agg(p.rel_weight ORDER BY p.hops) FROM path p),
       (SELECT array_agg(p.rel_from ORDER BY p.hops) FROM path p),
       (SELECT array_agg(p.rel_until ORDER BY p.hops) FROM path p),
       (SELECT array_agg(ra.attributes ORDER BY p.hops) FROM path p
        LEFT JOIN {s}.relations ra ON ra.ns = $1::text AND ra.source_id = p.rel_source
             AND ra.target_id = p.rel_target AND ra.relation_type = p.rel_type)
"#;

fn storable(text: &str) -> bool {
    !text.contains('\0')
}

fn not_found(namespace: &Namespace, id: &str) -> MemoryError {
    MemoryError::not_found("entity", namespace, id)
}

/// [`KnowledgeGraph::get_related`](memory_core::KnowledgeGraph::get_related) from an entity
/// known to exist, in one statement ([`GET_RELATED`]): each entity reached with its path,
/// scored by its distance.
pub(super) async fn get_related(
    db: &Database,
    namespace: &Namespace,
    id: &str,
    depth: usize,
) -> Result<Vec<ScoredEntity>> {
    let depth = depth.min(MAX_TRAVERSAL_DEPTH);
    if depth == 0 {
        return Ok(Vec::new());
    }
    let ns = namespace.as_str().to_owned();
    let start = id.to_owned();
    let depth = i32::try_from(depth).unwrap_or(i32::MAX);
    let most = i32::try_from(MAX_TRAVERSAL_VISITED).unwrap_or(i32::MAX);
    // Only relations current now are followed (the wall clock, not the database's).
    let now = time_bound(chrono::Utc::now());
    let what = || format!("walking the graph from entity {id} in {namespace}");
    let client = db.client(&what()).await?;
    let statement = client
        .prepare_cached(&db.qualify(GET_RELATED))
        .await
        .context(what)?;
    let params: [&(dyn ToSql + Sync); 5] = [&ns, &start, &depth, &most, &now];
    let rows = client.query(&statement, &params).await.context(what)?;
    drop(client);
    // Rows come level by level, so a parent's path is known before its children's.
    let mut paths: HashMap<String, Vec<Arc<GraphRelation>>> =
        HashMap::from([(start.clone(), Vec::new())]);
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let field = |error: tokio_postgres::Error| corrupt(what(), error);
        let node: String = row.try_get(0).map_err(field)?;
        let hops: i32 = row.try_get(1).map_err(field)?;
        let parent: String = row.try_get(2).map_err(field)?;
        let valid_from: Option<i64> = row.try_get(7).map_err(field)?;
        let valid_until: Option<i64> = row.try_get(8).map_err(field)?;
        let attributes: Option<String> = row.try_get(19).map_err(field)?;
        let relation = GraphRelation {
            namespace: namespace.clone(),
            source_id: row.try_get(3).map_err(field)?,
            target_id: row.try_get(4).map_err(field)?,
            relation_type: row.try_get(5).map_err(field)?,
            weight: row.try_get(6).map_err(field)?,
            valid_from: valid_from.map(decode_time),
            valid_until: valid_until.map(decode_time),
            attributes: decode_attributes(&what(), attributes.as_deref())?,
        };
        let mut path = paths.get(&parent).cloned().ok_or_else(|| {
            corrupt(
                what(),
                format_args!("{node} reached before its parent {parent}"),
            )
        })?;
        path.push(Arc::new(relation));
        let hops = usize::try_from(hops).unwrap_or(0);
        let score = distance_score(hops, &path);
        paths.insert(node, path.clone());
        out.push(ScoredEntity {
            entity: Arc::new(decode_entity(row, 9)?),
            hops,
            path,
            score,
        });
    }
    sort_scored(&mut out);
    Ok(out)
}

/// [`KnowledgeGraph::multi_hop`](memory_core::KnowledgeGraph::multi_hop) in one statement
/// ([`MULTI_HOP`]), after the chain's length is checked.
pub(super) async fn multi_hop(
    db: &Database,
    namespace: &Namespace,
    start: &str,
    relation_types: &[String],
) -> Result<MultiHopResult> {
    if relation_types.is_empty() || relation_types.len() > MAX_TRAVERSAL_DEPTH {
        return Err(MemoryError::invalid(
            "relation_types",
            format!("needs 1 to {MAX_TRAVERSAL_DEPTH} relation types"),
        ));
    }
    if !storable(start) {
        return Err(not_found(namespace, start));
    }
    // A type no stored relation can have: the chain ends nowhere (the start must exist).
    let types: Vec<String> = if relation_types.iter().all(|t| storable(t)) {
        relation_types.to_vec()
    } else {
        vec![String::new(); relation_types.len()]
    };
    let ns = namespace.as_str().to_owned();
    let start = start.to_owned();
    let most = i64::try_from(MAX_TRAVERSAL_VISITED).unwrap_or(i64::MAX);
    let now = time_bound(chrono::Utc::now());
    let what = || format!("following relations from entity {start} in {namespace}");
    let client = db.client(&what()).await?;
    let statement = client
        .prepare_cached(&db.qualify(MULTI_HOP))
        .await
        .context(what)?;
    let params: [&(dyn ToSql + Sync); 5] = [&ns, &start, &types, &most, &now];
    let rows = client.query(&statement, &params).await.context(what)?;
    drop(client);
    let mut exists = false;
    let mut results = Vec::new();
    let mut paths = Vec::new();
    for row in &rows {
        let field = |error: tokio_postgres::Error| corrupt(what(), error);
        let kind: i32 = row.try_get(0).map_err(field)?;
        match kind {
            0 => exists = true,
            1 => results.push(row.try_get(1).map_err(field)?),
            _ => {
                let nodes: Vec<String> = row.try_get(3).map_err(field)?;
                let weights: Vec<f32> = row.try_get(4).map_err(field)?;
                let froms: Vec<Option<i64>> = row.try_get(5).map_err(field)?;
                let untils: Vec<Option<i64>> = row.try_get(6).map_err(field)?;
                let attributes: Vec<Option<String>> = row.try_get(7).map_err(field)?;
                if nodes.len() != types.len() + 1
                    || [weights.len(), froms.len(), untils.len(), attributes.len()]
                        != [types.len(); 4]
                {
                    return Err(corrupt(what(), "a path of the wrong length"));
                }
                let path = (0..types.len())
                    .map(|hop| {
                        Ok(GraphRelation {
                            namespace: namespace.clone(),
                            source_id: nodes[hop].clone(),
                            target_id: nodes[hop + 1].clone(),
                            relation_type: types[hop].clone(),
                            weight: weights[hop],
                            valid_from: froms[hop].map(decode_time),
                            valid_until: untils[hop].map(decode_time),
                            attributes: decode_attributes(&what(), attributes[hop].as_deref())?,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                paths.push(path);
            }
        }
    }
    if !exists {
        return Err(not_found(namespace, &start));
    }
    Ok(MultiHopResult { results, paths })
}

/// [`KnowledgeGraph::shortest_path`](memory_core::KnowledgeGraph::shortest_path) in one
/// statement ([`SHORTEST_PATH`]).
pub(super) async fn shortest_path(
    db: &Database,
    namespace: &Namespace,
    from: &str,
    to: &str,
) -> Result<Option<Vec<GraphRelation>>> {
    for id in [from, to] {
        if !storable(id) {
            return Err(not_found(namespace, id));
        }
    }
    let ns = namespace.as_str().to_owned();
    let (start, goal) = (from.to_owned(), to.to_owned());
    let depth = i32::try_from(MAX_TRAVERSAL_DEPTH).unwrap_or(i32::MAX);
    let most = i32::try_from(MAX_TRAVERSAL_VISITED).unwrap_or(i32::MAX);
    let now = time_bound(chrono::Utc::now());
    let what = || format!("finding a path from entity {from} to {to} in {namespace}");
    let client = db.client(&what()).await?;
    let statement = client
        .prepare_cached(&db.qualify(SHORTEST_PATH))
        .await
        .context(what)?;
    let params: [&(dyn ToSql + Sync); 6] = [&ns, &start, &goal, &depth, &most, &now];
    let row = client.query_one(&statement, &params).await.context(what)?;
    drop(client);
    let field = |error: tokio_postgres::Error| corrupt(what(), error);
    for (column, id) in [(0, from), (1, to)] {
        let exists: bool = row.try_get(column).map_err(field)?;
        if !exists {
            return Err(not_found(namespace, id));
        }
    }
    if from == to {
        return Ok(Some(Vec::new()));
    }
    let sources: Option<Vec<String>> = row.try_get(2).map_err(field)?;
    let Some(sources) = sources else {
        return Ok(None);
    };
    let targets: Vec<String> = row.try_get(3).map_err(field)?;
    let types: Vec<String> = row.try_get(4).map_err(field)?;
    let weights: Vec<f32> = row.try_get(5).map_err(field)?;
    let froms: Vec<Option<i64>> = row.try_get(6).map_err(field)?;
    let untils: Vec<Option<i64>> = row.try_get(7).map_err(field)?;
    let attributes: Vec<Option<String>> = row.try_get(8).map_err(field)?;
    let lengths = [
        targets.len(),
        types.len(),
        weights.len(),
        froms.len(),
        untils.len(),
        attributes.len(),
    ];
    if lengths != [sources.len(); 6] {
        return Err(corrupt(what(), "a path with arrays of different lengths"));
    }
    (0..sources.len())
        .map(|hop| {
            Ok(GraphRelation {
                namespace: namespace.clone(),
                source_id: sources[hop].clone(),
                target_id: targets[hop].clone(),
                relation_type: types[hop].clone(),
                weight: weights[hop],
                valid_from: froms[hop].map(decode_time),
                valid_until: untils[hop].map(decode_time),
                attributes: decode_attributes(&what(), attributes[hop].as_deref())?,
            })
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}
