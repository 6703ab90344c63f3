//! The shell, as far as job scripts need it: the command lines of a script with their line
//! numbers, continuations joined, variables and here-documents substituted, sourced files
//! followed (through the caller, which confines them to the job directory), `bash -c` bodies
//! and calls of other scripts of the job read, arithmetic `$(( ))` evaluated when every operand
//! is known. What a value refers to and is not known stays as written, so a flag whose value
//! depends on it is not read. The launch lines it yields are read by [`crate::launch`].

use std::collections::HashMap;

/// One simple command of a script, as the shell would run it: the line where it starts and
/// its words (quotes removed, variables substituted, shell keywords, assignments and
/// redirections left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// First line number (1-based) of the command in its file.
    pub line: usize,
    /// Its words: the program and its arguments.
    pub words: Vec<String>,
}

/// The simple commands of a shell script: continuations (`\` at the end) joined, comments and
/// blank lines left out, lists split at their operators (`;`, `&&`, `||`, `|`, `&`), and shell
/// variables with a value (`N=8`, `export N=8`, `CMD="torchrun --nproc_per_node 8 train.py"`;
/// a here-document read into a variable) substituted where they are used. What a value refers
/// to and is not known stays as written (`N=$1` makes `$N` read `$1`), so a flag whose value
/// depends on it is not read; `${N:-8}` gives its default, 8. `eval WORDS` is read again;
/// `bash -c BODY` is read as a script of its own, each of its commands keeping the words before
/// `bash -c` (`srun --nodes=2 bash -c "..."`); a script of the job run with arguments is read
/// with `$1`, `$2`, ... bound. A file the script sources (`source env.sh`, `. ./env.sh`; its
/// text from `source`, `None` when it is not to be read) sets variables too, up to
/// four files deep; its commands are not the job's. The devices set for the script
/// (`export CUDA_VISIBLE_DEVICES=0,1,2,3`) are each later command's first word, as in the
/// inline form (`CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun ...`), unless it sets its own.
pub fn commands(text: &str, source: &mut dyn FnMut(&str) -> Option<String>) -> Vec<Command> {
    let mut out = Vec::new();
    let mut vars: HashMap<String, String> = HashMap::new();
    scan(text, &mut vars, source, 0, 0, &mut out);
    out
}

/// Lines a quoted string may span, at most (a quote never closed ends there).
const MAX_QUOTED_LINES: usize = 64;

/// Whether `text` ends inside a quoted string: a `"` or `'` opened and not closed (shell rules:
/// a backslash escapes outside single quotes, nothing is special inside them).
pub(crate) fn open_quote(text: &str) -> bool {
    let mut quoting = Quoting::default();
    for c in text.chars() {
        quoting.outside(c);
    }
    quoting.quote.is_some()
}

/// Where a left-to-right scan of shell text stands (shell rules: a backslash escapes the next
/// character outside single quotes, nothing is special inside them): the one quoting state of
/// [`open_quote`] and [`split_lists`].
#[derive(Debug, Default)]
struct Quoting {
    /// The quote open (`'` or `"`), if any.
    quote: Option<char>,
    /// Whether the previous character was an escaping backslash.
    escaped: bool,
}

impl Quoting {
    /// Takes in the next character; whether it stands outside quotes, unescaped, and is not a
    /// quote or backslash itself (a character the shell reads as syntax).
    fn outside(&mut self, c: char) -> bool {
        if self.escaped {
            self.escaped = false;
            return false;
        }
        match (self.quote, c) {
            (Some('\''), '\'') => self.quote = None,
            (Some('\''), _) => {}
            (_, '\\') => self.escaped = true,
            (Some('"'), '"') => self.quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => self.quote = Some(c),
            (None, _) => return true,
        }
        false
    }
}

/// Files sourced within sourced files, at most.
const MAX_SOURCE_DEPTH: usize = 4;

/// `source FILE` or `. FILE`: the file's name as written.
fn sourced_name(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("source ")
        .or_else(|| line.strip_prefix(". "))?;
    rest.split_whitespace().next()
}

