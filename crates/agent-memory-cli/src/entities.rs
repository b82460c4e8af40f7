//! `graph`: the knowledge graph from the command line, as the HTTP API and the MCP tools
//! offer it.

use std::fmt::Write as _;

use agent_memory::{GraphEntity, GraphRelation, KnowledgeGraph, Namespace};
use serde_json::json;

use crate::cli::{EntityArgs, EntityId, GraphCommand, RelateArgs, RelatedArgs, UnrelateArgs};
use crate::commands::{Outcome, Settings, to_json};
use crate::failure::{ErrorKind, Failure};
use crate::views::{EntityView, MAX_ENTITY_RELATIONS, RelationView};

/// Runs one `graph` subcommand in the settings' namespace.
pub(crate) async fn run(settings: &Settings, command: GraphCommand) -> Result<Outcome, Failure> {
    match command {
        GraphCommand::Add(args) => add(settings, args).await,
        GraphCommand::Show(args) => show(settings, args).await,
        GraphCommand::Related(args) => related(settings, args).await,
        GraphCommand::Remove(args) => remove(settings, args).await,
        GraphCommand::Relate(args) => relate(settings, args).await,
        GraphCommand::Unrelate(args) => unrelate(settings, args).await,
    }
}

/// A JSON object given on the command line as `--attributes`.
fn attributes(raw: Option<&str>) -> Result<Option<serde_json::Value>, Failure> {
    raw.map(|raw| {
        serde_json::from_str(raw).map_err(|error| {
            Failure::invalid(
                "attributes",
                format!("attributes are not valid JSON: {error}"),
            )
            .with_hint("pass a JSON object, e.g. --attributes '{\"since\":2019}'")
        })
    })
    .transpose()
}

fn no_entity(settings: &Settings, id: &str) -> Failure {
    Failure::new(
        ErrorKind::NotFound,
        format!("no entity {id:?} in namespace {}", settings.namespace),
    )
    .with_hint(
        "check the id and the namespace (-n): entities are only found in their own namespace",
    )
}

/// An entity as every face writes it: `GraphEntity::new` with a description, tags and
/// attributes (a JSON object, or none).
pub(crate) fn entity_of(
    namespace: Namespace,
    id: String,
    name: String,
    entity_type: String,
    description: String,
    tags: &[String],
    attributes: Option<serde_json::Value>,
) -> Result<GraphEntity, Failure> {
    let entity = GraphEntity::new(namespace, id, name, entity_type)?
        .with_description(description)
        .with_tags(tags)?;
    Ok(match attributes {
        Some(attributes) => entity.with_attributes(attributes)?,
        None => entity,
    })
}

/// Adds `entity`, or replaces the stored one with its id (its relations and access
/// statistics stay), and returns it as stored (read back after the write; the entity given
/// if another writer deleted it in between).
///
/// # Errors
/// [`ErrorKind::InvalidInput`] naming `tags` for more distinct tags than the graph keeps
/// (`TagConstraints::max_tags_per_entity`, 8 by default): the store would drop the rest.
pub(crate) async fn put_entity(
    graph: &dyn KnowledgeGraph,
    entity: GraphEntity,
) -> Result<GraphEntity, Failure> {
    // The store would keep the first ones and drop the rest: refused by name instead.
    let most = graph.tag_constraints().max_tags_per_entity;
    if entity.tags.len() > most {
        return Err(Failure::invalid(
            "tags",
            format!(
                "{} distinct tags: an entity keeps at most {most}",
                entity.tags.len()
            ),
        ));
    }
    let (namespace, id) = (entity.namespace.clone(), entity.id.clone());
    agent_memory::write_entity(graph, entity.clone()).await?;
    Ok(graph.get_entity(&namespace, &id).await?.unwrap_or(entity))
}

