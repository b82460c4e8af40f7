//! [`SqliteGraph`]: the knowledge graph as tables of entities, tags and relations.

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::backend::entity_matches_keyword;
use memory_core::{
    AccessEvent, EntityPosition, GraphEntity, GraphRelation, KnowledgeGraph, MemoryError,
    Namespace, RelationPosition, Result, Scope, Tag, TagConstraints,
};
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};

use crate::database::Database;
use crate::error::Context;
use crate::sql::{Sql, count, encode_tags, encode_time, namespaces};

mod row;

use self::row::{
    COLUMNS, RELATION_COLUMNS, decode_relation, encode, encode_attributes, query_entities,
    query_relations, read_relation,
};

/// A [`KnowledgeGraph`] in an SQLite database.
///
/// Entities live in `entities` (with lowercased copies of name and type for the keyword
/// rules), their tags in `entity_tags` (indexed by tag), relations in `relations` with the
/// primary key `(ns, source_id, target_id, relation_type)` and an index on
/// `(ns, target_id)`, so both directions of an entity's relations are index lookups. Foreign
/// keys cascade the removal of an entity to its relations and tags.
///
/// # Traversal
///
/// [`get_related`](KnowledgeGraph::get_related), [`multi_hop`](KnowledgeGraph::multi_hop)
/// and [`shortest_path`](KnowledgeGraph::shortest_path) are memory-core's default
/// breadth-first algorithms over [`relations_of`](KnowledgeGraph::relations_of), which is two
/// indexed queries. This was chosen over loading the graph into memory-graph's structure on
/// open (which would hold every namespace's graph in memory, duplicate state that another
/// process writing the same file would make stale, and make memory-graph a normal dependency
/// of this crate) and over a recursive CTE (SQL cannot express "each entity once, with the
/// first path that reached it" without enumerating every path, which explodes on dense or
/// cyclic graphs). The defaults give exactly the results, order and limits of every other
/// backend; the cost is one indexed query per visited entity, fine for the neighbourhoods
/// retrieval walks (depth 1 to 3). [`degree`](KnowledgeGraph::degree) is one `count(*)`.
/// Relations keep their validity (`valid_from`, `valid_until` columns); the defaults follow
/// only relations current when they run, while `relations_of`, `list_relations` and
/// `degree` see every stored one.
///
/// Cheap to clone; clones share the connection.
#[derive(Clone, Debug)]
pub struct SqliteGraph {
    db: Database,
    constraints: TagConstraints,
}

impl SqliteGraph {
    pub(crate) fn new(db: Database, constraints: TagConstraints) -> Self {
        Self { db, constraints }
    }
}

fn find_entity(connection: &Connection, ns: &str, id: &str) -> Result<Option<i64>> {
    connection
        .prepare_cached("SELECT rid FROM entities WHERE ns = ?1 AND id = ?2")
        .and_then(|mut statement| {
            statement
                .query_row(params![ns, id], |row| row.get(0))
                .optional()
        })
        .context(|| format!("looking up entity {id} in {ns}"))
}

/// Replaces the rows of `entity_tags` for the entity `rid`.
fn write_tags(transaction: &Transaction<'_>, rid: i64, tags: &[String], what: &str) -> Result<()> {
    transaction
        .prepare_cached("DELETE FROM entity_tags WHERE rid = ?1")
        .and_then(|mut statement| statement.execute([rid]))
        .context(|| what.to_owned())?;
    let mut insert = transaction
        .prepare_cached("INSERT OR IGNORE INTO entity_tags (rid, tag) VALUES (?1, ?2)")
        .context(|| what.to_owned())?;
    for tag in tags {
        insert
            .execute(params![rid, tag])
            .context(|| what.to_owned())?;
    }
    Ok(())
}

/// Above this many keywords, `find_by_keywords` scans the scope instead of binding a condition
/// per keyword (SQLite limits the number of bound values).
const MAX_KEYWORDS_IN_SQL: usize = 200;