/// [`commands`] of one file at `depth` (0: the script; above: a sourced file, whose
/// commands are dropped), with the variables set so far.
fn scan(
    text: &str,
    vars: &mut HashMap<String, String>,
    source: &mut dyn FnMut(&str) -> Option<String>,
    depth: usize,
    calls: usize,
    out: &mut Vec<Command>,
) {
    let mut lines = text.lines().enumerate();
    let mut current: Option<(usize, String)> = None;
    while let Some((index, line)) = lines.next() {
        let trimmed = line.trim();
        let (start, mut joined) = match current.take() {
            Some(c) => c,
            None if trimmed.is_empty() || trimmed.starts_with('#') => continue,
            None => (index + 1, String::new()),
        };
        if let Some(head) = trimmed.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            current = Some((start, joined));
            continue;
        }
        joined.push_str(trimmed);
        // A quoted string that goes on over lines (`ARGS=" \` ... `--seed 2023` then `"`)
        // continues on the next line, up to [`MAX_QUOTED_LINES`].
        if open_quote(&joined) && index + 1 < start + MAX_QUOTED_LINES {
            joined.push('\n');
            current = Some((start, joined));
            continue;
        }
        if let Some((var, delimiter)) = heredoc(&joined) {
            let body: Vec<&str> = lines
                .by_ref()
                .map(|(_, l)| l)
                .take_while(|l| l.trim() != delimiter)
                .map(|l| l.trim().trim_end_matches('\\').trim())
                .collect();
            match var {
                Some(var) => {
                    vars.insert(var, substitute(&body.join(" "), vars));
                }
                // `sbatch --nodes 2 ... <<EOF` then a job script: the command (its options
                // request the job) and the body's own commands.
                None if depth == 0 => {
                    let head = joined.split("<<").next().unwrap_or_default();
                    let head = substitute(head, vars);
                    emit(&head, start, vars, source, calls, out);
                    let text = body.join("\n");
                    scan(&text, &mut vars.clone(), source, depth, calls, out);
                }
                None => {}
            }
            continue;
        }
        // Bash arrays: `ARGS=(` ... `)` over several lines, `ARGS+=(...)` appends; used as
        // `${ARGS[@]}`.
        if let Some((name, append, first)) = array_start(&joined) {
            let mut words: Vec<String> = Vec::new();
            let mut push = |text: &str| {
                let text = text
                    .split(" #")
                    .next()
                    .unwrap_or(text)
                    .trim()
                    .trim_end_matches('\\');
                if !text.starts_with('#') {
                    words.push(substitute(text.trim(), vars));
                }
            };
            // A line closes the array when it has more `)` than `(` (`$(hostname)` does not).
            let closes = |t: &str| t.matches(')').count() > t.matches('(').count();
            let strip = |t: &str| -> String {
                let t = t.trim_end();
                if closes(t) {
                    t.strip_suffix(')').unwrap_or(t).to_string()
                } else {
                    t.to_string()
                }
            };
            let mut closed = closes(first);
            push(&strip(first));
            while !closed {
                let Some((_, next)) = lines.next() else { break };
                let next = next.trim();
                closed = closes(next);
                push(&strip(next));
            }
            let joined_words = words
                .into_iter()
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>();
            let value = joined_words.join(" ");
            let entry = vars.entry(name).or_default();
            if append && !entry.is_empty() {
                entry.push(' ');
                entry.push_str(&value);
            } else {
                *entry = value;
            }
            continue;
        }
        // A list on one line (`export M=x; torchrun ... $M`): each part in turn, so an
        // assignment holds for the commands after it.
        for part in split_lists(&joined) {
            let part = part.trim();
            if let Some((name, value)) = assignment(part) {
                let value = substitute(&value, vars);
                // One shell word (quoted text may hold a whole command: `CMD="torchrun ..."`).
                // References left unresolved stay as written (`$1`, `$(nproc)`), so a flag whose
                // value holds one is still not read; command substitution by backquotes, or
                // several words, leave the variable unknown.
                // Several words are an assignment for one command (`NCCL_DEBUG=info python
                // train.py ...`): the command is read.
                match shlex::split(&value).as_deref() {
                    Some([one]) if !one.contains('`') => {
                        vars.insert(name, option_lines(one));
                        continue;
                    }
                    Some([_, _, ..]) => {
                        vars.remove(&name);
                    }
                    _ => {
                        vars.remove(&name);
                        continue;
                    }
                }
            }
            if let Some(name) = sourced_name(part) {
                let name = substitute(name, vars);
                if depth < MAX_SOURCE_DEPTH {
                    if let Some(inner) = source(&name) {
                        scan(&inner, vars, source, depth + 1, calls, &mut Vec::new());
                    }
                }
                continue;
            }
            if depth == 0 {
                let command = substitute(part, vars);
                emit(&command, start, vars, source, calls, out);
            }
        }
    }
    if let Some((start, text)) = current.filter(|_| depth == 0) {
        let command = substitute(&text, vars);
        emit(&command, start, vars, source, calls, out);
    }
}

