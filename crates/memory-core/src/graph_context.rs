//! Agent context rendering: an entity's neighbourhood
//! as compact text an agent can paste into a prompt, for any [`KnowledgeGraph`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;

use chrono::{DateTime, Utc};

use crate::{
    GraphEntity, GraphRelation, KnowledgeGraph, MemoryError, Namespace, Result, ScoredEntity,
};

/// Longest description shown for an entity, in characters.
const MAX_DESCRIPTION_CHARS: usize = 160;

/// Conveniences over any [`KnowledgeGraph`], built only from the trait's methods so every
/// backend (in-memory, SQLite, PostgreSQL) gets them. Implemented for every graph, including
/// `dyn KnowledgeGraph`; backends do not override it.
#[async_trait]
pub trait KnowledgeGraphExt: KnowledgeGraph {
    /// The neighbourhood of entity `id` up to `depth` hops as compact text, at most
    /// `max_chars` characters (Unicode scalar values) long.
    ///
    /// One block per entity, the start first and then in
    /// [`get_related`](KnowledgeGraph::get_related) order (hops, score, id):
    ///
    /// ```text
    /// [person] zhang
    ///   -- colleague_of --> li
    ///   -- leads --> project-alpha
    /// [person] li
    ///   -- works_on --> project-alpha
    /// [project] project-alpha: the web rewrite
    /// ```
    ///
    /// The header is `[entity type] name`, followed by the entity's
    /// [attributes](GraphEntity::attribute_line) in parentheses when it has some and by
    /// `: description` when there is one (each with whitespace collapsed, cut at 160
    /// characters). Below it come the relations between entities of the neighbourhood that
    /// were not shown yet: `  -- type --> other` for outgoing ones, `  <-- type -- other`
    /// for incoming ones, the type followed by the relation's attributes in parentheses
    /// when it has some (`  -- likes (since: 2021) --> rust`), so each relation appears
    /// once. Output stops at the last whole line that fits in `max_chars`; when not even the
    /// first line fits, it is cut at a character boundary. Depth 0 renders the entity alone.
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] when the entity does not exist; backend errors.
    async fn context_for_agent(
        &self,
        namespace: &Namespace,
        id: &str,
        depth: usize,
        max_chars: usize,
    ) -> Result<String>;

    /// The text [`context_for_agent`](Self::context_for_agent) renders, for a neighbourhood
    /// already walked: `start` and the entities `related` to it, in the order given (as
    /// [`get_related`](KnowledgeGraph::get_related) returns them). For a caller that lists
    /// the neighbourhood and shows it as text, so the graph is walked once and the list and
    /// the text describe the same entities.
    ///
    /// # Errors
    /// Backend errors (each entity's relations are read).
    async fn render_neighbourhood(
        &self,
        namespace: &Namespace,
        start: &GraphEntity,
        related: &[ScoredEntity],
        max_chars: usize,
    ) -> Result<String>;

    /// Adds `relation`; when `single_valued`, a relation of its type holds one value per
    /// source at a time, so every other relation of that type from the same source that is
    /// still current at the new one's start (`valid_from`, else `now`) is closed there
    /// (its `valid_until` set) instead of staying current beside it. Returns the closed
    /// relations. Re-adding a closed relation (same source, target and type) reopens it:
    /// a relation keeps one interval per target.
    ///
    /// # Errors
    /// As [`add_relation`](KnowledgeGraph::add_relation); a relation that starts before the
    /// one it would close ends is refused with [`MemoryError::InvalidInput`] naming
    /// `valid_from`, and nothing is changed.
    async fn relate(
        &self,
        relation: GraphRelation,
        single_valued: bool,
        now: DateTime<Utc>,
    ) -> Result<Vec<GraphRelation>>;

    /// The entities reachable from `id` within `depth` hops over relations that held at
    /// `at` ([`GraphRelation::holds_at`]), nearest first, as
    /// [`get_related`](KnowledgeGraph::get_related) orders them: the graph as it was then.
    /// A breadth-first walk over [`relations_of`](KnowledgeGraph::relations_of), bounded by
    /// [`MAX_TRAVERSAL_VISITED`](crate::MAX_TRAVERSAL_VISITED) entities.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `depth` past
    /// [`MAX_TRAVERSAL_DEPTH`](crate::MAX_TRAVERSAL_DEPTH); backend errors.
    async fn related_as_of(
        &self,
        namespace: &Namespace,
        id: &str,
        depth: usize,
        at: DateTime<Utc>,
    ) -> Result<Vec<ScoredEntity>>;

    /// Adds `relation` as [`add_relation`](KnowledgeGraph::add_relation) does, except that
    /// a relation without attributes keeps those of the stored relation with its source,
    /// target and type: for writers that state relations without knowing their attributes
    /// (the enricher, an import of a format without them), so that saying a relation again
    /// does not erase what a user recorded about it.
    ///
    /// # Errors
    /// As [`add_relation`](KnowledgeGraph::add_relation).
    async fn add_relation_keeping_attributes(&self, relation: GraphRelation) -> Result<()>;
}