#[async_trait]
impl KnowledgeGraph for SqliteGraph {
    async fn add_entity(&self, entity: GraphEntity) -> Result<()> {
        let entity = encode(entity, self.constraints)?;
        self.db
            .write("adding an entity", move |transaction| {
                let what = format!("adding entity {} in {}", entity.id, entity.ns);
                if find_entity(transaction, &entity.ns, &entity.id)?.is_some() {
                    return Err(MemoryError::AlreadyExists(format!(
                        "entity {} in {}",
                        entity.id, entity.ns
                    )));
                }
                let rid: i64 = transaction
                    .prepare_cached(
                        "INSERT INTO entities (ns, id, name, name_key, entity_type, type_key, \
                         description, tags, created_at, access_count, last_accessed, attributes) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING rid",
                    )
                    .and_then(|mut statement| {
                        statement.query_row(
                            params![
                                entity.ns,
                                entity.id,
                                entity.name,
                                entity.name_key,
                                entity.entity_type,
                                entity.type_key,
                                entity.description,
                                entity.tags_json,
                                entity.created_at,
                                entity.access_count,
                                entity.last_accessed,
                                entity.attributes,
                            ],
                            |row| row.get(0),
                        )
                    })
                    .context(|| what.clone())?;
                write_tags(transaction, rid, &entity.tags, &what)
            })
            .await
    }

    async fn update_entity(&self, entity: GraphEntity) -> Result<()> {
        let entity = encode(entity, self.constraints)?;
        self.db
            .write("updating an entity", move |transaction| {
                let what = format!("updating entity {} in {}", entity.id, entity.ns);
                let Some(rid) = find_entity(transaction, &entity.ns, &entity.id)? else {
                    return Err(MemoryError::not_found("entity", &entity.ns, &entity.id));
                };
                transaction
                    .prepare_cached(
                        // The access statistics stay; created_at too, unless unknown.
                        "UPDATE entities SET name = ?2, name_key = ?3, entity_type = ?4, \
                         type_key = ?5, description = ?6, tags = ?7, \
                         created_at = coalesce(created_at, ?8), attributes = ?9 WHERE rid = ?1",
                    )
                    .and_then(|mut statement| {
                        statement.execute(params![
                            rid,
                            entity.name,
                            entity.name_key,
                            entity.entity_type,
                            entity.type_key,
                            entity.description,
                            entity.tags_json,
                            entity.created_at,
                            entity.attributes,
                        ])
                    })
                    .context(|| what.clone())?;
                write_tags(transaction, rid, &entity.tags, &what)
            })
            .await
    }

    async fn get_entity(&self, namespace: &Namespace, id: &str) -> Result<Option<GraphEntity>> {
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM entities e WHERE e.ns = "));
        sql.bind(namespace.as_str().to_owned())
            .push(" AND e.id = ")
            .bind(id.to_owned());
        let what = format!("reading entity {id} in {namespace}");
        self.db
            .query(move |connection| query_entities(connection, &sql, &what))
            .await
            .map(|entities| entities.into_iter().next())
    }

    async fn remove_entity(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .write("removing an entity", move |transaction| {
                // Relations and tags go with it (ON DELETE CASCADE).
                let removed = transaction
                    .prepare_cached("DELETE FROM entities WHERE ns = ?1 AND id = ?2")
                    .and_then(|mut statement| statement.execute(params![ns, id]))
                    .context(|| format!("removing entity {id} in {ns}"))?;
                Ok(removed > 0)
            })
            .await
    }

