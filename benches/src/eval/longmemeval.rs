//! The LongMemEval reader: the benchmark's JSON as turns and questions of the evaluation.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Deserialize;

use agent_memory::{MemoryError, Result};

use super::{Query, Turn, any_to_string};

/// One question of a LongMemEval file, as the benchmark publishes it.
#[derive(Deserialize)]
struct LongMemEvalQuestion {
    question_id: String,
    question_type: String,
    question: String,
    #[serde(default, deserialize_with = "any_to_string")]
    answer: String,
    question_date: String,
    haystack_dates: Vec<String>,
    haystack_session_ids: Vec<String>,
    haystack_sessions: Vec<Vec<LongMemEvalTurn>>,
    #[serde(default)]
    answer_session_ids: Vec<String>,
}

#[derive(Deserialize)]
struct LongMemEvalTurn {
    role: String,
    content: String,
    #[serde(default)]
    has_answer: bool,
}

/// A LongMemEval date such as `2023/05/20 (Sat) 02:21`.
fn parse_longmemeval_date(text: &str) -> Option<DateTime<Utc>> {
    let (day, rest) = text.trim().split_once(' ')?;
    let time = rest.rsplit(' ').next()?;
    NaiveDateTime::parse_from_str(&format!("{day} {time}"), "%Y/%m/%d %H:%M")
        .ok()
        .map(|t| t.and_utc())
}

/// Reads a LongMemEval file (`longmemeval_s`, `_m`, `_oracle` or a development file in the
/// same format) as turns and questions: each question's haystack becomes a conversation of
/// its own, every turn one memory (the role as speaker, the session's date), evidence the
/// turns marked `has_answer` and the sessions in `answer_session_ids`. Abstention questions
/// (ids ending in `_abs`) have no evidence and are skipped.
///
/// # Errors
/// I/O and parse errors as [`MemoryError::Serialization`]; a date that does not parse as
/// [`MemoryError::InvalidInput`].
pub fn read_longmemeval(path: &std::path::Path) -> Result<(Vec<Turn>, Vec<Query>)> {
    let file = std::fs::File::open(path)
        .map_err(|e| MemoryError::serialization(format!("open {}", path.display()), e))?;
    let questions: Vec<LongMemEvalQuestion> =
        serde_json::from_reader(std::io::BufReader::new(file))
            .map_err(|e| MemoryError::serialization(format!("read {}", path.display()), e))?;
    let mut turns = Vec::new();
    let mut queries = Vec::new();
    for question in questions {
        if question.question_id.ends_with("_abs") {
            continue;
        }
        let asked_at = parse_longmemeval_date(&question.question_date)
            .ok_or_else(|| MemoryError::invalid("question_date", &question.question_date))?;
        let mut evidence = Vec::new();
        let sessions = question
            .haystack_sessions
            .into_iter()
            .zip(question.haystack_session_ids)
            .zip(question.haystack_dates);
        for (index, ((session, session_id), date)) in sessions.enumerate() {
            let at = parse_longmemeval_date(&date)
                .ok_or_else(|| MemoryError::invalid("haystack_dates", &date))?;
            for (position, turn) in session.into_iter().enumerate() {
                // By position: a haystack may hold two sessions with the same id.
                let dia_id = format!("s{index}:{position}");
                if turn.has_answer {
                    evidence.push(dia_id.clone());
                }
                turns.push(Turn {
                    conv_id: question.question_id.clone(),
                    dia_id,
                    session: index,
                    turn: position,
                    date: date.clone(),
                    timestamp: Some(at.format("%Y-%m-%dT%H:%M:%S").to_string()),
                    speaker: turn.role,
                    text: turn.content,
                    blip_caption: None,
                    session_id: Some(session_id.clone()),
                });
            }
        }
        queries.push(Query {
            qid: question.question_id.clone(),
            conv_id: question.question_id,
            question: question.question,
            answer: question.answer,
            evidence,
            category: question.question_type,
            asked_at: Some(asked_at),
            evidence_sessions: question.answer_session_ids,
        });
    }
    Ok((turns, queries))
}
