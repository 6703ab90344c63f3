//! The shell, as far as job scripts need it: the command lines of a script with their line
//! numbers, continuations joined, variables and here-documents substituted, sourced files
//! followed (through the caller, which confines them to the job directory), `bash -c` bodies
//! and calls of other scripts of the job read, arithmetic `$(( ))` evaluated when every operand
//! is known. What a value refers to and is not known stays as written, so a flag whose value
//! depends on it is not read. The launch lines it yields are read by [`crate::launch`].

use std::collections::HashMap;

/// The command lines of a shell script with their first line numbers: continuations
/// (`\` at the end) joined, comments and blank lines left out, and shell variables with a
/// value (`N=8`, `export N=8`, `CMD="torchrun --nproc_per_node 8 train.py"`; a here-document
/// read into a variable) substituted where they are used. What a value refers to and is not
/// known stays as written (`N=$1` makes `$N` read `$1`), so a flag whose value depends on it
/// is not read; `${N:-8}` gives its default, 8. A file the script sources (`source env.sh`,
/// `. ./env.sh`; its text from `source`, `None` when it is not to be read) sets variables too,
/// up to [`MAX_SOURCE_DEPTH`] files deep; its commands are not the job's.
pub(crate) fn commands(
    text: &str,
    source: &mut dyn FnMut(&str) -> Option<String>,
) -> Vec<(usize, String)> {
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
    let mut quote = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (_, '\\') => {
                chars.next();
            }
            (Some('"'), '"') => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            _ => {}
        }
    }
    quote.is_some()
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
    out: &mut Vec<(usize, String)>,
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
                    out.push((start, substitute(head, vars)));
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
        if let Some((name, value)) = assignment(&joined) {
            let value = substitute(&value, vars);
            // One shell word (quoted text may hold a whole command: `CMD="torchrun ..."`).
            // References left unresolved stay as written (`$1`, `$(nproc)`), so a flag whose
            // value holds one is still not read; command substitution by backquotes, or
            // several words, leave the variable unknown.
            // Several words are an assignment for one command (`NCCL_DEBUG=info python
            // train.py ...`): the command is read.
            match shlex::split(&value).as_deref() {
                Some([one]) if !one.contains('`') => {
                    vars.insert(name, one.clone());
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
        if let Some(name) = sourced_name(&joined) {
            let name = substitute(name, vars);
            if depth < MAX_SOURCE_DEPTH {
                if let Some(inner) = source(&name) {
                    scan(&inner, vars, source, depth + 1, calls, &mut Vec::new());
                }
            }
            continue;
        }
        if depth == 0 {
            let command = substitute(&joined, vars);
            match shell_body(&command) {
                // `srun ... bash -c "export M=x; accelerate launch ... $M"`: the quoted body is a
                // script of its own, read with the variables known here; each of its commands
                // keeps what came before `bash -c` (srun's options).
                Some((prefix, body)) => {
                    let mut inner = Vec::new();
                    scan(&body, &mut vars.clone(), source, 0, calls, &mut inner);
                    for (_, c) in inner {
                        let words = prefix.iter().map(String::as_str).chain(["bash", "-c", &c]);
                        if let Ok(line) = shlex::try_join(words) {
                            out.push((start, line));
                        }
                    }
                }
                None => {
                    // `bash scripts/sft.sh $OUT $MODEL ...`: a script of the job run with
                    // arguments; its commands are read with `$1`, `$2`, ... bound to them.
                    if let Some((script, args)) = script_call(&command) {
                        if calls < MAX_SCRIPT_CALLS {
                            if let Some(text) = source(&script) {
                                let mut inner_vars = vars.clone();
                                for (n, arg) in args.iter().enumerate() {
                                    inner_vars.insert((n + 1).to_string(), arg.clone());
                                }
                                let mut inner = Vec::new();
                                scan(&text, &mut inner_vars, source, 0, calls + 1, &mut inner);
                                out.extend(inner.into_iter().map(|(_, c)| (start, c)));
                            }
                        }
                    }
                    out.push((start, command));
                }
            }
        }
    }
    if depth == 0 {
        out.extend(current);
    }
}

/// Scripts run from scripts with arguments, at most this deep.
const MAX_SCRIPT_CALLS: usize = 3;

/// A job script run with arguments (`bash scripts/sft.sh A B`, `sh run.sh A`, `./run.sh A`,
/// after `srun` and environment words): its path and arguments. Not a wrapper that runs a
/// launcher (`run_env.sh python train.py`), which the launch reader unwraps.
pub(crate) fn script_call(command: &str) -> Option<(String, Vec<String>)> {
    let words = shlex::split(command)?;
    let at = words.iter().position(|w| w.ends_with(".sh"))?;
    let before = at.checked_sub(1).map(|i| words[i].as_str());
    let by_shell = before.is_some_and(|b| matches!(b.rsplit('/').next(), Some("bash" | "sh")));
    let direct = before.is_none_or(|b| b.contains('=') || b.starts_with('-'));
    if !(by_shell || direct && words[at].starts_with("./")) {
        return None;
    }
    let args: Vec<String> = words[at + 1..]
        .iter()
        .take_while(|w| !matches!(w.as_str(), "|" | "||" | "&&" | ";" | "&") && !w.starts_with('>'))
        .cloned()
        .collect();
    let runs_a_launcher = args
        .first()
        .is_some_and(|a| a.starts_with("python") || a == "torchrun" || a == "deepspeed");
    (!args.is_empty() && !runs_a_launcher)
        .then(|| (words[at].trim_start_matches("./").to_string(), args))
}

/// The words before `bash -c` (or `sh -c`) and the quoted body after it, when a command runs
/// one.
fn shell_body(command: &str) -> Option<(Vec<String>, String)> {
    let words = shlex::split(command)?;
    let at = words.windows(2).position(|w| {
        let base = w[0].rsplit('/').next().unwrap_or(&w[0]);
        matches!(base, "bash" | "sh") && w[1] == "-c"
    })?;
    let body = words.get(at + 2)?.clone();
    Some((words[..at].to_vec(), body))
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

/// A launch command given on one line or several with `\` continuations.
pub(crate) fn join_continuations(command: &str) -> String {
    command
        .lines()
        .map(|l| l.trim().trim_end_matches('\\').trim())
        .collect::<Vec<_>>()
        .join(" ")
}
