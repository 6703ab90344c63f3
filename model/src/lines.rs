//! Line-oriented text input, the one reader behind every JSON Lines and SWF file schedlm reads:
//! each line comes with its 1-based number, and a line whose bytes are not UTF-8 is one bad
//! line (reported with its number and the offending byte) instead of the end of the file.
//!
//! Lines end at `\n`; a `\r` before it (CRLF files) is dropped, and so is a UTF-8 byte-order
//! mark at the very start of the input (files saved by some Windows editors begin with one).
//!
//! Input is bounded: a line longer than [`max_line_bytes`] (64 MiB unless
//! [`MAX_LINE_BYTES_ENV`] says otherwise) is an error naming its number as soon as that many
//! bytes are read, so `/dev/zero`, a FIFO that never ends a line or one endless line costs at
//! most the bound in memory; a whole file read at once ([`read_bounded`]) has the same bound.

use std::fmt;
use std::io::{self, BufRead, Read};
use std::path::Path;

/// Most bytes of one line (or of one file read whole) when [`MAX_LINE_BYTES_ENV`] is unset:
/// 64 MiB, far above the instances and records schedlm writes.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

/// The environment variable that sets [`max_line_bytes`]: a number of bytes (`1000000`) or
/// with a binary suffix (`256K`, `64M`, `1G`).
pub const MAX_LINE_BYTES_ENV: &str = "SCHEDLM_MAX_LINE_BYTES";

/// The most bytes one line may hold: [`MAX_LINE_BYTES_ENV`] when set, else
/// [`DEFAULT_MAX_LINE_BYTES`]. The error names the variable and its value when it is not a
/// size of at least 1 byte.
pub fn max_line_bytes() -> Result<usize, String> {
    match std::env::var(MAX_LINE_BYTES_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_MAX_LINE_BYTES),
        Err(std::env::VarError::NotUnicode(v)) => Err(format!(
            "{MAX_LINE_BYTES_ENV} is not a size: {}",
            excerpt(&v.to_string_lossy())
        )),
        Ok(v) => parse_size(&v).ok_or_else(|| {
            format!(
                "{MAX_LINE_BYTES_ENV} is not a size of at least 1 byte (e.g. 1000000, 256K, 64M, 1G): {}",
                excerpt(&v)
            )
        }),
    }
}

/// `1000`, `256K`, `64M`, `1G` (binary multiples; `KiB`, `MiB`, `GiB` too) as bytes; at least 1.
fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: usize = text[..digits].parse().ok()?;
    let shift = match text[digits..].trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return None,
    };
    number.checked_mul(1usize << shift).filter(|&n| n >= 1)
}

/// An input longer than the bound: one line, or a whole file read at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLong {
    /// The 1-based line that was too long, or `None` for a whole file.
    pub line: Option<usize>,
    /// The bound, in bytes.
    pub limit: usize,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.line {
            Some(n) => format!("line {n} is"),
            None => "the file is".to_string(),
        };
        write!(
            f,
            "{what} longer than {} bytes ({}), the most schedlm reads (a file without line \
             ends, such as /dev/zero, or not JSON Lines?); {MAX_LINE_BYTES_ENV} raises the bound",
            self.limit,
            human(self.limit)
        )
    }
}

impl std::error::Error for TooLong {}

/// `64 MiB`, `1.5 KiB`, `12 bytes`.
fn human(bytes: usize) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = "bytes";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    if unit == "bytes" {
        format!("{bytes} bytes")
    } else if value.fract() == 0.0 {
        format!("{value} {unit}")
    } else {
        format!("{value:.1} {unit}")
    }
}

/// The whole text of `path`, refused once it passes [`max_line_bytes`] (an error of kind
/// `InvalidData` holding a [`TooLong`]) instead of growing with an endless input. Bytes that
/// are not UTF-8 are an `InvalidData` error as in [`std::fs::read_to_string`].
pub fn read_bounded(path: &Path) -> io::Result<String> {
    read_to_string_bounded(std::fs::File::open(path)?)
}

/// [`read_bounded`] of any reader (standard input).
pub fn read_to_string_bounded<R: Read>(mut reader: R) -> io::Result<String> {
    let limit = max_line_bytes().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut bytes = Vec::new();
    // Grown here, doubling up to exactly the bound, as in `read_line_bounded`.
    loop {
        if bytes.len() == bytes.capacity() {
            let grow = bytes.capacity().max(8 << 10).min(limit + 1 - bytes.len());
            bytes.reserve_exact(grow);
        }
        let step = (bytes.capacity() - bytes.len()).min(limit + 1 - bytes.len());
        let got = (&mut reader).take(step as u64).read_to_end(&mut bytes)?;
        if got == 0 || bytes.len() > limit {
            break;
        }
    }
    if bytes.len() > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            TooLong { line: None, limit },
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text: byte 0x{:02X} at offset {at}",
                e.as_bytes()[at]
            ),
        )
    })
}

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

