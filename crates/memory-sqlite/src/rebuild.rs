//! Rebuilding the derived full-text index from the records, when the schema reports it
//! stale (`schema::stale_index`): after the migration that introduced it, or when the index
//! layout or the analyzer's behaviour changed.

use memory_core::Result;
use rusqlite::Connection;

use crate::database::in_transaction;
use crate::fulltext::{self, Bulk};
use crate::{knowledge_store, memory_store, schema};

/// Rebuilds the index if it is stale, in one immediate transaction: the tables are
/// recreated, filled from every memory and page, and the fingerprint recorded last, so a
/// crash part way leaves the old fingerprint and the next open rebuilds again. Another
/// connection that rebuilt meanwhile is noticed under the write lock.
pub(crate) fn refresh(connection: &mut Connection, display: &str) -> Result<()> {
    let what = format!("opening {display}: rebuilding the full-text index");
    if schema::stale_index(connection, &what)?.is_none() {
        return Ok(());
    }
    in_transaction(connection, &what, |transaction| {
        let Some(fingerprint) = schema::stale_index(transaction, &what)? else {
            return Ok(());
        };
        fulltext::create_tables(transaction)?;
        let mut memories = Bulk::new(fulltext::memories());
        memory_store::for_each_document(transaction, |rid, ns, doc| {
            memories.add(transaction, rid, ns, doc)
        })?;
        memories.finish(transaction)?;
        let mut pages = Bulk::new(fulltext::pages());
        knowledge_store::for_each_document(transaction, |rid, ns, doc| {
            pages.add(transaction, rid, ns, doc)
        })?;
        pages.finish(transaction)?;
        schema::record_index(transaction, &fingerprint, &what)
    })
}

/// Checks both indexes against the records ([`fulltext::FullText::check`]) and returns the
/// problems found.
pub(crate) fn check(connection: &Connection) -> Result<Vec<String>> {
    let mut memories = fulltext::memories().check();
    memory_store::for_each_document(connection, |rid, _, doc| {
        memories.entry(connection, rid, doc)
    })?;
    let mut problems = memories.finish(connection, "memories")?;
    let mut pages = fulltext::pages().check();
    knowledge_store::for_each_document(connection, |rid, _, doc| {
        pages.entry(connection, rid, doc)
    })?;
    problems.extend(pages.finish(connection, "pages")?);
    Ok(problems)
}
