//! Building parameterised SQL, and encoding values the way the schema stores them.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use memory_core::text::Analyzer;
use memory_core::{MemoryError, Namespace, Result, Scope};
use tokio_postgres::types::ToSql;

use crate::database::Database;
use crate::error::corrupt;

/// Rows re-indexed per statement when a migration rebuilds the search columns.
pub(crate) const REINDEX_BATCH: i64 = 1_000;

/// A bound value of a statement under construction.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// A statement under construction: text with `$n` placeholders and their values in order.
/// Every value from a caller is bound, never spliced into the text; the only text spliced in
/// is the schema name, validated as a plain identifier when the backend was configured.
#[derive(Debug, Default)]
pub(crate) struct Sql {
    pub(crate) text: String,
    params: Vec<Param>,
    /// The quoted schema name, replacing `{s}` in pushed text.
    schema: String,
}

impl Sql {
    /// A statement starting with `text`, where `{s}` stands for the quoted schema name.
    pub(crate) fn new(schema: &str, text: &str) -> Self {
        Self {
            text: qualify(schema, text),
            params: Vec::new(),
            schema: schema.to_owned(),
        }
    }

    /// Appends fixed SQL text, `{s}` standing for the quoted schema name.
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        if text.contains("{s}") {
            let qualified = qualify(&self.schema, text);
            self.text.push_str(&qualified);
        } else {
            self.text.push_str(text);
        }
        self
    }

    /// Appends a `$n::cast` placeholder bound to `value`. The cast fixes the parameter's type,
    /// so the server never infers one the Rust value cannot be encoded as.
    pub(crate) fn bind<T: ToSql + Sync + Send + 'static>(
        &mut self,
        value: T,
        cast: &str,
    ) -> &mut Self {
        self.params.push(Box::new(value));
        // Writing to a String cannot fail.
        let _ = write!(self.text, "${}::{cast}", self.params.len());
        self
    }

    /// Binds `value` to the next placeholder number without appending one, for statements
    /// that write their own `$n` (to use a value more than once).
    pub(crate) fn bind_only<T: ToSql + Sync + Send + 'static>(&mut self, value: T) -> &mut Self {
        self.params.push(Box::new(value));
        self
    }

    /// The values, in placeholder order, as tokio-postgres takes them.
    pub(crate) fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.params
            .iter()
            .map(|param| param.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }

    /// Appends ` AND <condition>` restricting `column` to `scope`.
    ///
    /// A subtree scope is `column = ns OR column` in the half-open range `[ns + "/", ns + "0")`.
    /// Namespace columns use the `C` collation (byte order), where `'0'` is the character
    /// after `'/'`: the range holds exactly the namespaces below `ns` segment by segment
    /// (`user-4` does not cover `user-42`), and the btree index on the column serves it.
    pub(crate) fn and_scope(&mut self, column: &str, scope: &Scope) -> &mut Self {
        let namespace = scope.namespace.as_str();
        if !scope.descendants {
            self.push(" AND ")
                .push(column)
                .push(" = ")
                .bind(namespace.to_owned(), "text");
        } else if !scope.namespace.is_root() {
            self.push(" AND (")
                .push(column)
                .push(" = ")
                .bind(namespace.to_owned(), "text")
                .push(" OR (")
                .push(column)
                .push(" >= ")
                .bind(format!("{namespace}/"), "text")
                .push(" AND ")
                .push(column)
                .push(" < ")
                .bind(format!("{namespace}0"), "text")
                .push("))");
        }
        self
    }

    /// Appends the conditions of a page of a listing ordered by `ns`, then `keys` (text
    /// columns): in `scope`, and after `after` (a namespace and the values of `keys`) when
    /// given, in the form the planner answers by seeking an index on `(ns, keys...)`: an
    /// exact scope is `ns = $` with the keys after the position's (the first key bounded
    /// alone, which the index seeks to; nothing when the position's namespace comes later,
    /// everything when earlier); a subtree is the position as a row comparison with the
    /// subtree's conditions. A row comparison beside `ns = $` was read as a scan of the
    /// whole namespace (0.95 ms against 0.055 ms for a page of 100 entities 16,000 deep).
    pub(crate) fn and_page(
        &mut self,
        ns: &str,
        keys: &[&str],
        scope: &Scope,
        after: Option<(&str, &[&str])>,
    ) -> &mut Self {
        let row = |sql: &mut Self, columns: &[&str], values: &[&str]| {
            sql.push(" AND (").push(&columns.join(", ")).push(") > (");
            for (index, value) in values.iter().enumerate() {
                if index > 0 {
                    sql.push(", ");
                }
                sql.bind((*value).to_owned(), "text");
            }
            sql.push(")");
        };
        self.and_scope(ns, scope);
        let namespace = scope.namespace.as_str();
        match after {
            None => {}
            Some((at, _)) if !scope.descendants && namespace < at => {
                self.push(" AND false");
            }
            Some((at, values)) if !scope.descendants && namespace == at => {
                if let (Some(first), Some(value)) = (keys.first(), values.first()) {
                    self.push(" AND ")
                        .push(first)
                        .push(" >= ")
                        .bind((*value).to_owned(), "text");
                }
                if keys.len() > 1 {
                    row(self, keys, values);
                } else if let (Some(first), Some(value)) = (keys.first(), values.first()) {
                    self.push(" AND ")
                        .push(first)
                        .push(" > ")
                        .bind((*value).to_owned(), "text");
                }
            }
            Some(_) if !scope.descendants => {}
            Some((at, values)) => {
                let columns: Vec<&str> = std::iter::once(ns).chain(keys.iter().copied()).collect();
                let mut all = vec![at];
                all.extend(values.iter().copied());
                row(self, &columns, &all);
            }
        }
        self
    }
}