/// The lines of `reader`, each at most [`max_line_bytes`] long; the iterator yields an I/O
/// error (and then stops) when reading fails, when a line is longer (kind `InvalidData`,
/// holding a [`TooLong`] with the line's number) or when [`MAX_LINE_BYTES_ENV`] is not a size.
pub fn text_lines<R: BufRead>(reader: R) -> TextLines<R> {
    TextLines {
        reader,
        number: 0,
        buf: Vec::new(),
        failed: false,
        limit: max_line_bytes(),
    }
}

/// [`text_lines`] with an explicit bound on the bytes of one line (its end not counted).
pub fn text_lines_bounded<R: BufRead>(reader: R, limit: usize) -> TextLines<R> {
    TextLines {
        limit: Ok(limit),
        ..text_lines(reader)
    }
}

/// Reads one line of at most `limit` bytes (its `\n` not counted) into `buf`, with its `\n`
/// when it has one, as [`BufRead::read_until`] does; returns the bytes read (0 at the end).
/// A longer line is an `InvalidData` error holding [`TooLong`] with `number`, after reading at
/// most `limit + 1` bytes of it: the one bounded line read behind every reader of schedlm.
pub fn read_line_bounded<R: BufRead + ?Sized>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    limit: usize,
    number: usize,
) -> io::Result<usize> {
    let start = buf.len();
    // `read_until` into a Vec grows it by doubling past the bound (to 128 MiB for a 64 MiB
    // bound), and an allocator that keeps freed pages keeps every smaller copy too: grow it
    // here instead, doubling up to exactly the bound.
    let mut n = 0;
    loop {
        if buf.len() == buf.capacity() {
            let grow = buf.capacity().max(8 << 10).min(limit + 1 - n);
            buf.reserve_exact(grow);
        }
        let step = (buf.capacity() - buf.len()).min(limit + 1 - n);
        let got = (&mut *reader).take(step as u64).read_until(b'\n', buf)?;
        n += got;
        if got == 0 || buf.last() == Some(&b'\n') || n > limit {
            break;
        }
    }
    if n > limit && buf.last() != Some(&b'\n') {
        buf.truncate(start);
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            TooLong {
                line: Some(number),
                limit,
            },
        ));
    }
    Ok(n)
}

/// Iterator over the lines of a reader; see [`text_lines`].
pub struct TextLines<R> {
    reader: R,
    number: usize,
    buf: Vec<u8>,
    failed: bool,
    limit: Result<usize, String>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl<R: BufRead> Iterator for TextLines<R> {
    type Item = io::Result<TextLine>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        self.buf.clear();
        let limit = match &self.limit {
            Ok(limit) => *limit,
            Err(e) => {
                self.failed = true;
                return Some(Err(io::Error::new(io::ErrorKind::InvalidInput, e.clone())));
            }
        };
        match read_line_bounded(&mut self.reader, &mut self.buf, limit, self.number + 1) {
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
    fn a_line_longer_than_the_bound_is_an_error_naming_it() {
        let input: &[u8] = b"abcd\nabcde\nabcdef\nx\n";
        let mut lines = text_lines_bounded(input, 5);
        assert_eq!(lines.next().unwrap().unwrap().text.as_deref(), Ok("abcd"));
        assert_eq!(lines.next().unwrap().unwrap().text.as_deref(), Ok("abcde"));
        let e = lines.next().unwrap().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let too_long = e.get_ref().and_then(|e| e.downcast_ref::<TooLong>());
        assert_eq!(
            too_long,
            Some(&TooLong {
                line: Some(3),
                limit: 5
            })
        );
        assert!(e
            .to_string()
            .starts_with("line 3 is longer than 5 bytes (5 bytes)"));
        assert!(lines.next().is_none(), "the reader stops at the error");
        // A last line without its end counts the same.
        let mut lines = text_lines_bounded(&b"abcdef"[..], 5);
        assert!(lines.next().unwrap().is_err());
    }

    #[test]
    fn an_endless_line_is_read_only_up_to_the_bound() {
        let mut endless = io::BufReader::new(io::repeat(0));
        let mut buf = Vec::new();
        let e = read_line_bounded(&mut endless, &mut buf, 1 << 20, 1).unwrap_err();
        assert!(e.to_string().contains("1048576 bytes (1 MiB)"), "{e}");
        assert!(
            buf.is_empty() && buf.capacity() <= 4 << 20,
            "{}",
            buf.capacity()
        );
    }

    #[test]
    fn sizes_and_the_whole_file_bound() {
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("256K"), Some(256 << 10));
        assert_eq!(parse_size("64 MiB"), Some(64 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("5T"), None);
        assert_eq!(human(64 << 20), "64 MiB");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(12), "12 bytes");
        let dir = std::env::temp_dir().join(format!("schedlm-lines-{}", std::process::id()));
        std::fs::write(&dir, "short").unwrap();
        assert_eq!(read_bounded(&dir).unwrap(), "short");
        std::fs::remove_file(&dir).unwrap();
        let e = read_to_string_bounded(io::repeat(b'x')).unwrap_err();
        assert!(e.to_string().starts_with("the file is longer than"), "{e}");
    }

    #[test]
    fn empty_input_has_no_lines() {
        assert!(lines(b"").is_empty());
        assert_eq!(lines(b"\xEF\xBB\xBF").len(), 1);
    }
}
