//! The knowledge graph: entities and relations.

use agent_memory::{EntityPosition, GraphRelation, MemoryError, RelationPosition};
use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    ApiJson, ApiQuery, Auth, ErrorBody, Forgotten, NamespaceQuery, PageQuery, not_found,
    page_limit, scope_of,
};
use crate::failure::{ErrorKind, Failure};
use crate::serve::AppState;
use crate::serve::auth::Caller;
use crate::views::{EntityView, MAX_ENTITY_RELATIONS, RelationView};

/// An entity to write.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EntityRequest {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// Its id, unique in the namespace; an entity with this id is replaced (its relations stay).
    #[schema(min_length = 1, max_length = 256)]
    pub(crate) id: String,
    /// Its display name (at most 1 KiB).
    #[schema(min_length = 1, max_length = 1024)]
    pub(crate) name: String,
    /// Its type (person, project, ...; at most 128 bytes).
    #[schema(min_length = 1, max_length = 128)]
    pub(crate) entity_type: String,
    /// A description (at most 64 KiB).
    #[serde(default)]
    #[schema(max_length = 65536)]
    pub(crate) description: String,
    /// Tags: at most 8 distinct once normalised (an entity's limit); more are refused by
    /// name.
    #[serde(default)]
    #[schema(max_items = 8)]
    pub(crate) tags: Vec<String>,
    /// What is known about it as keys and values, a JSON object (`{"born": 1990}`); it
    /// replaces the stored entity's attributes.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) attributes: Option<serde_json::Value>,
}

/// A page of entities.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EntityList {
    /// The entities.
    pub(crate) items: Vec<EntityView>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// An entity with its relations.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EntityDetail {
    /// The entity.
    pub(crate) entity: EntityView,
    /// The relations from and to it: the first [`MAX_ENTITY_RELATIONS`], those from it
    /// first, each group by relation type then the other entity; `GET /v1/graph/relations`
    /// pages through all of them.
    pub(crate) relations: Vec<RelationView>,
    /// Whether it has more relations than are shown.
    pub(crate) relations_truncated: bool,
}

