//! The page's HTML helpers: escaping, `data:` URLs, figures, notes, and
//! the page's head with its style sheet.

use crate::RunReport;
use std::path::Path;

/// When the run finished, as "2026-12-01 10:58 UTC".
pub(super) fn finished(report: &RunReport) -> String {
    match report.finished_at.as_deref() {
        Some(t) => match (t.get(..10), t.get(11..16)) {
            (Some(day), Some(time)) => format!("{} {} UTC", escape(day), escape(time)),
            _ => escape(t),
        },
        None => "(time not recorded)".to_string(),
    }
}

pub(super) fn figure(svg: &str, caption: &str) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
        escape(caption)
    )
}

pub(super) fn error_note(path: &Path, problem: &str) -> String {
    format!(
        "<p class=\"error\">{}: {}</p>\n",
        escape(&path.display().to_string()),
        escape(problem)
    )
}

/// Seconds as "0.9 s", "5 min 12 s" or "1 h 02 min".
pub(super) fn duration(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else if seconds < 3600.0 {
        format!(
            "{} min {:02} s",
            (seconds / 60.0) as u64,
            seconds as u64 % 60
        )
    } else {
        format!(
            "{} h {:02} min",
            (seconds / 3600.0) as u64,
            (seconds / 60.0) as u64 % 60
        )
    }
}

/// Escapes text for HTML and SVG, in element content and in quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 with padding (RFC 4648), for `data:` URLs.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub(super) const HEAD: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Zero to Hero in Rust: runs</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1100px; padding: 0 12px 48px; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-bottom: 2px solid #ddd; font-size: 1.25em; }
h3 { font-size: 1.1em; } h4 { margin: 1.2em 0 0.4em; } h5 { margin: 0.6em 0 0.2em; font-size: 0.95em; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.9em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 8px; }
pre.samples { max-height: 24em; overflow-y: auto; }
.meta, .note { color: #555; font-size: 0.9em; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
td { overflow-wrap: break-word; }
th { background: #f0f0f0; }
.pass { background: #d8f5d8; } .fail { background: #ffd6d6; font-weight: bold; } .info { color: #666; }
.badge { font-size: 0.8em; padding: 2px 8px; border-radius: 8px; margin-left: 8px; white-space: nowrap; }
.failures { background: #ffd6d6; border: 2px solid #c00; padding: 8px 12px; margin: 12px 0; overflow-wrap: anywhere; }
.error { color: #a00; overflow-wrap: anywhere; }
figure { margin: 12px 0; max-width: 100%; }
figure svg, figure img { max-width: 100%; height: auto; display: block; }
figure img.drawing { background: #fff; max-width: none; }
figure svg.chart { width: 720px; }
figure svg.heatmap { width: 600px; }
figcaption { color: #555; font-size: 0.85em; }
.gallery { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(320px, 100%), 1fr)); gap: 8px; }
.gallery figure { margin: 0; min-width: 0; }
details.run { margin: 12px 0; padding: 4px 8px; border: 1px solid #ddd; }
details.run > summary, details.targets > summary { cursor: pointer; font-weight: bold; }
.headline { margin: 8px 0 12px; } .headline p { margin: 0; }
.headline table { width: 100%; table-layout: fixed; font-size: 0.9em; }
.headline th, .headline td { padding: 3px 4px; overflow-wrap: anywhere; }
.headline th:nth-child(1) { width: 30%; } .headline th:nth-child(2) { width: 16%; }
.headline th:nth-child(3), .headline th:nth-child(4) { width: 20%; } .headline th:nth-child(5) { width: 14%; }
@media (max-width: 600px) { .headline table { font-size: 0.78em; } }
tr.stage th { background: #e8eef8; font-weight: normal; overflow-wrap: anywhere; }
.token-view { display: flex; flex-direction: column; gap: 12px; }
.tokenizers { display: grid; grid-template-columns: repeat(auto-fit, minmax(220px, 1fr)); gap: 8px; }
.tokenizer { border: 1px solid #ddd; padding: 4px 8px; min-width: 0; }
.pieces { font-family: ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.8; margin: 0; }
.tok { border-radius: 3px; padding: 1px 0; }
.ids { font-size: 0.75em; color: #555; overflow-wrap: anywhere; }
.quote { font-family: ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
</style>
</head>
<body>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_test_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
    }

    #[test]
    fn durations_read_as_a_person_would_say_them() {
        assert_eq!(duration(0.94), "0.9 s");
        assert_eq!(duration(312.0), "5 min 12 s");
        assert_eq!(duration(3725.0), "1 h 02 min");
    }
}
