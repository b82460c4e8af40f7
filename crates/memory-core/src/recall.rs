//! Recall statistics and the eviction policies that use them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::validate::{validate_non_negative, validate_unit};
use crate::{MemoryError, Result};

/// How often and how well a record was recalled. This is a persistence format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecallStats {
    /// How many times the record was returned by a recall.
    pub recall_count: u64,
    /// Sum of the scores it was returned with (mean = total / count).
    pub total_score: f64,
    /// When it was last recalled, if ever.
    pub last_recall_at: Option<DateTime<Utc>>,
}

/// `at` within the times every backend stores (nanoseconds in 64 bits, years 1677 to
/// 2262), the nearest bound when outside: a recall's time is recorded, not refused.
pub fn storable_time(at: DateTime<Utc>) -> DateTime<Utc> {
    match at.timestamp_nanos_opt() {
        Some(_) => at,
        None if at.timestamp() < 0 => DateTime::from_timestamp_nanos(i64::MIN),
        None => DateTime::from_timestamp_nanos(i64::MAX),
    }
}

impl RecallStats {
    /// Adds one recall with `score` at `at`. Scores are clamped into `[0, 1]`; NaN counts as
    /// 0. The count saturates at `i64::MAX` and the time at the storable range
    /// ([`storable_time`]), as every backend stores them.
    pub fn record(&mut self, score: f32, at: DateTime<Utc>) {
        let score = if score.is_nan() {
            0.0
        } else {
            score.clamp(0.0, 1.0)
        };
        let at = storable_time(at);
        self.recall_count = self.recall_count.saturating_add(1).min(i64::MAX as u64);
        self.total_score += f64::from(score);
        self.last_recall_at = Some(self.last_recall_at.map_or(at, |last| last.max(at)));
    }

    /// Checks statistics given whole ([`set_recall_stats`](crate::MemoryStore::set_recall_stats)):
    /// a finite total score of at least 0, a count of at most `i64::MAX`, a time in the
    /// storable range.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `total_score`, `recall_count` or
    /// `last_recall_at`.
    pub fn validate(&self) -> Result<()> {
        if !self.total_score.is_finite() || self.total_score < 0.0 {
            return Err(MemoryError::invalid(
                "total_score",
                format!("{} is not a finite number >= 0", self.total_score),
            ));
        }
        if i64::try_from(self.recall_count).is_err() {
            return Err(MemoryError::invalid("recall_count", "larger than 2^63 - 1"));
        }
        if let Some(at) = self.last_recall_at {
            crate::validate::validate_time("last_recall_at", at)?;
        }
        Ok(())
    }

    /// Mean recall score, 0 when never recalled.
    pub fn mean_score(&self) -> f64 {
        if self.recall_count == 0 {
            0.0
        } else {
            self.total_score / self.recall_count as f64
        }
    }

    /// The memory's recall value:
    /// `ln(1 + count) * recall_weight + mean * score_weight + recency * recency_weight`, where
    /// `recency = 1 / (1 + days since the last recall)` (0 when never recalled).
    ///
    /// ```
    /// use memory_core::{RecallBasedConfig, RecallStats};
    /// let now = chrono::Utc::now();
    /// let mut stats = RecallStats::default();
    /// stats.record(1.0, now);
    /// let config = RecallBasedConfig::default();
    /// let expected = 2f64.ln() * 0.3 + 1.0 * 0.5 + 1.0 * 0.2;
    /// assert!((stats.value(now, &config) - expected).abs() < 1e-6);
    /// ```
    pub fn value(&self, now: DateTime<Utc>, config: &RecallBasedConfig) -> f64 {
        let recency = match self.last_recall_at {
            Some(at) => {
                let days = (now - at).num_milliseconds().max(0) as f64 / 86_400_000.0;
                1.0 / (1.0 + days)
            }
            None => 0.0,
        };
        let frequency = (self.recall_count as f64).ln_1p();
        frequency * f64::from(config.recall_weight)
            + self.mean_score() * f64::from(config.score_weight)
            + recency * f64::from(config.recency_weight)
    }
}