#[async_trait]
impl<G: KnowledgeGraph + ?Sized> KnowledgeGraphExt for G {
    async fn add_relation_keeping_attributes(&self, mut relation: GraphRelation) -> Result<()> {
        if relation.attributes.is_empty()
            && let Some(stored) = self
                .relations_of(&relation.namespace, &relation.source_id)
                .await?
                .into_iter()
                .find(|stored| {
                    stored.source_id == relation.source_id
                        && stored.target_id == relation.target_id
                        && stored.relation_type == relation.relation_type
                })
        {
            relation.attributes = stored.attributes;
        }
        self.add_relation(relation).await
    }

    async fn context_for_agent(
        &self,
        namespace: &Namespace,
        id: &str,
        depth: usize,
        max_chars: usize,
    ) -> Result<String> {
        let Some(start) = self.get_entity(namespace, id).await? else {
            return Err(MemoryError::not_found("entity", namespace, id));
        };
        let related = if depth == 0 {
            Vec::new()
        } else {
            self.get_related(namespace, id, depth).await?
        };
        self.render_neighbourhood(namespace, &start, &related, max_chars)
            .await
    }

    async fn render_neighbourhood(
        &self,
        namespace: &Namespace,
        start: &GraphEntity,
        related: &[ScoredEntity],
        max_chars: usize,
    ) -> Result<String> {
        let entities: Vec<&GraphEntity> = std::iter::once(start)
            .chain(related.iter().map(|scored| scored.entity.as_ref()))
            .collect();
        let names: HashMap<&str, String> = entities
            .iter()
            .map(|entity| (entity.id.as_str(), one_line(&entity.name, usize::MAX)))
            .collect();
        let mut text = BoundedText::new(max_chars);
        let mut shown: HashSet<(String, String, String)> = HashSet::new();
        for entity in entities.iter().copied() {
            if !text.push_line(&header(entity)) {
                break;
            }
            let now = Utc::now();
            // Read as far as the text goes: a hub's relations fill it long before its degree.
            let mut full = false;
            crate::graph_store::relations_while(self, namespace, &entity.id, 64, |relation| {
                if !relation.is_current_at(now) {
                    return true;
                }
                let outgoing = relation.source_id == entity.id;
                let other = if outgoing {
                    &relation.target_id
                } else {
                    &relation.source_id
                };
                let Some(other_name) = names.get(other.as_str()) else {
                    return true;
                };
                let key = (
                    relation.source_id.clone(),
                    relation.target_id.clone(),
                    relation.relation_type.clone(),
                );
                if !shown.insert(key) {
                    return true;
                }
                let mut relation_type = one_line(&relation.relation_type, usize::MAX);
                let attributes = crate::graph::attribute_line(&relation.attributes);
                if !attributes.is_empty() {
                    relation_type.push_str(" (");
                    relation_type.push_str(&one_line(&attributes, MAX_DESCRIPTION_CHARS));
                    relation_type.push(')');
                }
                let line = if outgoing {
                    format!("  -- {relation_type} --> {other_name}")
                } else {
                    format!("  <-- {relation_type} -- {other_name}")
                };
                full = !text.push_line(&line);
                !full
            })
            .await?;
            if full {
                break;
            }
        }
        Ok(text.into_string())
    }

    async fn relate(
        &self,
        relation: GraphRelation,
        single_valued: bool,
        now: DateTime<Utc>,
    ) -> Result<Vec<GraphRelation>> {
        relation.validate()?;
        let mut closed = Vec::new();
        if single_valued {
            let start = relation.valid_from.unwrap_or(now);
            for old in self
                .relations_of(&relation.namespace, &relation.source_id)
                .await?
            {
                if old.source_id != relation.source_id
                    || old.relation_type != relation.relation_type
                    || old.target_id == relation.target_id
                    || !old.is_current_at(start)
                {
                    continue;
                }
                if old.valid_from.is_some_and(|from| from > start) {
                    return Err(MemoryError::invalid(
                        "valid_from",
                        format!(
                            "the relation starts before the current {} relation to {} it would close",
                            old.relation_type, old.target_id
                        ),
                    ));
                }
                let mut old = old;
                old.valid_until = Some(start);
                closed.push(old);
            }
        }
        // Add the new relation first: it names its endpoints, and a missing one fails the
        // call before any old relation is closed.
        self.add_relation(relation).await?;
        for old in &closed {
            self.add_relation(old.clone()).await?;
        }
        Ok(closed)
    }

