//! Re-indexing the pages of a schema with this build's analyzer.

use memory_core::Result;

use super::row::page_terms;
use crate::database::Database;
use crate::error::{Context, corrupt};
use crate::sql::REINDEX_BATCH;

/// Rebuilds `terms` and the field lengths of every page with this build's analyzer, in
/// batches, inside the caller's transaction. Returns how many rows it rewrote.
pub(crate) async fn reindex(
    transaction: &deadpool_postgres::Transaction<'_>,
    db: &Database,
) -> Result<u64> {
    let what = || format!("re-indexing the pages of schema {}", db.schema());
    let select = db.qualify(
        "SELECT rid, title, summary, tags, content FROM {s}.pages WHERE rid > $1::bigint \
         ORDER BY rid LIMIT $2::bigint",
    );
    let update = db.qualify(
        "UPDATE {s}.pages AS p SET \
         terms = ARRAY(SELECT jsonb_object_keys(u.term_freqs)), term_freqs = u.term_freqs, \
         title_len = u.title_len, summary_len = u.summary_len, tags_len = u.tags_len, \
         content_len = u.content_len \
         FROM unnest($1::bigint[], $2::jsonb[], $3::integer[], $4::integer[], $5::integer[], \
         $6::integer[]) \
         AS u (rid, term_freqs, title_len, summary_len, tags_len, content_len) \
         WHERE p.rid = u.rid",
    );
    let mut after = 0i64;
    let mut total = 0u64;
    loop {
        let rows = transaction
            .query(&select, &[&after, &REINDEX_BATCH])
            .await
            .context(what)?;
        let Some(last) = rows.last() else {
            return Ok(total);
        };
        after = last.try_get(0).map_err(|error| corrupt(what(), error))?;
        let mut rids = Vec::with_capacity(rows.len());
        let mut frequencies = Vec::with_capacity(rows.len());
        let mut lengths: [Vec<i32>; 4] = Default::default();
        for row in &rows {
            let field = |error| corrupt(what(), error);
            let rid: i64 = row.try_get(0).map_err(field)?;
            let title: String = row.try_get(1).map_err(field)?;
            let summary: String = row.try_get(2).map_err(field)?;
            let tags: Vec<String> = row.try_get(3).map_err(field)?;
            let content: String = row.try_get(4).map_err(field)?;
            let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
            let indexed = page_terms(&title, &summary, &tags, &content);
            rids.push(rid);
            for (index, list) in lengths.iter_mut().enumerate() {
                list.push(indexed.length(index));
            }
            // The terms are the keys of the frequencies; the statement takes them from there.
            frequencies.push(indexed.frequencies);
        }
        let [title, summary, tags, content] = &lengths;
        total += transaction
            .execute(
                &update,
                &[&rids, &frequencies, title, summary, tags, content],
            )
            .await
            .context(what)?;
    }
}