/// `text` with every `{s}` replaced by the quoted schema name.
pub(crate) fn qualify(schema: &str, text: &str) -> String {
    text.replace("{s}", schema)
}

/// The analyzer every PostgreSQL index and query uses: the same as every other backend's.
pub(crate) fn analyzer() -> Analyzer {
    Analyzer::default()
}

/// A fingerprint of what the search columns hold: what the indexed fields are made of
/// ([`INDEXED_FIELDS_VERSION`](memory_core::search::INDEXED_FIELDS_VERSION)) and the shared
/// analyzer's behaviour (a hash of its terms for a fixed probe text and for every stop
/// word). The `terms` columns hold analyzed terms, so a schema indexed with another
/// fingerprint is re-indexed by the next migration (see `schema::migrate`).
pub(crate) fn analyzer_fingerprint() -> String {
    format!(
        "fields {} analyzer {}",
        memory_core::search::INDEXED_FIELDS_VERSION,
        analyzer().fingerprint()
    )
}

/// A document analysed for the search columns: the distinct terms the GIN index matches on,
/// the term frequencies BM25 ranks with, and each field's term count.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexedTerms {
    /// The distinct terms, sorted, for the `terms` `text[]` column. (Not a `tsvector`: its
    /// lexemes may total at most 1 MiB, less than the distinct bigrams of 1 MiB of Chinese.)
    pub(crate) terms: Vec<String>,
    /// `{"term": [frequency in field 0, field 1, ...], ...}`, for the `term_freqs` jsonb column.
    /// Reading one term's frequencies is a key lookup.
    pub(crate) frequencies: serde_json::Value,
    /// The number of analyzer terms in each field.
    pub(crate) lengths: Vec<i32>,
}

/// Analyses a document of several fields with the shared analyzer (PostgreSQL's own parser
/// and dictionaries never see the text).
pub(crate) fn index_terms(fields: &[&str]) -> IndexedTerms {
    let analyzer = analyzer();
    let mut counts: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    let mut lengths = Vec::with_capacity(fields.len());
    for (index, text) in fields.iter().enumerate() {
        let mut length = 0i32;
        analyzer.for_each_term(text, |term| {
            length = length.saturating_add(1);
            let per_field = match counts.get_mut(term) {
                Some(per_field) => per_field,
                None => counts
                    .entry(term.to_owned())
                    .or_insert_with(|| vec![0; fields.len()]),
            };
            if let Some(count) = per_field.get_mut(index) {
                *count += 1;
            }
        });
        lengths.push(length);
    }
    let terms = counts.keys().cloned().collect();
    let frequencies = counts
        .into_iter()
        .map(|(term, per_field)| (term, serde_json::Value::from(per_field)))
        .collect::<serde_json::Map<_, _>>();
    IndexedTerms {
        terms,
        frequencies: serde_json::Value::Object(frequencies),
        lengths,
    }
}

