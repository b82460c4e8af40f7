//! `import --format locomo|longmemeval`: benchmark conversations as memories, each
//! conversation (a LoCoMo conversation, a LongMemEval question's haystack) in its own
//! namespace under `--namespace`, every turn remembered through the dialogue API
//! (`Memory::dialogue`) as the project's evaluation does: text `[date] speaker: text`, the
//! session's time as its creation time, the speaker, its chat role (LongMemEval's `user` and
//! `assistant`), the session and the turn id in metadata, and the turns next to it in its
//! session as its context. The whole file is read and checked before the first write; turns
//! with nothing said are skipped and counted.

use std::collections::BTreeMap;
use std::io::BufRead;

use agent_memory::{Namespace, Outcome as FactOutcome, Role};
use chrono::{DateTime, NaiveDateTime, Utc};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::commands::{Outcome, Settings};
use crate::failure::Failure;

/// One LoCoMo turn, as a line of the development split's `memories.jsonl`.
#[derive(Debug, Deserialize)]
struct LocomoTurn {
    conv_id: String,
    dia_id: String,
    #[serde(default)]
    session: serde_json::Value,
    #[serde(default)]
    date: String,
    #[serde(default)]
    timestamp: Option<String>,
    speaker: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

/// One LongMemEval question with its haystack.
#[derive(Debug, Deserialize)]
struct LongMemEvalQuestion {
    question_id: String,
    haystack_dates: Vec<String>,
    #[serde(default)]
    haystack_session_ids: Vec<String>,
    haystack_sessions: Vec<Vec<LongMemEvalTurn>>,
}

#[derive(Debug, Deserialize)]
struct LongMemEvalTurn {
    role: String,
    content: String,
}

/// A turn ready to remember.
#[derive(Debug)]
struct Turn {
    id: String,
    speaker: String,
    role: Option<Role>,
    text: String,
    session: String,
    at: DateTime<Utc>,
    metadata: serde_json::Value,
}

/// The turns of one conversation, in order.
#[derive(Debug)]
struct Conversation {
    namespace: Namespace,
    turns: Vec<Turn>,
}

/// A conversation id as a namespace segment: the id itself when a namespace may hold it,
/// else its characters a namespace does not allow as `-`, followed by eight hex digits of
/// the id's SHA-256, so that ids cleaned to the same text (`会话` and `对话`, `conv 1` and
/// `conv/1`) stay in namespaces of their own, the same at every import.
fn segment(id: &str) -> String {
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.:@".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !cleaned.is_empty() && cleaned == id {
        return cleaned;
    }
    let digest = Sha256::digest(id.as_bytes());
    let hex: String = digest
        .iter()
        .take(4)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    if cleaned.is_empty() {
        format!("conversation-{hex}")
    } else {
        format!("{cleaned}-{hex}")
    }
}

fn child(parent: &Namespace, id: &str, line: &str) -> Result<Namespace, Failure> {
    parent.child(&segment(id)).map_err(|error| {
        Failure::invalid(
            "input",
            format!("{line}: conversation {id:?} cannot be a namespace under {parent}: {error}"),
        )
    })
}

/// The namespaces an import has given out, each to one conversation id: two conversations
/// in one namespace would write over each other's turns (their ids repeat from one to the
/// next), so a second is refused before anything is written.
#[derive(Default)]
struct Claimed(BTreeMap<Namespace, String>);

impl Claimed {
    fn claim(&mut self, namespace: &Namespace, id: &str, at: &str) -> Result<(), Failure> {
        match self.0.get(namespace) {
            Some(holder) if holder == id => Err(Failure::invalid(
                "input",
                format!("{at}: conversation {id:?} appears twice"),
            )),
            Some(holder) => Err(Failure::invalid(
                "input",
                format!(
                    "{at}: conversations {holder:?} and {id:?} would share the namespace {namespace}"
                ),
            )),
            None => {
                self.0.insert(namespace.clone(), id.to_owned());
                Ok(())
            }
        }
    }
}

/// A LoCoMo `timestamp` (`2023-05-08T13:56:00`, or RFC 3339).
fn locomo_time(text: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%dT%H:%M:%S")
        .map(|time| time.and_utc())
        .ok()
        .or_else(|| {
            DateTime::parse_from_rfc3339(text.trim())
                .ok()
                .map(|time| time.with_timezone(&Utc))
        })
}

/// A LongMemEval date such as `2023/05/20 (Sat) 02:21`.
fn longmemeval_time(text: &str) -> Option<DateTime<Utc>> {
    let (day, rest) = text.trim().split_once(' ')?;
    let time = rest.rsplit(' ').next()?;
    NaiveDateTime::parse_from_str(&format!("{day} {time}"), "%Y/%m/%d %H:%M")
        .ok()
        .map(|time| time.and_utc())
}

