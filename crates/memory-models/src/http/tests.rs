//! The HTTP client's own rules: retry waits, `Retry-After`, endpoints, secrets and TLS.

use super::*;

#[test]
fn parses_base_urls() {
    let endpoint = Endpoint::parse("http://127.0.0.1:11434/v1/").unwrap();
    assert_eq!(
        endpoint.url("/embeddings"),
        "http://127.0.0.1:11434/v1/embeddings"
    );
    let endpoint = Endpoint::parse("https://api.openai.com/v1").unwrap();
    assert_eq!((endpoint.https, endpoint.port), (true, 443));
    for bad in ["", "ftp://x", "localhost:8080", "http://x/?q=1"] {
        let error = Endpoint::parse(bad).unwrap_err();
        assert_eq!(error.field(), Some("base_url"), "{bad}");
    }
    let endpoint = Endpoint::parse("http://[::1]:8080/v1").unwrap();
    assert_eq!(endpoint.host, "::1", "connected to as an address");
    assert_eq!(endpoint.bracketed(), "[::1]", "written in brackets");
    assert_eq!(endpoint.url("/rerank"), "http://[::1]:8080/v1/rerank");
    let mut wait = Duration::from_millis(500);
    for _ in 0..20 {
        wait = doubled(wait);
    }
    assert_eq!(wait, MAX_WAIT, "the backoff stops growing at a minute");
    assert_eq!(truncate_chars("héllo", 2), "hé");
    assert_eq!(truncate_chars("hi", 5), "hi");
}

#[test]
fn retry_after_takes_seconds_or_a_date() {
    let now = chrono::DateTime::parse_from_rfc3339("1994-11-06T08:49:30Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    assert_eq!(retry_after(" 7 ", now), Some(Duration::from_secs(7)));
    assert_eq!(retry_after("86400", now), Some(MAX_WAIT));
    assert_eq!(
        retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
        Some(Duration::from_secs(7)),
        "an HTTP date is counted from now"
    );
    assert_eq!(
        retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
        Some(Duration::ZERO),
        "a date already past asks for no wait"
    );
    assert_eq!(
        retry_after("Mon, 07 Nov 1994 08:49:37 GMT", now),
        Some(MAX_WAIT)
    );
    for bad in ["", "-1", "soon", "1.5"] {
        assert_eq!(retry_after(bad, now), None, "{bad:?}");
    }
}

#[test]
fn debug_hides_the_key() {
    let config = HttpConfig::new("http://x").with_api_key("secret-key");
    assert!(!format!("{config:?}").contains("secret-key"));
}

/// A backoff longer than the cap waits the cap from the first retry, as the doubled
/// waits do; a shorter one, zero included, is taken as set.
#[test]
fn the_first_wait_is_capped_like_the_others() {
    assert_eq!(first_wait(Duration::from_secs(3600)), MAX_WAIT);
    assert_eq!(
        first_wait(Duration::from_millis(500)),
        Duration::from_millis(500)
    );
    assert_eq!(first_wait(Duration::ZERO), Duration::ZERO);
}

/// The system's roots are read by the constructor, not by the first request on a
/// runtime worker; an http:// client never reads them.
#[test]
fn an_https_client_reads_the_roots_when_built() {
    let plain = HttpClient::new(HttpConfig::new("http://127.0.0.1:9/v1")).unwrap();
    assert!(plain.tls.is_none());
    let client = HttpClient::new(HttpConfig::new("https://127.0.0.1:9/v1")).unwrap();
    assert!(client.tls.is_some());
    assert!(TLS.get().is_some());
}

/// A configuration written out (a settings dump, a report) never holds the key; one
/// read in still takes it.
#[test]
fn serialization_leaves_the_key_out() {
    let config = HttpConfig::new("http://x").with_api_key("secret-key");
    let json = serde_json::to_value(&config).unwrap();
    assert!(!json.to_string().contains("secret-key"), "{json}");
    assert_eq!(json["base_url"], "http://x");
    let read: HttpConfig =
        serde_json::from_value(serde_json::json!({"base_url": "http://x", "api_key": "k"}))
            .unwrap();
    assert_eq!(read.api_key.as_deref(), Some("k"));
}

/// A query string may carry a key (`?api-key=`): the error says what is wrong without
/// repeating the URL.
#[test]
fn a_query_string_is_refused_without_repeating_the_url() {
    for url in [
        "https://example.com/v1?api-key=sk-SECRET",
        "https://example.com/v1?api-key=sk SECRET",
    ] {
        let error = Endpoint::parse(url).unwrap_err();
        assert_eq!(error.field(), Some("base_url"), "{error}");
        assert!(error.to_string().contains("query string"), "{error}");
        assert!(!error.to_string().contains("SECRET"), "{error}");
    }
}
