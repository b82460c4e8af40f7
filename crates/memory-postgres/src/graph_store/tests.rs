//! Unit tests of the graph store's tag limits.

use super::*;

#[test]
fn tags_are_distinct_and_limited() {
    let tags = Tag::normalize_all(["a", "b", "c"]).unwrap();
    assert_eq!(limit_tags(&tags, 2), ["a", "b"]);
    assert_eq!(limit_tags(&tags, 8), ["a", "b", "c"]);
}
