//! [`PostgresGraph`]: the knowledge graph as tables of entities and relations, traversed by a
//! recursive query.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::backend::entity_matches_keyword;
use memory_core::{
    AccessEvent, EntityPosition, GraphEntity, GraphRelation, KnowledgeGraph, MemoryError,
    MultiHopResult, Namespace, RelationPosition, Result, Scope, ScoredEntity, Tag, TagConstraints,
};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::database::Database;
use crate::error::{Context, corrupt, pg_error};
use crate::sql::{count, encode_time, namespaces, reject_nul};

/// A [`KnowledgeGraph`] in PostgreSQL.
///
/// Entities live in `entities` (with lowercased copies of name and type for the keyword rules,
/// and their tags in a GIN-indexed array), relations in `relations` with the primary key
/// `(ns, source_id, relation_type, target_id)` and an index on `(ns, target_id, ...)`, so both
/// directions of an entity's relations are index scans in the order
/// [`relations_of`](KnowledgeGraph::relations_of) returns them. Foreign keys cascade the
/// removal of an entity to its relations.
///
/// # Traversal
///
/// [`get_related`](KnowledgeGraph::get_related) is one `WITH RECURSIVE` query: a breadth-first walk
/// that adds one level per iteration, follows relations both ways, skips every entity reached
/// before (the visited set travels with the walk, so cycles end), stops at the depth (clamped to
/// [`MAX_TRAVERSAL_DEPTH`](memory_core::MAX_TRAVERSAL_DEPTH)) and once more than
/// [`MAX_TRAVERSAL_VISITED`](memory_core::MAX_TRAVERSAL_VISITED) entities were reached. Each entity
/// is reached once, through the first relation that reaches it in the order memory-core's default
/// algorithm explores (the earlier-reached parent first, then outgoing before incoming, then
/// relation type and other end), so the results, paths, scores and order are exactly the trait
/// default's; only the round trips differ (one instead of one per visited entity).
/// [`shortest_path`](KnowledgeGraph::shortest_path) is the same walk, stopped once the goal is
/// reached, with the default search's limit on the entities reached applied entity by entity, and
/// the path followed back through the parents in the same query.
/// [`multi_hop`](KnowledgeGraph::multi_hop) is one recursive query that follows the chain of
/// relation types hop by hop, keeping the paths in the default algorithm's order, at most
/// [`MAX_TRAVERSAL_VISITED`](memory_core::MAX_TRAVERSAL_VISITED) per hop, with the ends of
/// the paths kept as the results. Each returns exactly what memory-core's default returns (the same results, paths and order)
/// in one round trip instead of one per visited entity.
///
/// Relations keep their validity (`valid_from`, `valid_until`); re-adding a relation replaces
/// its weight and validity, so adding it without an end reopens it. The three traversals
/// follow only relations current when they run (`valid_until` open or after the wall clock
/// of the calling process, bound as a parameter), and the relations they return carry their
/// validity; [`relations_of`](KnowledgeGraph::relations_of),
/// [`list_relations`](KnowledgeGraph::list_relations) and [`degree`](KnowledgeGraph::degree)
/// see closed relations too.
///
/// Cheap to clone; clones share the pool.
#[derive(Clone, Debug)]
pub struct PostgresGraph {
    db: Database,
    constraints: TagConstraints,
}

impl PostgresGraph {
    pub(crate) fn new(db: Database, constraints: TagConstraints) -> Self {
        Self { db, constraints }
    }
}

mod row;
mod traversal;

use self::row::{
    COLUMNS, RELATION_COLUMNS, decode_entity, decode_relation, encode, encode_attributes,
};

fn storable(text: &str) -> bool {
    !text.contains('\0')
}

#[async_trait]
impl KnowledgeGraph for PostgresGraph {
    async fn add_entity(&self, entity: GraphEntity) -> Result<()> {
        let entity = encode(entity, self.constraints)?;
        let what = || format!("adding entity {} in {}", entity.id, entity.ns);
        let client = self.db.client(&what()).await?;
        let statement = client
            .prepare_cached(&self.db.qualify(
                "INSERT INTO {s}.entities (ns, id, name, name_key, entity_type, type_key, \
                 description, tags, created_at, access_count, last_accessed, attributes) \
                 VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, \
                 $6::text, $7::text, $8::text[], $9::bigint, $10::bigint, $11::bigint, \
                 $12::text) ON CONFLICT (ns, id) DO NOTHING",
            ))
            .await
            .context(what)?;
        let inserted = client
            .execute(&statement, &entity.insert_params())
            .await
            .context(what)?;
        if inserted == 0 {
            return Err(MemoryError::AlreadyExists(format!(
                "entity {} in {}",
                entity.id, entity.ns
            )));
        }
        Ok(())
    }

