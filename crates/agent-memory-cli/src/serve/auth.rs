//! API keys: who is calling, and which namespaces they may touch.
//!
//! A key is 32 random bytes in hex behind `am_`; the server keeps only its SHA-256 digest,
//! as a graph entity in a reserved namespace of the store, so every server on the same
//! store (PostgreSQL) knows the same keys and a revocation holds at once. Each key is
//! scoped to a namespace prefix and covers it and what lies under it, segment by segment:
//! a key for `acme` reaches `acme` and `acme/agent-a`, never `acme-2` or `other`. The admin
//! key (a flag or variable, never stored) manages keys and reaches every namespace.
//!
//! Known keys are cached by digest for [`CACHE_TTL`] (at most [`CACHE_CAPACITY`] of them),
//! so a request costs one SHA-256 and a map lookup instead of a read of the store. Creating
//! or revoking a key through this server empties the cache at once, and a key a request was
//! reading from the store meanwhile is not cached (the cache's generation moved on); a key
//! revoked through another server on the same store stops working here within the TTL. Unknown keys are
//! never cached: a key created elsewhere works at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use agent_memory::{GraphEntity, Memory, MemoryError, Namespace};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::failure::{ErrorKind, Failure};

/// The first segment of the namespace that holds the keys; no request may name it.
pub(crate) const SYSTEM_SEGMENT: &str = "agent-memory-system";
/// The namespace of the keys.
const KEYS_NAMESPACE: &str = "agent-memory-system/api-keys";
/// The entity type of a key.
const KEY_TYPE: &str = "api-key";

/// Who sent a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Caller {
    /// The admin key, or anyone when the server runs without authentication.
    Admin,
    /// A key scoped to this namespace prefix.
    Tenant(Namespace),
}

impl Caller {
    /// The namespace a request works in: the one it names, else the key's prefix (for the
    /// admin, `default`).
    ///
    /// # Errors
    /// Invalid input for a malformed namespace or the reserved one; forbidden for a
    /// namespace the key does not cover.
    pub(crate) fn namespace(&self, asked: Option<&str>) -> Result<Namespace, Failure> {
        let namespace = match (asked.filter(|text| !text.trim().is_empty()), self) {
            (Some(text), _) => parse(text)?,
            (None, Caller::Tenant(prefix)) => prefix.clone(),
            (None, Caller::Admin) => parse(crate::config::DEFAULT_NAMESPACE)?,
        };
        if let Caller::Tenant(prefix) = self
            && !prefix.is_ancestor_of(&namespace)
        {
            return Err(Failure::new(
                ErrorKind::Forbidden,
                format!(
                    "this key covers namespace {prefix} and what lies under it, not {namespace}"
                ),
            ));
        }
        Ok(namespace)
    }

    /// Whether the caller may manage keys.
    pub(crate) fn require_admin(&self) -> Result<(), Failure> {
        match self {
            Caller::Admin => Ok(()),
            Caller::Tenant(_) => Err(Failure::new(
                ErrorKind::Forbidden,
                "only the admin key manages API keys",
            )
            .with_hint("send the admin key given to `agent-memory serve --admin-key`")),
        }
    }
}

/// A namespace named by a request: valid, not the root, not the reserved one.
pub(crate) fn parse(text: &str) -> Result<Namespace, Failure> {
    let namespace = crate::commands::parse_namespace(text)?;
    if namespace.segments().next() == Some(SYSTEM_SEGMENT) {
        return Err(Failure::invalid(
            "namespace",
            format!("namespace {namespace} is reserved for the server"),
        ));
    }
    Ok(namespace)
}

/// How long a known key is trusted without reading the store again.
pub(crate) const CACHE_TTL: Duration = Duration::from_secs(5);
/// Most keys cached at once; a full cache is emptied.
pub(crate) const CACHE_CAPACITY: usize = 4096;

fn digest(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    hex(&digest)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// The prefix of every key [`Keys`] issues, before its 64 hex digits.
const KEY_PREFIX: &str = "am_";

/// Whether `key` has the shape of a key this server issues: [`KEY_PREFIX`] and 64 lowercase
/// hex digits (32 random bytes).
fn has_key_shape(key: &str) -> bool {
    key.strip_prefix(KEY_PREFIX).is_some_and(|digits| {
        digits.len() == 64
            && digits
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    })
}

/// Compares two strings in time independent of where they differ.
fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What is kept of a key, in its entity's description.
#[derive(Debug, Serialize, Deserialize)]
struct KeyRecord {
    prefix: String,
    created_at: String,
}

/// A key as the admin sees it: never the key itself.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub(crate) struct KeyInfo {
    /// The key's id (the start of its digest), for revoking it.
    pub(crate) id: String,
    /// A label.
    pub(crate) name: String,
    /// The namespace prefix it covers.
    pub(crate) namespace: String,
    /// When it was created (RFC 3339).
    pub(crate) created_at: String,
}