    /// Inserts the relation, or replaces the weight, validity and attributes of the one with
    /// the same source, target and type: re-adding a closed relation without `valid_until`
    /// reopens it.
    async fn add_relation(&self, relation: GraphRelation) -> Result<()> {
        relation.validate()?;
        let valid_from = relation
            .valid_from
            .map(|at| encode_time("valid_from", at))
            .transpose()?;
        let valid_until = relation
            .valid_until
            .map(|at| encode_time("valid_until", at))
            .transpose()?;
        let attributes = encode_attributes(&relation.attributes);
        self.db
            .write("adding a relation", move |transaction| {
                let ns = relation.namespace.as_str();
                for endpoint in [&relation.source_id, &relation.target_id] {
                    if find_entity(transaction, ns, endpoint)?.is_none() {
                        return Err(MemoryError::not_found("entity", ns, endpoint));
                    }
                }
                transaction
                    .prepare_cached(
                        "INSERT INTO relations (ns, source_id, target_id, relation_type, weight, \
                         valid_from, valid_until, attributes) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                         ON CONFLICT (ns, source_id, target_id, relation_type) \
                         DO UPDATE SET weight = excluded.weight, valid_from = excluded.valid_from, \
                         valid_until = excluded.valid_until, attributes = excluded.attributes",
                    )
                    .and_then(|mut statement| {
                        statement.execute(params![
                            ns,
                            relation.source_id,
                            relation.target_id,
                            relation.relation_type,
                            f64::from(relation.weight),
                            valid_from,
                            valid_until,
                            attributes,
                        ])
                    })
                    .context(|| {
                        format!(
                            "adding relation {} -[{}]-> {} in {ns}",
                            relation.source_id, relation.relation_type, relation.target_id
                        )
                    })?;
                Ok(())
            })
            .await
    }

    async fn remove_relation(
        &self,
        namespace: &Namespace,
        source_id: &str,
        target_id: &str,
        relation_type: &str,
    ) -> Result<bool> {
        let ns = namespace.as_str().to_owned();
        let (source_id, target_id, relation_type) = (
            source_id.to_owned(),
            target_id.to_owned(),
            relation_type.to_owned(),
        );
        self.db
            .write("removing a relation", move |transaction| {
                let removed = transaction
                    .prepare_cached(
                        "DELETE FROM relations WHERE ns = ?1 AND source_id = ?2 \
                         AND target_id = ?3 AND relation_type = ?4",
                    )
                    .and_then(|mut statement| {
                        statement.execute(params![ns, source_id, target_id, relation_type])
                    })
                    .context(|| {
                        format!(
                            "removing relation {source_id} -[{relation_type}]-> {target_id} in {ns}"
                        )
                    })?;
                Ok(removed > 0)
            })
            .await
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
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .query(move |connection| {
                let mut out = Vec::new();
                // Outgoing, then incoming; a relation from the entity to itself is listed once.
                for sql in [
                    format!(
                        "SELECT {RELATION_COLUMNS} FROM relations r \
                         WHERE r.ns = ?1 AND r.source_id = ?2 ORDER BY r.relation_type, r.target_id \
                         LIMIT ?3"
                    ),
                    format!(
                        "SELECT {RELATION_COLUMNS} FROM relations r \
                         WHERE r.ns = ?1 AND r.target_id = ?2 AND r.source_id <> ?2 \
                         ORDER BY r.relation_type, r.source_id LIMIT ?3"
                    ),
                ] {
                    // What is left of the limit (SQLite reads a negative limit as none).
                    let left = i64::try_from(limit.saturating_sub(out.len())).unwrap_or(i64::MAX);
                    if left == 0 {
                        break;
                    }
                    let rows = connection
                        .prepare_cached(&sql)
                        .and_then(|mut statement| {
                            statement
                                .query_map(params![ns, id, left], read_relation)?
                                .collect::<rusqlite::Result<Vec<_>>>()
                        })
                        .context(|| format!("reading the relations of entity {id} in {ns}"))?;
                    for row in rows {
                        out.push(decode_relation(row)?);
                    }
                }
                Ok(out)
            })
            .await
    }