impl IndexedTerms {
    /// The term count of field `index`, 0 past the last field.
    pub(crate) fn length(&self, index: usize) -> i32 {
        self.lengths.get(index).copied().unwrap_or(0)
    }
}

/// The terms the user's `text` is searched with (see
/// [`Analyzer::query_terms`](memory_core::text::Analyzer::query_terms)), bound as one
/// `text[]` parameter, so no user text is ever query syntax. `None` when the text has no
/// searchable term.
#[cfg(test)]
pub(crate) fn search_terms(text: &str) -> Option<Vec<String>> {
    nonempty(analyzer().query_terms(text))
}

/// `terms`, or `None` when there is none to search with.
pub(crate) fn nonempty(terms: Vec<String>) -> Option<Vec<String>> {
    (!terms.is_empty()).then_some(terms)
}

/// A timestamp as stored: nanoseconds since the Unix epoch, in a `bigint`. (`timestamptz`
/// keeps microseconds only, so it would not give back the `DateTime` that was saved.)
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field` outside the years 1678 to 2261, the range of
/// 64-bit nanoseconds.
pub(crate) fn encode_time(field: &str, at: DateTime<Utc>) -> Result<i64> {
    at.timestamp_nanos_opt().ok_or_else(|| {
        MemoryError::invalid(
            field,
            format!("{at} is outside the range the postgres backend stores (years 1678 to 2261)"),
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

/// PostgreSQL `text` and `jsonb` cannot hold the NUL character; such input is refused before
/// it reaches the server.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field`.
pub(crate) fn reject_nul(field: &str, text: &str) -> Result<()> {
    if text.contains('\0') {
        return Err(MemoryError::invalid(
            field,
            "contains the NUL character, which PostgreSQL text cannot hold",
        ));
    }
    Ok(())
}

/// [`reject_nul`] for every key and string of a JSON value.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `field`.
pub(crate) fn reject_nul_json(field: &str, value: &serde_json::Value) -> Result<()> {
    match value {
        serde_json::Value::String(text) => reject_nul(field, text),
        serde_json::Value::Array(values) => values
            .iter()
            .try_for_each(|value| reject_nul_json(field, value)),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(key, value)| {
            reject_nul(field, key)?;
            reject_nul_json(field, value)
        }),
        _ => Ok(()),
    }
}