/// The `count` least valuable of `entries`, least valuable first: the eviction victims of a
/// recall-based policy, in the order every backend must follow. An entry is
/// `(value, created_at, key)` with `value` from [`RecallStats::value`]; entries compare by
/// value ([`f64::total_cmp`]), then creation time, then key (the id), all ascending.
///
/// One pass with a heap bounded to `count`: `O(n log count)`, no copy of the entries.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// let t = |s| Utc.timestamp_opt(s, 0).unwrap();
/// let entries = [(0.5, t(1), "a"), (0.1, t(3), "b"), (0.1, t(2), "c"), (0.9, t(0), "d")];
/// assert_eq!(memory_core::backend::least_valuable(entries, 3), ["c", "b", "a"]);
/// ```
pub fn least_valuable<K: Ord>(
    entries: impl IntoIterator<Item = (f64, DateTime<Utc>, K)>,
    count: usize,
) -> Vec<K> {
    use std::collections::BinaryHeap;

    /// A max-heap entry: the top is the most valuable of those held.
    struct Ranked<K>(f64, DateTime<Utc>, K);
    impl<K: Ord> Ord for Ranked<K> {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.0
                .total_cmp(&other.0)
                .then_with(|| self.1.cmp(&other.1))
                .then_with(|| self.2.cmp(&other.2))
        }
    }
    impl<K: Ord> PartialOrd for Ranked<K> {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl<K: Ord> PartialEq for Ranked<K> {
        fn eq(&self, other: &Self) -> bool {
            self.cmp(other).is_eq()
        }
    }
    impl<K: Ord> Eq for Ranked<K> {}

    if count == 0 {
        return Vec::new();
    }
    let mut heap: BinaryHeap<Ranked<K>> = BinaryHeap::new();
    for (value, created_at, key) in entries {
        let entry = Ranked(value, created_at, key);
        if heap.len() < count {
            heap.push(entry);
        } else if heap.peek().is_some_and(|top| entry < *top) {
            heap.pop();
            heap.push(entry);
        }
    }
    heap.into_sorted_vec()
        .into_iter()
        .map(|Ranked(_, _, key)| key)
        .collect()
}

/// Weights of the recall-value formula ([`RecallStats::value`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallBasedConfig {
    /// Most items kept after a pass.
    pub max_items: usize,
    /// Weight of `ln(1 + recall_count)`, default 0.3.
    pub recall_weight: f32,
    /// Weight of the mean recall score, default 0.5.
    pub score_weight: f32,
    /// Weight of recall recency, default 0.2.
    pub recency_weight: f32,
}

impl Default for RecallBasedConfig {
    fn default() -> Self {
        Self {
            max_items: 10_000,
            recall_weight: 0.3,
            score_weight: 0.5,
            recency_weight: 0.2,
        }
    }
}

impl RecallBasedConfig {
    /// Checks the weights (finite, `>= 0`) and `max_items > 0`.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the bad field.
    pub fn validate(&self) -> Result<()> {
        if self.max_items == 0 {
            return Err(MemoryError::invalid("max_items", "must be at least 1"));
        }
        validate_non_negative("recall_weight", f64::from(self.recall_weight))?;
        validate_non_negative("score_weight", f64::from(self.score_weight))?;
        validate_non_negative("recency_weight", f64::from(self.recency_weight))
    }
}

/// Capacity by value: the items of lowest [`memory_value`] go first.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ValueBasedConfig {
    /// Most items kept, at least 1.
    pub max_items: usize,
    /// λ, the daily rate of the value's time decay `e^(−λ·age_days)`, finite and `>= 0`;
    /// default 0.005 (the time factor halves in about 139 days).
    pub decay_rate: f64,
}

impl Default for ValueBasedConfig {
    fn default() -> Self {
        Self {
            max_items: 10_000,
            decay_rate: 0.005,
        }
    }
}

impl ValueBasedConfig {
    /// Checks `max_items > 0` and the rate.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `max_items` or `decay_rate`.
    pub fn validate(&self) -> Result<()> {
        if self.max_items == 0 {
            return Err(MemoryError::invalid("max_items", "must be at least 1"));
        }
        validate_non_negative("decay_rate", self.decay_rate)
    }
}

/// What a memory is worth keeping at `now`:
/// `importance × (0.6 × e^(−λ·age_days) + 0.4 × min(ln(1 + access_count) / 5, 1))`,
/// with λ the `decay_rate` and the age counted from creation. Important memories outlive
/// unimportant ones, an old memory is worth less unless it is used, and use saturates (an
/// item accessed about 150 times has all the credit use can give).
///
/// ```
/// use chrono::Duration;
/// use memory_core::{MemoryItem, Namespace, memory_value};
/// let item = MemoryItem::new(Namespace::parse("u")?, "x")?.with_importance(0.8)?;
/// let now = item.created_at + Duration::days(100);
/// let expected = 0.8 * (0.6 * (-0.5f64).exp());
/// assert!((memory_value(&item, now, 0.005) - expected).abs() < 1e-6);
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
pub fn memory_value(item: &crate::MemoryItem, now: DateTime<Utc>, decay_rate: f64) -> f64 {
    let age_days = (now - item.created_at).num_milliseconds().max(0) as f64 / 86_400_000.0;
    let time = (-decay_rate * age_days).exp();
    let use_ = ((item.access_count as f64).ln_1p() / 5.0).min(1.0);
    f64::from(item.importance) * (0.6 * time + 0.4 * use_)
}