/// A new key: shown once, at creation.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub(crate) struct NewKey {
    /// The key to send as `Authorization: Bearer <key>`; it cannot be shown again.
    pub(crate) key: String,
    /// What is kept of it.
    #[serde(flatten)]
    pub(crate) info: KeyInfo,
}

/// The keys, kept in the store.
#[derive(Debug)]
pub(crate) struct Keys {
    admin_key: Option<String>,
    open: bool,
    namespace: Namespace,
    /// Known keys by digest: the prefix each covers and when it was read from the store.
    cache: Mutex<Cache>,
}

/// The keys read from the store, and how many times the cache was emptied.
#[derive(Debug, Default)]
struct Cache {
    keys: HashMap<String, (Namespace, Instant)>,
    /// Raised by every [`Keys::invalidate`]: a key read before is not cached after it, so a
    /// key revoked while a request was reading it is not cached as valid.
    generation: u64,
}

impl Keys {
    /// The keys of a server with this admin key; `open` lets every request in as admin.
    pub(crate) fn new(admin_key: Option<String>, open: bool) -> Result<Self, Failure> {
        Ok(Self {
            admin_key,
            open,
            namespace: Namespace::parse(KEYS_NAMESPACE)?,
            cache: Mutex::new(Cache::default()),
        })
    }

    /// Whether every request is let in as admin (`--no-auth`).
    pub(crate) fn is_open(&self) -> bool {
        self.open
    }