/// A quoted value written over several lines (`ARGS="` then `--nproc_per_node 8 \` ... then
/// `"`): its line breaks are word breaks where the value is a list of options, so a value
/// used as `torchrun $ARGS train.py` stays one command. Blank lines at either end are dropped;
/// a line break before a line that starts with `-` becomes a space. Other line breaks stay (a
/// variable holding several commands, `bash -c "$CMD"`).
fn option_lines(value: &str) -> String {
    let value = value.trim_matches(|c: char| c == '\n' || c == ' ' || c == '\t');
    let mut out = String::with_capacity(value.len());
    let mut lines = value.split('\n').peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        if let Some(next) = lines.peek() {
            let next = next.trim_start();
            out.push(if next.starts_with('-') || next.is_empty() {
                ' '
            } else {
                '\n'
            });
        }
    }
    out
}

/// The simple commands of one expanded line (`command`, starting at line `start`) into `out`,
/// through [`run`].
fn emit(
    command: &str,
    start: usize,
    vars: &HashMap<String, String>,
    source: &mut dyn FnMut(&str) -> Option<String>,
    calls: usize,
    out: &mut Vec<Command>,
) {
    for words in simple_commands(command) {
        run(words, start, vars, source, calls, 0, out);
    }
}

/// `eval` read again, at most this deep.
const MAX_EVALS: usize = 4;

/// One simple command into `out`: `eval WORDS` read again; `bash -c BODY` read as a script of
/// its own with the variables known here, each of its commands keeping the words before
/// `bash -c` (`srun`'s options); a script of the job run with arguments (`bash scripts/sft.sh
/// $OUT $MODEL`) read with `$1`, `$2`, ... bound to them, and kept itself.
fn run(
    words: Vec<String>,
    start: usize,
    vars: &HashMap<String, String>,
    source: &mut dyn FnMut(&str) -> Option<String>,
    calls: usize,
    evals: usize,
    out: &mut Vec<Command>,
) {
    if let [first, rest @ ..] = words.as_slice() {
        if first == "eval" && !rest.is_empty() {
            if evals < MAX_EVALS {
                for inner in simple_commands(&rest.join(" ")) {
                    run(inner, start, vars, source, calls, evals + 1, out);
                }
            }
            return;
        }
    }
    if let Some(at) = words
        .windows(3)
        .position(|w| matches!(program(&w[0]), "bash" | "sh") && w[1] == "-c")
    {
        let mut inner = Vec::new();
        scan(
            &words[at + 2],
            &mut vars.clone(),
            source,
            0,
            calls,
            &mut inner,
        );
        for c in inner {
            let words = words[..at].iter().cloned().chain(c.words).collect();
            out.push(Command { line: start, words });
        }
        return;
    }
    if let Some((script, args)) = script_call(&words) {
        if calls < MAX_SCRIPT_CALLS {
            if let Some(text) = source(&script) {
                let mut inner_vars = vars.clone();
                for (n, arg) in args.iter().enumerate() {
                    inner_vars.insert((n + 1).to_string(), arg.clone());
                }
                let mut inner = Vec::new();
                scan(&text, &mut inner_vars, source, 0, calls + 1, &mut inner);
                out.extend(inner.into_iter().map(|c| Command { line: start, ..c }));
            }
        }
    }
    // The devices set for the whole script (`export CUDA_VISIBLE_DEVICES=0,1,2,3`) are the
    // devices of each command after it, unless the command sets its own: the same first word
    // as the inline form (`CUDA_VISIBLE_DEVICES=0,1 torchrun ...`).
    let mut words = words;
    if let Some(devices) = vars.get(DEVICES) {
        if !words.iter().any(|w| w.starts_with(DEVICES_ASSIGNED)) {
            words.insert(0, format!("{DEVICES_ASSIGNED}{devices}"));
        }
    }
    out.push(Command { line: start, words });
}

