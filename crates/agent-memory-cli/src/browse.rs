//! `get` and `list`: the memories as stored, by id or by filters, without a search.

use std::fmt::Write as _;

use agent_memory::{ListPosition, MemoryFilter, TimeView};

use crate::cli::{GetArgs, ListArgs};
use crate::commands::{
    Outcome, Settings, kinds, one_line, parse_metadata_conditions, parse_tags, parse_time, to_json,
};
use crate::failure::{ErrorKind, Failure};
use crate::views::MemoryView;

/// The most memories one `list` prints.
const MAX_LIST: usize = 10_000;

/// `get`: the memory `args.id` of the namespace, or `not_found`.
pub(crate) async fn get(settings: &Settings, args: GetArgs) -> Result<Outcome, Failure> {
    let memory = settings.open().await?;
    let Some(item) = memory.store().get(&settings.namespace, &args.id).await? else {
        return Err(Failure::new(
            ErrorKind::NotFound,
            format!(
                "no memory {:?} in namespace {}",
                args.id, settings.namespace
            ),
        )
        .with_hint(
            "check the id and the namespace (-n): records are only found in their own namespace",
        ));
    };
    let view = MemoryView::from(&item);
    let mut text = format!(
        "{}  {}  {}\n{}",
        view.id, view.created_at, view.kind, view.content
    );
    if !view.tags.is_empty() {
        let _ = write!(text, "\ntags: {}", view.tags.join(", "));
    }
    if view.metadata.as_object().is_some_and(|map| !map.is_empty()) {
        let _ = write!(text, "\nmetadata: {}", view.metadata);
    }
    Ok(Outcome {
        json: to_json(&view)?,
        text,
    })
}

/// `list`: the memories matching the filters, oldest (or newest) first, at most
/// `args.limit`, after `args.cursor`'s memory; the cursor of the next page when there is
/// one.
pub(crate) async fn list(settings: &Settings, args: ListArgs) -> Result<Outcome, Failure> {
    if args.limit == 0 || args.limit > MAX_LIST {
        return Err(Failure::invalid(
            "limit",
            format!("limit {} is outside 1 to {MAX_LIST}", args.limit),
        ));
    }
    let scope = if args.exact {
        settings.namespace.exact()
    } else {
        settings.namespace.subtree()
    };
    let mut filter = MemoryFilter::new(scope)
        .with_kinds(kinds(&args.kinds))
        .with_time_range(
            args.since
                .as_deref()
                .map(|t| parse_time("since", t))
                .transpose()?,
            args.until
                .as_deref()
                .map(|t| parse_time("until", t))
                .transpose()?,
        )
        .with_limit(args.limit);
    filter.tags = parse_tags(&args.tags)?;
    if let Some(raw) = args.metadata.as_deref() {
        filter.metadata = parse_metadata_conditions(raw)?.into_iter().collect();
    }
    if args.newest_first {
        filter = filter.newest_first();
    }
    if args.current {
        filter = filter.with_view(TimeView::Current(chrono::Utc::now()));
    }
    filter.after = crate::cursor::position(args.cursor.as_deref())?;
    filter.limit = Some(args.limit.saturating_add(1));
    let memory = settings.open().await?;
    let mut items = memory.store().list(&filter).await?;
    let next_cursor = crate::cursor::cut(&mut items, args.limit, ListPosition::of);
    let views: Vec<MemoryView> = items.iter().map(MemoryView::from).collect();
    let mut text = String::new();
    if views.is_empty() {
        text.push_str("no memories");
    }
    let now = chrono::Utc::now();
    for (view, item) in views.iter().zip(&items) {
        let ended = view
            .ended
            .as_ref()
            .map(|ended| format!("  [{}]", ended.kind))
            .or_else(|| crate::views::validity_note(item, now).map(|note| format!("  [{note}]")))
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "{}  {}  {}{ended}",
            view.created_at,
            view.id,
            one_line(&view.content)
        );
    }
    Ok(Outcome {
        json: match &next_cursor {
            Some(cursor) => serde_json::json!({ "items": to_json(&views)?, "next_cursor": cursor }),
            None => serde_json::json!({ "items": to_json(&views)? }),
        },
        text: match &next_cursor {
            Some(cursor) => format!("{}\nmore: --cursor {cursor}", text.trim_end()),
            None => text.trim_end().to_owned(),
        },
    })
}
