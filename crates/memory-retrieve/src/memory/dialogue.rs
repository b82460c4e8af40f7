//! Dialogue ingest: the turns of a conversation remembered one by one, each indexed with the
//! turns next to it as its [context](memory_core::MemoryItem::context).
//!
//! A turn alone often does not hold the words a later question uses: "Five years" answers
//! "How long have you been married?", and "I just got back from a bus ride" is told in reply
//! to a question about a trip. [`Dialogue::add`] therefore stores each turn as
//! `[date] speaker: text`, with the turn before it and, once it arrives, the turn after it
//! (within the same session) as its context. Search weighs the context field lower than
//! the turn's own text ([`CONTEXT_FIELD_WEIGHT`](memory_core::CONTEXT_FIELD_WEIGHT)), so a
//! turn is found through its neighbours' words without outranking the turn that says them
//! (a recall can also weigh a turn whose own words hold none of the question's terms a
//! little less: [`RetrieverConfig::context_only_factor`](crate::RetrieverConfig::context_only_factor)).
//!
//! Both directions were measured on two conversational benchmarks (every change tried is in
//! `benches/README.md`): the previous turn alone helps a question answered by a reply,
//! the next turn alone a statement that the other side echoes; both together help on both.
//! The next turn reaches a stored turn by an update of its context, so a dialogue writes
//! each turn once and updates the one before it: twice the writes of plain
//! [`Memory::remember_with`]. A failed update is logged and does not fail the call: the
//! new turn is stored, and only an index aid of the previous one is missing.
//!
//! A turn given an id ([`Turn::id`]) is an event of its own: it is stored under its id even
//! when another turn says the same words ("Yes!" twice in one session), as
//! [`Remember::keep_apart`] stores a memory; the same id sent again replaces the turn (as
//! [`Remember::id`] says: a turn that is part of a fact's history, consolidated say, is
//! answered as unchanged when sent again as it was, and refused naming `id` when it says
//! something else). A turn without an id is
//! reconciled as any memory, so a conversation sent again is merged, not doubled. A turn
//! sent again under the id of the turn just before it takes that turn's place and context,
//! and the turn before it is lent its new text in place of the old.
//!
//! The speaker's role, when given ([`Turn::role`]), is kept in the metadata under `role`;
//! [`RetrieverConfig::role_weights`](crate::RetrieverConfig::role_weights) weighs keyword
//! relevance by it (by default an assistant's reply counts 0.45, see there).

use chrono::{DateTime, Utc};
use memory_core::{MemoryError, MemoryKind, Namespace, Result};

use super::{Memory, Remember};
use crate::conversation::Role;
use crate::{Outcome, Remembered};

/// Longest speaker name accepted, in bytes.
pub const MAX_SPEAKER_BYTES: usize = 256;

/// Longest session label accepted, in bytes.
pub const MAX_SESSION_BYTES: usize = 256;

/// Metadata key of a turn's speaker.
pub const SPEAKER_METADATA_KEY: &str = "speaker";

/// Metadata key of a turn's role (`user`, `assistant`, `system`, `tool`), also written by
/// [`ConversationMemory`](crate::ConversationMemory).
pub const ROLE_METADATA_KEY: &str = "role";

/// Metadata key of a turn's session label.
pub const SESSION_METADATA_KEY: &str = "session";

/// Metadata key of how many bytes at the start of a turn's
/// [context](memory_core::MemoryItem::context) are the turn before it (absent for the first
/// turn of a session): a recall reads whether that turn asked what the query asks
/// ([`RetrieverConfig::head_reply_bonus`](crate::RetrieverConfig::head_reply_bonus)).
pub const CONTEXT_BEFORE_METADATA_KEY: &str = "context_before";

