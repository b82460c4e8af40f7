//! The cursor of a listing's next page: the position of the page's last record (a
//! memory's [`ListPosition`], an entity's [`EntityPosition`](agent_memory::EntityPosition),
//! a relation's [`RelationPosition`](agent_memory::RelationPosition)), as the hexadecimal of
//! its JSON, so it travels in a query string or on a command line without escaping. The next
//! page starts after that record, so it costs what it returns (the store seeks its order)
//! and writes between pages neither repeat a record nor push one off a page, where an offset
//! would do both.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::failure::Failure;

/// Longest cursor read: the position's JSON holds at most a namespace of 512 bytes, an id
/// of 256 and a page's title lowercased (1,024 bytes, half again once lowercased: `Ⱥ` is
/// two bytes and `ⱥ` three) or a relation's ends and type, each escaped at most six times
/// over (a control character is `\u0001`), in hexadecimal.
const MAX_CURSOR: usize = 2 * 6 * (512 + 256 + 1_536 + 64);

/// The cursor naming `position`.
pub(crate) fn encode(position: &impl Serialize) -> String {
    let json = serde_json::to_string(position).unwrap_or_default();
    let mut cursor = String::with_capacity(json.len() * 2);
    for byte in json.bytes() {
        cursor.push(char::from(HEX[usize::from(byte >> 4)]));
        cursor.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    cursor
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The position a cursor from [`encode`] names.
///
/// # Errors
/// [`Failure::invalid`] naming `cursor` for anything [`encode`] did not write for a `T`.
pub(crate) fn decode<T: DeserializeOwned>(cursor: &str) -> Result<T, Failure> {
    let refuse = || {
        Failure::invalid(
            "cursor",
            format!(
                "cursor {:?} is not one this server gave",
                cursor.chars().take(64).collect::<String>()
            ),
        )
        .with_hint("pass the next_cursor of the previous page, or no cursor for the first page")
    };
    if cursor.len() > MAX_CURSOR || !cursor.len().is_multiple_of(2) {
        return Err(refuse());
    }
    let digit = |byte: u8| char::from(byte).to_digit(16).map(|d| d as u8);
    let bytes = cursor
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(refuse)?;
    serde_json::from_slice(&bytes).map_err(|_| refuse())
}

/// The position the cursor of a request names, if it has one (an empty cursor is none).
///
/// # Errors
/// As [`decode`].
pub(crate) fn position<T: DeserializeOwned>(cursor: Option<&str>) -> Result<Option<T>, Failure> {
    cursor.filter(|c| !c.is_empty()).map(decode).transpose()
}

/// Cuts `items`, listed with a limit one more than `limit` (so the extra one tells whether
/// another page follows), to `limit`, and returns the cursor of the next page when there is
/// one: the position of the last item kept.
pub(crate) fn cut<T, P: Serialize>(
    items: &mut Vec<T>,
    limit: usize,
    position_of: impl Fn(&T) -> P,
) -> Option<String> {
    if items.len() <= limit {
        return None;
    }
    items.truncate(limit);
    items.last().map(|last| encode(&position_of(last)))
}

/// One page of `items`, a listing read whole (the page index, the conflicts), after the
/// position `cursor` names, in the order of `key_of`, and the cursor of the next page: the
/// key of the last item kept. As with the stores' own positions, a record deleted or
/// settled between two pages (a conflict resolved from the first page) neither pushes
/// another off the next page nor repeats one, where an offset would skip as many records as
/// left before it.
///
/// # Errors
/// [`Failure::invalid`] naming `cursor` for a cursor this listing did not give.
pub(crate) fn page_after<T, K>(
    mut items: Vec<T>,
    cursor: Option<&str>,
    limit: usize,
    key_of: impl Fn(&T) -> K,
) -> Result<(Vec<T>, Option<String>), Failure>
where
    K: Ord + Serialize + DeserializeOwned,
{
    let after: Option<K> = position(cursor)?;
    items.sort_by_cached_key(&key_of);
    if let Some(after) = after {
        // Sorted: the items after the cursor's key are a suffix, found by binary search.
        let start = items.partition_point(|item| key_of(item) <= after);
        items.drain(..start);
    }
    let next = cut(&mut items, limit, key_of);
    Ok((items, next))
}

#[cfg(test)]
mod tests {
    use agent_memory::{ListPosition, MemoryItem, Namespace};

    use super::*;

    #[test]
    fn a_cursor_names_the_position_of_the_memory_it_was_made_from() {
        let namespace = Namespace::parse("user/a").unwrap();
        let item = MemoryItem::new(namespace, "x")
            .and_then(|item| item.with_id("id with \"quotes\" & spaces/ü"))
            .unwrap();
        let cursor = encode(&ListPosition::of(&item));
        assert!(cursor.bytes().all(|b| b.is_ascii_hexdigit()), "{cursor}");
        assert_eq!(
            decode::<ListPosition>(&cursor).unwrap(),
            ListPosition::of(&item)
        );
    }

    /// The longest position a listing gives, a page index line whose title is of control
    /// characters, makes a cursor that is read back.
    #[test]
    fn the_longest_position_is_read_back() {
        let longest = ("n".repeat(512), "\u{1}".repeat(1_024), "i".repeat(256));
        let cursor = encode(&longest);
        assert!(cursor.len() <= MAX_CURSOR, "{}", cursor.len());
        let back: (String, String, String) = decode(&cursor).unwrap();
        assert_eq!(back, longest);
        let wide = ("n".repeat(512), "ⱥ".repeat(512), "i".repeat(256));
        assert_eq!(
            decode::<(String, String, String)>(&encode(&wide)).unwrap(),
            wide
        );
    }

    #[test]
    fn anything_else_is_refused_by_name() {
        let namespace = Namespace::parse("user/a").unwrap();
        let item = MemoryItem::new(namespace, "x").unwrap();
        let good = encode(&ListPosition::of(&item));
        let hex_of = |text: &str| text.bytes().map(|b| format!("{b:02x}")).collect::<String>();
        for bad in [
            "0".to_owned(),
            "50".to_owned(),
            "zz".to_owned(),
            "é".to_owned(),
            good[1..].to_owned(),
            good.replace('7', "Z"),
            "a".repeat(MAX_CURSOR + 2),
            hex_of("{}"),
            hex_of(r#"{"created_at":"2026-01-01T00:00:00Z","id":"","namespace":"a"}"#),
            hex_of(r#"{"created_at":"2026-01-01T00:00:00Z","id":"m","namespace":"a b"}"#),
        ] {
            let failure = decode::<ListPosition>(&bad).unwrap_err();
            assert_eq!(failure.field.as_deref(), Some("cursor"), "{bad}");
        }
    }
}
