//! Line-oriented text input, the one reader behind every JSON Lines and SWF file schedlm reads:
//! each line comes with its 1-based number, and a line whose bytes are not UTF-8 is one bad
//! line (reported with its number and the offending byte) instead of the end of the file.
//!
//! Lines end at `\n`; a `\r` before it (CRLF files) is dropped, and so is a UTF-8 byte-order
//! mark at the very start of the input (files saved by some Windows editors begin with one).

use std::io::{self, BufRead};

/// Most characters of input an error message quotes ([`excerpt`]).
pub const EXCERPT_CHARS: usize = 80;

/// Input text as an error message quotes it: in double quotes, escaped (control characters,
/// quotes and backslashes as Rust writes them: `\u{1b}`, `\"`), at most [`EXCERPT_CHARS`]
/// characters, and when cut, with `…` and the whole length: `"abc…" (209715200 bytes)`. A bad
/// line of any size, or binary bytes, never floods the terminal.
pub fn excerpt(text: &str) -> String {
    let mut out = String::from("\"");
    let mut chars = text.chars();
    for c in chars.by_ref().take(EXCERPT_CHARS) {
        out.extend(c.escape_debug());
    }
    out.push('"');
    if chars.next().is_some() {
        out.insert(out.len() - 1, '…');
        out.push_str(&format!(" ({} bytes)", text.len()));
    }
    out
}

/// Longest error message about one line that a reader passes on ([`bounded`]).
pub const MESSAGE_CHARS: usize = 240;

/// A parser's message about a bad line (serde's `invalid type: string "…"` quotes the whole
/// string) cut to [`MESSAGE_CHARS`]: its start and its end (`at line 1 column 3005`), with
/// `…` and the whole length between.
pub fn bounded(message: &str) -> String {
    let count = message.chars().count();
    if count <= MESSAGE_CHARS {
        return message.to_string();
    }
    let head: String = message.chars().take(MESSAGE_CHARS - 60).collect();
    let tail: String = message.chars().skip(count - 40).collect();
    format!("{head}… ({} bytes) …{tail}", message.len())
}

/// One line of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextLine {
    /// 1-based line number.
    pub number: usize,
    /// The line without its ending, or what makes its bytes not text.
    pub text: Result<String, String>,
}

impl TextLine {
    /// Whether the line is empty or white space only (a line that is not text is not blank).
    pub fn is_blank(&self) -> bool {
        self.text.as_ref().is_ok_and(|t| t.trim().is_empty())
    }
}

/// The lines of `reader`; the iterator yields an I/O error (and then stops) when reading fails.
pub fn text_lines<R: BufRead>(reader: R) -> TextLines<R> {
    TextLines {
        reader,
        number: 0,
        buf: Vec::new(),
        failed: false,
    }
}

/// Iterator over the lines of a reader; see [`text_lines`].
pub struct TextLines<R> {
    reader: R,
    number: usize,
    buf: Vec<u8>,
    failed: bool,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl<R: BufRead> Iterator for TextLines<R> {
    type Item = io::Result<TextLine>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        self.buf.clear();
        match self.reader.read_until(b'\n', &mut self.buf) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => {
                self.failed = true;
                return Some(Err(e));
            }
        }
        self.number += 1;
        let mut bytes = self.buf.as_slice();
        if self.number == 1 {
            bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
        }
        bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        Some(Ok(TextLine {
            number: self.number,
            text: decode(bytes),
        }))
    }
}

/// The bytes as text, or where they stop being UTF-8.
fn decode(bytes: &[u8]) -> Result<String, String> {
    match std::str::from_utf8(bytes) {
        Ok(t) => Ok(t.to_string()),
        Err(e) => {
            let at = e.valid_up_to();
            Err(format!(
                "not UTF-8 text: byte 0x{:02X} at column {} cannot start or continue a character",
                bytes[at],
                at + 1
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_bounded_keeping_their_end() {
        let long = format!(
            "invalid type: string \"{}\", expected i64 at line 1 column 3005",
            "x".repeat(3000)
        );
        let cut = bounded(&long);
        assert!(cut.chars().count() < MESSAGE_CHARS + 30, "{cut}");
        assert!(
            cut.ends_with("at line 1 column 3005") && cut.contains("bytes)"),
            "{cut}"
        );
        assert_eq!(bounded("short"), "short");
    }

    #[test]
    fn excerpts_are_bounded_and_escaped() {
        assert_eq!(excerpt("abc"), "\"abc\"");
        assert_eq!(excerpt("a\"b\u{1b}[2J"), "\"a\\\"b\\u{1b}[2J\"");
        let long = "x".repeat(200 << 20);
        let cut = excerpt(&long);
        assert!(cut.len() < 120, "{}", cut.len());
        assert!(cut.ends_with("…\" (209715200 bytes)"), "{cut}");
    }

    fn lines(input: &[u8]) -> Vec<TextLine> {
        text_lines(input).collect::<io::Result<_>>().unwrap()
    }

    #[test]
    fn numbers_endings_and_the_byte_order_mark() {
        let got = lines(b"\xEF\xBB\xBF{\"a\":1}\r\n\n  \nlast");
        let texts: Vec<_> = got.iter().map(|l| l.text.clone().unwrap()).collect();
        assert_eq!(texts, vec!["{\"a\":1}", "", "  ", "last"]);
        assert_eq!(got[3].number, 4);
        assert!(got[1].is_blank() && got[2].is_blank() && !got[0].is_blank());
        // Only the first line's mark is a mark.
        let got = lines(b"a\n\xEF\xBB\xBFb\n");
        assert_eq!(got[1].text.as_deref(), Ok("\u{FEFF}b"));
    }

    #[test]
    fn a_bad_byte_spoils_its_line_only() {
        let got = lines(b"{\"a\":1}\n{\"b\":\"\xFF\"}\n{\"c\":3}\n");
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].text.as_deref(), Ok("{\"a\":1}"));
        let err = got[1].text.clone().unwrap_err();
        assert!(err.contains("0xFF") && err.contains("column 7"), "{err}");
        assert!(!got[1].is_blank());
        assert_eq!(got[2].text.as_deref(), Ok("{\"c\":3}"));
    }

    #[test]
    fn empty_input_has_no_lines() {
        assert!(lines(b"").is_empty());
        assert_eq!(lines(b"\xEF\xBB\xBF").len(), 1);
    }
}