/// One turn of a dialogue: who said what, when, in which session.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// Who said it (a name, or a role such as `user`); may be empty.
    pub speaker: String,
    /// What was said.
    pub text: String,
    /// The speaker's role, when known.
    pub role: Option<Role>,
    /// The session it belongs to: context never crosses a change of session.
    pub session: Option<String>,
    /// When it was said; default the memory's clock.
    pub at: Option<DateTime<Utc>>,
    /// An explicit memory id; default a fresh one.
    pub id: Option<String>,
    /// Extra metadata, a JSON object (the speaker, role and session keys are set by the
    /// dialogue).
    pub metadata: serde_json::Value,
    /// Where it came from.
    pub source: Option<String>,
}

impl Turn {
    /// `text` said by `speaker`.
    pub fn new(speaker: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            speaker: speaker.into(),
            text: text.into(),
            role: None,
            session: None,
            at: None,
            id: None,
            metadata: serde_json::Value::Null,
            source: None,
        }
    }

    /// Sets the speaker's role.
    pub fn role(mut self, role: Role) -> Self {
        self.role = Some(role);
        self
    }

    /// Sets the session label.
    pub fn session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Sets when it was said.
    pub fn at(mut self, at: DateTime<Utc>) -> Self {
        self.at = Some(at);
        self
    }

    /// Sets an explicit memory id: the turn is stored under it even when another turn says
    /// the same words (see the module's documentation).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets extra metadata (a JSON object).
    pub fn metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = metadata;
        self
    }

    /// Sets where it came from.
    pub fn source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// `speaker: text`, or the text alone without a speaker.
    fn line(&self) -> String {
        if self.speaker.trim().is_empty() {
            self.text.clone()
        } else {
            format!("{}: {}", self.speaker, self.text)
        }
    }
}

/// The last turn added, kept to lend it the next turn as context.
#[derive(Debug)]
struct Last {
    /// The memory that stands for it (its own id, or the one it was merged into).
    id: String,
    session: Option<String>,
    line: String,
    /// The context it was stored with (the turn before it), if any.
    before: Option<String>,
    /// Whether it was stored as a memory of its own (not merged into an older one).
    own: bool,
}

/// A dialogue being remembered in one namespace (from [`Memory::dialogue`]).
#[derive(Debug)]
pub struct Dialogue<'a> {
    memory: &'a Memory,
    namespace: Namespace,
    last: Option<Last>,
    /// The turn before `last`: lent the new text of `last` when a turn replaces it.
    before_last: Option<Last>,
}

impl Memory {
    /// A dialogue remembered into `namespace`, turn by turn (see [`Dialogue::add`]).
    pub fn dialogue(&self, namespace: Namespace) -> Dialogue<'_> {
        Dialogue {
            memory: self,
            namespace,
            last: None,
            before_last: None,
        }
    }
}

/// What a dialogue writes for one turn (see [`Dialogue::add`]).
struct Written {
    request: Remember,
    line: String,
    before: Option<String>,
}