/// The variable that says which GPUs a process sees.
const DEVICES: &str = "CUDA_VISIBLE_DEVICES";

/// Its assignment's start, as a word.
const DEVICES_ASSIGNED: &str = "CUDA_VISIBLE_DEVICES=";

/// A program's name without its directory (`/usr/bin/python3` -> `python3`).
pub fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The simple commands of one line of shell: split at the list operators (`;`, `&&`, `||`,
/// `|`, `&`, a newline) outside quotes and `$( )`; each split into words (quotes removed;
/// arithmetic `$(( ))` one word); redirections (`> log`, `2>&1`) left out; the words before
/// the program that are the shell's own ([`is_prefix_word`]) left out, except an assignment
/// of `CUDA_VISIBLE_DEVICES` (kept as the first word); a command substitution
/// (`$(hostname -I)`, `` `scontrol show hostnames` ``) one word, written `$(...)` without its
/// spaces (a value not known here). A part whose quotes do not close gives nothing.
pub fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let line = squeeze_substitutions(&squeeze_arithmetic(line));
    split_lists(&line)
        .into_iter()
        .filter_map(shlex::split)
        .map(|words| {
            let words = without_redirections(words);
            let at = words.iter().take_while(|w| is_prefix_word(w)).count();
            // The devices the command may use stay before it (`CUDA_VISIBLE_DEVICES=0,1
            // deepspeed ...`): the launch reader counts them.
            let devices = words[..at]
                .iter()
                .rfind(|w| w.starts_with("CUDA_VISIBLE_DEVICES="))
                .cloned();
            devices
                .into_iter()
                .chain(words[at..].iter().cloned())
                .collect::<Vec<_>>()
        })
        .filter(|words| {
            words
                .first()
                .is_some_and(|w| !matches!(w.as_str(), "fi" | "done" | "esac" | "}" | ")" | ";;"))
        })
        .collect()
}

/// Words the shell reads before a command's program: keywords that open or continue a
/// compound command (`if`, `then`, `do`, `else`, `!`, `{`, `(`), words that run what follows
/// (`exec`, `env`, `nohup`, `time`, `command`) and environment assignments (`NCCL_DEBUG=info`).
pub fn is_prefix_word(word: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "if", "then", "else", "elif", "do", "while", "until", "!", "{", "(", "exec", "env",
        "nohup", "time", "command", "builtin",
    ];
    KEYWORDS.contains(&word) || assignment(word).is_some()
}

