//! Prompt text: the token estimate every budget in this crate uses, and the rendering of
//! recall results as prompt sections.

use memory_core::text::is_cjk;

/// A rough token estimate: one token per CJK character, one per four other characters.
///
/// Every token budget of the crate (conversation compaction, `Memory::recall_context`) is
/// counted with this one rule.
pub fn estimate_tokens(text: &str) -> usize {
    let (cjk, other) = text.chars().fold((0usize, 0usize), |(cjk, other), c| {
        if is_cjk(c) {
            (cjk + 1, other)
        } else {
            (cjk, other + 1)
        }
    });
    cjk + other.div_ceil(4)
}

/// The most characters that [`estimate_tokens`] can count as `tokens` tokens (four per
/// token, when none is CJK): a character cap that never cuts text that would fit.
pub(crate) fn max_chars_within(tokens: usize) -> usize {
    tokens.saturating_mul(4)
}

/// Appends `title` and as many whole `lines` as fit in the token budget.
pub(crate) fn render_section(
    title: &str,
    lines: &[String],
    max_tokens: usize,
    used: &mut usize,
    out: &mut String,
) {
    let header_cost = estimate_tokens(title) + 1;
    let mut wrote_header = false;
    for line in lines {
        let cost = estimate_tokens(line) + 1 + if wrote_header { 0 } else { header_cost };
        if *used + cost > max_tokens {
            continue;
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
    let mut cut: String = line.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
