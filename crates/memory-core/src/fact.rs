//! Facts that change: fact keys, validity time, supersession, retraction and the views of
//! time a read can take.
//!
//! A memory is *bi-temporal*. [`MemoryItem::created_at`] is when it was recorded;
//! [`valid_from`](MemoryItem::valid_from) / [`valid_until`](MemoryItem::valid_until) say when
//! the fact holds in the world (either open); [`ended`](MemoryItem::ended) says when the
//! memory stopped being believed, and why: superseded by a newer memory, or retracted. An
//! ended memory is kept (it is history) until `forget` deletes it.
//!
//! A store's reads see every record ([`TimeView::All`], the default of a
//! [`MemoryFilter`](crate::MemoryFilter)): stores return what they hold. The `Memory` facade
//! of memory-retrieve reads [`TimeView::Current`] unless asked otherwise, so a superseded
//! fact leaves recall without leaving the store.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::validate::{validate_id, validate_len, validate_time};
use crate::{MemoryError, MemoryItem, Result};

/// Longest fact key, in bytes.
pub const MAX_FACT_KEY_LEN: usize = 256;

/// Most ids a memory lists in [`supersedes`](MemoryItem::supersedes) or
/// [`conflicts_with`](MemoryItem::conflicts_with); the oldest links are dropped past it.
pub const MAX_FACT_LINKS: usize = 64;

/// Longest retraction reason, in bytes.
pub const MAX_REASON_LEN: usize = 4096;

/// Why a memory stopped being believed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EndReason {
    /// A newer memory replaced it.
    Superseded {
        /// The id of the memory that replaced it (same namespace).
        by: String,
    },
    /// It was consolidated with others into one summary memory, which lists it in
    /// [`supersedes`](MemoryItem::supersedes). Still true, no longer recalled by default.
    Consolidated {
        /// The id of the summary memory (same namespace).
        into: String,
    },
    /// It was withdrawn without a replacement.
    Retracted {
        /// Why, as the caller gave it.
        reason: String,
    },
}

/// When and why a memory stopped being believed (see [`MemoryItem::ended`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ended {
    /// When it ended: the replacement's recording time, or the time of the retraction.
    pub at: DateTime<Utc>,
    /// Why.
    #[serde(flatten)]
    pub reason: EndReason,
}

impl Ended {
    /// The id of the memory that superseded this one, if one did.
    pub fn superseded_by(&self) -> Option<&str> {
        match &self.reason {
            EndReason::Superseded { by } => Some(by),
            EndReason::Consolidated { .. } | EndReason::Retracted { .. } => None,
        }
    }

    /// The memory that took this one's place: the one that superseded it, or the summary
    /// it was consolidated into.
    pub fn successor(&self) -> Option<&str> {
        match &self.reason {
            EndReason::Superseded { by } => Some(by),
            EndReason::Consolidated { into } => Some(into),
            EndReason::Retracted { .. } => None,
        }
    }
}

/// Which records a read sees, by time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "view", content = "at", rename_all = "snake_case")]
pub enum TimeView {
    /// Every record, ended or not (what a store holds).
    #[default]
    All,
    /// What is believed now: not ended, and not past its `valid_until` at the given time.
    /// A fact whose `valid_from` lies ahead is current (a plan the user announced is worth
    /// recalling before it starts).
    Current(DateTime<Utc>),
    /// What was held true at the given time: recorded by then, not yet ended then, and
    /// valid then (`valid_from <= at < valid_until`, open ends unbounded).
    AsOf(DateTime<Utc>),
}

impl TimeView {
    /// Whether `item` is visible in this view.
    pub fn admits(&self, item: &MemoryItem) -> bool {
        self.admits_parts(
            item.created_at,
            item.valid_from,
            item.valid_until,
            item.ended.as_ref().map(|ended| ended.at),
        )
    }

    /// [`admits`](Self::admits) over the stored columns, for backends that filter rows
    /// before building items.
    pub fn admits_parts(
        &self,
        created_at: DateTime<Utc>,
        valid_from: Option<DateTime<Utc>>,
        valid_until: Option<DateTime<Utc>>,
        ended_at: Option<DateTime<Utc>>,
    ) -> bool {
        match *self {
            TimeView::All => true,
            TimeView::Current(now) => ended_at.is_none() && valid_until.is_none_or(|u| u > now),
            TimeView::AsOf(at) => {
                created_at <= at
                    && ended_at.is_none_or(|e| e > at)
                    && valid_from.is_none_or(|f| f <= at)
                    && valid_until.is_none_or(|u| u > at)
            }
        }
    }
}