/// Lists entities, a page at a time.
#[utoipa::path(get, path = "/v1/graph/entities", tag = "graph", params(PageQuery),
    responses((status = 200, body = EntityList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn list_entities(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> Result<Json<EntityList>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let limit = page_limit(query.limit)?;
    let after: Option<EntityPosition> = crate::cursor::position(query.cursor.as_deref())?;
    let mut entities = state
        .memory
        .graph()
        .list_entities_after(
            &scope_of(&namespace, query.exact),
            after.as_ref(),
            limit.saturating_add(1),
        )
        .await?;
    let next_cursor = crate::cursor::cut(&mut entities, limit, EntityPosition::of);
    Ok(Json(EntityList {
        items: entities.iter().map(EntityView::from).collect(),
        next_cursor,
    }))
}

/// Writes an entity (creates it, or replaces the one with this id, keeping its relations),
/// and answers with it as stored (the store keeps its first eight tags).
#[utoipa::path(post, path = "/v1/graph/entities", tag = "graph", request_body = EntityRequest,
    params(NamespaceQuery),
    responses((status = 200, body = EntityView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn put_entity(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
    ApiJson(body): ApiJson<EntityRequest>,
) -> Result<Json<EntityView>, Failure> {
    // In the body or the query, as the entity's reads take it.
    let named = super::namespace_of(body.namespace.as_deref(), query.namespace.as_deref())?;
    let namespace = caller.namespace(named)?;
    let entity = crate::entities::entity_of(
        namespace,
        body.id,
        body.name,
        body.entity_type,
        body.description,
        &body.tags,
        body.attributes,
    )?;
    let stored = crate::entities::put_entity(state.memory.graph().as_ref(), entity).await?;
    Ok(Json(EntityView::from(&stored)))
}

/// One entity with its relations.
#[utoipa::path(get, path = "/v1/graph/entities/{id}", tag = "graph",
    params(("id" = String, Path, description = "The entity's id"), NamespaceQuery),
    responses((status = 200, body = EntityDetail), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn get_entity(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<EntityDetail>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let graph = state.memory.graph();
    let Some(entity) = graph.get_entity(&namespace, &id).await? else {
        return Err(not_found("entity", &id, &namespace));
    };
    // One more than is shown, to tell whether there are more: a hub's read costs a page.
    let mut relations = graph
        .relations_of_at_most(&namespace, &id, MAX_ENTITY_RELATIONS + 1)
        .await?;
    let relations_truncated = relations.len() > MAX_ENTITY_RELATIONS;
    relations.truncate(MAX_ENTITY_RELATIONS);
    Ok(Json(EntityDetail {
        entity: EntityView::from(&entity),
        relations: relations.iter().map(RelationView::from).collect(),
        relations_truncated,
    }))
}

/// The most hops a `related` request walks.
pub(crate) const MAX_RELATED_DEPTH: usize = 4;
/// The most entities a `related` answer lists.
pub(crate) const MAX_RELATED: usize = 200;
/// The most characters of a `related` answer's context text.
const RELATED_CONTEXT_CHARS: usize = 4_000;

/// How far to walk from an entity.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct RelatedQuery {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    #[param(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// Hops to walk, 1 to 4, default 2.
    #[serde(default)]
    #[param(minimum = 1, maximum = 4)]
    pub(crate) depth: Option<usize>,
    /// Most entities listed, 1 to 200, default 50 (nearest first).
    #[serde(default)]
    #[param(minimum = 1, maximum = 200)]
    pub(crate) limit: Option<usize>,
}

/// An entity reached from another.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RelatedHit {
    /// The entity.
    pub(crate) entity: EntityView,
    /// Hops from the start.
    pub(crate) hops: usize,
    /// `1 / (1 + hops)` times the product of the path's weights.
    pub(crate) score: f32,
    /// The relations followed, from the start.
    pub(crate) path: Vec<RelationView>,
}

/// The neighbourhood of an entity.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RelatedView {
    /// The entities reached, nearest first (hops, then score, then id).
    pub(crate) items: Vec<RelatedHit>,
    /// Whether more were reached than listed.
    pub(crate) truncated: bool,
    /// The neighbourhood as prompt-ready text: each entity with its attributes and
    /// description, and the relations between them (at most 4,000 characters).
    pub(crate) context: String,
}

/// The entities within `depth` hops of entity `id` (at most `limit`), with the
/// neighbourhood as text; `depth` and `limit` checked by name.
pub(crate) async fn related_view(
    graph: &dyn agent_memory::KnowledgeGraph,
    namespace: &agent_memory::Namespace,
    id: &str,
    depth: usize,
    limit: usize,
) -> Result<RelatedView, Failure> {
    use agent_memory::KnowledgeGraphExt;
    if !(1..=MAX_RELATED_DEPTH).contains(&depth) {
        return Err(Failure::invalid(
            "depth",
            format!("depth {depth} is outside 1 to {MAX_RELATED_DEPTH}"),
        ));
    }
    if !(1..=MAX_RELATED).contains(&limit) {
        return Err(Failure::invalid(
            "limit",
            format!("limit {limit} is outside 1 to {MAX_RELATED}"),
        ));
    }
    let Some(start) = graph.get_entity(namespace, id).await? else {
        return Err(not_found("entity", id, namespace));
    };
    // One walk for the list and the text, so both describe the same neighbourhood.
    let found = match graph.get_related(namespace, id, depth).await {
        Err(MemoryError::NotFound { .. }) => return Err(not_found("entity", id, namespace)),
        other => other?,
    };
    let context = graph
        .render_neighbourhood(namespace, &start, &found, RELATED_CONTEXT_CHARS)
        .await?;
    Ok(RelatedView {
        truncated: found.len() > limit,
        items: found
            .iter()
            .take(limit)
            .map(|scored| RelatedHit {
                entity: EntityView::from(scored.entity.as_ref()),
                hops: scored.hops,
                score: scored.score,
                path: scored
                    .path
                    .iter()
                    .map(|r| RelationView::from(r.as_ref()))
                    .collect(),
            })
            .collect(),
        context,
    })
}

/// The entities within a few hops of one, nearest first, with the neighbourhood as text.
#[utoipa::path(get, path = "/v1/graph/entities/{id}/related", tag = "graph",
    params(("id" = String, Path, description = "The entity's id"), RelatedQuery),
    responses((status = 200, body = RelatedView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn related_entities(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<RelatedQuery>,
) -> Result<Json<RelatedView>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let graph = state.memory.graph();
    related_view(
        graph.as_ref(),
        &namespace,
        &id,
        query.depth.unwrap_or(2),
        query.limit.unwrap_or(50),
    )
    .await
    .map(Json)
}

/// Deletes an entity with its relations.
#[utoipa::path(delete, path = "/v1/graph/entities/{id}", tag = "graph",
    params(("id" = String, Path, description = "The entity's id"), NamespaceQuery),
    responses((status = 200, body = Forgotten), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn delete_entity(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<Forgotten>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    if state.memory.graph().remove_entity(&namespace, &id).await? {
        Ok(Json(Forgotten { forgotten: 1 }))
    } else {
        Err(not_found("entity", &id, &namespace))
    }
}

/// A relation to write or delete.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RelationRequest {
    /// The namespace of both entities; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// The source entity's id.
    #[schema(min_length = 1, max_length = 256)]
    pub(crate) source_id: String,
    /// The target entity's id.
    #[schema(min_length = 1, max_length = 256)]
    pub(crate) target_id: String,
    /// The relation type (works_at, knows, ...; at most 128 bytes).
    #[schema(min_length = 1, max_length = 128)]
    pub(crate) relation_type: String,
    /// Its weight in [0, 1], default 1 (ignored when deleting).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    pub(crate) weight: Option<f32>,
    /// What is known about it as keys and values, a JSON object (`{"since": 2019}`); it
    /// replaces the stored relation's attributes (ignored when deleting).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) attributes: Option<serde_json::Value>,
}

/// A page of relations.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RelationList {
    /// The relations.
    pub(crate) items: Vec<RelationView>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// Lists relations, a page at a time.
#[utoipa::path(get, path = "/v1/graph/relations", tag = "graph", params(PageQuery),
    responses((status = 200, body = RelationList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn list_relations(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> Result<Json<RelationList>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let limit = page_limit(query.limit)?;
    let after: Option<RelationPosition> = crate::cursor::position(query.cursor.as_deref())?;
    let mut relations = state
        .memory
        .graph()
        .list_relations_after(
            &scope_of(&namespace, query.exact),
            after.as_ref(),
            limit.saturating_add(1),
        )
        .await?;
    let next_cursor = crate::cursor::cut(&mut relations, limit, RelationPosition::of);
    Ok(Json(RelationList {
        items: relations.iter().map(RelationView::from).collect(),
        next_cursor,
    }))
}

fn relation_of(caller: &Caller, body: RelationRequest) -> Result<GraphRelation, Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let relation = GraphRelation::new(
        namespace,
        body.source_id,
        body.target_id,
        body.relation_type,
        body.weight.unwrap_or(1.0),
    )?;
    Ok(match body.attributes {
        Some(attributes) => relation.with_attributes(attributes)?,
        None => relation,
    })
}

/// Adds a relation (or sets the weight and attributes of the same one) between two existing
/// entities.
#[utoipa::path(post, path = "/v1/graph/relations", tag = "graph", request_body = RelationRequest,
    responses((status = 200, body = RelationView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn add_relation(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<RelationRequest>,
) -> Result<Json<RelationView>, Failure> {
    let relation = relation_of(&caller, body)?;
    state.memory.graph().add_relation(relation.clone()).await?;
    Ok(Json(RelationView::from(&relation)))
}

/// Deletes a relation.
#[utoipa::path(post, path = "/v1/graph/relations/delete", tag = "graph",
    request_body = RelationRequest,
    responses((status = 200, body = Forgotten), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn delete_relation(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<RelationRequest>,
) -> Result<Json<Forgotten>, Failure> {
    // The relation is named by its ends and type: its weight and attributes, ignored when
    // deleting, are not checked either.
    let relation = relation_of(
        &caller,
        RelationRequest {
            weight: None,
            attributes: None,
            ..body
        },
    )?;
    let removed = state
        .memory
        .graph()
        .remove_relation(
            &relation.namespace,
            &relation.source_id,
            &relation.target_id,
            &relation.relation_type,
        )
        .await?;
    if removed {
        Ok(Json(Forgotten { forgotten: 1 }))
    } else {
        Err(Failure::new(
            ErrorKind::NotFound,
            format!(
                "no relation {} -[{}]-> {} in namespace {}",
                relation.source_id, relation.relation_type, relation.target_id, relation.namespace
            ),
        ))
    }
}
