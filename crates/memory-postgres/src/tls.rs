//! The rustls connector behind [`PostgresTls::Required`](crate::PostgresTls::Required).

use std::sync::Arc;

use memory_core::{MemoryError, Result};
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::TlsRoots;

/// A connector that verifies the server's chain against `roots` and its name against the
/// host connected to.
///
/// # Errors
/// [`MemoryError::InvalidInput`] (field `tls`) when the roots cannot be read or hold no
/// usable certificate.
pub(crate) fn connector(roots: &TlsRoots) -> Result<MakeRustlsConnect> {
    let store = root_store(roots)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| MemoryError::invalid("tls", error))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

fn root_store(roots: &TlsRoots) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    match roots {
        TlsRoots::System => {
            // Unreadable entries of the system store are skipped, as every TLS client does;
            // an empty result is an error below.
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(MemoryError::invalid(
                    "tls",
                    "the system trust store holds no usable certificate",
                ));
            }
        }
        TlsRoots::PemFile(path) => {
            let shown = path.display();
            let pem = std::fs::read(path).map_err(|error| {
                MemoryError::invalid("tls", format!("reading {shown}: {error}"))
            })?;
            for certificate in CertificateDer::pem_slice_iter(&pem) {
                let certificate = certificate.map_err(|error| {
                    MemoryError::invalid("tls", format!("{shown}: not valid PEM: {error}"))
                })?;
                store.add(certificate).map_err(|error| {
                    MemoryError::invalid("tls", format!("{shown}: unusable certificate: {error}"))
                })?;
            }
            if store.is_empty() {
                return Err(MemoryError::invalid(
                    "tls",
                    format!("{shown} holds no PEM certificate"),
                ));
            }
        }
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn file_with(name: &str, text: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("{name}-{}", memory_core::new_id()));
        std::fs::write(&path, text).expect("a temporary file");
        path
    }

    #[test]
    fn unusable_roots_are_invalid_input() {
        let missing = std::env::temp_dir().join("no-such-ca-file.pem");
        let empty = file_with("empty-ca", "just text, no certificate\n");
        let garbage = file_with(
            "garbage-ca",
            "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
        );
        for (path, expect) in [
            (missing, "reading"),
            (empty.clone(), "no PEM certificate"),
            (garbage.clone(), "not valid PEM"),
        ] {
            let error = connector(&TlsRoots::PemFile(path.clone()))
                .err()
                .unwrap_or_else(|| panic!("{} was accepted", path.display()));
            assert!(
                matches!(error, MemoryError::InvalidInput { .. }),
                "{}: {error:?}",
                path.display()
            );
            assert!(error.to_string().contains(expect), "{error}");
        }
        let _ = std::fs::remove_file(empty);
        let _ = std::fs::remove_file(garbage);
    }
}
