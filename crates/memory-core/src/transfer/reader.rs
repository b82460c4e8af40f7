//! Reading the JSON-lines format: lines bounded in length, each record parsed and numbered,
//! the header first.

use std::io::{BufRead, Read};

use super::{FORMAT, Header, Record, RecordCounts, VERSION, at_line};
use crate::{MemoryError, Result};

pub(super) type Numbered = (Header, Vec<(usize, Record)>);

pub(super) fn read_numbered(reader: &mut dyn BufRead, max_line_bytes: usize) -> Result<Numbered> {
    let mut buffer = Vec::new();
    let mut line = 0usize;
    let mut header: Option<Header> = None;
    let mut records = Vec::new();
    let mut counts = RecordCounts::default();
    while let Some(text) = next_line(reader, &mut buffer, &mut line, max_line_bytes)? {
        if text.trim().is_empty() {
            continue;
        }
        let Some(header) = &header else {
            header = Some(parse_header(text, line)?);
            continue;
        };
        let record: Record = serde_json::from_str(text).map_err(|error| {
            // serde's reason names the field and the column ("missing field `id`").
            MemoryError::serialization(
                format!("import line {line}: not a valid record: {error}"),
                error,
            )
        })?;
        record.validate().map_err(|error| at_line(error, line))?;
        if !header.scope.contains(record.namespace()) {
            return Err(MemoryError::invalid(
                &format!("import line {line}"),
                format!(
                    "namespace {} is outside the exported scope {}",
                    record.namespace(),
                    header.scope.namespace
                ),
            ));
        }
        counts.add(&record);
        records.push((line, record));
    }
    let Some(header) = header else {
        return Err(MemoryError::invalid(
            "import",
            format!("the input is empty; expected the {FORMAT} header on line 1"),
        ));
    };
    if let Some(announced) = header.counts
        && announced != counts
    {
        return Err(MemoryError::invalid(
            "import",
            format!(
                "the header announces {announced} but the input holds {counts} (truncated or edited?)"
            ),
        ));
    }
    Ok((header, records))
}

/// The next line as text (without its line ending), or `None` at the end of the input.
fn next_line<'a>(
    reader: &mut dyn BufRead,
    buffer: &'a mut Vec<u8>,
    line: &mut usize,
    max_line_bytes: usize,
) -> Result<Option<&'a str>> {
    buffer.clear();
    *line += 1;
    let limit = u64::try_from(max_line_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let read = Read::take(&mut *reader, limit)
        .read_until(b'\n', buffer)
        .map_err(|error| MemoryError::storage(format!("import line {line}: reading"), error))?;
    if read == 0 {
        return Ok(None);
    }
    if buffer.last() == Some(&b'\n') {
        buffer.pop();
        if buffer.last() == Some(&b'\r') {
            buffer.pop();
        }
    } else if buffer.len() > max_line_bytes {
        return Err(MemoryError::LimitExceeded(format!(
            "import line {line}: longer than {max_line_bytes} bytes"
        )));
    }
    std::str::from_utf8(buffer).map(Some).map_err(|error| {
        MemoryError::serialization(format!("import line {line}: not valid UTF-8"), error)
    })
}

fn parse_header(text: &str, line: usize) -> Result<Header> {
    let not_header = || {
        MemoryError::invalid(
            &format!("import line {line}"),
            format!(
                "not an {FORMAT} header (expected {{\"format\":\"{FORMAT}\",\"version\":{VERSION},...}})"
            ),
        )
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|_| not_header())?;
    if value.get("format").and_then(serde_json::Value::as_str) != Some(FORMAT) {
        return Err(not_header());
    }
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(version) if (1..=u64::from(VERSION)).contains(&version) => {}
        Some(version) => {
            return Err(MemoryError::invalid(
                &format!("import line {line}"),
                format!(
                    "format version {version} is not supported (this build reads 1 to {VERSION})"
                ),
            ));
        }
        None => return Err(not_header()),
    }
    serde_json::from_value(value).map_err(|error| {
        MemoryError::serialization(format!("import line {line}: invalid header"), error)
    })
}