/// What to forget, and when.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case")]
pub enum EvictionPolicy {
    /// Never evict.
    #[default]
    None,
    /// Evict items older than `ttl_secs` (by creation time).
    Ttl {
        /// Time to live, seconds, at least 1.
        ttl_secs: u64,
    },
    /// Keep the newest `max_items`; evict the oldest.
    Capacity {
        /// Most items kept, at least 1.
        max_items: usize,
    },
    /// Keep the `max_items` of highest recall value; evict the lowest.
    RecallBased(RecallBasedConfig),
    /// Keep the `max_items` of highest [`memory_value`] (importance, age and use); evict
    /// the lowest.
    ValueBased(ValueBasedConfig),
    /// TTL first, then capacity by recall value (if `recall` is set) or by age.
    Hybrid {
        /// Optional time to live, seconds.
        ttl_secs: Option<u64>,
        /// Optional capacity (by age); refused beside `recall`, which has its own.
        max_items: Option<usize>,
        /// Optional capacity by recall value.
        recall: Option<RecallBasedConfig>,
    },
}

impl EvictionPolicy {
    /// The most items a namespace keeps under this policy, if it bounds them: `max_items`
    /// of `Capacity`, of `RecallBased`, or of `Hybrid` (where the recall-based capacity,
    /// when set, is the one that applies).
    pub fn capacity(&self) -> Option<usize> {
        match self {
            EvictionPolicy::None | EvictionPolicy::Ttl { .. } => None,
            EvictionPolicy::Capacity { max_items } => Some(*max_items),
            EvictionPolicy::RecallBased(config) => Some(config.max_items),
            EvictionPolicy::ValueBased(config) => Some(config.max_items),
            EvictionPolicy::Hybrid {
                max_items, recall, ..
            } => recall.as_ref().map(|r| r.max_items).or(*max_items),
        }
    }

    /// The time to live in seconds, if this policy expires items.
    pub fn ttl_secs(&self) -> Option<u64> {
        match self {
            EvictionPolicy::Ttl { ttl_secs } => Some(*ttl_secs),
            EvictionPolicy::Hybrid { ttl_secs, .. } => *ttl_secs,
            _ => None,
        }
    }

    /// The recall-value ranking, if this policy evicts the least valuable rather than the
    /// oldest.
    pub fn recall_config(&self) -> Option<&RecallBasedConfig> {
        match self {
            EvictionPolicy::RecallBased(config) => Some(config),
            EvictionPolicy::Hybrid { recall, .. } => recall.as_ref(),
            _ => None,
        }
    }

    /// Checks the policy's numbers: positive TTL and capacity, valid weights.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `ttl_secs`, `max_items` or a weight.
    pub fn validate(&self) -> Result<()> {
        let check_ttl = |ttl: u64| {
            if ttl == 0 {
                Err(MemoryError::invalid("ttl_secs", "must be at least 1"))
            } else {
                Ok(())
            }
        };
        let check_cap = |cap: usize| {
            if cap == 0 {
                Err(MemoryError::invalid("max_items", "must be at least 1"))
            } else {
                Ok(())
            }
        };
        match self {
            EvictionPolicy::None => Ok(()),
            EvictionPolicy::Ttl { ttl_secs } => check_ttl(*ttl_secs),
            EvictionPolicy::Capacity { max_items } => check_cap(*max_items),
            EvictionPolicy::RecallBased(config) => config.validate(),
            EvictionPolicy::ValueBased(config) => config.validate(),
            EvictionPolicy::Hybrid {
                ttl_secs,
                max_items,
                recall,
            } => {
                if let Some(ttl) = ttl_secs {
                    check_ttl(*ttl)?;
                }
                if let Some(cap) = max_items {
                    check_cap(*cap)?;
                }
                if let Some(recall) = recall {
                    if max_items.is_some() {
                        // Two capacities, one of which would be ignored.
                        return Err(MemoryError::invalid(
                            "max_items",
                            "give the capacity by age (max_items) or by recall value \
                             (recall.max_items), not both",
                        ));
                    }
                    recall.validate()?;
                }
                Ok(())
            }
        }
    }
}

/// When eviction runs.
///
/// Through `Memory`, every write is counted against its own namespace: a namespace that
/// goes over the policy's capacity is brought back under it by the write that crossed the
/// line (a pass frees a sixteenth of the capacity at once, so its cost is shared by the
/// writes that follow), and every `check_interval` writes to a namespace run its full pass
/// (TTL included).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvictionConfig {
    /// The policy.
    pub policy: EvictionPolicy,
    /// Run a namespace's full pass (TTL and capacity) after this many writes to it (at
    /// least 1). Capacity is enforced on every write regardless.
    pub check_interval: usize,
}