    async fn find_by_keywords(
        &self,
        scope: &Scope,
        keywords: &[String],
    ) -> Result<Vec<Arc<GraphEntity>>> {
        let usable: Vec<&String> = keywords
            .iter()
            .filter(|keyword| !keyword.trim().is_empty())
            .collect();
        if usable.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM entities e WHERE 1"));
        sql.and_scope("e.ns", scope);
        if usable.len() <= MAX_KEYWORDS_IN_SQL {
            sql.push(" AND (");
            for (index, keyword) in usable.iter().enumerate() {
                let lower = keyword.trim().to_lowercase();
                if index > 0 {
                    sql.push(" OR ");
                }
                sql.push("substr(e.name_key, 1, length(")
                    .bind(lower.clone())
                    .push(")) = ")
                    .bind(lower.clone())
                    .push(" OR e.type_key = ")
                    .bind(lower);
                if let Ok(tag) = Tag::new(keyword) {
                    sql.push(
                        " OR EXISTS (SELECT 1 FROM entity_tags t WHERE t.rid = e.rid AND t.tag = ",
                    )
                    .bind(tag.as_str().to_owned())
                    .push(")");
                }
            }
            sql.push(")");
        }
        sql.push(" ORDER BY e.ns, e.id");
        let keywords: Vec<String> = usable.into_iter().cloned().collect();
        self.db
            .query(move |connection| {
                let mut entities = query_entities(connection, &sql, "finding entities by keyword")?;
                // The rule itself decides; SQL only narrowed the candidates.
                entities.retain(|entity| {
                    keywords
                        .iter()
                        .any(|keyword| entity_matches_keyword(entity, keyword))
                });
                Ok(entities.into_iter().map(Arc::new).collect())
            })
            .await
    }

    async fn find_tags(&self, scope: &Scope, prefix: &str) -> Result<Vec<String>> {
        let Some(prefix) = Tag::normalize_prefix(prefix) else {
            return Ok(Vec::new());
        };
        let mut sql = Sql::new(
            "SELECT DISTINCT t.tag FROM entity_tags t JOIN entities e ON e.rid = t.rid WHERE 1",
        );
        sql.and_scope("e.ns", scope)
            .and_prefix("t.tag", &prefix)
            .push(" ORDER BY t.tag");
        self.db
            .query(move |connection| {
                connection
                    .prepare_cached(&sql.text)
                    .and_then(|mut statement| {
                        statement
                            .query_map(params_from_iter(sql.params.iter()), |row| row.get(0))?
                            .collect::<rusqlite::Result<Vec<String>>>()
                    })
                    .context(|| "finding tags")
            })
            .await
    }

    async fn entity_count_by_tag(&self, scope: &Scope, tag: &str) -> Result<usize> {
        let Ok(tag) = Tag::new(tag) else {
            return Ok(0);
        };
        let mut sql = Sql::new(
            "SELECT count(*) FROM entity_tags t JOIN entities e ON e.rid = t.rid WHERE t.tag = ",
        );
        sql.bind(tag.as_str().to_owned()).and_scope("e.ns", scope);
        self.db
            .query(move |connection| count(connection, &sql, "counting entities by tag"))
            .await
    }

    async fn set_entity_tags(
        &self,
        namespace: &Namespace,
        id: &str,
        tags: Vec<String>,
    ) -> Result<()> {
        let tags = self.constraints.limit(&Tag::normalize_all(tags)?);
        let tags_json = encode_tags(&tags);
        let tags: Vec<String> = tags.iter().map(|tag| tag.as_str().to_owned()).collect();
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .write("setting entity tags", move |transaction| {
                let what = format!("setting the tags of entity {id} in {ns}");
                let Some(rid) = find_entity(transaction, &ns, &id)? else {
                    return Err(MemoryError::not_found("entity", &ns, &id));
                };
                transaction
                    .prepare_cached("UPDATE entities SET tags = ?2 WHERE rid = ?1")
                    .and_then(|mut statement| statement.execute(params![rid, tags_json]))
                    .context(|| what.clone())?;
                write_tags(transaction, rid, &tags, &what)
            })
            .await
    }

    fn tag_constraints(&self) -> TagConstraints {
        self.constraints
    }

    async fn list_entities(&self, scope: &Scope) -> Result<Vec<GraphEntity>> {
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM entities e WHERE 1"));
        sql.and_scope("e.ns", scope).push(" ORDER BY e.ns, e.id");
        self.db
            .query(move |connection| query_entities(connection, &sql, "listing entities"))
            .await
    }

