//! Prompt text: the token estimate every budget in this crate uses, and the rendering of
//! recall results as prompt sections.

use memory_core::text::is_cjk;

/// A rough token estimate: one token per character of a script written without spaces or
/// packed one to a token (Han, kana, Hangul, CJK punctuation, full-width forms, symbols
/// and emoji), one per four other characters.
///
/// Every token budget of the crate (conversation compaction, `Memory::recall_context`) is
/// counted with this one rule.
pub fn estimate_tokens(text: &str) -> usize {
    let (each, other) = text.chars().fold((0usize, 0usize), |(each, other), c| {
        if one_token_each(c) {
            (each + 1, other)
        } else {
            (each, other + 1)
        }
    });
    each + other.div_ceil(4)
}

/// Whether [`estimate_tokens`] counts `c` as a token of its own: a CJK character
/// ([`is_cjk`]), Hangul (syllables and jamo), CJK punctuation and symbols, a full-width
/// or half-width form, or a symbol or emoji (the dingbats and miscellaneous symbols, and
/// everything from U+1F000). Tokenizers rarely pack such characters several to a token;
/// counting them as a quarter each let a budget hold four times the text it was set for.
pub(crate) fn one_token_each(c: char) -> bool {
    is_cjk(c)
        || matches!(c as u32,
            0x1100..=0x11FF        // Hangul Jamo
            | 0x2600..=0x27BF      // Miscellaneous Symbols, Dingbats
            | 0x2E80..=0x303F      // CJK radicals, Kangxi, CJK symbols and punctuation
            | 0x3130..=0x318F      // Hangul compatibility jamo
            | 0xA960..=0xA97F      // Hangul Jamo Extended-A
            | 0xAC00..=0xD7FF      // Hangul syllables, Jamo Extended-B
            | 0xFE30..=0xFE4F      // CJK compatibility forms
            | 0xFF00..=0xFFEF      // Half-width and full-width forms
            | 0x1F000..=0x1FAFF    // Tiles, cards, emoji, pictographs, symbols
        )
}

/// The most characters that [`estimate_tokens`] can count as `tokens` tokens (four per
/// token, when none is CJK): a character cap that never cuts text that would fit.
pub(crate) fn max_chars_within(tokens: usize) -> usize {
    tokens.saturating_mul(4)
}

/// Which lines of a section [`render_section`] writes when not all fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fit {
    /// Every line that fits, passing over those that do not: the lines stand alone (one
    /// result each).
    Each,
    /// The lines up to the first that does not fit: a line belongs with those above it
    /// (a relation under its entity).
    Prefix,
}

/// Appends `title` and as many whole `lines` as fit in the token budget, chosen by `fit`.
pub(crate) fn render_section(
    title: &str,
    lines: &[String],
    fit: Fit,
    max_tokens: usize,
    used: &mut usize,
    out: &mut String,
) {
    let header_cost = estimate_tokens(title) + 1;
    let mut wrote_header = false;
    for line in lines {
        let cost = estimate_tokens(line) + 1 + if wrote_header { 0 } else { header_cost };
        if *used + cost > max_tokens {
            match fit {
                Fit::Each => continue,
                Fit::Prefix => break,
            }
        }
        if !wrote_header {
            out.push_str(title);
            out.push('\n');
            wrote_header = true;
        }
        out.push_str(line);
        out.push('\n');
        *used += cost;
    }
}

pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`one_line`] cut to `max_chars` characters, with `…` ending a cut line.
pub(crate) fn one_line_cut(text: &str, max_chars: usize) -> String {
    let line = one_line(text);
    if line.chars().count() <= max_chars {
        return line;
    }
    let mut cut = memory_core::text::prefix_within(&line, max_chars.saturating_sub(1)).to_owned();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_packed_one_to_a_token_count_one_each() {
        assert_eq!(
            estimate_tokens("hello world!"),
            3,
            "four characters a token"
        );
        assert_eq!(estimate_tokens("你好世界"), 4);
        // Hangul, CJK punctuation, full-width letters and emoji had counted a quarter each.
        assert_eq!(estimate_tokens("안녕하세요"), 5);
        assert_eq!(estimate_tokens("。、「」"), 4);
        assert_eq!(estimate_tokens("ＡＢＣＤ"), 4);
        assert_eq!(estimate_tokens("🙂🚀"), 2);
        assert_eq!(
            estimate_tokens("☀ ok"),
            2,
            "a symbol, then three characters"
        );
        assert!(max_chars_within(estimate_tokens("안녕")) >= "안녕".chars().count());
    }

    #[test]
    fn a_cut_line_ends_between_graphemes() {
        let flags = "🇵🇹".repeat(100);
        let cut = one_line_cut(&flags, 160);
        assert!(cut.chars().count() <= 160, "{cut}");
        let kept = cut.strip_suffix('…').unwrap();
        assert_eq!(kept, "🇵🇹".repeat(79), "no flag split in half");
    }

    #[test]
    fn a_prefix_section_stops_at_the_first_line_that_does_not_fit() {
        let lines = ["short".to_owned(), "x".repeat(80), "tiny".to_owned()];
        let (mut each, mut prefix) = (String::new(), String::new());
        let (mut used_each, mut used_prefix) = (0, 0);
        render_section("T:", &lines, Fit::Each, 10, &mut used_each, &mut each);
        render_section("T:", &lines, Fit::Prefix, 10, &mut used_prefix, &mut prefix);
        assert_eq!(each, "T:\nshort\ntiny\n");
        assert_eq!(prefix, "T:\nshort\n");
    }
}