/// Normalises a fact key: trimmed, lowercase, inner whitespace runs as one `_`. A key names
/// a subject and an attribute (`"user.city"`); the library does not parse it further.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `fact_key` when it is empty, longer than
/// [`MAX_FACT_KEY_LEN`] bytes, or holds a control character.
pub fn normalize_fact_key(key: &str) -> Result<String> {
    let key = key.trim();
    if key.is_empty() {
        return Err(MemoryError::invalid("fact_key", "must not be empty"));
    }
    // Checked before the work (a long key is refused without being lowercased), and after
    // it: lowercasing can lengthen a key (`Ⱥ` is two bytes, `ⱥ` three), and a key accepted
    // here must be one a memory can be saved with.
    let too_long = |length: usize| {
        MemoryError::invalid(
            "fact_key",
            format!("{length} bytes exceeds the limit of {MAX_FACT_KEY_LEN}"),
        )
    };
    if key.len() > MAX_FACT_KEY_LEN {
        return Err(too_long(key.len()));
    }
    if key.chars().any(char::is_control) {
        return Err(MemoryError::invalid(
            "fact_key",
            "must not contain control characters",
        ));
    }
    let normal = key
        .split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join("_");
    if normal.len() > MAX_FACT_KEY_LEN {
        return Err(too_long(normal.len()));
    }
    Ok(normal)
}

/// Checks a validity interval (of a memory or a relation): both ends storable, the end
/// not before the start.
pub(crate) fn validate_validity(
    from: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
) -> Result<()> {
    if let Some(from) = from {
        validate_time("valid_from", from)?;
    }
    if let Some(until) = until {
        validate_time("valid_until", until)?;
    }
    if let (Some(from), Some(until)) = (from, until)
        && until < from
    {
        return Err(MemoryError::invalid(
            "valid_until",
            "must not be before valid_from",
        ));
    }
    Ok(())
}

/// Checks the fact fields of an item (called by [`MemoryItem::validate`]).
pub(crate) fn validate_fact_fields(item: &MemoryItem) -> Result<()> {
    if let Some(key) = &item.fact_key
        && normalize_fact_key(key)? != *key
    {
        return Err(MemoryError::invalid(
            "fact_key",
            "must be normalised (see normalize_fact_key)",
        ));
    }
    validate_validity(item.valid_from, item.valid_until)?;
    if let Some(ended) = &item.ended {
        validate_time("ended", ended.at)?;
        let successor = match &ended.reason {
            EndReason::Superseded { by } => Some(("superseded_by", by)),
            EndReason::Consolidated { into } => Some(("consolidated_into", into)),
            EndReason::Retracted { reason } => {
                validate_len("reason", reason, MAX_REASON_LEN)?;
                None
            }
        };
        if let Some((field, id)) = successor {
            validate_id(field, id)?;
            if *id == item.id {
                return Err(MemoryError::invalid(
                    field,
                    format!("memory {id} cannot be ended by itself"),
                ));
            }
        }
    }
    for (field, links) in [
        ("supersedes", &item.supersedes),
        ("conflicts_with", &item.conflicts_with),
    ] {
        if links.len() > MAX_FACT_LINKS {
            return Err(MemoryError::invalid(
                field,
                format!("at most {MAX_FACT_LINKS} ids"),
            ));
        }
        for id in links {
            validate_id(field, id)?;
            if *id == item.id {
                return Err(MemoryError::invalid(
                    field,
                    format!("memory {id} cannot name itself"),
                ));
            }
        }
    }
    Ok(())
}

/// The links of a memory to others that backends store as one JSON column: how it ended,
/// what it supersedes, what it conflicts with. Its [`Default`] (no links) is stored as
/// nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lineage {
    /// [`MemoryItem::ended`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
    /// [`MemoryItem::supersedes`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
    /// [`MemoryItem::conflicts_with`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts_with: Vec<String>,
}

impl Lineage {
    /// The lineage of `item`.
    pub fn of(item: &MemoryItem) -> Self {
        Self {
            ended: item.ended.clone(),
            supersedes: item.supersedes.clone(),
            conflicts_with: item.conflicts_with.clone(),
        }
    }

    /// The JSON text to store, `None` when there are no links.
    pub fn to_json(item: &MemoryItem) -> Option<String> {
        if item.ended.is_none() && item.supersedes.is_empty() && item.conflicts_with.is_empty() {
            return None;
        }
        serde_json::to_string(&Self::of(item)).ok()
    }

    /// Reads stored JSON text back into `item`'s fields.
    ///
    /// # Errors
    /// [`MemoryError::Serialization`] for text this crate did not write.
    pub fn apply_json(item: &mut MemoryItem, json: Option<&str>) -> Result<()> {
        let Some(json) = json else {
            return Ok(());
        };
        let lineage: Lineage = serde_json::from_str(json)?;
        item.ended = lineage.ended;
        item.supersedes = lineage.supersedes;
        item.conflicts_with = lineage.conflicts_with;
        Ok(())
    }
}

