//! `ConversationMemory`: per-session message history over any [`MemoryStore`].
//!
//! Two separate layers, as the design describes:
//! - **eviction** deletes whole oldest messages once the session holds more than
//!   `max_messages`;
//! - **compaction** (the microcompact of the design) replaces the content of old tool results
//!   with a short placeholder once the estimated token count of the history passes
//!   `context_window - reserved_tokens`, keeping the `keep_recent` newest tool results intact.

use std::sync::Arc;
use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};
use memory_core::{
    Clock, MemoryError, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, Result,
    SystemClock,
};
use serde::{Deserialize, Serialize};

use crate::prompt::estimate_tokens;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The human.
    User,
    /// The model.
    Assistant,
    /// A tool's output.
    Tool,
}

impl Role {
    /// The role's name, as [`Role::parse`] reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// The role named `text` (`system`, `user`, `assistant`, `tool`), if it is one.
    pub fn parse(text: &str) -> Option<Self> {
        [Role::System, Role::User, Role::Assistant, Role::Tool]
            .into_iter()
            .find(|r| r.as_str() == text)
    }
}

/// One conversation message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The message id in the store (assigned by [`ConversationMemory::add_message`]).
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// The text (or, once compacted, the placeholder).
    pub content: String,
    /// For tool results, the id of the call they answer; for assistant tool calls, the call id.
    pub tool_call_id: Option<String>,
    /// Whether compaction replaced the original content.
    pub compacted: bool,
    /// How much the message matters, in `[0, 1]`, when the caller knows (a user stating a
    /// preference, say); with [`ConversationConfig::promote_at`], an important message is
    /// also kept as a long-term memory. `None` when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
}

impl Message {
    /// A message with no tool call id.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            id: String::new(),
            role,
            content: content.into(),
            tool_call_id: None,
            compacted: false,
            importance: None,
        }
    }

    /// Sets the importance.
    pub fn with_importance(mut self, importance: f32) -> Self {
        self.importance = Some(importance);
        self
    }

    /// A tool result answering `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::new(Role::Tool, content)
        }
    }

    /// Sets the tool call id.
    pub fn with_tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.tool_call_id = Some(id.into());
        self
    }
}

/// How much history [`ConversationMemory::get_history`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryStrategy {
    /// The last `max_turns` turns (a turn starts at a user message), with the system
    /// messages that precede them.
    SlidingWindow,
    /// Everything stored.
    Full,
}

/// Compaction settings (the design's `CompactConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactConfig {
    /// The model's context window, in tokens.
    pub context_window: usize,
    /// Tokens kept free for the answer.
    pub reserved_tokens: usize,
    /// The newest tool results never compacted.
    pub keep_recent: usize,
}

/// Settings of a [`ConversationMemory`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConversationConfig {
    /// Window or full history.
    pub strategy: HistoryStrategy,
    /// Turns in the sliding window.
    pub max_turns: usize,
    /// Capacity: the oldest whole messages beyond this are deleted (`None`: unbounded).
    pub max_messages: Option<usize>,
    /// Tool-result compaction (`None`: never). An add reads the session for it only when
    /// it may be due: before the handle's first read, and when the history's tokens the
    /// handle knows of (those of its last read, plus the messages it added since) are over
    /// budget and a tool result may be replaced (the last read left one, or a tool result
    /// was added since). Messages another handle adds are counted at this handle's next
    /// read; [`ConversationMemory::compact`] reads at once.
    pub compact: Option<CompactConfig>,
    /// Promotion by importance: a message added with an importance at or above this is
    /// also stored as an episodic (long-term) memory in the session's
    /// [`promoted_namespace`], so it outlives the window and the capacity of the
    /// conversation. The copy is written with the message, in one write of the store (both
    /// or neither): unlike [`Memory::promote`](crate::Memory::promote), it is not embedded,
    /// merged with a duplicate or counted against a namespace capacity on the way in (the
    /// next [`Memory::maintain`](crate::Memory::maintain) applies the capacity). Call
    /// `Memory::promote` for those. `None` (the default): promotion is explicit only.
    #[serde(default)]
    pub promote_at: Option<f32>,
}

impl Default for ConversationConfig {
    fn default() -> Self {
        Self {
            strategy: HistoryStrategy::SlidingWindow,
            max_turns: 20,
            max_messages: Some(1000),
            compact: None,
            promote_at: None,
        }
    }
}