impl Dialogue<'_> {
    /// The namespace the turns go to.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Remembers `turn` (as [`Memory::remember_with`], reconciling it with the stored
    /// memories), with the turn added just before it as its context when that turn is of the
    /// same session, and adds it to that turn's context. Add a session's turns together:
    /// when sessions interleave (s1, s2, s1), a turn whose previous turn is of another
    /// session gets no context. The text is stored as `[date] speaker: text`, the date
    /// being the turn's day (`8 May 2023`), so questions that name a day or a month find it.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming the field (`speaker`, `session`, `text`,
    /// `metadata`, ...); as [`Memory::remember_with`]. Nothing is stored when it fails.
    pub async fn add(&mut self, turn: Turn) -> Result<Remembered> {
        let Written {
            request,
            line,
            before,
        } = self.written(&turn)?;
        let remembered = self
            .memory
            .remember_with(request)
            .await
            .map_err(as_turn_error)?;
        // The stored turn: lend it this one as the turn after it (not when this one was
        // written over it or merged into it: a turn is no neighbour of its own). A turn
        // written over it takes its place: the turn before it is lent the new text, which
        // replaces the old one in its context.
        let last = self.last.take();
        // Replaced by its id, not a turn without one merged into it (which keeps its text).
        let replaced = last.as_ref().is_some_and(|last| {
            last.id == remembered.id && turn.id.as_deref() == Some(last.id.as_str())
        });
        let neighbour = if replaced {
            self.before_last.take()
        } else {
            last
        };
        if let Some(neighbour) = &neighbour
            && neighbour.own
            && neighbour.session == turn.session
            && neighbour.id != remembered.id
            && let Err(error) = self.lend_next(neighbour, &line).await
        {
            tracing::warn!(%error, namespace = %self.namespace, id = %neighbour.id,
                "a dialogue turn's context was not updated with the turn after it");
        }
        self.before_last = neighbour;
        self.last = Some(Last {
            id: remembered.id.clone(),
            session: turn.session,
            line,
            before,
            own: !matches!(remembered.outcome, Outcome::Merged { .. }),
        });
        Ok(remembered)
    }

    /// Checks `turn` as [`add`](Self::add) would before it writes, after the turns added
    /// so far (its context is the last one's), without writing anything: for a caller that
    /// accepts several turns together and refuses them all when one is bad.
    ///
    /// # Errors
    /// As [`add`](Self::add) refuses the turn.
    pub fn check(&self, turn: &Turn) -> Result<()> {
        let Written { mut request, .. } = self.written(turn)?;
        // Checked as if a turn came before it (the turns of one call are checked before
        // the first is added): the context it would be lent is bounded and counted apart,
        // and the length of that context is written into its metadata.
        if let serde_json::Value::Object(metadata) = &mut request.metadata {
            metadata.insert(
                CONTEXT_BEFORE_METADATA_KEY.into(),
                memory_core::MAX_CONTEXT_BYTES.into(),
            );
        }
        self.memory.check(&request).map_err(as_turn_error)
    }

    /// Refuses turns of one call that name one id twice: [`add`](Self::add) stores them one
    /// after another, so the later would replace the earlier while both were answered as
    /// stored. A caller that accepts several turns together checks them with this beside
    /// [`check`](Self::check).
    ///
    /// # Errors
    /// The position of the first turn naming an id an earlier one names, and
    /// [`MemoryError::InvalidInput`] naming `id`.
    pub fn check_ids(turns: &[Turn]) -> std::result::Result<(), (usize, MemoryError)> {
        let Some((earlier, index)) =
            super::first_repeat(turns.iter().map(|turn| turn.id.as_deref()))
        else {
            return Ok(());
        };
        let id = turns[index].id.as_deref().unwrap_or_default();
        Err((
            index,
            MemoryError::invalid(
                "id",
                format!("turns[{earlier}] has id {id} too; one call stores each id once"),
            ),
        ))
    }

    /// What [`add`](Self::add) writes for `turn`: the request, the turn's line and the
    /// context it is given (the turn before it in its session).
    fn written(&self, turn: &Turn) -> Result<Written> {
        if turn.speaker.len() > MAX_SPEAKER_BYTES {
            return Err(MemoryError::invalid(
                "speaker",
                format!("longer than {MAX_SPEAKER_BYTES} bytes"),
            ));
        }
        // A name on one line: a line break or another control character would split the
        // stored `[date] speaker: text` line.
        if let Some(control) = turn.speaker.chars().find(|c| c.is_control()) {
            return Err(MemoryError::invalid(
                "speaker",
                format!("holds the control character {control:?}; a speaker is a name on one line"),
            ));
        }
        if let Some(session) = &turn.session
            && session.len() > MAX_SESSION_BYTES
        {
            return Err(MemoryError::invalid(
                "session",
                format!("longer than {MAX_SESSION_BYTES} bytes"),
            ));
        }
        if turn.text.trim().is_empty() {
            return Err(MemoryError::invalid("text", "is empty"));
        }
        let mut metadata = match turn.metadata.clone() {
            serde_json::Value::Null => serde_json::Map::new(),
            serde_json::Value::Object(map) => map,
            _ => return Err(MemoryError::invalid("metadata", "must be a JSON object")),
        };
        if !turn.speaker.is_empty() {
            metadata.insert(
                SPEAKER_METADATA_KEY.into(),
                serde_json::Value::String(turn.speaker.clone()),
            );
        }
        if let Some(role) = turn.role {
            metadata.insert(
                ROLE_METADATA_KEY.into(),
                serde_json::Value::String(role.as_str().into()),
            );
        }
        if let Some(session) = &turn.session {
            metadata.insert(
                SESSION_METADATA_KEY.into(),
                serde_json::Value::String(session.clone()),
            );
        }
        let at = turn.at.unwrap_or_else(|| self.memory.clock.now());
        let line = turn.line();
        // A turn sent again under the id of the turn just before it takes that turn's
        // place, and the context it had.
        let before = match self
            .last
            .as_ref()
            .filter(|last| last.session == turn.session)
        {
            Some(last) if turn.id.as_deref() == Some(last.id.as_str()) => last.before.clone(),
            Some(last) => Some(bounded(last.line.clone())),
            None => None,
        };
        // Written by the dialogue alone: a caller's value under the key would misplace it.
        match &before {
            Some(before) => {
                metadata.insert(CONTEXT_BEFORE_METADATA_KEY.into(), before.len().into());
            }
            None => {
                metadata.remove(CONTEXT_BEFORE_METADATA_KEY);
            }
        }
        let mut request = Remember::new(
            self.namespace.clone(),
            format!("[{}] {line}", at.format("%-d %B %Y")),
        )
        .kind(MemoryKind::Episodic)
        .created_at(at)
        .metadata(serde_json::Value::Object(metadata));
        // A turn given an id is an event of its own, even in the words of another ("Yes!"
        // twice): never merged into another turn, so its id always names it. Turns without
        // one are reconciled as any memory is, so a conversation sent again is not doubled.
        if let Some(id) = &turn.id {
            request = request.id(id.clone()).keep_apart();
        }
        if let Some(source) = &turn.source {
            request = request.source(source.clone());
        }
        if let Some(before) = &before {
            request = request.context(before.clone());
        }
        Ok(Written {
            request,
            line,
            before,
        })
    }

    /// Sets the context of the memory of `last` to the turn before it and `next`.
    /// Written only over the copy read, and again on what is stored when another write (an
    /// edit, a pin) came between.
    async fn lend_next(&self, last: &Last, next: &str) -> Result<()> {
        let store = &self.memory.store;
        let context = bounded(match &last.before {
            Some(before) => format!("{before}\n{next}"),
            None => next.to_owned(),
        });
        for _ in 0..crate::memory::EDIT_ATTEMPTS {
            let Some(item) = store.get(&self.namespace, &last.id).await? else {
                return Ok(());
            };
            let read_at = item.updated_at;
            let lent = item.with_context(context.clone()).revised(read_at);
            if store.update_if(lent, read_at).await? {
                return Ok(());
            }
        }
        Err(crate::memory::edit_conflict(&self.namespace, &last.id))
    }
}

/// An error of the memory a turn is stored as, told of the turn: its `content` is the
/// turn's `text` (with its date and speaker before it, which count against the limit).
fn as_turn_error(error: MemoryError) -> MemoryError {
    match error {
        MemoryError::InvalidInput { field, problem } if field == "content" => {
            MemoryError::InvalidInput {
                field: "text".to_owned(),
                problem: format!("{problem} (the text with its date and speaker)"),
            }
        }
        other => other,
    }
}

/// `context` cut to [`MAX_CONTEXT_BYTES`](memory_core::MAX_CONTEXT_BYTES) at a character boundary: a
/// long neighbour lends its beginning rather than failing the turn.
fn bounded(mut context: String) -> String {
    let max = memory_core::MAX_CONTEXT_BYTES;
    if context.len() > max {
        let mut end = max;
        while !context.is_char_boundary(end) {
            end -= 1;
        }
        context.truncate(end);
    }
    context
}