/// Appends `id` to a link list unless present, dropping the oldest past [`MAX_FACT_LINKS`].
pub fn push_link(links: &mut Vec<String>, id: &str) {
    if links.iter().any(|link| link == id) {
        return;
    }
    links.push(id.to_owned());
    if links.len() > MAX_FACT_LINKS {
        links.remove(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Namespace;
    use chrono::TimeZone;

    fn at(day: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 1, day, 0, 0, 0).unwrap()
    }

    fn item() -> MemoryItem {
        MemoryItem::new(Namespace::parse("t").unwrap(), "lives in Paris")
            .unwrap()
            .with_created_at(at(2))
    }

    #[test]
    fn fact_keys_normalise_and_refuse_bad_input() {
        assert_eq!(normalize_fact_key("  User . City ").unwrap(), "user_._city");
        assert_eq!(normalize_fact_key("user.city").unwrap(), "user.city");
        for bad in ["", "   ", "a\u{0}b", &"k".repeat(MAX_FACT_KEY_LEN + 1)] {
            let error = normalize_fact_key(bad).unwrap_err();
            assert!(error.to_string().contains("fact_key"), "{error}");
        }
        let mut unnormalised = item();
        unnormalised.fact_key = Some("User.City".into());
        assert!(unnormalised.validate().is_err());
        // 256 bytes as given, 384 once lowercased: refused, not accepted and then unsavable.
        let growing = "Ⱥ".repeat(MAX_FACT_KEY_LEN / 2);
        assert_eq!(growing.len(), MAX_FACT_KEY_LEN);
        let error = normalize_fact_key(&growing).unwrap_err();
        assert!(error.to_string().contains("fact_key"), "{error}");
        assert!(item().with_fact_key(&growing).is_err());
        // Every key accepted is one a memory is saved with.
        let fits = "Ⱥ".repeat(MAX_FACT_KEY_LEN / 3);
        let keyed = item().with_fact_key(&fits).unwrap();
        keyed.validate().unwrap();
    }

    #[test]
    fn an_access_count_past_the_stores_integers_is_refused() {
        let mut counted = item();
        counted.access_count = crate::MAX_ACCESS_COUNT;
        counted.validate().unwrap();
        counted.access_count = crate::MAX_ACCESS_COUNT + 1;
        let error = counted.validate().unwrap_err();
        assert!(error.to_string().contains("access_count"), "{error}");
    }

    #[test]
    fn views_admit_by_recording_validity_and_end() {
        let mut old = item();
        old.valid_from = Some(at(1));
        old.valid_until = Some(at(10));
        old.ended = Some(Ended {
            at: at(10),
            reason: EndReason::Superseded { by: "new".into() },
        });
        assert!(TimeView::All.admits(&old));
        assert!(!TimeView::Current(at(5)).admits(&old));
        assert!(!TimeView::AsOf(at(1)).admits(&old), "not yet recorded");
        assert!(TimeView::AsOf(at(5)).admits(&old));
        assert!(!TimeView::AsOf(at(10)).admits(&old));

        let mut current = item();
        current.valid_from = Some(at(20));
        assert!(
            TimeView::Current(at(5)).admits(&current),
            "announced facts are current"
        );
        assert!(!TimeView::AsOf(at(5)).admits(&current));
        current.valid_until = Some(at(25));
        assert!(!TimeView::Current(at(25)).admits(&current));
    }

    #[test]
    fn validation_names_the_fact_fields() {
        let mut bad = item();
        bad.valid_from = Some(at(5));
        bad.valid_until = Some(at(4));
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("valid_until")
        );
        let mut bad = item();
        bad.supersedes = (0..=MAX_FACT_LINKS).map(|i| i.to_string()).collect();
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("supersedes")
        );
        let mut bad = item();
        bad.ended = Some(Ended {
            at: at(3),
            reason: EndReason::Retracted {
                reason: "x".repeat(MAX_REASON_LEN + 1),
            },
        });
        assert!(bad.validate().unwrap_err().to_string().contains("reason"));
    }

    #[test]
    fn lineage_round_trips_through_json() {
        let mut linked = item();
        assert_eq!(Lineage::to_json(&linked), None);
        linked.ended = Some(Ended {
            at: at(3),
            reason: EndReason::Retracted {
                reason: "wrong".into(),
            },
        });
        linked.supersedes = vec!["a".into()];
        linked.conflicts_with = vec!["b".into()];
        let json = Lineage::to_json(&linked).unwrap();
        let mut back = item();
        Lineage::apply_json(&mut back, Some(&json)).unwrap();
        assert_eq!(Lineage::of(&back), Lineage::of(&linked));
        let mut links = Vec::new();
        for i in 0..MAX_FACT_LINKS + 3 {
            push_link(&mut links, &i.to_string());
            push_link(&mut links, &i.to_string());
        }
        assert_eq!(links.len(), MAX_FACT_LINKS);
        assert_eq!(links[0], "3");
    }
}
