//! The BM25F ranking of memories and pages in SQL, as [`memory_core::search`] defines it for
//! every backend: one query builder, parameterised by the table's fields.

use memory_core::Scope;
use memory_core::search::{BM25_B, BM25_K1, MEMORY_FIELD_WEIGHTS, PAGE_FIELD_WEIGHTS};

use crate::database::Database;
use crate::sql::{Sql, limit_value};

/// One indexed field of a table: the column holding its length in terms, and its weight.
/// Its term frequencies are the field's position in each `term_freqs` array.
pub(crate) struct Field {
    /// The column holding the field's length in terms.
    pub(crate) length: &'static str,
    /// The field's BM25F weight.
    pub(crate) weight: f32,
}

/// A table searched by BM25F: its name, the alias its filters use, and its fields in the
/// order of its `term_freqs` arrays.
pub(crate) struct Ranked {
    /// The table, in the backend's schema.
    pub(crate) table: &'static str,
    /// The alias of the table in filter conditions (`m.kind`, `p.tags`).
    pub(crate) alias: &'static str,
    /// The fields, in the order of [`MEMORY_FIELD_WEIGHTS`] or [`PAGE_FIELD_WEIGHTS`].
    pub(crate) fields: &'static [Field],
}

/// Memories: content with tags, then the context.
pub(crate) const MEMORIES: Ranked = Ranked {
    table: "memories",
    alias: "m",
    fields: &[
        Field {
            length: "doc_len",
            weight: MEMORY_FIELD_WEIGHTS[0],
        },
        Field {
            length: "context_len",
            weight: MEMORY_FIELD_WEIGHTS[1],
        },
    ],
};

/// Pages: title, summary, tags, content.
pub(crate) const PAGES: Ranked = Ranked {
    table: "pages",
    alias: "p",
    fields: &[
        Field {
            length: "title_len",
            weight: PAGE_FIELD_WEIGHTS[0],
        },
        Field {
            length: "summary_len",
            weight: PAGE_FIELD_WEIGHTS[1],
        },
        Field {
            length: "tags_len",
            weight: PAGE_FIELD_WEIGHTS[2],
        },
        Field {
            length: "content_len",
            weight: PAGE_FIELD_WEIGHTS[3],
        },
    ],
};

/// Starts a statement whose CTE `scored (rid, score, own_words)` holds every row of
/// `ranked.table` in `scope` that holds one of `terms` and passes the conditions `passes`
/// appends (each ` AND ...`, on the alias [`Ranked::alias`]), with its BM25F score as a
/// `real` and whether its first field holds one of the terms (for a memory, its own words
/// and not only the context beside it). The caller appends the `SELECT` that reads `scored`.
///
/// The statistics are per namespace: each row is scored with the number of documents, the
/// document frequencies and the mean field lengths (at least 1) of its own namespace in the
/// table, whatever the filter, as the in-memory backend ranks each namespace of a scope on
/// its own. Rows failing the filter take part in the statistics but are not scored.
///
/// Steps: `matched`, the rows holding a query term (the GIN index on `terms`) with whether
/// they pass the filter; `hits`, one row per matched row and query term it holds, with the
/// term's frequencies (a key lookup in `term_freqs`) and its document frequency in the
/// namespace (a window count); `corpus`, each namespace's document count and mean lengths
/// (an index-only aggregate over the scope); `scored`, the sum over the terms of
/// `idf · w / (k1 + w)`, `w` summing each field's weighted, length-normalised frequency.
pub(crate) fn scored(
    db: &Database,
    ranked: &Ranked,
    terms: Vec<String>,
    rarest: Option<usize>,
    scope: &Scope,
    passes: impl FnOnce(&mut Sql),
) -> Sql {
    // With `rarest`, each namespace keeps the terms of the smallest (document frequency,
    // position), as `memory_core::search::rarest_terms` does: a term repeated in the list
    // would take two places, so the list is made distinct first.
    let terms = match rarest {
        Some(_) => {
            let mut seen = std::collections::HashSet::new();
            terms
                .into_iter()
                .filter(|term| seen.insert(term.clone()))
                .collect()
        }
        None => terms,
    };
    let Ranked {
        table,
        alias: a,
        fields,
    } = ranked;
    let lengths: String = fields
        .iter()
        .map(|field| format!("{a}.{}, ", field.length))
        .collect();
    let mut sql = db.sql(&format!(
        "WITH matched AS (SELECT {a}.rid, {a}.ns, {lengths}{a}.term_freqs, (true"
    ));
    passes(&mut sql);
    sql.push(&format!(
        ") AS passes FROM {{s}}.{table} {a} WHERE {a}.terms && "
    ))
    .bind(terms.clone(), "text[]");
    sql.and_scope(&format!("{a}.ns"), scope);
    let hit_lengths: String = fields
        .iter()
        .map(|field| format!("x.{}, ", field.length))
        .collect();
    let all_hits = format!(
        "SELECT x.rid, x.ns, x.passes, {hit_lengths}t.term, t.ord, \
         x.term_freqs -> t.term AS tf, \
         count(*) OVER (PARTITION BY x.ns, t.term)::float8 AS df \
         FROM matched x CROSS JOIN unnest("
    );
    let hits = match rarest {
        None => sql.push(&format!("), hits AS ({all_hits}")),
        // A term's (df, position) is its own, so the dense rank over them numbers the
        // namespace's terms held by some record, rarest first.
        Some(_) => sql.push(&format!(
            "), hits AS (SELECT * FROM (SELECT a.*, dense_rank() OVER \
             (PARTITION BY a.ns ORDER BY a.df, a.ord) AS pick FROM ({all_hits}"
        )),
    };
    hits.bind(terms, "text[]");
    sql.push(") WITH ORDINALITY AS t (term, ord) WHERE x.term_freqs ? t.term)");
    if let Some(n) = rarest {
        sql.push(" a) r WHERE r.pick <= ")
            .bind(limit_value(n), "bigint")
            .push(")");
    }
    let averages: String = fields
        .iter()
        .enumerate()
        .map(|(index, field)| {
            format!(
                ", greatest(coalesce(avg({a}.{}), 0), 1)::float8 AS avg{index}",
                field.length
            )
        })
        .collect();
    sql.push(&format!(
        ", corpus AS MATERIALIZED (SELECT {a}.ns, count(*)::float8 AS n{averages} \
         FROM {{s}}.{table} {a} WHERE true"
    ));
    sql.and_scope(&format!("{a}.ns"), scope);
    let b = f64::from(BM25_B);
    let k1 = f64::from(BM25_K1);
    let weighted = fields
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let weight = f64::from(field.weight);
            format!(
                "{weight:?}::float8 * (h.tf ->> {index})::float8 \
                 / (1 - {b:?}::float8 + {b:?}::float8 * h.{} / c.avg{index})",
                field.length
            )
        })
        .collect::<Vec<_>>()
        .join(" + ");
    sql.push(&format!(
        " GROUP BY {a}.ns), scored AS (SELECT h.rid, \
         sum(ln(1 + (c.n - h.df + 0.5) / (h.df + 0.5)) * x.w / ({k1:?}::float8 + x.w))::real \
         AS score, bool_or((h.tf ->> 0)::float8 > 0) AS own_words FROM hits h JOIN corpus c ON c.ns = h.ns \
         CROSS JOIN LATERAL (SELECT {weighted} AS w) x \
         WHERE h.passes GROUP BY h.rid) "
    ));
    sql
}