async fn add(settings: &Settings, args: EntityArgs) -> Result<Outcome, Failure> {
    let entity = entity_of(
        settings.namespace.clone(),
        args.id,
        args.name,
        args.entity_type,
        args.description,
        &args.tags,
        attributes(args.attributes.as_deref())?,
    )?;
    let memory = settings.open().await?;
    let entity = put_entity(memory.graph().as_ref(), entity).await?;
    Ok(Outcome {
        text: format!("entity {} in {}", entity.id, entity.namespace),
        json: to_json(&EntityView::from(&entity))?,
    })
}

async fn show(settings: &Settings, args: EntityId) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let graph = memory.graph();
    let Some(entity) = graph.get_entity(&settings.namespace, &args.id).await? else {
        return Err(no_entity(settings, &args.id));
    };
    // A page of them, as the HTTP API and MCP show an entity: a hub has one a memory.
    let mut relations = graph
        .relations_of_at_most(&settings.namespace, &args.id, MAX_ENTITY_RELATIONS + 1)
        .await?;
    let truncated = relations.len() > MAX_ENTITY_RELATIONS;
    relations.truncate(MAX_ENTITY_RELATIONS);
    let mut text = format!("[{}] {} ({})", entity.entity_type, entity.name, entity.id);
    for (label, value) in [
        ("description", entity.description.clone()),
        (
            "tags",
            entity
                .tags
                .iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("attributes", entity.attribute_line()),
    ] {
        if !value.is_empty() {
            let _ = write!(text, "\n{label}: {value}");
        }
    }
    for relation in &relations {
        let _ = write!(
            text,
            "\n  {} -[{}]-> {} ({:.2})",
            relation.source_id, relation.relation_type, relation.target_id, relation.weight
        );
    }
    if truncated {
        let _ = write!(
            text,
            "\n  (the first {MAX_ENTITY_RELATIONS} relations; there are more)"
        );
    }
    let relations: Vec<RelationView> = relations.iter().map(RelationView::from).collect();
    Ok(Outcome {
        json: json!({
            "entity": to_json(&EntityView::from(&entity))?,
            "relations": to_json(&relations)?,
            "relations_truncated": truncated,
        }),
        text,
    })
}

async fn related(settings: &Settings, args: RelatedArgs) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let view = crate::serve::related_view(
        memory.graph().as_ref(),
        &settings.namespace,
        &args.id,
        args.depth,
        args.limit,
    )
    .await?;
    Ok(Outcome {
        text: view.context.clone(),
        json: to_json(&view)?,
    })
}

async fn remove(settings: &Settings, args: EntityId) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    if !memory
        .graph()
        .remove_entity(&settings.namespace, &args.id)
        .await?
    {
        return Err(no_entity(settings, &args.id));
    }
    Ok(Outcome {
        text: format!("removed entity {} and its relations", args.id),
        json: json!({ "removed": 1 }),
    })
}

async fn relate(settings: &Settings, args: RelateArgs) -> Result<Outcome, Failure> {
    let mut relation = GraphRelation::new(
        settings.namespace.clone(),
        args.source,
        args.target,
        args.relation,
        args.weight,
    )?;
    if let Some(attributes) = attributes(args.attributes.as_deref())? {
        relation = relation.with_attributes(attributes)?;
    }
    let memory = settings.open().await?;
    memory.graph().add_relation(relation.clone()).await?;
    Ok(Outcome {
        text: format!(
            "{} -[{}]-> {}",
            relation.source_id, relation.relation_type, relation.target_id
        ),
        json: to_json(&RelationView::from(&relation))?,
    })
}

async fn unrelate(settings: &Settings, args: UnrelateArgs) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let removed = memory
        .graph()
        .remove_relation(
            &settings.namespace,
            &args.source,
            &args.target,
            &args.relation,
        )
        .await?;
    if !removed {
        return Err(Failure::new(
            ErrorKind::NotFound,
            format!(
                "no relation {} -[{}]-> {} in namespace {}",
                args.source, args.relation, args.target, settings.namespace
            ),
        ));
    }
    Ok(Outcome {
        text: format!(
            "removed {} -[{}]-> {}",
            args.source, args.relation, args.target
        ),
        json: json!({ "removed": 1 }),
    })
}