    async fn related_as_of(
        &self,
        namespace: &Namespace,
        id: &str,
        depth: usize,
        at: DateTime<Utc>,
    ) -> Result<Vec<ScoredEntity>> {
        if depth > crate::MAX_TRAVERSAL_DEPTH {
            return Err(MemoryError::invalid(
                "depth",
                format!("at most {}", crate::MAX_TRAVERSAL_DEPTH),
            ));
        }
        if self.get_entity(namespace, id).await?.is_none() {
            return Ok(Vec::new());
        }
        let mut seen: HashSet<String> = HashSet::from([id.to_owned()]);
        let mut frontier: Vec<(String, Vec<GraphRelation>)> = vec![(id.to_owned(), Vec::new())];
        let mut found = Vec::new();
        for hops in 1..=depth {
            let mut next = Vec::new();
            for (from, path) in &frontier {
                for relation in self.relations_of(namespace, from).await? {
                    if !relation.holds_at(at) {
                        continue;
                    }
                    let other = crate::backend::other_end(&relation, from).to_owned();
                    if seen.len() >= crate::MAX_TRAVERSAL_VISITED || !seen.insert(other.clone()) {
                        continue;
                    }
                    let mut path = path.clone();
                    path.push(relation);
                    if let Some(entity) = self.get_entity(namespace, &other).await? {
                        found.push(ScoredEntity {
                            score: crate::backend::distance_score(hops, &path),
                            entity: Arc::new(entity),
                            hops,
                            path: path.iter().cloned().map(Arc::new).collect(),
                        });
                    }
                    next.push((other, path));
                }
            }
            frontier = next;
        }
        crate::backend::sort_scored(&mut found);
        Ok(found)
    }
}

/// An entity's line in [`context_for_agent`](KnowledgeGraphExt::context_for_agent)'s
/// text: `[type] name`, with its attributes in parentheses and `: description` when it has
/// them (each cut at 160 characters). A caller that bounds that text can tell by it whether
/// the first line came whole (the text's first line is this one) or was cut to fit.
pub fn context_header(entity: &GraphEntity) -> String {
    header(entity)
}

/// [`context_header`].
fn header(entity: &GraphEntity) -> String {
    let mut line = format!(
        "[{}] {}",
        one_line(&entity.entity_type, usize::MAX),
        one_line(&entity.name, usize::MAX)
    );
    let attributes = entity.attribute_line();
    if !attributes.is_empty() {
        line.push_str(" (");
        line.push_str(&one_line(&attributes, MAX_DESCRIPTION_CHARS));
        line.push(')');
    }
    let description = one_line(&entity.description, MAX_DESCRIPTION_CHARS);
    if !description.is_empty() {
        line.push_str(": ");
        line.push_str(&description);
    }
    line
}

/// `text` with whitespace runs (newlines included) collapsed to one space, cut to
/// `max_chars` characters with a trailing `…` when longer.
fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    let mut count = 0usize;
    for word in text.split_whitespace() {
        for c in (count > 0).then_some(' ').into_iter().chain(word.chars()) {
            if count >= max_chars {
                if max_chars > 0 {
                    // Replace the last character with the ellipsis to stay within the limit.
                    out.pop();
                    out.push('…');
                }
                return out;
            }
            out.push(c);
            count += 1;
        }
    }
    out
}

/// Lines joined by `\n`, never longer than a character budget.
#[derive(Debug)]
struct BoundedText {
    text: String,
    chars: usize,
    max_chars: usize,
}

impl BoundedText {
    fn new(max_chars: usize) -> Self {
        Self {
            text: String::new(),
            chars: 0,
            max_chars,
        }
    }

    /// Appends `line` when it fits whole and returns whether it did. When the very first
    /// line does not fit, keeps as many of its characters as fit.
    fn push_line(&mut self, line: &str) -> bool {
        let separator = usize::from(!self.text.is_empty());
        let length = line.chars().count();
        if self.chars + separator + length <= self.max_chars {
            if separator == 1 {
                self.text.push('\n');
            }
            self.text.push_str(line);
            self.chars += separator + length;
            return true;
        }
        if self.text.is_empty() {
            self.text = crate::text::prefix_within(line, self.max_chars).to_owned();
            self.chars = self.text.chars().count();
        }
        false
    }

    fn into_string(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_and_cuts() {
        let check = |text: &str, max: usize, want: &str| assert_eq!(one_line(text, max), want);
        check("  a\n b\t\tc  ", usize::MAX, "a b c");
        check("abcdef", 4, "abc…");
        check("abcd", 4, "abcd");
        check("状态管理系统", 3, "状态…");
        check("abc", 0, "");
        check("", 5, "");
    }

    #[test]
    fn bounded_text_keeps_whole_lines() {
        let mut text = BoundedText::new(7);
        assert!(text.push_line("abc"));
        assert!(text.push_line("def"));
        assert!(!text.push_line("g"));
        assert_eq!(text.into_string(), "abc\ndef");

        let mut text = BoundedText::new(4);
        assert!(!text.push_line("[人物] 张三丰"));
        assert_eq!(text.into_string(), "[人物]");

        let mut text = BoundedText::new(0);
        assert!(!text.push_line("x"));
        assert_eq!(text.into_string(), "");
    }
}