/// Reads LoCoMo JSON lines: turns grouped by `conv_id`, in file order.
fn read_locomo(
    input: &mut (dyn BufRead + Send),
    parent: &Namespace,
) -> Result<Vec<Conversation>, Failure> {
    let mut conversations: Vec<Conversation> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut claimed = Claimed::default();
    let mut last: BTreeMap<usize, DateTime<Utc>> = BTreeMap::new();
    // Each conversation's turn ids: a turn's `dia_id` is its memory's id, and a second turn
    // with one would replace the first.
    let mut ids: std::collections::HashSet<(usize, String)> = std::collections::HashSet::new();
    let mut bytes = Vec::new();
    let mut number = 0;
    loop {
        bytes.clear();
        if !crate::exchange::read_line_within(input, &mut bytes, number + 1)? {
            break;
        }
        number += 1;
        let line = crate::exchange::utf8_line(&bytes, number)?;
        if line.trim().is_empty() {
            continue;
        }
        let turn: LocomoTurn = serde_json::from_str(line.trim()).map_err(|error| {
            Failure::invalid("input", format!("line {number}: {error}")).with_hint(
                "each line must be a LoCoMo turn {\"conv_id\", \"dia_id\", \"session\", \"date\", \"timestamp\", \"speaker\", \"text\", \"blip_caption\"}",
            )
        })?;
        let at_line = format!("line {number}");
        let position = match index.get(&turn.conv_id) {
            Some(position) => *position,
            None => {
                let namespace = child(parent, &turn.conv_id, &at_line)?;
                claimed.claim(&namespace, &turn.conv_id, &at_line)?;
                conversations.push(Conversation {
                    namespace,
                    turns: Vec::new(),
                });
                index.insert(turn.conv_id.clone(), conversations.len() - 1);
                conversations.len() - 1
            }
        };
        if !ids.insert((position, turn.dia_id.clone())) {
            return Err(Failure::invalid(
                "input",
                format!(
                    "{at_line}: turn {:?} of conversation {:?} is there twice",
                    turn.dia_id, turn.conv_id
                ),
            ));
        }
        let previous = last
            .get(&position)
            .copied()
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
        let at = match turn.timestamp.as_deref().filter(|t| !t.trim().is_empty()) {
            Some(text) => locomo_time(text).ok_or_else(|| {
                Failure::invalid(
                    "input",
                    format!("{at_line}: timestamp {text:?} is not a time"),
                )
            })?,
            None => previous,
        };
        last.insert(position, previous.max(at));
        let mut text = turn.text;
        if let Some(caption) = turn
            .blip_caption
            .as_deref()
            .filter(|c| !c.trim().is_empty())
        {
            text.push_str(" [shares an image: ");
            text.push_str(caption);
            text.push(']');
        }
        let session = match &turn.session {
            serde_json::Value::String(session) => session.clone(),
            serde_json::Value::Null => String::new(),
            other => other.to_string(),
        };
        conversations[position].turns.push(Turn {
            metadata: json!({"dia_id": turn.dia_id, "date": turn.date}),
            id: turn.dia_id,
            speaker: turn.speaker,
            role: None,
            text,
            session,
            at,
        });
    }
    Ok(conversations)
}

/// Reads LongMemEval's JSON: each question's haystack, a conversation.
fn read_longmemeval(
    input: &mut (dyn BufRead + Send),
    parent: &Namespace,
) -> Result<Vec<Conversation>, Failure> {
    let questions: Vec<LongMemEvalQuestion> =
        serde_json::from_reader(input).map_err(|error| {
            Failure::invalid("input", format!("not LongMemEval JSON: {error}")).with_hint(
                "the file must be a JSON list of questions with haystack_dates, haystack_session_ids and haystack_sessions",
            )
        })?;
    let mut conversations = Vec::with_capacity(questions.len());
    let mut claimed = Claimed::default();
    for (number, question) in questions.into_iter().enumerate() {
        let at_question = format!("question {} ({})", number + 1, question.question_id);
        if question.haystack_dates.len() != question.haystack_sessions.len() {
            return Err(Failure::invalid(
                "input",
                format!(
                    "{at_question}: {} haystack dates for {} sessions",
                    question.haystack_dates.len(),
                    question.haystack_sessions.len()
                ),
            ));
        }
        let mut turns = Vec::new();
        let sessions = question
            .haystack_sessions
            .into_iter()
            .zip(question.haystack_dates)
            .enumerate();
        for (index, (session, date)) in sessions {
            let at = longmemeval_time(&date).ok_or_else(|| {
                Failure::invalid(
                    "input",
                    format!("{at_question}: haystack date {date:?} is not a time"),
                )
            })?;
            let session_id = question.haystack_session_ids.get(index).cloned();
            for (position, turn) in session.into_iter().enumerate() {
                // By position: a haystack may hold two sessions with the same id.
                let id = format!("s{index}:{position}");
                turns.push(Turn {
                    metadata: json!({"dia_id": id, "session_id": session_id}),
                    role: Role::parse(&turn.role),
                    speaker: turn.role,
                    text: turn.content,
                    session: index.to_string(),
                    id,
                    at,
                });
            }
        }
        let namespace = child(parent, &question.question_id, &at_question)?;
        claimed.claim(&namespace, &question.question_id, &at_question)?;
        conversations.push(Conversation { namespace, turns });
    }
    Ok(conversations)
}

