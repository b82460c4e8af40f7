//! A scripted HTTP/1.1 server on loopback: each connection gets the next recorded reply.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted reply.
#[derive(Clone, Debug)]
pub(crate) enum Reply {
    /// A status with a body, as JSON.
    Json(u16, String),
    /// A status with a body and extra headers.
    WithHeaders(u16, Vec<(&'static str, String)>, String),
    /// Reads the request and never answers.
    Hang,
}

/// A request the server received.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    pub(crate) path: String,
    pub(crate) headers: String,
    pub(crate) body: serde_json::Value,
}

/// A running server.
pub(crate) struct Server {
    pub(crate) base: String,
    pub(crate) requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    /// The requests so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

/// Serves `replies` in order, one per connection; after them, 500 "script exhausted".
pub(crate) async fn serve(replies: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&requests);
    tokio::spawn(async move {
        let mut replies = replies.into_iter();
        let mut hanging = Vec::new();
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let reply = replies
                .next()
                .unwrap_or_else(|| Reply::Json(500, "{\"error\":\"script exhausted\"}".into()));
            if let Some(socket) = answer(socket, reply, &recorded).await {
                hanging.push(socket);
            }
        }
    });
    Server {
        base: format!("http://{address}"),
        requests,
    }
}

/// Reads one request and answers it; returns the socket when the reply is to hang.
async fn answer(
    mut socket: TcpStream,
    reply: Reply,
    recorded: &Mutex<Vec<Recorded>>,
) -> Option<TcpStream> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buffer.len() < header_end + length {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = serde_json::from_slice(&buffer[header_end..]).unwrap_or(serde_json::Value::Null);
    let path = head
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .unwrap_or("")
        .to_owned();
    recorded.lock().unwrap().push(Recorded {
        path,
        headers: head.to_lowercase(),
        body,
    });
    let (status, extra, body) = match reply {
        Reply::Hang => return Some(socket),
        Reply::Json(status, body) => (status, Vec::new(), body),
        Reply::WithHeaders(status, extra, body) => (status, extra, body),
    };
    let mut response = format!(
        "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in extra {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    response.push_str(&body);
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
    None
}

/// A chat-completions answer whose message content is `content`.
pub(crate) fn chat(content: &str) -> Reply {
    Reply::Json(
        200,
        serde_json::json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        })
        .to_string(),
    )
}