    async fn update_entity(&self, entity: GraphEntity) -> Result<()> {
        let entity = encode(entity, self.constraints)?;
        let what = || format!("updating entity {} in {}", entity.id, entity.ns);
        let client = self.db.client(&what()).await?;
        let statement = client
            .prepare_cached(&self.db.qualify(
                // The access statistics stay; created_at too, unless unknown.
                "UPDATE {s}.entities SET name = $3::text, name_key = $4::text, \
                 entity_type = $5::text, type_key = $6::text, description = $7::text, \
                 tags = $8::text[], created_at = coalesce(created_at, $9::bigint), \
                 attributes = $10::text WHERE ns = $1::text AND id = $2::text",
            ))
            .await
            .context(what)?;
        let updated = client
            .execute(&statement, &entity.params())
            .await
            .context(what)?;
        if updated == 0 {
            return Err(MemoryError::not_found("entity", &entity.ns, &entity.id));
        }
        Ok(())
    }

    async fn get_entity(&self, namespace: &Namespace, id: &str) -> Result<Option<GraphEntity>> {
        if !storable(id) {
            return Ok(None);
        }
        let mut sql = self.db.sql(&format!(
            "SELECT {COLUMNS} FROM {{s}}.entities e WHERE e.ns = "
        ));
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND e.id = ")
            .bind(id.to_owned(), "text");
        let rows = self
            .db
            .query(&sql, || format!("reading entity {id} in {namespace}"))
            .await?;
        rows.first().map(|row| decode_entity(row, 0)).transpose()
    }

    async fn remove_entity(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        if !storable(id) {
            return Ok(false);
        }
        // Its relations go with it (ON DELETE CASCADE).
        let mut sql = self.db.sql("DELETE FROM {s}.entities WHERE ns = ");
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND id = ")
            .bind(id.to_owned(), "text");
        let removed = self
            .db
            .execute(&sql, || format!("removing entity {id} in {namespace}"))
            .await?;
        Ok(removed > 0)
    }

