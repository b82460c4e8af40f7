//! The stdio transport's lines, read before the MCP server sees them.
//!
//! The transport drops a line it cannot decode without a word: a request whose JSON does
//! not parse (a lone surrogate, a number out of range, two messages on one line, bytes that
//! are not UTF-8, a line past the size limit) got no answer, and its client waited for ever.
//! JSON-RPC answers such a line with a parse error (`-32700`, `id` null). So standard input
//! is read here, line by line: a line that parses as JSON goes on to the server, any other
//! gets the parse error; and standard output is written here, whole lines only, from the
//! server's answers and these errors.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest line read: the transport's own limit.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What the server is given in place of standard input and output, and the task that
/// writes standard output (awaited once the server ends, so its last answers are written).
pub(crate) struct Lines {
    /// The lines that parse, for the server to read.
    pub(crate) input: tokio::io::DuplexStream,
    /// Where the server writes its answers.
    pub(crate) output: tokio::io::DuplexStream,
    /// Writes the server's answers and the parse errors, until both end.
    pub(crate) written: JoinHandle<()>,
}

/// Reads `input` and writes `output` as described in the module: the server reads and
/// writes the returned streams.
pub(crate) fn checked<R, W>(input: R, output: W) -> Lines
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (server_input, mut to_server) = tokio::io::duplex(64 * 1024);
    let (server_output, from_server) = tokio::io::duplex(64 * 1024);
    let (errors, mut refused) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            let (read, whole) = match read_line(&mut input, &mut line).await {
                Ok(read) => read,
                Err(_) => break,
            };
            if read == 0 {
                break;
            }
            let text = trim_line_end(&line);
            if text.iter().all(u8::is_ascii_whitespace) && whole {
                continue;
            }
            let problem = if !whole {
                Some(format!("the line is longer than {MAX_LINE_BYTES} bytes"))
            } else {
                serde_json::from_slice::<serde_json::Value>(text)
                    .err()
                    .map(|error| error.to_string())
            };
            match problem {
                Some(problem) => {
                    let error = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": null,
                        "error": {"code": -32700, "message": format!("Parse error: {problem}")},
                    });
                    if errors.send(error.to_string()).is_err() {
                        break;
                    }
                }
                None => {
                    let sent = async {
                        to_server.write_all(text).await?;
                        to_server.write_all(b"\n").await?;
                        to_server.flush().await
                    };
                    if sent.await.is_err() {
                        break;
                    }
                }
            }
        }
        // The end of input ends the server's (its stream closes when dropped here).
    });
    let written = tokio::spawn(async move {
        let mut output = output;
        let mut answers = BufReader::new(from_server);
        let mut answer = Vec::new();
        let (mut answering, mut refusing) = (true, true);
        while answering || refusing {
            answer.clear();
            let line = tokio::select! {
                read = answers.read_until(b'\n', &mut answer), if answering => match read {
                    Ok(0) | Err(_) => {
                        answering = false;
                        continue;
                    }
                    Ok(_) => with_null_id(std::mem::take(&mut answer)),
                },
                error = refused.recv(), if refusing => match error {
                    Some(error) => format!("{error}\n").into_bytes(),
                    None => {
                        refusing = false;
                        continue;
                    }
                },
            };
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    Lines {
        input: server_input,
        output: server_output,
        written,
    }
}

/// Reads one line into `line` (at most [`MAX_LINE_BYTES`] of it; the rest of a longer line
/// is read and dropped). Returns the bytes read (0 at the end of input) and whether the
/// line was whole.
async fn read_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<(usize, bool)> {
    let limit = u64::try_from(MAX_LINE_BYTES + 1).unwrap_or(u64::MAX);
    let read = (&mut *input).take(limit).read_until(b'\n', line).await?;
    if line.len() <= MAX_LINE_BYTES || line.ends_with(b"\n") {
        return Ok((read, true));
    }
    // Past the limit: drop the rest of the line, in bounded pieces.
    let mut rest = Vec::new();
    loop {
        rest.clear();
        let more = (&mut *input)
            .take(64 * 1024)
            .read_until(b'\n', &mut rest)
            .await?;
        if more == 0 || rest.ends_with(b"\n") {
            break;
        }
    }
    line.truncate(0);
    Ok((read, false))
}

/// The transport answers a request it cannot read (an id of a type it does not take, a
/// params that is no object) with an error that has no `id`; JSON-RPC gives such an error
/// `"id": null`, and a client waiting for a message with an id may otherwise wait for
/// ever. Any other line is kept as it is.
fn with_null_id(line: Vec<u8>) -> Vec<u8> {
    const WITHOUT_ID: &[u8] = br#"{"jsonrpc":"2.0","error":"#;
    if !line.starts_with(WITHOUT_ID) {
        return line;
    }
    match serde_json::from_slice::<serde_json::Value>(&line) {
        Ok(serde_json::Value::Object(mut message)) if !message.contains_key("id") => {
            message.insert("id".to_owned(), serde_json::Value::Null);
            let mut fixed = serde_json::Value::Object(message).to_string().into_bytes();
            fixed.push(b'\n');
            fixed
        }
        _ => line,
    }
}

/// `line` without its line end (`\n` or `\r\n`).
fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each line in, what comes out: a line that is not JSON gets a parse error with a null
    /// id, and a good line after it still reaches the server.
    #[tokio::test]
    async fn a_line_that_does_not_parse_gets_a_parse_error() {
        let (mut client, input) = tokio::io::duplex(1024);
        let (output, mut answers) = tokio::io::duplex(1024);
        let lines = checked(input, output);
        let mut server_reads = BufReader::new(lines.input);
        client
            .write_all(
                b"{\"id\":1}{\"id\":2}\n\n{\"text\":\"caf\\ud83d\"}\r\n{\"ok\":1e400}\n{\"id\":3}",
            )
            .await
            .unwrap();
        drop(client);
        let mut forwarded = String::new();
        server_reads.read_to_string(&mut forwarded).await.unwrap();
        assert_eq!(forwarded, "{\"id\":3}\n", "the good line, ended");
        drop(lines.output);
        lines.written.await.unwrap();
        let mut text = String::new();
        answers.read_to_string(&mut text).await.unwrap();
        let errors: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(errors.len(), 3, "{text}");
        for error in &errors {
            assert_eq!(error["id"], serde_json::Value::Null, "{error}");
            assert_eq!(error["error"]["code"], -32700, "{error}");
        }
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_refused_and_the_next_is_read() {
        let (mut client, input) = tokio::io::duplex(64 * 1024);
        let (output, mut answers) = tokio::io::duplex(1024);
        let lines = checked(input, output);
        let mut server_reads = BufReader::new(lines.input);
        let writer = tokio::spawn(async move {
            let long = vec![b'x'; MAX_LINE_BYTES + 10];
            client.write_all(&long).await.unwrap();
            client.write_all(b"\n{\"id\":9}\n").await.unwrap();
        });
        let mut forwarded = String::new();
        server_reads.read_line(&mut forwarded).await.unwrap();
        assert_eq!(forwarded, "{\"id\":9}\n");
        writer.await.unwrap();
        let mut text = String::new();
        let mut answers_lines = BufReader::new(&mut answers);
        answers_lines.read_line(&mut text).await.unwrap();
        assert!(text.contains("longer than"), "{text}");
    }
}