/// `line` split at the list operators outside quotes, backquotes and `$( )`.
fn split_lists(line: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut quoting = Quoting::default();
    let (mut from, mut depth, mut backquote) = (0, 0usize, false);
    let mut previous = None;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let mut last = c;
        if quoting.outside(c) {
            match c {
                '`' => backquote = !backquote,
                '$' if next == Some('(') => {
                    depth += 1;
                    chars.next();
                    last = '(';
                }
                ')' if depth > 0 => depth -= 1,
                ';' | '|' | '&' | '\n' if depth == 0 && !backquote => {
                    // `2>&1`, `>&2`, `&>log`, `|&` are redirections, not lists.
                    let redirection = c == '&'
                        && (matches!(previous, Some('>' | '<' | '|')) || next == Some('>'));
                    if !redirection {
                        parts.push(&line[from..i]);
                        from = i + 1;
                        if next == Some(c) && c != '\n' {
                            chars.next();
                            from += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        previous = Some(last);
    }
    parts.push(&line[from.min(line.len())..]);
    parts.retain(|p| !p.trim().is_empty());
    parts
}

/// `words` without redirections (`>log`, `> log`, `2>&1`, `&>log`, `<in`, `2>>err`): a
/// redirection written apart from its file takes the next word with it.
fn without_redirections(words: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let operator = word.trim_start_matches(|c: char| c.is_ascii_digit());
        let operator = operator.strip_prefix('&').unwrap_or(operator);
        if operator.starts_with(['>', '<']) {
            if operator.trim_start_matches(['>', '<', '&', '|']).is_empty() && !word.ends_with('&')
            {
                words.next();
            }
            continue;
        }
        out.push(word);
    }
    out
}

/// Command substitutions `$( ... )` and `` `...` `` outside single quotes as one word
/// `$(...)` without spaces, so that their words are not read as the command's.
fn squeeze_substitutions(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut single = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let opens = !single
            && ((c == '$' && chars.get(i + 1) == Some(&'(') && chars.get(i + 2) != Some(&'('))
                || c == '`');
        if c == '\'' {
            single = !single;
        }
        if !opens {
            out.push(c);
            i += 1;
            continue;
        }
        // The substitution's end: the matching `)`, or the next backquote.
        let (start, end) = if c == '`' {
            let end = chars[i + 1..].iter().position(|&d| d == '`');
            (i + 1, end.map(|e| i + 1 + e))
        } else {
            let mut depth = 0;
            let end = (i + 1..chars.len()).find(|&k| {
                match chars[k] {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth == 0
            });
            (i + 2, end)
        };
        let Some(end) = end else {
            out.extend(&chars[i..]);
            break;
        };
        out.push_str("$(");
        out.extend(chars[start..end].iter().filter(|d| !d.is_whitespace()));
        out.push(')');
        i = end + 1;
    }
    out
}

/// Shell arithmetic `$(( A * B ))` as one word (`$((A*B))`), so that its spaces do not split
/// it into words that read as a script name.
fn squeeze_arithmetic(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("$((") {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find("))") else {
            break;
        };
        out.extend(
            rest[at..at + end + 2]
                .chars()
                .filter(|c| !c.is_whitespace()),
        );
        rest = &rest[at + end + 2..];
    }
    out.push_str(rest);
    out
}

/// Scripts run from scripts with arguments, at most this deep.
const MAX_SCRIPT_CALLS: usize = 3;

/// A job script run with arguments (`bash scripts/sft.sh A B`, `sh run.sh A`, `./run.sh A`,
/// after `srun`'s words): its path and arguments. Not a wrapper that runs a launcher
/// (`run_env.sh python train.py`), which the launch reader unwraps.
pub fn script_call(words: &[String]) -> Option<(String, Vec<String>)> {
    let at = words.iter().position(|w| w.ends_with(".sh"))?;
    let before = at.checked_sub(1).map(|i| words[i].as_str());
    let by_shell = before.is_some_and(|b| matches!(program(b), "bash" | "sh"));
    let direct = before.is_none_or(|b| b.contains('=') || b.starts_with('-'));
    if !(by_shell || direct && words[at].starts_with("./")) {
        return None;
    }
    let args = &words[at + 1..];
    let runs_a_launcher = args
        .first()
        .is_some_and(|a| a.starts_with("python") || a == "torchrun" || a == "deepspeed");
    (!args.is_empty() && !runs_a_launcher).then(|| {
        (
            words[at].trim_start_matches("./").to_string(),
            args.to_vec(),
        )
    })
}

/// The start of an array assignment `[declare -a] NAME=(` or `NAME+=(`: (name, whether it
/// appends, the text after the parenthesis).
fn array_start(line: &str) -> Option<(String, bool, &str)> {
    let rest = line
        .strip_prefix("declare -a ")
        .or_else(|| line.strip_prefix("local -a "))
        .unwrap_or(line)
        .trim_start();
    let (head, tail) = rest.split_once("=(")?;
    let (name, append) = match head.strip_suffix('+') {
        Some(n) => (n, true),
        None => (head, false),
    };
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    // `X=( $(cmd) )` is a command substitution, not a list of words we can know.
    (valid && !tail.contains("$(")).then(|| (name.to_string(), append, tail))
}

/// `NAME=value`, with `export`, `readonly`, `local` or `declare` before it: (name, value).
fn assignment(line: &str) -> Option<(String, String)> {
    let rest = ["export ", "readonly ", "local ", "declare "]
        .iter()
        .find_map(|p| line.strip_prefix(p))
        .unwrap_or(line)
        .trim_start();
    let (name, value) = rest.split_once('=')?;
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    valid.then(|| (name.to_string(), value.to_string()))
}

/// A here-document start: (the variable it is read into, if any, and its delimiter). Reads
/// into a variable: `read [-r] [-d ''] NAME <<EOF` and `NAME=$(cat <<EOF`.
fn heredoc(line: &str) -> Option<(Option<String>, String)> {
    let (head, tail) = line.split_once("<<")?;
    let delimiter: String = tail
        .trim_start_matches('-')
        .trim()
        .trim_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if delimiter.is_empty() {
        return None;
    }
    let head = head.trim();
    let var = if head.starts_with("read ") {
        head.split_whitespace().last().map(str::to_string)
    } else {
        head.split_once("=$(")
            .filter(|(_, cmd)| cmd.trim() == "cat")
            .map(|(name, _)| name.trim().to_string())
    };
    Some((
        var.filter(|v| v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')),
        delimiter,
    ))
}

/// `{{ name }}`: a template placeholder.
static TEMPLATE: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| crate::logs::compiled(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}"));

/// `"${NAME[@]}"`: a quoted array expansion, whose words stay separate words.
static QUOTED_ARRAY: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| crate::logs::compiled(r#""\$\{(\w+)\[[@*]\]\}""#));

/// `$NAME`, `${NAME}` and an array's `${NAME[@]}` (quoted or not: its words stay words)
/// replaced by the known values; unknown variables stay.
pub(crate) fn substitute(text: &str, vars: &HashMap<String, String>) -> String {
    let unquoted = QUOTED_ARRAY.replace_all(text, "$${$1[@]}");
    let text: &str = &unquoted;
    // A template's placeholder (`{{ nodes }}`, Jinja) is a value not known here: an unknown
    // variable, as `${nodes}` would be.
    let templated = TEMPLATE.replace_all(text, "$${TEMPLATE_$1}");
    let text: &str = &templated;
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        // `$(( A / B ))`: its value when every operand is known, else as written.
        if let Some(inner) = after.strip_prefix("((") {
            if let Some(end) = inner.find("))") {
                match arithmetic(&inner[..end], vars) {
                    Some(n) => out.push_str(&n.to_string()),
                    None => out.push_str(&rest[at..at + 5 + end]),
                }
                rest = &inner[end + 2..];
                continue;
            }
        }
        let (name, used) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        // `${NAME:-default}`: the default when NAME has no known value (the job's environment
        // may still set it).
        let (name, default) = match name.split_once(":-").or_else(|| name.split_once(":=")) {
            Some((n, d)) => (n, Some(d)),
            None => (name, None),
        };
        let name = name
            .strip_suffix("[@]")
            .or_else(|| name.strip_suffix("[*]"))
            .unwrap_or(name);
        match (vars.get(name), default) {
            (Some(value), _) if !name.is_empty() => out.push_str(value),
            (None, Some(default)) if !default.contains('$') => out.push_str(default),
            _ => out.push_str(&rest[at..at + 1 + used]),
        }
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}

/// The value of shell arithmetic `expr` (the text inside `$(( ))`): integers, variables
/// (`GPUS`, `$GPUS`, `${GPUS}`) with integer values in `vars`, `+ - * / %` and parentheses,
/// with the shell's integer division; `None` when a variable is unknown or the expression is
/// anything else (or divides by zero).
fn arithmetic(expr: &str, vars: &HashMap<String, String>) -> Option<i64> {
    let mut tokens = Vec::new();
    let mut chars = expr.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() || c == '$' || c == '{' || c == '}' {
            chars.next();
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let mut word = String::new();
            while let Some(&d) = chars
                .peek()
                .filter(|d| d.is_ascii_alphanumeric() || **d == '_')
            {
                word.push(d);
                chars.next();
            }
            let value = match word.parse::<i64>() {
                Ok(n) => n,
                Err(_) => vars.get(&word)?.trim().parse::<i64>().ok()?,
            };
            tokens.push(Token::Number(value));
        } else if "+-*/%()".contains(c) {
            tokens.push(Token::Operator(c));
            chars.next();
        } else {
            return None;
        }
    }
    let mut at = 0;
    let value = sum(&tokens, &mut at)?;
    (at == tokens.len()).then_some(value)
}

#[derive(Clone, Copy)]
enum Token {
    Number(i64),
    Operator(char),
}

/// `term (+|- term)*` from `tokens[*at..]`.
fn sum(tokens: &[Token], at: &mut usize) -> Option<i64> {
    let mut value = product(tokens, at)?;
    while let Some(Token::Operator(op @ ('+' | '-'))) = tokens.get(*at).copied() {
        *at += 1;
        let rhs = product(tokens, at)?;
        value = if op == '+' {
            value.checked_add(rhs)?
        } else {
            value.checked_sub(rhs)?
        };
    }
    Some(value)
}

/// `factor (*|/|% factor)*`.
fn product(tokens: &[Token], at: &mut usize) -> Option<i64> {
    let mut value = factor(tokens, at)?;
    while let Some(Token::Operator(op @ ('*' | '/' | '%'))) = tokens.get(*at).copied() {
        *at += 1;
        let rhs = factor(tokens, at)?;
        value = match op {
            '*' => value.checked_mul(rhs)?,
            '/' => value.checked_div(rhs)?,
            _ => value.checked_rem(rhs)?,
        };
    }
    Some(value)
}

/// A number, `-factor` or `( sum )`.
fn factor(tokens: &[Token], at: &mut usize) -> Option<i64> {
    let token = *tokens.get(*at)?;
    *at += 1;
    match token {
        Token::Number(n) => Some(n),
        Token::Operator('-') => factor(tokens, at)?.checked_neg(),
        Token::Operator('(') => {
            let value = sum(tokens, at)?;
            matches!(tokens.get(*at), Some(Token::Operator(')'))).then(|| *at += 1)?;
            Some(value)
        }
        Token::Operator(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Vec<String>> {
        commands(text, &mut |_| None)
            .into_iter()
            .map(|c| c.words)
            .collect()
    }

    #[test]
    fn lists_are_split_and_each_command_read() {
        let got = words("cd /work && NCCL_DEBUG=info torchrun train.py --lr 1 2>&1 | tee log.txt; echo done &\n");
        assert_eq!(
            got,
            vec![
                vec!["cd", "/work"],
                vec!["torchrun", "train.py", "--lr", "1"],
                vec!["tee", "log.txt"],
                vec!["echo", "done"],
            ]
        );
        // Operators inside quotes and `$( )` are not lists.
        assert_eq!(
            words("python t.py --name \"a;b\" --host $(hostname; echo) > out.log"),
            vec![vec![
                "python",
                "t.py",
                "--name",
                "a;b",
                "--host",
                "$(hostname;echo)"
            ]]
        );
        // Backquotes too: their words are not the command's.
        assert_eq!(
            words("torchrun --master_addr=`scontrol show hostnames $L | head -n 1` train.py"),
            vec![vec![
                "torchrun",
                "--master_addr=$(scontrolshowhostnames$L|head-n1)",
                "train.py"
            ]]
        );
    }

    #[test]
    fn keywords_redirections_eval_and_bash_c() {
        assert_eq!(
            words("if [[ $1 == eval ]]; then python eval.py > x; else exec env A=1 python train.py; fi"),
            vec![
                vec!["[[", "$1", "==", "eval", "]]"],
                vec!["python", "eval.py"],
                vec!["python", "train.py"],
            ]
        );
        assert_eq!(
            words("ARGS=\"--lr 2\"\neval python train.py $ARGS\n"),
            vec![vec!["python", "train.py", "--lr", "2"]]
        );
        assert_eq!(
            words("srun -N 2 bash -c 'export M=x; torchrun t.py --model $M'"),
            vec![vec!["srun", "-N", "2", "torchrun", "t.py", "--model", "x"],]
        );
        // An unclosed quote gives nothing rather than wrong words.
        assert!(words("python t.py --name 'open").is_empty());
    }
}