    async fn add_relation(&self, relation: GraphRelation) -> Result<()> {
        relation.validate()?;
        reject_nul("relation_type", &relation.relation_type)?;
        let ns = relation.namespace.as_str().to_owned();
        let describe = || {
            format!(
                "relation {} -[{}]-> {} in {ns}",
                relation.source_id, relation.relation_type, relation.target_id
            )
        };
        let what = || format!("adding {}", describe());
        let client = self.db.client(&what()).await?;
        let statement = client
            .prepare_cached(&self.db.qualify(
                "INSERT INTO {s}.relations (ns, source_id, target_id, relation_type, weight, \
                 valid_from, valid_until, attributes) \
                 SELECT $1::text, $2::text, $3::text, $4::text, $5::real, $6::bigint, $7::bigint, \
                 $8::text \
                 WHERE EXISTS (SELECT 1 FROM {s}.entities WHERE ns = $1::text AND id = $2::text) \
                 AND EXISTS (SELECT 1 FROM {s}.entities WHERE ns = $1::text AND id = $3::text) \
                 ON CONFLICT (ns, source_id, relation_type, target_id) \
                 DO UPDATE SET weight = EXCLUDED.weight, valid_from = EXCLUDED.valid_from, \
                 valid_until = EXCLUDED.valid_until, attributes = EXCLUDED.attributes",
            ))
            .await
            .context(what)?;
        let valid_from = (relation.valid_from)
            .map(|at| encode_time("valid_from", at))
            .transpose()?;
        let valid_until = (relation.valid_until)
            .map(|at| encode_time("valid_until", at))
            .transpose()?;
        let attributes = encode_attributes(&relation.attributes);
        let params: [&(dyn ToSql + Sync); 8] = [
            &ns,
            &relation.source_id,
            &relation.target_id,
            &relation.relation_type,
            &relation.weight,
            &valid_from,
            &valid_until,
            &attributes,
        ];
        let written = match client.execute(&statement, &params).await {
            Ok(written) => written,
            // An endpoint removed between the existence check and the insert.
            Err(error) if error.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) => 0,
            Err(error) => return Err(pg_error(what(), error)),
        };
        if written > 0 {
            return Ok(());
        }
        // Back to the pool before the reads below take one: holding it while waiting for
        // another would stall a full pool (each failing call holding one, waiting for more).
        drop(client);
        // The first endpoint that does not exist (the source when both were removed
        // concurrently after the insert failed).
        for endpoint in [&relation.source_id, &relation.target_id] {
            if self
                .get_entity(&relation.namespace, endpoint)
                .await?
                .is_none()
            {
                return Err(MemoryError::not_found(
                    "entity",
                    &relation.namespace,
                    endpoint,
                ));
            }
        }
        Err(MemoryError::not_found(
            "entity",
            &relation.namespace,
            &relation.source_id,
        ))
    }

    async fn remove_relation(
        &self,
        namespace: &Namespace,
        source_id: &str,
        target_id: &str,
        relation_type: &str,
    ) -> Result<bool> {
        if ![source_id, target_id, relation_type]
            .iter()
            .all(|text| storable(text))
        {
            return Ok(false);
        }
        let mut sql = self.db.sql("DELETE FROM {s}.relations WHERE ns = ");
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND source_id = ")
            .bind(source_id.to_owned(), "text")
            .push(" AND relation_type = ")
            .bind(relation_type.to_owned(), "text")
            .push(" AND target_id = ")
            .bind(target_id.to_owned(), "text");
        let removed = self
            .db
            .execute(&sql, || {
                format!(
                    "removing relation {source_id} -[{relation_type}]-> {target_id} in {namespace}"
                )
            })
            .await?;
        Ok(removed > 0)
    }

    async fn relations_of(&self, namespace: &Namespace, id: &str) -> Result<Vec<GraphRelation>> {
        self.relations_of_at_most(namespace, id, usize::MAX).await
    }

    async fn relations_of_at_most(
        &self,
        namespace: &Namespace,
        id: &str,
        limit: usize,
    ) -> Result<Vec<GraphRelation>> {
        if !storable(id) || limit == 0 {
            return Ok(Vec::new());
        }
        let ns = namespace.as_str().to_owned();
        let id = id.to_owned();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut sql = self.db.sql(&format!(
            "SELECT {RELATION_COLUMNS} FROM ( \
             (SELECT *, 0 AS dir, target_id AS other FROM {{s}}.relations \
             WHERE ns = $1::text AND source_id = $2::text \
             ORDER BY relation_type, target_id LIMIT $3::bigint) \
             UNION ALL \
             (SELECT *, 1 AS dir, source_id AS other FROM {{s}}.relations \
             WHERE ns = $1::text AND target_id = $2::text AND source_id <> $2::text \
             ORDER BY relation_type, source_id LIMIT $3::bigint) \
             ) AS r ORDER BY r.dir, r.relation_type, r.other LIMIT $3::bigint"
        ));
        // The statement names $1 to $3 itself; bind them in order. Each direction is cut to
        // the limit before the two are put together, so a hub's other relations are not read
        // past its index.
        sql.bind_only(ns.clone())
            .bind_only(id.clone())
            .bind_only(limit);
        let rows = self
            .db
            .query(&sql, || {
                format!("reading the relations of entity {id} in {ns}")
            })
            .await?;
        rows.iter().map(decode_relation).collect()
    }

    async fn find_by_keywords(
        &self,
        scope: &Scope,
        keywords: &[String],
    ) -> Result<Vec<Arc<GraphEntity>>> {
        let usable: Vec<&String> = keywords
            .iter()
            .filter(|keyword| !keyword.trim().is_empty() && storable(keyword))
            .collect();
        if usable.is_empty() {
            return Ok(Vec::new());
        }
        let lowered: Vec<String> = usable
            .iter()
            .map(|keyword| keyword.trim().to_lowercase())
            .collect();
        let tags: Vec<String> = usable
            .iter()
            .filter_map(|keyword| Tag::new(keyword).ok())
            .map(|tag| tag.as_str().to_owned())
            .collect();
        let mut sql = self.db.sql(&format!(
            "SELECT {COLUMNS} FROM {{s}}.entities e WHERE true"
        ));
        sql.and_scope("e.ns", scope)
            .push(" AND (EXISTS (SELECT 1 FROM unnest(")
            .bind(lowered.clone(), "text[]")
            .push(") AS k WHERE starts_with(e.name_key, k)) OR e.type_key = ANY(")
            .bind(lowered, "text[]")
            .push(") OR e.tags && ")
            .bind(tags, "text[]")
            .push(") ORDER BY e.ns, e.id");
        let rows = self
            .db
            .query(&sql, || "finding entities by keyword".to_owned())
            .await?;
        let mut entities = rows
            .iter()
            .map(|row| decode_entity(row, 0))
            .collect::<Result<Vec<_>>>()?;
        // The rule itself decides; SQL only narrowed the candidates.
        entities.retain(|entity| {
            usable
                .iter()
                .any(|keyword| entity_matches_keyword(entity, keyword))
        });
        Ok(entities.into_iter().map(Arc::new).collect())
    }

    async fn find_tags(&self, scope: &Scope, prefix: &str) -> Result<Vec<String>> {
        let Some(prefix) = Tag::normalize_prefix(prefix) else {
            return Ok(Vec::new());
        };
        let mut sql = self.db.sql(
            "SELECT DISTINCT t FROM {s}.entities e CROSS JOIN LATERAL unnest(e.tags) AS t \
             WHERE starts_with(t, ",
        );
        sql.bind(prefix, "text").push(")");
        sql.and_scope("e.ns", scope).push(" ORDER BY t");
        let rows = self.db.query(&sql, || "finding tags".to_owned()).await?;
        rows.iter()
            .map(|row| row.try_get(0).map_err(|error| corrupt("a tag", error)))
            .collect()
    }

    async fn entity_count_by_tag(&self, scope: &Scope, tag: &str) -> Result<usize> {
        let Ok(tag) = Tag::new(tag) else {
            return Ok(0);
        };
        let mut sql = self
            .db
            .sql("SELECT count(*) FROM {s}.entities e WHERE e.tags @> ");
        sql.bind(vec![tag.as_str().to_owned()], "text[]")
            .and_scope("e.ns", scope);
        count(&self.db, &sql, "counting entities by tag").await
    }

    async fn set_entity_tags(
        &self,
        namespace: &Namespace,
        id: &str,
        tags: Vec<String>,
    ) -> Result<()> {
        let tags: Vec<String> = self
            .constraints
            .limit(&Tag::normalize_all(tags)?)
            .iter()
            .map(|tag| tag.as_str().to_owned())
            .collect();
        if !storable(id) {
            return Err(MemoryError::not_found("entity", namespace, id));
        }
        let mut sql = self.db.sql("UPDATE {s}.entities SET tags = ");
        sql.bind(tags, "text[]")
            .push(" WHERE ns = ")
            .bind(namespace.as_str().to_owned(), "text")
            .push(" AND id = ")
            .bind(id.to_owned(), "text");
        let updated = self
            .db
            .execute(&sql, || {
                format!("setting the tags of entity {id} in {namespace}")
            })
            .await?;
        if updated == 0 {
            return Err(MemoryError::not_found("entity", namespace, id));
        }
        Ok(())
    }

    fn tag_constraints(&self) -> TagConstraints {
        self.constraints
    }

    async fn list_entities(&self, scope: &Scope) -> Result<Vec<GraphEntity>> {
        let mut sql = self.db.sql(&format!(
            "SELECT {COLUMNS} FROM {{s}}.entities e WHERE true"
        ));
        sql.and_scope("e.ns", scope).push(" ORDER BY e.ns, e.id");
        let rows = self
            .db
            .query(&sql, || "listing entities".to_owned())
            .await?;
        rows.iter().map(|row| decode_entity(row, 0)).collect()
    }

    async fn list_relations(&self, scope: &Scope) -> Result<Vec<GraphRelation>> {
        let mut sql = self.db.sql(&format!(
            "SELECT {RELATION_COLUMNS} FROM {{s}}.relations r WHERE true"
        ));
        sql.and_scope("r.ns", scope)
            .push(" ORDER BY r.ns, r.source_id, r.relation_type, r.target_id");
        let rows = self
            .db
            .query(&sql, || "listing relations".to_owned())
            .await?;
        rows.iter().map(decode_relation).collect()
    }

    async fn list_entities_after(
        &self,
        scope: &Scope,
        after: Option<&EntityPosition>,
        limit: usize,
    ) -> Result<Vec<GraphEntity>> {
        let mut sql = self.db.sql(&format!(
            "SELECT {COLUMNS} FROM {{s}}.entities e WHERE true"
        ));
        // The `(ns, id)` key seeks to the position (both columns `COLLATE "C"`).
        let after = after.map(|after| (after.namespace().as_str(), after.key()));
        let after = after.as_ref().map(|(ns, key)| (*ns, &key[..]));
        sql.and_page("e.ns", &["e.id"], scope, after);
        sql.push(" ORDER BY e.ns, e.id LIMIT ")
            .bind(i64::try_from(limit).unwrap_or(i64::MAX), "bigint");
        let rows = self
            .db
            .query(&sql, || "listing entities".to_owned())
            .await?;
        rows.iter().map(|row| decode_entity(row, 0)).collect()
    }

    async fn list_relations_after(
        &self,
        scope: &Scope,
        after: Option<&RelationPosition>,
        limit: usize,
    ) -> Result<Vec<GraphRelation>> {
        let mut sql = self.db.sql(&format!(
            "SELECT {RELATION_COLUMNS} FROM {{s}}.relations r WHERE true"
        ));
        // The primary key's order, which it seeks to.
        let after = after.map(|after| (after.namespace().as_str(), after.key()));
        let after = after.as_ref().map(|(ns, key)| (*ns, &key[..]));
        sql.and_page(
            "r.ns",
            &["r.source_id", "r.relation_type", "r.target_id"],
            scope,
            after,
        );
        sql.push(" ORDER BY r.ns, r.source_id, r.relation_type, r.target_id LIMIT ")
            .bind(i64::try_from(limit).unwrap_or(i64::MAX), "bigint");
        let rows = self
            .db
            .query(&sql, || "listing relations".to_owned())
            .await?;
        rows.iter().map(decode_relation).collect()
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        // Relations go with their entities (ON DELETE CASCADE); both ends of a relation are
        // in its namespace, so none is left behind.
        let mut sql = self.db.sql("DELETE FROM {s}.entities AS e WHERE true");
        sql.and_scope("e.ns", scope);
        let removed = self
            .db
            .execute(&sql, || "clearing the graph".to_owned())
            .await?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        let mut sql = self
            .db
            .sql("SELECT DISTINCT e.ns FROM {s}.entities e WHERE true");
        sql.and_scope("e.ns", scope).push(" ORDER BY e.ns");
        namespaces(&self.db, &sql, "listing entity namespaces").await
    }

    async fn get_related(
        &self,
        namespace: &Namespace,
        id: &str,
        depth: usize,
    ) -> Result<Vec<ScoredEntity>> {
        if self.get_entity(namespace, id).await?.is_none() {
            return Err(MemoryError::not_found("entity", namespace, id));
        }
        traversal::get_related(&self.db, namespace, id, depth).await
    }

    /// One recursive query (see the type's documentation).
    async fn multi_hop(
        &self,
        namespace: &Namespace,
        start: &str,
        relation_types: &[String],
    ) -> Result<MultiHopResult> {
        traversal::multi_hop(&self.db, namespace, start, relation_types).await
    }

    /// One recursive query (see the type's documentation).
    async fn shortest_path(
        &self,
        namespace: &Namespace,
        from: &str,
        to: &str,
    ) -> Result<Option<Vec<GraphRelation>>> {
        traversal::shortest_path(&self.db, namespace, from, to).await
    }

    /// One statement for the whole batch: an `UPDATE ... FROM unnest(...)` of the batch's
    /// accesses tallied per record, so concurrent batches add up.
    async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
        crate::sql::record_accesses(&self.db, "entities", events).await
    }

    async fn degree(&self, namespace: &Namespace, id: &str) -> Result<usize> {
        if !storable(id) {
            return Ok(0);
        }
        let mut sql = self.db.sql(
            "SELECT count(*) FROM {s}.relations WHERE ns = $1::text \
             AND (source_id = $2::text OR target_id = $2::text)",
        );
        sql.bind_only(namespace.as_str().to_owned())
            .bind_only(id.to_owned());
        count(
            &self.db,
            &sql,
            &format!("counting the relations of entity {id} in {namespace}"),
        )
        .await
    }
}
