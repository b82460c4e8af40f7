//! Building parameterised SQL, and encoding values the way the schema stores them.

use chrono::{DateTime, Utc};
use memory_core::text::Analyzer;
use memory_core::{MemoryError, Namespace, Result, Scope, Tag};
use rusqlite::types::Value;

use crate::error::corrupt;

/// A statement under construction: text with `?` placeholders and their values in order.
/// Every value from a caller is bound, never spliced into the text.
#[derive(Debug, Default)]
pub(crate) struct Sql {
    pub(crate) text: String,
    pub(crate) params: Vec<Value>,
}

impl Sql {
    pub(crate) fn new(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            params: Vec::new(),
        }
    }

    /// Appends fixed SQL text.
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends a `?` placeholder bound to `value`.
    pub(crate) fn bind(&mut self, value: impl Into<Value>) -> &mut Self {
        self.text.push('?');
        self.params.push(value.into());
        self
    }

    /// Appends ` AND <condition>` restricting `column` to `scope`.
    ///
    /// A subtree scope is `column = ns OR column` in the half-open range `[ns + "/", ns + "0")`:
    /// `'0'` is the character after `'/'`, so the range holds exactly the namespaces below `ns`
    /// segment by segment (`user-4` does not cover `user-42`), and an index on `column` serves it.
    pub(crate) fn and_scope(&mut self, column: &str, scope: &Scope) -> &mut Self {
        let namespace = scope.namespace.as_str();
        if !scope.descendants {
            self.push(" AND ")
                .push(column)
                .push(" = ")
                .bind(namespace.to_owned());
        } else if !scope.namespace.is_root() {
            self.push(" AND (")
                .push(column)
                .push(" = ")
                .bind(namespace.to_owned())
                .push(" OR (")
                .push(column)
                .push(" >= ")
                .bind(format!("{namespace}/"))
                .push(" AND ")
                .push(column)
                .push(" < ")
                .bind(format!("{namespace}0"))
                .push("))");
        }
        self
    }

    /// Appends ` AND substr(column, 1, length(prefix)) = prefix` (a case-sensitive prefix test;
    /// `LIKE` would fold ASCII case and treat `%` and `_` as wildcards).
    pub(crate) fn and_prefix(&mut self, column: &str, prefix: &str) -> &mut Self {
        self.push(" AND substr(")
            .push(column)
            .push(", 1, length(")
            .bind(prefix.to_owned())
            .push(")) = ")
            .bind(prefix.to_owned())
    }
}

/// The analyzer every SQLite index and query uses: the same as every other backend's.
pub(crate) fn analyzer() -> Analyzer {
    Analyzer::default()
}

/// The analyzed terms of `text`, space-separated, as stored in an FTS5 column.
pub(crate) fn fts_document(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    analyzer().for_each_term(text, |term| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(term);
    });
    out
}

/// The distinct analyzed terms of the user's `text`, each a double-quoted FTS5 string (a `"`
/// doubled), joined by `OR`. Quoted strings are never operators, column filters or prefix
/// queries, so no user text is FTS5 syntax. `None` when the text has no searchable term.
pub(crate) fn fts_query(text: &str) -> Option<String> {
    let terms = analyzer().query_terms(text);
    if terms.is_empty() {
        return None;
    }
    let quoted: Vec<String> = terms
        .iter()
        .map(|term| format!("\"{}\"", term.replace('"', "\"\"")))
        .collect();
    Some(quoted.join(" OR "))
}

/// The full `MATCH` expression: the user's terms ([`fts_query`]) restricted to the text
/// `columns` (space-separated names), and, unless the scope is everything, the scope's token
/// in the `scope` column, so FTS5 itself leaves out other namespaces before ranking.
pub(crate) fn fts_match(columns: &str, text: &str, scope: &Scope) -> Option<String> {
    let terms = fts_query(text)?;
    let mut expression = format!("{{{columns}}} : ({terms})");
    if let Some(token) = scope_token(scope) {
        expression.push_str(" AND scope : \"");
        expression.push_str(&token);
        expression.push('"');
    }
    Some(expression)
}

/// A fingerprint of the shared analyzer's behaviour: a hash of its terms for a fixed probe
/// text and for every stop word. The FTS tables hold analyzed terms, so a database indexed by
/// an analyzer with another fingerprint is re-indexed on open (see `schema::migrate`).
pub(crate) fn analyzer_fingerprint() -> String {
    analyzer().fingerprint()
}

