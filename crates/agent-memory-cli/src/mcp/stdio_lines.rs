//! The stdio transport's lines, read before the MCP server sees them.
//!
//! The transport drops a line it cannot decode without a word: a request whose JSON does
//! not parse (a lone surrogate, a number out of range, two messages on one line, bytes that
//! are not UTF-8, a line past the size limit) got no answer, and its client waited for ever.
//! JSON-RPC answers such a line with a parse error (`-32700`, `id` null). So standard input
//! is read here, line by line: a line that parses as JSON goes on to the server, any other
//! gets the parse error; and standard output is written here, whole lines only, from the
//! server's answers and these errors.
//!
//! The transport leaves such lines unanswered on purpose, so that two peers that each answer
//! garbage with an error cannot trade errors for ever. Here that cannot start: the error is
//! itself well-formed JSON, a response with a null id, which a peer does not answer.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest line read, its line end included: the transport's own limit.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Whole lines waiting to be written: a client that writes without reading is held back
/// (its writes wait) instead of queuing answers without bound.
const QUEUED_LINES: usize = 64;

/// A line for standard output, or the end of the server's answers.
enum Out {
    /// A whole line, ended.
    Line(Vec<u8>),
    /// The server wrote its last answer: nothing more is written.
    End,
}

/// What the server is given in place of standard input and output, and the task that
/// writes standard output (awaited once the server ends, so its last answers are written).
pub(crate) struct Lines {
    /// The lines that parse, for the server to read.
    pub(crate) input: tokio::io::DuplexStream,
    /// Where the server writes its answers.
    pub(crate) output: tokio::io::DuplexStream,
    /// Writes the server's answers and the parse errors, until the server's answers end.
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
    let (lines, mut queued) = mpsc::channel::<Out>(QUEUED_LINES);
    let errors = lines.clone();
    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            let Ok((read, whole)) = read_line(&mut input, &mut line).await else {
                break;
            };
            if read == 0 {
                break;
            }
            let text = trim_line_end(&line);
            if whole && text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let problem = if whole {
                serde_json::from_slice::<serde_json::Value>(text)
                    .err()
                    .map(|error| error.to_string())
            } else {
                Some(format!(
                    "the line is longer than {} bytes",
                    MAX_LINE_BYTES - 1
                ))
            };
            if let Some(problem) = problem {
                let error = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {"code": -32700, "message": format!("Parse error: {problem}")},
                });
                let mut error = error.to_string().into_bytes();
                error.push(b'\n');
                if errors.send(Out::Line(error)).await.is_err() {
                    break;
                }
                continue;
            }
            let sent = async {
                to_server.write_all(text).await?;
                to_server.write_all(b"\n").await?;
                to_server.flush().await
            };
            if sent.await.is_err() {
                break;
            }
        }
        // The end of input ends the server's (its stream closes when dropped here).
    });
    // The server's answers, read whole (a read never cut off part way), queued in turn.
    tokio::spawn(async move {
        let mut answers = BufReader::new(from_server);
        loop {
            let mut answer = Vec::new();
            match answers.read_until(b'\n', &mut answer).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if !answer.ends_with(b"\n") {
                        answer.push(b'\n');
                    }
                    if lines.send(Out::Line(with_null_id(answer))).await.is_err() {
                        return;
                    }
                }
            }
        }
        let _ = lines.send(Out::End).await;
    });
    let written = tokio::spawn(async move {
        let mut output = output;
        while let Some(Out::Line(line)) = queued.recv().await {
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

/// Reads one line into `line`: whole when it holds at most [`MAX_LINE_BYTES`] with its
/// line end (the transport counts the `\n` it is given), else the rest of it is read and
/// dropped. Returns the bytes read (0 at the end of input) and whether the line was whole.
async fn read_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<(usize, bool)> {
    let limit = u64::try_from(MAX_LINE_BYTES + 1).unwrap_or(u64::MAX);
    let read = (&mut *input).take(limit).read_until(b'\n', line).await?;
    // Forwarded as its text and one `\n`: a `\r\n` ending is one byte shorter.
    if trim_line_end(line).len() < MAX_LINE_BYTES {
        return Ok((read, true));
    }
    if !line.ends_with(b"\n") {
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
    }
    line.clear();
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

    /// An answer written in pieces while parse errors are queued comes out whole, each
    /// error on a line of its own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_in_pieces_is_never_cut_by_an_error() {
        let (mut client, input) = tokio::io::duplex(1024);
        let (output, answers) = tokio::io::duplex(4 * 1024 * 1024);
        let Lines {
            input: server_reads,
            output: mut server_writes,
            written,
        } = checked(input, output);
        let answer = format!("{{\"id\":1,\"result\":\"{}\"}}\n", "z".repeat(400_000));
        let expected = answer.clone();
        // A piece of the answer, then a bad line, in turn: errors queue while the answer
        // is half read.
        let pieces: Vec<Vec<u8>> = answer
            .as_bytes()
            .chunks(8_000)
            .map(<[u8]>::to_vec)
            .collect();
        let errors_sent = pieces.len();
        for piece in pieces {
            server_writes.write_all(&piece).await.unwrap();
            client.write_all(b"x\n").await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let server = tokio::spawn(async move { server_writes });
        drop(client);
        // Every line read (the errors queued), then the server's answers end.
        let mut forwarded = String::new();
        BufReader::new(server_reads)
            .read_to_string(&mut forwarded)
            .await
            .unwrap();
        assert!(forwarded.is_empty(), "{forwarded}");
        drop(server.await.unwrap());
        written.await.unwrap();
        let mut text = String::new();
        BufReader::new(answers)
            .read_to_string(&mut text)
            .await
            .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            errors_sent + 1,
            "one answer and an error a bad line"
        );
        assert_eq!(
            lines
                .iter()
                .filter(|line| **line == expected.trim_end())
                .count(),
            1,
            "the answer whole"
        );
        for line in lines.iter().filter(|line| **line != expected.trim_end()) {
            let error: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(error["error"]["code"], -32700, "{line}");
        }
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_refused_and_the_next_is_read() {
        let (mut client, input) = tokio::io::duplex(64 * 1024);
        let (output, mut answers) = tokio::io::duplex(1024);
        let lines = checked(input, output);
        let mut server_reads = BufReader::new(lines.input);
        let writer = tokio::spawn(async move {
            // Exactly the limit before its line end: one byte too long once ended.
            let long = vec![b'x'; MAX_LINE_BYTES];
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