/// The dialogue turns of a conversation, and how many were skipped for having nothing said.
/// Each is checked by [`check`], as the dialogue will write it, before anything is written.
fn requests(conversation: &Conversation, source: &str) -> (Vec<agent_memory::Turn>, usize) {
    let mut out = Vec::with_capacity(conversation.turns.len());
    let mut skipped = 0;
    for turn in &conversation.turns {
        if turn.text.trim().is_empty() {
            skipped += 1;
            continue;
        }
        let mut line = agent_memory::Turn::new(turn.speaker.clone(), turn.text.clone())
            .id(turn.id.clone())
            .at(turn.at)
            .session(turn.session.clone())
            .metadata(turn.metadata.clone())
            .source(source);
        if let Some(role) = turn.role {
            line = line.role(role);
        }
        out.push(line);
    }
    (out, skipped)
}

/// Checks every turn of a conversation as its dialogue will write it (`Dialogue::check`:
/// the dated text, the speaker, the session, the metadata and the context it is lent),
/// naming the turn and the conversation of the first refused.
fn check(
    memory: &agent_memory::Memory,
    namespace: &Namespace,
    turns: &[agent_memory::Turn],
) -> Result<(), Failure> {
    let dialogue = memory.dialogue(namespace.clone());
    for turn in turns {
        dialogue.check(turn).map_err(|error| {
            let failure = Failure::from(error);
            let id = turn.id.as_deref().unwrap_or_default();
            Failure {
                message: format!("turn {id} of {namespace}: {}", failure.message),
                ..failure
            }
        })?;
    }
    Ok(())
}

/// Imports LoCoMo (`longmemeval` false) or LongMemEval conversations.
pub(crate) async fn import(
    settings: &Settings,
    input: &mut (dyn BufRead + Send),
    bar: &ProgressBar,
    longmemeval: bool,
) -> Result<Outcome, Failure> {
    let parent = &settings.namespace;
    bar.set_message("reading");
    let (conversations, format) = if longmemeval {
        (read_longmemeval(input, parent)?, "longmemeval")
    } else {
        (read_locomo(input, parent)?, "locomo")
    };
    let mut all = Vec::with_capacity(conversations.len());
    let mut skipped = 0;
    for conversation in &conversations {
        let (turns, empty) = requests(conversation, format);
        skipped += empty;
        all.push((&conversation.namespace, turns));
    }
    let total: usize = all.iter().map(|(_, requests)| requests.len()).sum();
    let memory = settings.open().await?;
    for (namespace, turns) in &all {
        check(&memory, namespace, turns)?;
    }
    bar.set_length(total as u64);
    bar.set_position(0);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} remembering turn {pos}/{len} [{bar:30}] {per_sec} {msg}",
    ) {
        bar.set_style(style);
    }
    let (mut added, mut merged, mut superseded, mut outdated, mut conflicts) = (0, 0, 0, 0, 0);
    let mut namespaces = Vec::with_capacity(all.len());
    for (namespace, turns) in all {
        bar.set_message(namespace.to_string());
        let mut dialogue = memory.dialogue(namespace.clone());
        for turn in turns {
            let remembered = dialogue.add(turn).await?;
            match remembered.outcome {
                FactOutcome::Merged { .. } => merged += 1,
                FactOutcome::Superseded { .. } => superseded += 1,
                FactOutcome::Outdated { .. } => outdated += 1,
                _ => added += 1,
            }
            conflicts += remembered.conflicts.len();
            bar.inc(1);
        }
        namespaces.push(namespace.to_string());
    }
    // Pending recall statistics and eviction passes are written before the process exits.
    memory.flush().await?;
    Ok(Outcome {
        json: json!({
            "format": format,
            "conversations": namespaces.len(),
            "namespaces": namespaces,
            "turns": total,
            "outcomes": {
                "added": added,
                "merged": merged,
                "superseded": superseded,
                "outdated": outdated,
            },
            "conflicts": conflicts,
            "skipped_empty": skipped,
        }),
        text: format!(
            "imported {total} turns of {} conversations under {parent} ({added} added, {merged} merged into a repeated turn, {conflicts} conflicts flagged)",
            namespaces.len()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_of_both_formats_parse() {
        assert_eq!(
            locomo_time("2023-05-08T13:56:00").map(|t| t.to_rfc3339()),
            Some("2023-05-08T13:56:00+00:00".to_owned())
        );
        assert_eq!(
            longmemeval_time("2023/05/20 (Sat) 02:21").map(|t| t.to_rfc3339()),
            Some("2023-05-20T02:21:00+00:00".to_owned())
        );
        assert_eq!(longmemeval_time("yesterday"), None);
        assert_eq!(segment("conv-26"), "conv-26");
        assert_eq!(segment("user@host:1"), "user@host:1");
        let cleaned = segment("conv 26/a");
        assert!(cleaned.starts_with("conv-26-a-"), "{cleaned}");
        assert_eq!(
            cleaned,
            segment("conv 26/a"),
            "the same id, the same namespace"
        );
        assert_ne!(segment("conv 1"), segment("conv/1"));
        assert_ne!(segment("会话"), segment("对话"));
        assert!(segment("").starts_with("conversation-"));
    }
}