/// 64-bit FNV-1a. Persisted in the FTS `scope` column: never change it without a migration.
fn fnv1a(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The scope tokens of a record in `namespace`, for the FTS `scope` column: `e<hash>` of the
/// namespace (exact scopes) and `s<hash>` of it and of each enclosing namespace (subtree
/// scopes). Hex digits only, so the `ascii` tokenizer keeps each one token. A hash collision
/// only lets FTS5 pass a record that the SQL scope condition then removes.
pub(crate) fn scope_tokens(namespace: &Namespace) -> String {
    let mut out = format!("e{:016x}", fnv1a(namespace.as_str()));
    let mut prefix = String::new();
    for segment in namespace.segments() {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(segment);
        out.push_str(&format!(" s{:016x}", fnv1a(&prefix)));
    }
    out
}

/// The token a search in `scope` requires; `None` for every namespace.
fn scope_token(scope: &Scope) -> Option<String> {
    let namespace = scope.namespace.as_str();
    match (scope.descendants, scope.namespace.is_root()) {
        (true, true) => None,
        (true, false) => Some(format!("s{:016x}", fnv1a(namespace))),
        (false, _) => Some(format!("e{:016x}", fnv1a(namespace))),
    }
}

/// A timestamp as stored: nanoseconds since the Unix epoch.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field` outside the years 1678 to 2261, the range of
/// 64-bit nanoseconds.
pub(crate) fn encode_time(field: &str, at: DateTime<Utc>) -> Result<i64> {
    at.timestamp_nanos_opt().ok_or_else(|| {
        MemoryError::invalid(
            field,
            format!("{at} is outside the range the sqlite backend stores (years 1678 to 2261)"),
        )
    })
}

/// A time bound for a filter: like [`encode_time`], saturating instead of failing.
pub(crate) fn time_bound(at: DateTime<Utc>) -> i64 {
    at.timestamp_nanos_opt().unwrap_or(if at.timestamp() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}

/// A stored timestamp.
pub(crate) fn decode_time(nanos: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(nanos)
}

/// Tags as stored: a JSON array of strings, in order.
pub(crate) fn encode_tags(tags: &[Tag]) -> String {
    let texts: Vec<&str> = tags.iter().map(Tag::as_str).collect();
    serde_json::Value::from(texts).to_string()
}

/// Stored tags of `what`.
pub(crate) fn decode_tags(what: &dyn std::fmt::Display, text: &str) -> Result<Vec<Tag>> {
    serde_json::from_str(text).map_err(|error| corrupt(format_args!("tags of {what}"), error))
}

/// A list of strings as stored: a JSON array.
pub(crate) fn encode_strings(items: &[String]) -> String {
    serde_json::Value::from(items.to_vec()).to_string()
}

/// A stored JSON array of strings of `what`.
pub(crate) fn decode_strings(what: &dyn std::fmt::Display, text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).map_err(|error| corrupt(what, error))
}

/// An `i64` column holding a count.
pub(crate) fn to_count(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::Namespace;

    #[test]
    fn scope_conditions() {
        let ns = Namespace::parse("user-4/a").unwrap();
        let mut sql = Sql::new("x WHERE 1");
        sql.and_scope("ns", &ns.exact());
        assert_eq!(sql.text, "x WHERE 1 AND ns = ?");
        let mut sql = Sql::new("x WHERE 1");
        sql.and_scope("ns", &ns.subtree());
        assert_eq!(sql.text, "x WHERE 1 AND (ns = ? OR (ns >= ? AND ns < ?))");
        assert_eq!(
            sql.params,
            [
                Value::from("user-4/a".to_owned()),
                Value::from("user-4/a/".to_owned()),
                Value::from("user-4/a0".to_owned())
            ]
        );
        let mut sql = Sql::new("x WHERE 1");
        sql.and_scope("ns", &Scope::all());
        assert_eq!(sql.text, "x WHERE 1");
    }

    #[test]
    fn scope_tokens_cover_the_namespace_and_its_ancestors() {
        let ns = Namespace::parse("a/b").unwrap();
        let tokens = scope_tokens(&ns);
        let tokens: Vec<&str> = tokens.split(' ').collect();
        assert_eq!(tokens.len(), 3);
        let exact = scope_token(&ns.exact()).unwrap();
        let subtree = scope_token(&Namespace::parse("a").unwrap().subtree()).unwrap();
        assert!(tokens.contains(&exact.as_str()) && tokens.contains(&subtree.as_str()));
        let sibling = scope_token(&Namespace::parse("a/bb").unwrap().subtree()).unwrap();
        assert!(!tokens.contains(&sibling.as_str()));
        assert_eq!(scope_token(&Scope::all()), None);
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(
            fts_match("terms", "cats", &ns.exact()),
            Some(format!("{{terms}} : (\"cat\") AND scope : \"{exact}\""))
        );
        assert_eq!(fts_match("terms", "the", &ns.exact()), None);
    }

    #[test]
    fn fts_queries_quote_every_term() {
        assert_eq!(
            fts_query("AND OR NEAR( \"unbalanced"),
            Some("\"near\" OR \"unbalanc\"".into())
        );
        assert_eq!(fts_query("the of 🙂"), None);
        assert_eq!(fts_query(""), None);
        assert_eq!(
            fts_query("状态管理"),
            Some("\"状态\" OR \"态管\" OR \"管理\"".into())
        );
        assert_eq!(fts_document("Cats, cats!"), "cat cat");
    }

    #[test]
    fn times_round_trip_or_are_rejected() {
        let at = DateTime::from_timestamp(1_700_000_000, 123_456_789).unwrap();
        assert_eq!(decode_time(encode_time("created_at", at).unwrap()), at);
        let far = DateTime::from_timestamp(40_000_000_000, 0).unwrap();
        assert!(
            encode_time("created_at", far)
                .unwrap_err()
                .to_string()
                .contains("created_at")
        );
        assert_eq!(time_bound(far), i64::MAX);
    }
}