    async fn list_relations(&self, scope: &Scope) -> Result<Vec<GraphRelation>> {
        let mut sql = Sql::new(&format!(
            "SELECT {RELATION_COLUMNS} FROM relations r WHERE 1"
        ));
        sql.and_scope("r.ns", scope)
            .push(" ORDER BY r.ns, r.source_id, r.relation_type, r.target_id");
        self.db
            .query(move |connection| query_relations(connection, &sql, "listing relations"))
            .await
    }

    async fn list_entities_after(
        &self,
        scope: &Scope,
        after: Option<&EntityPosition>,
        limit: usize,
    ) -> Result<Vec<GraphEntity>> {
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM entities e WHERE 1"));
        let after = after.map(|after| (after.namespace().as_str(), after.key()));
        let after = after.as_ref().map(|(ns, key)| (*ns, &key[..]));
        sql.and_page("e.ns", &["e.id"], scope, after);
        sql.push(" ORDER BY e.ns, e.id LIMIT ")
            .bind(i64::try_from(limit).unwrap_or(i64::MAX));
        self.db
            .query(move |connection| query_entities(connection, &sql, "listing entities"))
            .await
    }

    async fn list_relations_after(
        &self,
        scope: &Scope,
        after: Option<&RelationPosition>,
        limit: usize,
    ) -> Result<Vec<GraphRelation>> {
        let mut sql = Sql::new(&format!(
            "SELECT {RELATION_COLUMNS} FROM relations r WHERE 1"
        ));
        let after = after.map(|after| (after.namespace().as_str(), after.key()));
        let after = after.as_ref().map(|(ns, key)| (*ns, &key[..]));
        // The key is `(ns, source_id, target_id, relation_type)`: it seeks to the source,
        // and the relations of one source are put in order within their run.
        sql.and_page(
            "r.ns",
            &["r.source_id", "r.relation_type", "r.target_id"],
            scope,
            after,
        );
        sql.push(" ORDER BY r.ns, r.source_id, r.relation_type, r.target_id LIMIT ")
            .bind(i64::try_from(limit).unwrap_or(i64::MAX));
        self.db
            .query(move |connection| query_relations(connection, &sql, "listing relations"))
            .await
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut relations = Sql::new("DELETE FROM relations WHERE 1");
        relations.and_scope("ns", scope);
        let mut entities = Sql::new("DELETE FROM entities WHERE 1");
        entities.and_scope("ns", scope);
        self.db
            .write("clearing the graph", move |transaction| {
                transaction
                    .execute(&relations.text, params_from_iter(relations.params.iter()))
                    .context(|| "clearing the graph: relations")?;
                transaction
                    .execute(&entities.text, params_from_iter(entities.params.iter()))
                    .context(|| "clearing the graph: entities")
            })
            .await
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        let mut sql = Sql::new("SELECT DISTINCT e.ns FROM entities e WHERE 1");
        sql.and_scope("e.ns", scope).push(" ORDER BY e.ns");
        self.db
            .query(move |connection| namespaces(connection, &sql, "listing entity namespaces"))
            .await
    }

    /// One transaction for the batch: an `UPDATE` by `(ns, id)` per entity it names.
    async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
        let tallies = crate::sql::encode_accesses(events)?;
        if tallies.is_empty() {
            return Ok(());
        }
        self.db
            .write("recording entity accesses", move |transaction| {
                crate::sql::apply_accesses(transaction, "entities", &tallies)
            })
            .await
    }

    async fn degree(&self, namespace: &Namespace, id: &str) -> Result<usize> {
        let mut sql = Sql::new("SELECT count(*) FROM relations WHERE ns = ");
        sql.bind(namespace.as_str().to_owned())
            .push(" AND (source_id = ")
            .bind(id.to_owned())
            .push(" OR target_id = ")
            .bind(id.to_owned())
            .push(")");
        self.db
            .query(move |connection| count(connection, &sql, "counting relations"))
            .await
    }
}
