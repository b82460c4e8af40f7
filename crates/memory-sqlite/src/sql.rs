//! Building parameterised SQL, and encoding values the way the schema stores them.

use chrono::{DateTime, Utc};
use memory_core::{MemoryError, Namespace, Result, Scope, Tag};
use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use crate::error::{Context, corrupt};

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

    /// Appends the conditions of a page of a listing ordered by `ns`, then `keys`: in
    /// `scope`, and after `after` (a namespace and the values of `keys`) when given, in the
    /// form SQLite answers by seeking an index on `(ns, keys...)` and reading it in order
    /// until the page is full. An exact scope is `ns = ?` with the keys after the position's
    /// (nothing when the position's namespace comes later, everything when earlier); a
    /// subtree is the range of namespaces it spans, opened by the position as a row
    /// comparison, with the namespaces inside that range but outside the subtree (`a-b`
    /// between `a` and `a/`) checked on the rows read. [`and_scope`](Self::and_scope)'s
    /// `ns = ? OR ns >= ?` is read as two ranges and sorted whole.
    pub(crate) fn and_page(
        &mut self,
        ns: &str,
        keys: &[&str],
        scope: &Scope,
        after: Option<(&str, &[&str])>,
    ) -> &mut Self {
        let namespace = scope.namespace.as_str();
        let row = |sql: &mut Self, columns: &[&str], values: &[&str]| {
            sql.push(" AND (").push(&columns.join(", ")).push(") > (");
            for (index, value) in values.iter().enumerate() {
                if index > 0 {
                    sql.push(", ");
                }
                sql.bind((*value).to_owned());
            }
            sql.push(")");
        };
        if !scope.descendants {
            self.push(" AND ")
                .push(ns)
                .push(" = ")
                .bind(namespace.to_owned());
            match after {
                Some((at, _)) if namespace < at => {
                    self.push(" AND 0");
                }
                Some((at, values)) if namespace == at => {
                    // The first key bounded alone, so the index seeks to it.
                    if let (Some(first), Some(value)) = (keys.first(), values.first()) {
                        self.push(" AND ")
                            .push(first)
                            .push(" >= ")
                            .bind((*value).to_owned());
                    }
                    row(self, keys, values);
                }
                _ => {}
            }
            return self;
        }
        if let Some((at, values)) = after {
            let columns: Vec<&str> = std::iter::once(ns).chain(keys.iter().copied()).collect();
            let mut all = vec![at];
            all.extend(values.iter().copied());
            row(self, &columns, &all);
        }
        if !scope.namespace.is_root() {
            if after.is_none() {
                self.push(" AND ")
                    .push(ns)
                    .push(" >= ")
                    .bind(namespace.to_owned());
            }
            self.push(" AND ")
                .push(ns)
                .push(" < ")
                .bind(format!("{namespace}0"))
                .push(" AND (")
                .push(ns)
                .push(" = ")
                .bind(namespace.to_owned())
                .push(" OR ")
                .push(ns)
                .push(" >= ")
                .bind(format!("{namespace}/"))
                .push(")");
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

/// Runs a `SELECT DISTINCT ns ...` statement.
pub(crate) fn namespaces(connection: &Connection, sql: &Sql, what: &str) -> Result<Vec<Namespace>> {
    let texts = connection
        .prepare_cached(&sql.text)
        .and_then(|mut statement| {
            statement
                .query_map(params_from_iter(sql.params.iter()), |row| {
                    row.get::<_, String>(0)
                })?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .context(|| what.to_owned())?;
    texts
        .iter()
        .map(|text| {
            Namespace::parse(text)
                .map_err(|error| corrupt(format_args!("namespace {text:?}"), error))
        })
        .collect()
}

/// Runs a `SELECT count(*) ...` statement.
pub(crate) fn count(connection: &Connection, sql: &Sql, what: &str) -> Result<usize> {
    connection
        .prepare_cached(&sql.text)
        .and_then(|mut statement| {
            statement.query_row(params_from_iter(sql.params.iter()), |row| {
                row.get::<_, i64>(0)
            })
        })
        .map(to_count)
        .context(|| what.to_owned())
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

/// A batch's accesses to one page or entity, encoded for its row ([`AccessEvent::tally`](memory_core::AccessEvent::tally)).
#[derive(Debug)]
pub(crate) struct EncodedAccess {
    ns: String,
    id: String,
    count: i64,
    last: i64,
}

/// The batch's accesses per record, checked and encoded before the database is touched.
pub(crate) fn encode_accesses(events: &[memory_core::AccessEvent]) -> Result<Vec<EncodedAccess>> {
    memory_core::AccessEvent::tally(events)?
        .into_iter()
        .map(|tally| {
            Ok(EncodedAccess {
                ns: tally.namespace.as_str().to_owned(),
                id: tally.id.to_owned(),
                count: i64::try_from(tally.count).unwrap_or(i64::MAX),
                last: encode_time("at", tally.last)?,
            })
        })
        .collect()
}

/// Adds the accesses to `table`'s `access_count` (saturating at `i64::MAX`, as
/// [`AccessTally::apply`](memory_core::AccessTally::apply) does) and moves `last_accessed`
/// to the latest access, one `UPDATE` by `(ns, id)` per record, in the caller's
/// transaction. Rows that do not exist are not touched. `table` is one of the crate's
/// fixed table names, never caller text.
pub(crate) fn apply_accesses(
    transaction: &rusqlite::Transaction<'_>,
    table: &'static str,
    accesses: &[EncodedAccess],
) -> Result<()> {
    let sql = format!(
        "UPDATE {table} SET access_count = CASE WHEN access_count > 9223372036854775807 - ?3 \
         THEN 9223372036854775807 ELSE access_count + ?3 END, \
         last_accessed = max(coalesce(last_accessed, ?4), ?4) WHERE ns = ?1 AND id = ?2"
    );
    let what = || format!("recording accesses in {table}");
    let mut statement = transaction.prepare_cached(&sql).context(what)?;
    for access in accesses {
        statement
            .execute(rusqlite::params![
                access.ns,
                access.id,
                access.count,
                access.last
            ])
            .context(what)?;
    }
    Ok(())
}

/// `[rid,rid,...]`: the row ids as a JSON array, for `json_each`.
pub(crate) fn json_rids(rids: impl Iterator<Item = i64>) -> String {
    use std::fmt::Write as _;
    let mut list = String::from("[");
    for (at, rid) in rids.enumerate() {
        if at > 0 {
            list.push(',');
        }
        let _ = write!(list, "{rid}");
    }
    list.push(']');
    list
}
