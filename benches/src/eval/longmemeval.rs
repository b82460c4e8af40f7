//! The LongMemEval reader: the benchmark's JSON as turns and questions of the evaluation.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Deserialize;
use serde::de::DeserializeSeed;

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

/// One LongMemEval question and its haystack, as the evaluation reads them: the haystack's
/// turns as one conversation (named by the question's id) and the question asked of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Haystack {
    /// Every turn of every session, in order; each turn's `conv_id` is the question's id.
    pub turns: Vec<Turn>,
    /// The question, its evidence turns and sessions.
    pub query: Query,
}

/// Reads a LongMemEval file (`longmemeval_s`, `_m`, `_oracle` or a development file in the
/// same format) as turns and questions: each question's haystack becomes a conversation of
/// its own, every turn one memory (the role as speaker, the session's date), evidence the
/// turns marked `has_answer` and the sessions in `answer_session_ids`. Abstention questions
/// (ids ending in `_abs`) have no evidence and are skipped.
///
/// This holds the whole file in memory; [`each_longmemeval`] reads one question at a time.
///
/// # Errors
/// As [`each_longmemeval`].
pub fn read_longmemeval(path: &std::path::Path) -> Result<(Vec<Turn>, Vec<Query>)> {
    let mut turns = Vec::new();
    let mut queries = Vec::new();
    each_longmemeval(path, |haystack| {
        turns.extend(haystack.turns);
        queries.push(haystack.query);
        Ok(())
    })?;
    Ok((turns, queries))
}

/// Reads a LongMemEval file as [`read_longmemeval`] does, handing each question with its
/// haystack to `each` as soon as it is parsed: the file is never held whole, so a
/// `longmemeval_m` file (500 sessions a question, 2.7 GB) is read in the memory of one
/// question. Returns how many questions were handed over.
///
/// # Errors
/// I/O and parse errors as [`MemoryError::Serialization`]; a date that does not parse as
/// [`MemoryError::InvalidInput`] naming its field; the first error `each` returns, as it
/// returned it (the rest of the file is not read).
pub fn each_longmemeval(
    path: &std::path::Path,
    mut each: impl FnMut(Haystack) -> Result<()>,
) -> Result<usize> {
    let file = std::fs::File::open(path)
        .map_err(|e| MemoryError::serialization(format!("open {}", path.display()), e))?;
    let mut reader = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
    let mut stopped = None;
    let mut handed = 0;
    let read = Questions {
        each: &mut |question: LongMemEvalQuestion| {
            if let Some(haystack) = haystack(question)? {
                each(haystack)?;
                handed += 1;
            }
            Ok(())
        },
        stopped: &mut stopped,
    }
    .deserialize(&mut reader)
    .and_then(|()| reader.end());
    if let Some(error) = stopped {
        return Err(error);
    }
    read.map_err(|e| MemoryError::serialization(format!("read {}", path.display()), e))?;
    Ok(handed)
}

/// The questions of a LongMemEval file's top-level list, each handed to `each` as it is
/// parsed. An error of `each` is kept in `stopped` and ends the parse.
struct Questions<'a> {
    each: &'a mut dyn FnMut(LongMemEvalQuestion) -> Result<()>,
    stopped: &'a mut Option<MemoryError>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Questions<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Questions<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a list of LongMemEval questions")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut questions: A,
    ) -> std::result::Result<(), A::Error> {
        while let Some(question) = questions.next_element::<LongMemEvalQuestion>()? {
            if let Err(error) = (self.each)(question) {
                *self.stopped = Some(error);
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// `question` as the evaluation reads it; `None` for an abstention question.
fn haystack(question: LongMemEvalQuestion) -> Result<Option<Haystack>> {
    if question.question_id.ends_with("_abs") {
        return Ok(None);
    }
    let asked_at = parse_longmemeval_date(&question.question_date)
        .ok_or_else(|| MemoryError::invalid("question_date", &question.question_date))?;
    let mut evidence = Vec::new();
    let mut turns = Vec::new();
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
    let query = Query {
        qid: question.question_id.clone(),
        conv_id: question.question_id,
        question: question.question,
        answer: question.answer,
        evidence,
        category: question.question_type,
        asked_at: Some(asked_at),
        evidence_sessions: question.answer_session_ids,
    };
    Ok(Some(Haystack { turns, query }))
}