/// An `i64` column holding a count.
pub(crate) fn to_count(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// A `usize` limit as a `bigint`.
pub(crate) fn limit_value(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Runs a `SELECT DISTINCT ns ...` statement.
pub(crate) async fn namespaces(db: &Database, sql: &Sql, what: &str) -> Result<Vec<Namespace>> {
    let rows = db.query(sql, || what.to_owned()).await?;
    rows.iter()
        .map(|row| {
            let text: String = row.try_get(0).map_err(|error| corrupt(what, error))?;
            Namespace::parse(&text)
                .map_err(|error| corrupt(format_args!("namespace {text:?}"), error))
        })
        .collect()
}

/// Runs a `SELECT count(*) ...` statement.
pub(crate) async fn count(db: &Database, sql: &Sql, what: &str) -> Result<usize> {
    let rows = db.query(sql, || what.to_owned()).await?;
    let value: i64 = rows
        .first()
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(|error| corrupt(what, error))?
        .unwrap_or(0);
    Ok(to_count(value))
}

/// Records a batch of accesses to `table` (`pages` or `entities`, the crate's fixed names,
/// never caller text) in one statement: the batch is tallied per record
/// ([`AccessEvent::tally`](memory_core::AccessEvent::tally)), then one `UPDATE ... FROM
/// unnest(...)` adds each record's count to `access_count` (saturating at `i64::MAX`, as
/// [`AccessTally::apply`](memory_core::AccessTally::apply) does) and moves `last_accessed`
/// to the latest access. Concurrent batches add up: each row's update reads the committed
/// count under its row lock. Records that do not exist, and ids holding NUL (which no
/// stored record has), are skipped.
pub(crate) async fn record_accesses(
    db: &Database,
    table: &'static str,
    events: &[memory_core::AccessEvent],
) -> Result<()> {
    let tallies = memory_core::AccessEvent::tally(events)?;
    let mut namespaces = Vec::with_capacity(tallies.len());
    let mut ids = Vec::with_capacity(tallies.len());
    let mut counts = Vec::with_capacity(tallies.len());
    let mut times = Vec::with_capacity(tallies.len());
    for tally in &tallies {
        if tally.id.contains('\0') {
            continue;
        }
        namespaces.push(tally.namespace.as_str());
        ids.push(tally.id);
        counts.push(i64::try_from(tally.count).unwrap_or(i64::MAX));
        times.push(encode_time("at", tally.last)?);
    }
    if ids.is_empty() {
        return Ok(());
    }
    let what = || format!("recording {} accesses in {table}", ids.len());
    let client = db.client(&what()).await?;
    let statement = client
        .prepare_cached(&db.qualify(&format!(
            "UPDATE {{s}}.{table} AS t SET \
             access_count = CASE WHEN t.access_count > 9223372036854775807 - a.n \
             THEN 9223372036854775807 ELSE t.access_count + a.n END, \
             last_accessed = greatest(t.last_accessed, a.last) \
             FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) \
             AS a (ns, id, n, last) \
             WHERE t.ns = a.ns AND t.id = a.id"
        )))
        .await
        .map_err(|error| crate::error::pg_error(what(), error))?;
    let params: [&(dyn ToSql + Sync); 4] = [&namespaces, &ids, &counts, &times];
    client
        .execute(&statement, &params)
        .await
        .map_err(|error| crate::error::pg_error(what(), error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_core::Namespace;

    #[test]
    fn scope_conditions() {
        let ns = Namespace::parse("user-4/a").unwrap();
        let mut sql = Sql::new("\"s\"", "SELECT 1 FROM {s}.t WHERE true");
        sql.and_scope("ns", &ns.exact());
        assert_eq!(
            sql.text,
            "SELECT 1 FROM \"s\".t WHERE true AND ns = $1::text"
        );
        let mut sql = Sql::new("\"s\"", "x WHERE true");
        sql.and_scope("ns", &ns.subtree());
        assert_eq!(
            sql.text,
            "x WHERE true AND (ns = $1::text OR (ns >= $2::text AND ns < $3::text))"
        );
        assert_eq!(sql.params().len(), 3);
        let mut sql = Sql::new("\"s\"", "x WHERE true");
        sql.and_scope("ns", &Scope::all());
        assert_eq!(sql.text, "x WHERE true");
    }

    #[test]
    fn documents_are_indexed_per_field() {
        let indexed = index_terms(&["Cats, cats!", "", "cat-lover 状态管理"]);
        assert_eq!(indexed.terms, ["cat", "lover", "态管", "状态", "管理"]);
        assert_eq!(
            indexed.frequencies,
            serde_json::json!({
                "cat": [2, 0, 1], "lover": [0, 0, 1],
                "态管": [0, 0, 1], "状态": [0, 0, 1], "管理": [0, 0, 1]
            })
        );
        assert_eq!(indexed.lengths, [2, 0, 5]);
        assert_eq!((indexed.length(2), indexed.length(7)), (5, 0));
        let empty = index_terms(&["the of"]);
        assert_eq!(
            (empty.terms.len(), empty.frequencies.clone(), empty.lengths),
            (0, serde_json::json!({}), vec![0])
        );
        let many = "word ".repeat(300);
        assert_eq!(
            index_terms(&[many.as_str()]).frequencies,
            serde_json::json!({"word": [300]})
        );
    }

    #[test]
    fn queries_become_their_terms() {
        for (text, want) in [
            ("AND OR NEAR( \"unbalanced", vec!["near", "unbalanc"]),
            ("a & b | !c", vec!["b", "c"]),
            ("title:x*", vec!["titl", "x"]),
            (
                "it's o'clock \\ back\\slash",
                vec!["oclock", "back", "slash"],
            ),
            ("状态管理", vec!["状态", "态管", "管理"]),
        ] {
            assert_eq!(
                search_terms(text),
                Some(want.into_iter().map(String::from).collect()),
                "{text}"
            );
        }
        assert_eq!(search_terms("the of 🙂"), None);
        assert_eq!(search_terms(""), None);
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

    #[test]
    fn nul_characters_are_refused_with_the_field() {
        assert!(reject_nul("content", "fine").is_ok());
        let error = reject_nul("content", "a\0b").unwrap_err();
        assert!(error.to_string().contains("content"));
        let json = serde_json::json!({"k": ["x", {"deep\u{0}": 1}]});
        assert!(reject_nul_json("metadata", &json).is_err());
        assert!(reject_nul_json("metadata", &serde_json::json!({"k": [1, "x"]})).is_ok());
    }
}
