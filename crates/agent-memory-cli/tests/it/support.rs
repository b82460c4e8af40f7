//! Temporary directories and running the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "agent-memory-cli-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create the temporary directory");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The binary, with no configuration from the environment it runs in.
pub(crate) fn command(dir: &TempDir) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent-memory"));
    for (key, _) in std::env::vars() {
        if key.starts_with("AGENT_MEMORY_") {
            command.env_remove(key);
        }
    }
    command
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .current_dir(dir.path())
        .stdin(Stdio::null());
    command
}

/// Runs the binary on the store `store.db` of `dir` with `args`.
pub(crate) fn run(dir: &TempDir, args: &[&str]) -> Output {
    command(dir)
        .arg("--store")
        .arg(dir.path().join("store.db"))
        .args(args)
        .output()
        .expect("run agent-memory")
}

/// Runs with `--json` and parses stdout, which must be one JSON document.
pub(crate) fn run_json(dir: &TempDir, args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let output = run(dir, &all);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "{args:?}: stdout is not one JSON document ({error}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap_or(-1), value)
}

/// Runs in namespace `namespace` with `--json`, which must succeed; returns the result.
pub(crate) fn ok_in(dir: &TempDir, namespace: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["-n", namespace];
    all.extend_from_slice(args);
    let (code, value) = run_json(dir, &all);
    assert_eq!(code, 0, "{args:?}: {value}");
    value
}

/// A running `agent-memory serve`, stopped (SIGTERM, then kill) when dropped.
pub(crate) struct Server {
    pub(crate) child: std::process::Child,
    pub(crate) address: String,
}

/// The admin key the tests' servers run with.
pub(crate) const ADMIN_KEY: &str = "test-admin-key-0123456789";

impl Server {
    /// Starts a server on `store_args` (e.g. `--store x.db`) and waits for its address.
    pub(crate) fn start(dir: &TempDir, store_args: &[String], extra: &[&str]) -> Self {
        Self::start_with_env(dir, store_args, extra, &[])
    }

    /// [`start`](Self::start) with the environment variables `env` set.
    pub(crate) fn start_with_env(
        dir: &TempDir,
        store_args: &[String],
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let (server, lines) = Self::launch(dir, store_args, extra, env);
        // Keep draining the logs so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        server
    }

    /// [`start`](Self::start), then closes the pipe its logs go to (a log reader that died).
    pub(crate) fn start_then_close_logs(dir: &TempDir, store_args: &[String]) -> Self {
        let (server, lines) = Self::launch(dir, store_args, &[], &[]);
        drop(lines);
        server
    }

