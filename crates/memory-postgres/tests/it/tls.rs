//! TLS connections (feature `tls`): encrypted, and verified against the given roots and the
//! host name. Needs a server with TLS on: `AGENT_MEMORY_TEST_POSTGRES_TLS_URL` (its URL under
//! the name its certificate carries) and `AGENT_MEMORY_TEST_POSTGRES_TLS_CA` (a PEM file that
//! certifies it; a self-signed server's own certificate will do). `.ci/run` sets both when
//! the local server has TLS on. Without them the tests say so on stderr and return.

use std::io::Write;
use std::path::PathBuf;

use memory_core::{MemoryItem, MemoryStore, Namespace, SearchQuery};
use memory_postgres::{PostgresBackend, PostgresTls, TlsRoots};

use crate::common::{TestSchema, unique_schema};

const URL_ENV: &str = "AGENT_MEMORY_TEST_POSTGRES_TLS_URL";
const CA_ENV: &str = "AGENT_MEMORY_TEST_POSTGRES_TLS_CA";

/// The TLS server's URL and its root certificate, or `None` after saying so on stderr.
fn tls_server(test: &str) -> Option<(String, PathBuf)> {
    match (std::env::var(URL_ENV), std::env::var_os(CA_ENV)) {
        (Ok(url), Some(ca)) if !url.trim().is_empty() => Some((url, PathBuf::from(ca))),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "skipped: {URL_ENV} or {CA_ENV} is not set ({test} did not run)"
            );
            None
        }
    }
}

#[tokio::test]
async fn verified_tls_connections_store_and_search() {
    let Some((url, ca)) = tls_server("verified_tls_connections_store_and_search") else {
        return;
    };
    let schema = TestSchema {
        url: url.clone(),
        name: unique_schema("tls"),
    };
    let tls = PostgresTls::Required(TlsRoots::PemFile(ca));
    // A name of its own, so the server's statistics can tell this backend's sessions apart.
    let application = unique_schema("tls_app");
    let separator = if url.contains('?') { '&' } else { '?' };
    let named = format!("{url}{separator}application_name={application}");
    let backend = PostgresBackend::connect(&named, schema.options().with_tls(tls))
        .await
        .unwrap_or_else(|error| panic!("a verified TLS connection: {error}"));
    let ns = Namespace::parse("tls/agent").expect("a namespace");
    let store = backend.memory_store();
    store
        .save(
            MemoryItem::new(ns.clone(), "encrypted on the wire")
                .and_then(|item| item.with_id("m1"))
                .expect("an item"),
        )
        .await
        .expect("saved over TLS");
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "encrypted wire", 5))
        .await
        .expect("searched over TLS");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].item.id, "m1");
    // Every session the backend holds is encrypted, as the server sees it.
    let observer = crate::common::raw_client(&url).await;
    let row = observer
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE s.ssl) \
             FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
             WHERE a.application_name = $1",
            &[&application],
        )
        .await
        .expect("reading pg_stat_ssl");
    let (sessions, encrypted): (i64, i64) = (row.get(0), row.get(1));
    assert!(sessions > 0, "the backend's sessions are visible");
    assert_eq!(encrypted, sessions, "every session is encrypted");
}

#[tokio::test]
async fn a_certificate_for_another_name_is_refused() {
    let Some((url, ca)) = tls_server("a_certificate_for_another_name_is_refused") else {
        return;
    };
    // The same server under its address instead of the name its certificate carries.
    let Some(by_address) = url
        .contains("@localhost")
        .then(|| url.replacen("@localhost", "@127.0.0.1", 1))
    else {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {URL_ENV} does not name localhost (a_certificate_for_another_name_is_refused did not run)"
        );
        return;
    };
    let schema = TestSchema {
        url: by_address.clone(),
        name: unique_schema("tls_name"),
    };
    let tls = PostgresTls::Required(TlsRoots::PemFile(ca));
    let refused = PostgresBackend::connect(&by_address, schema.options().with_tls(tls)).await;
    let error = refused
        .err()
        .unwrap_or_else(|| panic!("a certificate for localhost was accepted for 127.0.0.1"));
    assert!(
        error.to_string().contains("certificate not valid for name"),
        "the error gives the reason: {error}"
    );
    assert!(
        !error.is_recoverable(),
        "retrying cannot fix a certificate: {error:?}"
    );
}

#[tokio::test]
async fn unreadable_roots_fail_before_connecting() {
    let Some((url, _)) = tls_server("unreadable_roots_fail_before_connecting") else {
        return;
    };
    let tls = PostgresTls::Required(TlsRoots::PemFile(PathBuf::from("/no/such/ca.pem")));
    let options = memory_postgres::PostgresOptions::default()
        .with_schema(unique_schema("tls_roots"))
        .with_tls(tls);
    let error = PostgresBackend::connect(&url, options)
        .await
        .err()
        .unwrap_or_else(|| panic!("a missing CA file was accepted"));
    assert!(
        matches!(error, memory_core::MemoryError::InvalidInput { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_root_that_did_not_sign_the_server_is_refused() {
    let Some((url, _)) = tls_server("a_root_that_did_not_sign_the_server_is_refused") else {
        return;
    };
    // The public authorities of the system bundle, none of which signed the test server.
    let bundle = PathBuf::from("/etc/ssl/certs/ca-certificates.crt");
    if !bundle.exists() {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: no {} (a_root_that_did_not_sign_the_server_is_refused did not run)",
            bundle.display()
        );
        return;
    }
    let schema = TestSchema {
        url: url.clone(),
        name: unique_schema("tls_root"),
    };
    let tls = PostgresTls::Required(TlsRoots::PemFile(bundle));
    let error = PostgresBackend::connect(&url, schema.options().with_tls(tls))
        .await
        .err()
        .unwrap_or_else(|| panic!("a server signed by none of the roots was accepted"));
    assert!(
        error.to_string().contains("invalid peer certificate"),
        "the error gives the reason: {error}"
    );
    assert!(!error.is_recoverable(), "{error:?}");
}
