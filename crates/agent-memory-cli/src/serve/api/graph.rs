//! The knowledge graph: entities and relations.

use agent_memory::{GraphEntity, GraphRelation, MemoryError};
use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    ApiJson, ApiQuery, Auth, ErrorBody, Forgotten, NamespaceQuery, PageQuery, not_found, page_of,
    paging, scope_of,
};
use crate::failure::{ErrorKind, Failure};
use crate::serve::AppState;
use crate::serve::auth::Caller;
use crate::views::{EntityView, RelationView};

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
    /// Its display name.
    #[schema(min_length = 1)]
    pub(crate) name: String,
    /// Its type (person, project, ...).
    #[schema(min_length = 1)]
    pub(crate) entity_type: String,
    /// A description.
    #[serde(default)]
    pub(crate) description: String,
    /// Tags.
    #[serde(default)]
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
    /// The relations from and to it.
    pub(crate) relations: Vec<RelationView>,
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
    let (offset, limit) = paging(query.limit, query.cursor.as_deref())?;
    let entities = state
        .memory
        .graph()
        .list_entities(&scope_of(&namespace, query.exact))
        .await?;
    let (page, next_cursor) = page_of(entities, offset, limit);
    Ok(Json(EntityList {
        items: page.iter().map(EntityView::from).collect(),
        next_cursor,
    }))
}

/// Writes an entity (creates it, or replaces the one with this id, keeping its relations).
#[utoipa::path(post, path = "/v1/graph/entities", tag = "graph", request_body = EntityRequest,
    responses((status = 200, body = EntityView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn put_entity(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<EntityRequest>,
) -> Result<Json<EntityView>, Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let mut entity = GraphEntity::new(namespace, body.id, body.name, body.entity_type)?
        .with_description(body.description)
        .with_tags(&body.tags)?;
    if let Some(attributes) = body.attributes {
        entity = entity.with_attributes(attributes)?;
    }
    let graph = state.memory.graph();
    match graph.add_entity(entity.clone()).await {
        Err(MemoryError::AlreadyExists { .. }) => graph.update_entity(entity.clone()).await?,
        other => other?,
    }
    Ok(Json(EntityView::from(&entity)))
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
    let relations = graph.relations_of(&namespace, &id).await?;
    Ok(Json(EntityDetail {
        entity: EntityView::from(&entity),
        relations: relations.iter().map(RelationView::from).collect(),
    }))
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
    /// The relation type (works_at, knows, ...).
    #[schema(min_length = 1)]
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
    let (offset, limit) = paging(query.limit, query.cursor.as_deref())?;
    let relations = state
        .memory
        .graph()
        .list_relations(&scope_of(&namespace, query.exact))
        .await?;
    let (page, next_cursor) = page_of(relations, offset, limit);
    Ok(Json(RelationList {
        items: page.iter().map(RelationView::from).collect(),
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
    let relation = relation_of(&caller, body)?;
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