impl ConversationConfig {
    /// Checks the numbers.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] for `max_turns` or `max_messages` of zero, or
    /// `reserved_tokens >= context_window`.
    pub fn validate(&self) -> Result<()> {
        if self.max_turns == 0 {
            return Err(MemoryError::invalid("max_turns", "must be at least 1"));
        }
        if self.max_messages == Some(0) {
            return Err(MemoryError::invalid("max_messages", "must be at least 1"));
        }
        if let Some(threshold) = self.promote_at {
            memory_core::backend::validate_unit("promote_at", threshold)?;
        }
        if let Some(compact) = self.compact
            && compact.reserved_tokens >= compact.context_window
        {
            return Err(MemoryError::invalid(
                "reserved_tokens",
                "must be less than context_window",
            ));
        }
        Ok(())
    }
}

/// The message history of one session, stored as [`MemoryKind::ShortTerm`] items in the
/// session's namespace (metadata: `role`, `tool_call_id`, `seq`, `compacted`).
#[derive(Debug)]
pub struct ConversationMemory {
    store: Arc<dyn MemoryStore>,
    session: Namespace,
    config: ConversationConfig,
    clock: Arc<dyn Clock>,
    /// The next sequence number and the time of the newest message written: each message
    /// is stamped strictly after the one before it.
    next: Mutex<(u64, DateTime<Utc>)>,
    /// What this handle knows of the history's size since it last read it, so that an add
    /// reads the session for compaction only when compaction may be due.
    compact_due: Mutex<CompactDue>,
    /// This handle's mark in the ids of the messages it writes (`msg-<seq>-<mark>`): two
    /// handles open on one session read the same next sequence number, and a save is an
    /// upsert, so ids of the sequence alone made the second message replace the first.
    mark: String,
}

const SEQ_WIDTH: usize = 12;

/// What a [`ConversationMemory`] handle knows of its history's size, for
/// [`add_message`](ConversationMemory::add_message) to tell whether compaction may be due.
#[derive(Debug, Default)]
struct CompactDue {
    /// The history's tokens when the handle last read it, plus those of the messages it
    /// has added since. `None` before the first read.
    tokens: Option<usize>,
    /// Whether the handle has added a tool result since that read: only a new tool result
    /// can push an older one past `keep_recent`, making it one compaction may replace.
    tool_added: bool,
    /// Whether that read left a tool result compaction may replace (past `keep_recent`, not
    /// compacted or pinned, longer than its placeholder): left because the history was
    /// within budget then, or fit once the results before it were replaced.
    compactable: bool,
}

/// The listing of `session`'s messages, oldest first: what
/// [`add_message`](ConversationMemory::add_message) writes, short-term memories with ids
/// `msg-...`.
fn messages_of(session: &Namespace) -> MemoryFilter {
    MemoryFilter::new(session.exact())
        .with_kinds([MemoryKind::ShortTerm])
        .with_id_prefix("msg-")
}

/// The last segment of [`promoted_namespace`].
pub const PROMOTED_SEGMENT: &str = "long-term";

/// Where a conversation's promoted messages live: the child `long-term` of the session's
/// namespace. The session's own namespace holds its messages only, so the window, the
/// capacity and the history never see the promoted copies; a recall over the session's
/// subtree (or any ancestor's) finds them.
///
/// # Errors
/// [`MemoryError::InvalidInput`] when the session is at the deepest namespace level.
pub fn promoted_namespace(session: &Namespace) -> Result<Namespace> {
    session.child(PROMOTED_SEGMENT)
}

/// The text of a message's long-term copy: `role: text`, or the text alone when the role
/// before it would take it past the content limit (a message within the limit is always
/// promotable).
pub(crate) fn promoted_text(role: &str, content: &str) -> String {
    let text = format!("{role}: {content}");
    if text.len() > memory_core::DEFAULT_MAX_CONTENT_BYTES {
        content.to_owned()
    } else {
        text
    }
}

impl ConversationMemory {
    /// The conversation stored in namespace `session` of `store`, continuing any history
    /// already there.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] for a bad config, the root namespace, or a session too
    /// deep for its promoted namespace when `promote_at` is set; store errors.
    pub async fn open(
        store: Arc<dyn MemoryStore>,
        session: Namespace,
        config: ConversationConfig,
    ) -> Result<Self> {
        Self::open_with_clock(store, session, config, Arc::new(SystemClock)).await
    }

