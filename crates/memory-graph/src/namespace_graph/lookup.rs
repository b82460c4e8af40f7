//! Lookups by keyword and tag: entity names by prefix, entity types and tags exactly,
//! through the namespace's indexes, with names compared as integers first.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;

use memory_core::{GraphEntity, Tag};

use super::{NamespaceGraph, Slot, prefix_key, slot_of};

/// A keyword prepared once for every namespace it is matched in.
#[derive(Debug)]
pub(crate) struct PreparedKeyword {
    /// The trimmed, lowercased keyword (name prefix and entity type).
    pub(super) lower: String,
    /// [`prefix_key`] of `lower`.
    key: u64,
    /// The bits of a [`prefix_key`] that `lower` covers (its first eight bytes at most).
    mask: u64,
    /// The keyword normalised as a tag, when it is a valid tag.
    pub(super) tag: Option<Tag>,
}

impl PreparedKeyword {
    /// Whether the lowercased name `name`, of [`prefix_key`] `key`, starts with the keyword:
    /// an integer comparison for the first eight bytes, bytes beyond them compared only
    /// when the keyword is longer.
    fn prefixes(&self, key: u64, name: &str) -> bool {
        let (name, keyword) = (name.as_bytes(), self.lower.as_bytes());
        key & self.mask == self.key
            && name.len() >= keyword.len()
            && (keyword.len() <= 8 || name[8..].starts_with(&keyword[8..]))
    }

    /// Prepares `keywords`, dropping blank ones (they match nothing).
    pub(crate) fn prepare_all(keywords: &[String]) -> Vec<Self> {
        keywords
            .iter()
            .filter_map(|keyword| {
                let trimmed = keyword.trim();
                if trimmed.is_empty() {
                    return None;
                }
                let lower = trimmed.to_lowercase();
                let covered = lower.len().min(8) as u32 * 8;
                Some(Self {
                    key: prefix_key(&lower),
                    mask: u64::MAX.checked_shl(64 - covered).unwrap_or(0),
                    lower,
                    tag: Tag::new(trimmed).ok(),
                })
            })
            .collect()
    }
}

impl NamespaceGraph {
    /// Adds the slots of the entities matching any keyword to `out`, unordered and possibly
    /// repeated, each with its [`id_key`](super::id_key).
    fn matching_slots(&self, keywords: &[PreparedKeyword], out: &mut Vec<(u64, Slot)>) {
        for keyword in keywords {
            // The names starting with the keyword sort together, from the keyword itself.
            let from = (keyword.key, keyword.lower.clone(), 0, 0);
            for (name_key, name, key, slot) in self.names.range(from..) {
                if !keyword.prefixes(*name_key, name) {
                    break;
                }
                out.push((*key, *slot));
            }
            if let Some(posting) = self.entity_types.get(&keyword.lower) {
                out.extend(posting.iter().copied());
            }
            if let Some(tag) = &keyword.tag
                && let Some(posting) = self.tags.get(tag.as_str())
            {
                out.extend(posting.iter().copied());
            }
        }
    }

    /// The entities matching any keyword, ordered by id.
    pub(crate) fn matching(&self, keywords: &[PreparedKeyword]) -> Vec<Arc<GraphEntity>> {
        let mut found = Vec::new();
        self.matching_slots(keywords, &mut found);
        if found.is_empty() {
            return Vec::new();
        }
        let bound = self.node_bound();
        let mut entities: Vec<(u64, &Arc<GraphEntity>)>;
        if found.len().saturating_mul(256) >= bound {
            // Many matches for the graph's size: one bit per slot drops the repeats, and
            // reading the bits back lists the matches in slot order, which is id order when
            // the ids grew as the entities were added (then the sort below only checks it).
            // Reading back costs a word per 64 slots: at most 4 words per match here.
            let mut bits = vec![0u64; bound.div_ceil(64)];
            for &(_, slot) in &found {
                if let Some(word) = bits.get_mut(slot as usize / 64) {
                    *word |= 1 << (slot % 64);
                }
            }
            entities = Vec::with_capacity(found.len());
            for (index, &word) in bits.iter().enumerate() {
                let mut word = word;
                while word != 0 {
                    let slot = slot_of(index * 64 + word.trailing_zeros() as usize);
                    word &= word - 1;
                    if let Some(node) = self.node(slot) {
                        entities.push((node.key, &node.entity));
                    }
                }
            }
            // Equal keys are ordered below.
            entities.sort_unstable_by_key(|&(key, _)| key);
        } else {
            found.sort_unstable();
            found.dedup();
            entities = found
                .iter()
                .filter_map(|&(key, slot)| Some((key, &self.node(slot)?.entity)))
                .collect();
        }
        // Ids that share their first eight bytes: order each such run by the whole id.
        for run in entities.chunk_by_mut(|a, b| a.0 == b.0) {
            if run.len() > 1 {
                run.sort_unstable_by(|a, b| a.1.id.cmp(&b.1.id));
            }
        }
        entities
            .into_iter()
            .map(|(_, entity)| Arc::clone(entity))
            .collect()
    }

    /// Adds the tags starting with `prefix` (already lowercased) to `out`.
    pub(crate) fn tags_with_prefix(&self, prefix: &str, out: &mut BTreeSet<String>) {
        for tag in self
            .tags
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .map(|(tag, _)| tag)
        {
            if !tag.starts_with(prefix) {
                break;
            }
            out.insert(tag.clone());
        }
    }

    /// How many entities carry `tag`.
    pub(crate) fn tag_count(&self, tag: &Tag) -> usize {
        self.tags.get(tag.as_str()).map_or(0, BTreeSet::len)
    }
}