    /// Who sent the request with this `Authorization` value.
    pub(crate) async fn caller(
        &self,
        memory: &Memory,
        presented: Option<&str>,
    ) -> Result<Caller, Failure> {
        if self.open {
            return Ok(Caller::Admin);
        }
        let Some(key) = presented.filter(|key| !key.is_empty()) else {
            return Err(Failure::new(ErrorKind::Unauthorized, "no API key was sent"));
        };
        if let Some(admin) = &self.admin_key
            && constant_time_eq(admin, key)
        {
            return Ok(Caller::Admin);
        }
        // Every key this server issues has one shape: anything else is refused before the
        // store is asked, so random tokens cost no store read.
        if !has_key_shape(key) {
            return Err(Failure::new(
                ErrorKind::Unauthorized,
                "the API key is not known",
            ));
        }
        let hash = digest(key);
        if let Some(prefix) = self.cached(&hash) {
            return Ok(Caller::Tenant(prefix));
        }
        let generation = self.generation();
        let entity = memory.graph().get_entity(&self.namespace, &hash).await?;
        match entity {
            Some(entity) if entity.entity_type == KEY_TYPE => {
                let record: KeyRecord =
                    serde_json::from_str(&entity.description).map_err(|error| {
                        Failure::internal(format!("a stored key is unreadable: {error}"))
                    })?;
                let prefix = Namespace::parse(&record.prefix)?;
                self.remember(hash, prefix.clone(), generation);
                Ok(Caller::Tenant(prefix))
            }
            _ => Err(Failure::new(
                ErrorKind::Unauthorized,
                "the API key is not known",
            )),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The prefix of a key known within the TTL.
    fn cached(&self, hash: &str) -> Option<Namespace> {
        self.lock()
            .keys
            .get(hash)
            .filter(|(_, read)| read.elapsed() < CACHE_TTL)
            .map(|(prefix, _)| prefix.clone())
    }

    /// The cache's generation, taken before a key is read from the store.
    fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Caches a key read from the store when the cache was at `generation`: not when it
    /// was emptied since (a key changed meanwhile, perhaps this one).
    fn remember(&self, hash: String, prefix: Namespace, generation: u64) {
        let mut cache = self.lock();
        if cache.generation != generation {
            return;
        }
        if cache.keys.len() >= CACHE_CAPACITY {
            cache.keys.clear();
        }
        cache.keys.insert(hash, (prefix, Instant::now()));
    }

    /// Forgets every cached key (after a key changed).
    fn invalidate(&self) {
        let mut cache = self.lock();
        cache.keys.clear();
        cache.generation = cache.generation.wrapping_add(1);
    }

    /// Creates a key for `prefix`.
    pub(crate) async fn create(
        &self,
        memory: &Memory,
        name: &str,
        prefix: &str,
    ) -> Result<NewKey, Failure> {
        let prefix = parse(prefix)?;
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|error| Failure::internal(format!("no random bytes for a key: {error}")))?;
        let key = format!("{KEY_PREFIX}{}", hex(&bytes));
        let hash = digest(&key);
        let record = KeyRecord {
            prefix: prefix.to_string(),
            created_at: Utc::now().to_rfc3339(),
        };
        let description =
            serde_json::to_string(&record).map_err(|error| Failure::internal(error.to_string()))?;
        let label = if name.trim().is_empty() { "key" } else { name };
        let entity = GraphEntity::new(self.namespace.clone(), &hash, label, KEY_TYPE)?
            .with_description(description);
        memory.graph().add_entity(entity).await?;
        self.invalidate();
        Ok(NewKey {
            key,
            info: KeyInfo {
                id: hash[..16].to_owned(),
                name: label.to_owned(),
                namespace: record.prefix,
                created_at: record.created_at,
            },
        })
    }

    /// Every key, without secrets.
    pub(crate) async fn list(&self, memory: &Memory) -> Result<Vec<KeyInfo>, Failure> {
        let entities = memory
            .graph()
            .list_entities(&self.namespace.exact())
            .await?;
        Ok(entities
            .iter()
            .filter(|entity| entity.entity_type == KEY_TYPE)
            .filter_map(|entity| {
                let record: KeyRecord = serde_json::from_str(&entity.description).ok()?;
                Some(KeyInfo {
                    id: entity.id.get(..16).unwrap_or(&entity.id).to_owned(),
                    name: entity.name.clone(),
                    namespace: record.prefix,
                    created_at: record.created_at,
                })
            })
            .collect())
    }

    /// Revokes the key with this id. Returns whether it existed.
    pub(crate) async fn revoke(&self, memory: &Memory, id: &str) -> Result<bool, Failure> {
        if id.len() < 16 {
            return Ok(false);
        }
        let entities = memory
            .graph()
            .list_entities(&self.namespace.exact())
            .await?;
        for entity in entities {
            if entity.entity_type == KEY_TYPE && entity.id.starts_with(id) {
                let removed = memory
                    .graph()
                    .remove_entity(&self.namespace, &entity.id)
                    .await;
                // Whatever the store answered, no cached copy may outlive the revocation.
                self.invalidate();
                return Ok(removed?);
            }
        }
        Ok(false)
    }

    /// A cheap read of the store, for readiness.
    pub(crate) async fn probe(&self, memory: &Memory) -> Result<(), MemoryError> {
        memory
            .store()
            .count(&self.namespace.exact())
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_covers_whole_segments_only() {
        let acme = Caller::Tenant(Namespace::parse("acme").unwrap());
        assert!(acme.namespace(Some("acme")).is_ok());
        assert!(acme.namespace(Some("acme/agent-a")).is_ok());
        assert_eq!(acme.namespace(None).unwrap().as_str(), "acme");
        for other in ["acme-2", "other", "acm", "agent-memory-system/api-keys"] {
            assert!(acme.namespace(Some(other)).is_err(), "{other}");
        }
        assert!(
            Caller::Admin
                .namespace(Some("agent-memory-system"))
                .is_err()
        );
        assert!(constant_time_eq("abc", "abc") && !constant_time_eq("abc", "abd"));
    }

    #[tokio::test]
    async fn only_keys_of_the_issued_shape_are_looked_up() {
        let memory = Memory::in_memory();
        let keys = Keys::new(None, false).unwrap();
        let issued = keys.create(&memory, "ci", "acme").await.unwrap();
        assert!(has_key_shape(&issued.key), "{}", issued.key);
        let caller = keys.caller(&memory, Some(&issued.key)).await.unwrap();
        assert!(matches!(caller, Caller::Tenant(prefix) if prefix.as_str() == "acme"));
        let digits = &issued.key[KEY_PREFIX.len()..];
        for shapeless in [
            digits.to_owned(),
            format!("AM_{digits}"),
            format!("{KEY_PREFIX}{}", digits.to_uppercase()),
            format!("{}0", issued.key),
            issued.key[..issued.key.len() - 1].to_owned(),
            format!("{KEY_PREFIX}{}", "g".repeat(64)),
        ] {
            assert!(!has_key_shape(&shapeless), "{shapeless}");
            let refused = keys.caller(&memory, Some(&shapeless)).await.unwrap_err();
            assert_eq!(refused.kind, ErrorKind::Unauthorized, "{shapeless}");
        }
    }

    #[test]
    fn digests_are_lowercase_hex() {
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn the_cache_is_bounded_and_invalidated() {
        let keys = Keys::new(None, false).unwrap();
        let acme = Namespace::parse("acme").unwrap();
        let generation = keys.generation();
        for index in 0..CACHE_CAPACITY + 10 {
            keys.remember(format!("h{index}"), acme.clone(), generation);
        }
        assert!(keys.lock().keys.len() <= CACHE_CAPACITY);
        keys.remember("x".to_owned(), acme.clone(), generation);
        assert_eq!(keys.cached("x"), Some(acme.clone()));
        keys.invalidate();
        assert_eq!(keys.cached("x"), None);
        // A key read before the cache was emptied (a revocation while the request read
        // it) is not cached after; one read after is.
        keys.remember("x".to_owned(), acme.clone(), generation);
        assert_eq!(keys.cached("x"), None);
        keys.remember("x".to_owned(), acme.clone(), keys.generation());
        assert_eq!(keys.cached("x"), Some(acme));
    }
}