    /// As [`open`](Self::open) with an explicit clock.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub async fn open_with_clock(
        store: Arc<dyn MemoryStore>,
        session: Namespace,
        config: ConversationConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        config.validate()?;
        session.require_record_namespace()?;
        if config.promote_at.is_some() {
            // Checked here, not at the first important message (which it would refuse).
            promoted_namespace(&session)?;
        }
        // The newest messages by time. Versions that nudged same-instant messages by
        // `seq % 1000` microseconds could order a burst out of sequence within one
        // millisecond, so the highest sequence among the newest thousand is the last one.
        // Messages only: a memory put in the namespace some other way (dated in the future,
        // say) does not move the stamps of the messages written after it.
        let newest = store
            .list(&messages_of(&session).newest_first().with_limit(1000))
            .await?;
        let next = newest
            .iter()
            .filter_map(|item| item.metadata.get("seq").and_then(serde_json::Value::as_u64))
            .max()
            .map_or(0, |seq| seq + 1);
        let last_at = newest
            .iter()
            .map(|item| item.created_at)
            .max()
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        Ok(Self {
            store,
            session,
            config,
            clock,
            next: Mutex::new((next, last_at)),
            compact_due: Mutex::new(CompactDue::default()),
            // A whole new id: its time, the process's counter and salt. The counter and salt
            // alone repeat after 2^24 ids in one process, and two handles of one session
            // would then write the same ids.
            mark: memory_core::new_id(),
        })
    }

    /// The session namespace.
    pub fn session(&self) -> &Namespace {
        &self.session
    }

    /// Stores a message, then applies eviction and compaction. Returns its id,
    /// `msg-<sequence>-<handle>`: any number of handles may write to one session, and each
    /// message keeps its own id.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] for empty content; the store's error when the message
    /// could not be stored. Once it is stored, a failure of eviction or compaction is logged
    /// and the id returned: the message is there, and a retry would store it twice.
    pub async fn add_message(&self, message: Message) -> Result<String> {
        let (seq, at) = {
            let mut next = self
                .next
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (seq, last_at) = *next;
            // Strictly after the previous message, whatever the clock says (a clock that
            // stands still, or a burst within one tick), so time order is write order.
            let at = self.clock.now().max(last_at + Duration::microseconds(1));
            *next = (seq + 1, at);
            (seq, at)
        };
        let id = format!("msg-{seq:0width$}-{}", self.mark, width = SEQ_WIDTH);
        let mut metadata = serde_json::json!({"role": message.role.as_str(), "seq": seq});
        if let Some(call) = &message.tool_call_id {
            metadata["tool_call_id"] = serde_json::Value::String(call.clone());
        }
        if let Some(importance) = message.importance {
            memory_core::backend::validate_unit("importance", importance)?;
            metadata["importance"] = serde_json::json!(importance);
        }
        let item = MemoryItem::new(self.session.clone(), message.content)?
            .with_id(id.clone())?
            .with_kind(MemoryKind::ShortTerm)
            .with_metadata(metadata)?
            .with_source("conversation")
            .with_created_at(at);
        let promoted = match (message.importance, self.config.promote_at) {
            (Some(importance), Some(threshold)) if importance >= threshold => Some(
                MemoryItem::new(
                    promoted_namespace(&self.session)?,
                    promoted_text(message.role.as_str(), &item.content),
                )?
                .with_id(format!("promoted-{id}"))?
                .with_kind(MemoryKind::Episodic)
                .with_importance(importance)?
                .with_metadata(serde_json::json!({ "promoted_from": id }))?
                .with_source("conversation")
                .with_created_at(at),
            ),
            _ => None,
        };
        let tokens = estimate_tokens(&item.content);
        match promoted {
            // The message and its long-term copy are stored together.
            Some(promoted) => self.store.save_many(vec![item, promoted]).await?,
            None => self.store.save(item).await?,
        }
        {
            let mut due = self.compact_due();
            if let Some(total) = &mut due.tokens {
                *total = total.saturating_add(tokens);
            }
            due.tool_added |= message.role == Role::Tool;
        }
        // The message is stored: a failure of the upkeep after it is logged, not returned,
        // or a caller that retries would store the message twice. The next message's
        // upkeep (or `evict` and `compact` called directly) catches up.
        if let Err(error) = self.evict().await {
            tracing::warn!(%error, session = %self.session, "conversation eviction failed after a message was stored");
        }
        if self.compaction_may_be_due()
            && let Err(error) = self.compact().await
        {
            tracing::warn!(%error, session = %self.session, "conversation compaction failed after a message was stored");
        }
        Ok(id)
    }

    /// Deletes the oldest whole messages beyond `max_messages`. Returns how many.
    ///
    /// Only messages go: a memory put in the session's namespace some other way (a fact
    /// remembered there, pinned or not) is not one, and a message pinned since it was
    /// written stays, as only `forget` removes a pinned memory. The oldest
    /// `count − max_messages` messages are read (the namespace's count, to keep an add from
    /// reading every message) and the unpinned among them deleted: a memory that is not a
    /// message counts toward the size (the session's namespace is meant for its messages),
    /// and a pinned message among the oldest is passed over, not replaced by the next
    /// oldest, so the session holds up to `max_messages` memories beside its pinned
    /// messages.
    ///
    /// # Errors
    /// Store errors.
    pub async fn evict(&self) -> Result<usize> {
        let Some(max) = self.config.max_messages else {
            return Ok(0);
        };
        let count = self.store.count(&self.session.exact()).await?;
        if count <= max {
            return Ok(0);
        }
        let oldest = self
            .store
            .list(&self.messages().with_limit(count - max))
            .await?;
        // Each only if still as read: a message pinned meanwhile stays.
        let read: Vec<(String, chrono::DateTime<chrono::Utc>)> = oldest
            .into_iter()
            .filter(|item| !item.is_pinned())
            .map(|item| (item.id, item.updated_at))
            .collect();
        if let Some(deleted) = self.store.delete_many_if(&self.session, &read).await? {
            return Ok(deleted);
        }
        // One of them changed since: each deleted alone, those changed left.
        let mut deleted = 0;
        for one in read.chunks(1) {
            deleted += self
                .store
                .delete_many_if(&self.session, one)
                .await?
                .unwrap_or(0);
        }
        Ok(deleted)
    }

    /// The listing of this session's messages, oldest first: what [`add_message`](Self::add_message)
    /// writes, short-term memories with ids `msg-...`.
    fn messages(&self) -> MemoryFilter {
        messages_of(&self.session)
    }

    /// This handle's [`CompactDue`].
    fn compact_due(&self) -> std::sync::MutexGuard<'_, CompactDue> {
        self.compact_due
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the compaction after an add may find something to do, by what this handle
    /// knows: before its first read of the session; or when the history's tokens it knows of
    /// are over budget and a tool result may be replaced: one the last read left (the
    /// history was within budget then), or one pushed past `keep_recent` by a tool result
    /// added since (without either, the last read replaced every one it could). So an add
    /// reads the session for compaction only then, not at every message. Messages other
    /// handles add are counted at this handle's next read (a [`compact`](Self::compact) call
    /// reads at once).
    fn compaction_may_be_due(&self) -> bool {
        let Some(config) = self.config.compact else {
            return false;
        };
        let due = self.compact_due();
        match due.tokens {
            None => true,
            Some(tokens) => {
                (due.tool_added || due.compactable)
                    && tokens > config.context_window - config.reserved_tokens
            }
        }
    }

    /// Compacts old tool results when the history ([`get_history`](Self::get_history): the
    /// window, under the sliding-window strategy) is over budget: the oldest tool results in
    /// it, past the newest `keep_recent`, are replaced by a one-line placeholder until it
    /// fits. A result no longer than its placeholder is left whole (replacing it would
    /// grow the history and lose the result for nothing), and a pinned one is left as it
    /// is (only `forget` changes a pinned memory). Returns how many messages were
    /// compacted.
    ///
    /// It reads the session's messages; [`add_message`](Self::add_message) calls it only
    /// when compaction may be due ([`ConversationConfig::compact`]).
    ///
    /// # Errors
    /// Store errors.
    pub async fn compact(&self) -> Result<usize> {
        let Some(config) = self.config.compact else {
            return Ok(0);
        };
        let items = self.store.list(&self.messages()).await?;
        let compacted = self.compact_read(config, &items).await;
        let mut due = self.compact_due();
        match compacted {
            Ok((compacted, tokens, compactable)) => {
                *due = CompactDue {
                    tokens: Some(tokens),
                    tool_added: false,
                    compactable,
                };
                Ok(compacted)
            }
            Err(error) => {
                // The next add reads again.
                due.tokens = None;
                Err(error)
            }
        }
    }

    /// [`compact`](Self::compact) over `items`, the session's messages as read: how many
    /// were compacted, the history's tokens after, and whether a tool result compaction may
    /// replace is left (past `keep_recent`, not compacted or pinned, longer than its
    /// placeholder: left because the history was within budget, or fit without it).
    async fn compact_read(
        &self,
        config: CompactConfig,
        items: &[MemoryItem],
    ) -> Result<(usize, usize, bool)> {
        let history = self.history_positions(items, |item| {
            Role::parse(role_of(item).unwrap_or_default()).unwrap_or(Role::User)
        });
        let budget = config.context_window - config.reserved_tokens;
        let mut total: usize = history
            .iter()
            .map(|&at| estimate_tokens(&items[at].content))
            .sum();
        let tool_positions: Vec<usize> = history
            .iter()
            .copied()
            .filter(|&at| role_of(&items[at]) == Some("tool"))
            .collect();
        let old = tool_positions.len().saturating_sub(config.keep_recent);
        let mut compacted = 0;
        let mut left = false;
        for &at in &tool_positions[..old] {
            let item = &items[at];
            if item.metadata.get("compacted").and_then(|c| c.as_bool()) == Some(true)
                || item.is_pinned()
            {
                continue;
            }
            let tokens = estimate_tokens(&item.content);
            let placeholder = format!(
                "[tool result compacted: {} characters, about {tokens} tokens]",
                item.content.chars().count(),
            );
            let kept = estimate_tokens(&placeholder);
            if tokens <= kept {
                continue;
            }
            if total <= budget {
                // Within budget: this one stays, for a later read to replace if need be.
                left = true;
                break;
            }
            let read_at = item.updated_at;
            let mut replaced = item.clone().revised(read_at);
            replaced.content = placeholder;
            replaced.metadata["compacted"] = serde_json::Value::Bool(true);
            // Written only over the copy read: a result changed since (pinned, edited) or
            // deleted stays as it is, for a later read to look at again.
            if self.store.update_if(replaced, read_at).await? {
                total = total - tokens + kept;
                compacted += 1;
            } else {
                left = true;
            }
        }
        Ok((compacted, total, left))
    }

    /// The positions in `messages` (the session's, oldest first) of those
    /// [`get_history`](Self::get_history) returns, in order: all of them, or under the
    /// sliding window the system messages before the last `max_turns` user turns and
    /// everything from the first of those turns on. `role` reads a message's role.
    fn history_positions<T>(&self, messages: &[T], role: impl Fn(&T) -> Role) -> Vec<usize> {
        let all = 0..messages.len();
        if self.config.strategy == HistoryStrategy::Full {
            return all.collect();
        }
        let user_starts: Vec<usize> = all
            .clone()
            .filter(|&at| role(&messages[at]) == Role::User)
            .collect();
        if user_starts.len() <= self.config.max_turns {
            return all.collect();
        }
        let cut = user_starts[user_starts.len() - self.config.max_turns];
        (0..cut)
            .filter(|&at| role(&messages[at]) == Role::System)
            .chain(cut..messages.len())
            .collect()
    }

    /// The history under the configured strategy, oldest first.
    ///
    /// # Errors
    /// Store errors.
    pub async fn get_history(&self) -> Result<Vec<Message>> {
        let items = self.store.list(&self.messages()).await?;
        let mut messages: Vec<Option<Message>> = items
            .into_iter()
            .map(|item| Some(to_message(item)))
            .collect();
        let positions = self.history_positions(&messages, |message| {
            message.as_ref().map_or(Role::User, |message| message.role)
        });
        Ok(positions
            .into_iter()
            .filter_map(|at| messages[at].take())
            .collect())
    }

    /// The estimated token count of [`get_history`](Self::get_history).
    ///
    /// # Errors
    /// Store errors.
    pub async fn estimated_tokens(&self) -> Result<usize> {
        Ok(self
            .get_history()
            .await?
            .iter()
            .map(|m| estimate_tokens(&m.content))
            .sum())
    }

    /// Deletes the whole session: every memory of its namespace, pinned messages and
    /// memories remembered there by other means included (a pin keeps a message from
    /// eviction and compaction, not from a clear, as it does not from `forget`). The
    /// promoted copies in the child namespace stay. Returns how many were deleted.
    ///
    /// # Errors
    /// Store errors.
    pub async fn clear(&self) -> Result<usize> {
        self.store.clear(&self.session.exact()).await
    }
}

/// The role a message's metadata names, if any.
fn role_of(item: &MemoryItem) -> Option<&str> {
    item.metadata.get("role").and_then(|role| role.as_str())
}

fn to_message(item: MemoryItem) -> Message {
    let text = |key: &str| {
        item.metadata
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    Message {
        role: text("role")
            .and_then(|r| Role::parse(&r))
            .unwrap_or(Role::User),
        tool_call_id: text("tool_call_id"),
        compacted: item
            .metadata
            .get("compacted")
            .and_then(|c| c.as_bool())
            .unwrap_or(false),
        importance: item
            .metadata
            .get("importance")
            .and_then(serde_json::Value::as_f64)
            .map(|value| value as f32),
        id: item.id,
        content: item.content,
    }
}