impl Default for EvictionConfig {
    fn default() -> Self {
        Self {
            policy: EvictionPolicy::None,
            check_interval: 100,
        }
    }
}

impl EvictionConfig {
    /// Checks the policy and the interval.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the bad field.
    pub fn validate(&self) -> Result<()> {
        if self.check_interval == 0 {
            return Err(MemoryError::invalid("check_interval", "must be at least 1"));
        }
        self.policy.validate()
    }
}

/// Importance decay: after `grace_period_days`, importance is multiplied by
/// `(1 - daily_rate)` per day; items under `min_threshold` become eviction candidates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecayConfig {
    /// Fraction lost per day, in `[0, 1]`, default 0.01.
    pub daily_rate: f32,
    /// Below this importance an item may be forgotten, default 0.05.
    pub min_threshold: f32,
    /// Days a new item does not decay, default 7.
    pub grace_period_days: u32,
}

impl Default for DecayConfig {
    fn default() -> Self {
        Self {
            daily_rate: 0.01,
            min_threshold: 0.05,
            grace_period_days: 7,
        }
    }
}

impl DecayConfig {
    /// Checks the rate and threshold.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `daily_rate` or `min_threshold`.
    pub fn validate(&self) -> Result<()> {
        validate_unit("daily_rate", self.daily_rate)?;
        validate_unit("min_threshold", self.min_threshold)
    }

    /// The importance an item of `original` importance, last reinforced at `since`, has at
    /// `now`: `original * (1 - rate)^(days - grace)` once past the grace period.
    pub fn decayed(&self, original: f32, since: DateTime<Utc>, now: DateTime<Utc>) -> f32 {
        let days = (now - since).num_seconds().max(0) as f64 / 86_400.0;
        let effective = days - f64::from(self.grace_period_days);
        if effective <= 0.0 {
            return original;
        }
        let factor = (1.0 - f64::from(self.daily_rate)).powf(effective);
        (f64::from(original) * factor).clamp(0.0, 1.0) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn value_orders_by_use() {
        let now = Utc::now();
        let config = RecallBasedConfig::default();
        let never = RecallStats::default();
        let mut once_low = RecallStats::default();
        once_low.record(0.2, now - Duration::days(30));
        let mut often_high = RecallStats::default();
        for _ in 0..5 {
            often_high.record(0.9, now);
        }
        assert!(never.value(now, &config) < once_low.value(now, &config));
        assert!(once_low.value(now, &config) < often_high.value(now, &config));
        assert_eq!(never.value(now, &config), 0.0);
        let mut nan = RecallStats::default();
        nan.record(f32::NAN, now);
        assert_eq!(nan.total_score, 0.0);
    }

    #[test]
    fn policies_validate() {
        assert!(EvictionPolicy::Ttl { ttl_secs: 0 }.validate().is_err());
        assert!(
            EvictionPolicy::Capacity { max_items: 0 }
                .validate()
                .is_err()
        );
        let bad = RecallBasedConfig {
            score_weight: f32::NAN,
            ..Default::default()
        };
        assert!(EvictionPolicy::RecallBased(bad).validate().is_err());
        assert!(
            EvictionPolicy::Hybrid {
                ttl_secs: Some(0),
                max_items: None,
                recall: None
            }
            .validate()
            .is_err()
        );
        assert!(
            EvictionConfig {
                policy: EvictionPolicy::None,
                check_interval: 0
            }
            .validate()
            .is_err()
        );
        assert!(EvictionConfig::default().validate().is_ok());
        let json = serde_json::to_string(&EvictionPolicy::Capacity { max_items: 3 }).unwrap();
        assert_eq!(
            serde_json::from_str::<EvictionPolicy>(&json).unwrap(),
            EvictionPolicy::Capacity { max_items: 3 }
        );
        let stats = RecallStats {
            recall_count: 2,
            total_score: 1.5,
            last_recall_at: Some(Utc::now()),
        };
        assert_eq!(
            serde_json::from_str::<RecallStats>(&serde_json::to_string(&stats).unwrap()).unwrap(),
            stats
        );
    }

    #[test]
    fn decay() {
        let config = DecayConfig {
            daily_rate: 0.1,
            min_threshold: 0.05,
            grace_period_days: 2,
        };
        let t0 = Utc::now();
        assert_eq!(config.decayed(0.8, t0, t0 + Duration::days(1)), 0.8);
        let after = config.decayed(0.8, t0, t0 + Duration::days(4));
        assert!((after - 0.8 * 0.81).abs() < 1e-5, "{after}");
        assert!(
            DecayConfig {
                daily_rate: 1.5,
                ..config
            }
            .validate()
            .is_err()
        );
    }
}
