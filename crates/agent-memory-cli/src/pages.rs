//! Knowledge pages as the HTTP API and the MCP tools write and read them, and `page`: the
//! same from the command line.

use std::fmt::Write as _;

use agent_memory::{KnowledgePage, KnowledgeStore, Namespace};
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::cli::{PageArgs, PageCommand, PageId};
use crate::commands::{Outcome, Settings, to_json};
use crate::failure::{ErrorKind, Failure};
use crate::views::{MAX_REFERRERS, PageIndexView, PageView};

/// Runs one `page` subcommand in the settings' namespace.
pub(crate) async fn run(settings: &Settings, command: PageCommand) -> Result<Outcome, Failure> {
    match command {
        PageCommand::Put(args) => put(settings, args).await,
        PageCommand::Show(args) => show(settings, args).await,
        PageCommand::List => list(settings).await,
        PageCommand::Remove(args) => remove(settings, args).await,
    }
}

async fn put(settings: &Settings, args: PageArgs) -> Result<Outcome, Failure> {
    let page = KnowledgePage::new(settings.namespace.clone(), &args.id, args.title)?
        .with_summary(args.summary)
        .with_content(args.content)
        .with_tags(&args.tags)?
        .with_references(&args.references)?;
    let read_at = read_at(args.if_updated_at.as_deref())?;
    let memory = settings.open().await?;
    let view = put_page(memory.knowledge().as_ref(), page, read_at).await?;
    Ok(Outcome {
        text: format!("page {} in {}", view.id, view.namespace),
        json: to_json(&view)?,
    })
}

async fn show(settings: &Settings, args: PageId) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let view = page_view(memory.knowledge().as_ref(), &settings.namespace, &args.id).await?;
    let mut text = format!("{} ({})", view.title, view.id);
    for (label, value) in [
        ("summary", view.summary.clone()),
        ("tags", view.tags.join(", ")),
        ("cites", view.references.join(", ")),
        (
            "cited by",
            if view.referrers_truncated {
                format!("{}, and more", view.referrers.join(", "))
            } else {
                view.referrers.join(", ")
            },
        ),
    ] {
        if !value.is_empty() {
            let _ = write!(text, "\n{label}: {value}");
        }
    }
    if !view.content.is_empty() {
        let _ = write!(text, "\n\n{}", view.content);
    }
    Ok(Outcome {
        json: to_json(&view)?,
        text,
    })
}

async fn list(settings: &Settings) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let index = memory
        .knowledge()
        .get_index(&settings.namespace.subtree())
        .await?;
    let pages: Vec<PageIndexView> = index.iter().map(PageIndexView::from).collect();
    let mut text = String::new();
    for page in &pages {
        let _ = write!(text, "{}  {}", page.id, page.title);
        if page.referenced_by > 0 {
            let _ = write!(text, "  (cited by {})", page.referenced_by);
        }
        text.push('\n');
    }
    Ok(Outcome {
        text: text.trim_end().to_owned(),
        json: json!({ "pages": to_json(&pages)? }),
    })
}

async fn remove(settings: &Settings, args: PageId) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    if !memory
        .knowledge()
        .delete_page(&settings.namespace, &args.id)
        .await?
    {
        return Err(Failure::new(
            ErrorKind::NotFound,
            format!("no page {:?} in namespace {}", args.id, settings.namespace),
        ));
    }
    Ok(Outcome {
        text: format!("removed page {}", args.id),
        json: json!({ "removed": 1 }),
    })
}

/// The position of an index line in the page index as listed a page at a time: by
/// namespace, title regardless of case, and id, the order of the stores' index (the cursor
/// of [`page_after`](crate::cursor::page_after)).
pub(crate) fn index_position(entry: &agent_memory::PageIndexEntry) -> (String, String, String) {
    (
        entry.namespace.as_str().to_owned(),
        entry.title.to_lowercase(),
        entry.id.clone(),
    )
}

/// The `if_updated_at` of a page write: the `updated_at` of the page as read, in RFC 3339
/// (as every page view shows it, to the nanosecond).
///
/// # Errors
/// [`ErrorKind::InvalidInput`] naming `if_updated_at` for a time that is not RFC 3339.
pub(crate) fn read_at(raw: Option<&str>) -> Result<Option<DateTime<Utc>>, Failure> {
    raw.map(|raw| {
        DateTime::parse_from_rfc3339(raw.trim())
            .map(|at| at.with_timezone(&Utc))
            .map_err(|error| {
                Failure::invalid(
                    "if_updated_at",
                    format!("{raw:?} is not an RFC 3339 time: {error}"),
                )
                .with_hint("pass the page's updated_at as a read of it shows it")
            })
    })
    .transpose()
}

/// Adds `page`, or replaces the stored one with its id (its creation time and access
/// statistics stay), then reads it back with the pages that cite it.
///
/// With `read_at` (the `updated_at` of the page as the writer read it), the page is only
/// replaced if it is still as read (`KnowledgeStore::update_page_if`): two agents editing
/// one page from one copy do not lose an edit, as the second is told to read again. Its
/// `updated_at` is moved past `read_at`, so a second edit from the same copy is refused
/// even within one clock tick.
///
/// # Errors
/// With `read_at`: [`ErrorKind::Conflict`] when the page changed since it was read,
/// [`ErrorKind::NotFound`] when it does not exist (deleted since, or never written).
pub(crate) async fn put_page(
    knowledge: &dyn KnowledgeStore,
    page: KnowledgePage,
    read_at: Option<DateTime<Utc>>,
) -> Result<PageView, Failure> {
    let (namespace, id) = (page.namespace.clone(), page.id.clone());
    let written = page.clone();
    agent_memory::write_page(knowledge, page, read_at).await?;
    match page_view(knowledge, &namespace, &id).await {
        // Deleted by another write since: the answer is the page as written (it was
        // stored), without the pages citing it.
        Err(failure) if failure.kind == ErrorKind::NotFound => {
            Ok(PageView::with_referrers(&written, Vec::new()))
        }
        other => other,
    }
}

/// Page `id` of `namespace` with the pages that cite it.
///
/// # Errors
/// [`ErrorKind::NotFound`] when there is no such page.
pub(crate) async fn page_view(
    knowledge: &dyn KnowledgeStore,
    namespace: &Namespace,
    id: &str,
) -> Result<PageView, Failure> {
    let Some(page) = knowledge.get_page(namespace, id).await? else {
        return Err(Failure::new(
            ErrorKind::NotFound,
            format!("no page {id:?} in namespace {namespace}"),
        ));
    };
    let referrers = knowledge
        .referrers_at_most(namespace, id, MAX_REFERRERS + 1)
        .await?;
    Ok(PageView::with_referrers(&page, referrers))
}