    /// The server started, with the lines of its stderr after its address.
    fn launch(
        dir: &TempDir,
        store_args: &[String],
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> (
        Self,
        std::io::Lines<std::io::BufReader<std::process::ChildStderr>>,
    ) {
        use std::io::BufRead;
        let mut child = command(dir)
            .envs(env.iter().copied())
            .args(store_args)
            .args(["serve", "--listen", "127.0.0.1:0", "--admin-key", ADMIN_KEY])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agent-memory serve");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = std::io::BufReader::new(stderr).lines();
        let address = loop {
            let line = lines
                .next()
                .expect("the server printed its address before exiting")
                .expect("read stderr");
            if let Some(address) = line.strip_prefix("agent-memory listening on http://") {
                break address.to_owned();
            }
        };
        (Self { child, address }, lines)
    }

    /// Sends one request; returns the status and the body.
    pub(crate) fn raw(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
    ) -> (u16, String) {
        request(&self.address, method, path, key, body).expect("the server answers")
    }

    /// Sends one request with extra headers; returns the status, the head and the body.
    pub(crate) fn raw_with_headers(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, String)],
        body: Option<&str>,
    ) -> (u16, String, String) {
        request_full(&self.address, method, path, key, headers, body).expect("the server answers")
    }

    /// Sends one JSON request; returns the status and the JSON body.
    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        let body = body.map(|body| body.to_string());
        let (status, text) = self.raw(method, path, key, body.as_deref());
        let value = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
        (status, value)
    }

    /// Creates a key for `namespace` with the admin key.
    pub(crate) fn key_for(&self, namespace: &str) -> String {
        let (status, body) = self.call(
            "POST",
            "/v1/keys",
            Some(ADMIN_KEY),
            Some(serde_json::json!({ "namespace": namespace, "name": "test" })),
        );
        assert_eq!(status, 201, "{body}");
        body["key"].as_str().expect("a key").to_owned()
    }

    /// Stops the server with SIGTERM and returns its exit code.
    pub(crate) fn stop(mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().expect("wait for the server");
        status.code()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends one HTTP/1.1 request to `address`; `None` when the connection fails.
pub(crate) fn request(
    address: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> Option<(u16, String)> {
    request_full(address, method, path, key, &[], body).map(|(status, _, body)| (status, body))
}

/// Sends one HTTP/1.1 request with extra headers; returns the status, the head and the body
/// (de-chunked).
pub(crate) fn request_full(
    address: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    headers: &[(&str, String)],
    body: Option<&str>,
) -> Option<(u16, String, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    let body = body.unwrap_or("");
    // A `Host` among `headers` replaces the address.
    let host = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("host"))
        .map_or(address, |(_, host)| host.as_str());
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    // A `Content-Type` among `headers` replaces JSON's.
    let typed = headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
    if !body.is_empty() && !typed {
        request.push_str("Content-Type: application/json\r\n");
    }
    if let Some(key) = key {
        request.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    for (name, value) in headers
        .iter()
        .filter(|(name, _)| !name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Some((status, head.to_owned(), body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// The store arguments of each backend under test.
pub(crate) fn backends(dir: &TempDir, label: &str) -> Vec<(String, Vec<String>)> {
    let sqlite = dir.path().join("serve.db").to_string_lossy().into_owned();
    let mut all = vec![("sqlite".to_owned(), vec!["--store".to_owned(), sqlite])];
    match std::env::var("AGENT_MEMORY_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => {
            let schema = format!("cli_{label}_{}", std::process::id());
            all.push((
                "postgres".to_owned(),
                vec![
                    "--store".to_owned(),
                    url,
                    "--postgres-schema".to_owned(),
                    schema,
                ],
            ));
        }
        _ => eprintln!(
            "AGENT_MEMORY_TEST_POSTGRES_URL is unset: the PostgreSQL run of {label} was skipped"
        ),
    }
    all
}

/// Drops the PostgreSQL schema of a test's store arguments, if any, when dropped.
pub(crate) struct DropSchema(pub(crate) Vec<String>);

impl Drop for DropSchema {
    fn drop(&mut self) {
        let [_, url, _, schema] = self.0.as_slice() else {
            return;
        };
        let (url, schema) = (url.clone(), schema.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            if let Ok((client, connection)) =
                tokio_postgres::connect(&url, tokio_postgres::NoTls).await
            {
                tokio::spawn(connection);
                let _ = client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                    .await;
            }
        });
    }
}

/// An MCP memory server's `memory.jsonl`: two entities, Ada's two observations, and a
/// relation between them.
pub(crate) const ADA_MEMORY_FILE: &str = concat!(
    r#"{"type":"entity","name":"Ada","entityType":"person","observations":["Writes the first program","Likes mathematics"]}"#,
    "\n",
    r#"{"type":"entity","name":"Analytical Engine","entityType":"machine","observations":[]}"#,
    "\n",
    r#"{"type":"relation","from":"Ada","to":"Analytical Engine","relationType":"programs"}"#,
    "\n"
);

/// Remembers `count` (at most 16) memories about kiwis in namespace `namespace` of
/// `store.db`, each unlike the others, so a recall of "kiwi" finds them all.
pub(crate) fn remember_kiwis(dir: &TempDir, namespace: &str, count: usize) {
    const PLACES: [&str; 16] = [
        "Auckland",
        "Berlin",
        "Cairo",
        "Dakar",
        "Edinburgh",
        "Fresno",
        "Geneva",
        "Havana",
        "Istanbul",
        "Jakarta",
        "Kyoto",
        "Lagos",
        "Madrid",
        "Nairobi",
        "Oslo",
        "Perth",
    ];
    const WHAT: [&str; 16] = [
        "grows in the garden",
        "was sold at the market",
        "arrived by ship",
        "sat on the windowsill",
        "ripened over winter",
        "fed three hungry children",
        "won a county prize",
        "rolled under the sofa",
        "went into a smoothie",
        "travelled in a lunchbox",
        "was painted for a class",
        "cost two dollars",
        "fell from a truck",
        "was photographed at dawn",
        "decorated a birthday cake",
        "was shared with neighbours",
    ];
    for (place, what) in PLACES.iter().zip(WHAT).take(count) {
        let text = format!("A kiwi from {place} {what}");
        ok_in(dir, namespace, &["remember", &text]);
    }
}
