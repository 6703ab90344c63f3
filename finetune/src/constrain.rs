//! Constrained decoding of queue orders: at each step only tokens whose text continues a valid
//! answer `J<a> J<b> ... J<z>` (each of `J1..Jn` exactly once, one space between) are allowed,
//! and the end token only once every job is named. Every finished answer is a permutation.
//!
//! The check works on the decoded text of each token, so it fits any tokenizer whose
//! vocabulary has the single characters `J`, the digits and the space (every byte-level BPE).

/// Where the answer text stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// At the start, or after a space: the next character must be `J`.
    ExpectJ,
    /// After `J` and these digits.
    InId(String),
    /// The end token was taken.
    Done,
}

/// The constraint for one answer over jobs `J1..Jn`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderConstraint {
    used: Vec<bool>,
    remaining: usize,
    phase: Phase,
}

impl OrderConstraint {
    /// A constraint for a queue of `n` jobs.
    pub fn new(n: usize) -> OrderConstraint {
        OrderConstraint {
            used: vec![false; n + 1],
            remaining: n,
            phase: if n == 0 {
                Phase::InId(String::new())
            } else {
                Phase::ExpectJ
            },
        }
    }

    /// A constraint for one job among `numbers` (the `k` of `Jk`, each in `1..=n`), as a
    /// step model answers: one id, then the end.
    pub fn pick(n: usize, numbers: &[usize]) -> OrderConstraint {
        let mut used = vec![true; n + 1];
        for &k in numbers {
            if let Some(u) = used.get_mut(k) {
                *u = k == 0;
            }
        }
        OrderConstraint {
            used,
            remaining: 1,
            phase: Phase::ExpectJ,
        }
    }

    /// Whether the end token was taken.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The job number `digits` names, if it is an unused job.
    fn complete(&self, digits: &str) -> Option<usize> {
        if digits.starts_with('0') {
            return None;
        }
        let k: usize = digits.parse().ok()?;
        (k >= 1 && k < self.used.len() && !self.used[k]).then_some(k)
    }

    /// Whether some unused job's number starts with `digits`.
    fn extendable(&self, digits: &str) -> bool {
        (1..self.used.len()).any(|k| !self.used[k] && k.to_string().starts_with(digits))
    }

    /// Whether the end token may come now.
    pub fn end_allowed(&self) -> bool {
        match &self.phase {
            Phase::InId(d) if self.remaining == 0 => d.is_empty(),
            Phase::InId(d) => self.remaining == 1 && self.complete(d).is_some(),
            _ => false,
        }
    }

    /// Feeds one character; `false` (and no change) if it breaks the answer.
    fn push_char(&mut self, c: char) -> bool {
        let next = match (&self.phase, c) {
            (Phase::ExpectJ, 'J') => Phase::InId(String::new()),
            (Phase::InId(d), '0'..='9') if self.remaining > 0 => {
                let mut d = d.clone();
                d.push(c);
                if !self.extendable(&d) {
                    return false;
                }
                Phase::InId(d)
            }
            (Phase::InId(d), ' ') if self.remaining > 1 => match self.complete(d) {
                Some(k) => {
                    self.used[k] = true;
                    self.remaining -= 1;
                    Phase::ExpectJ
                }
                None => return false,
            },
            _ => return false,
        };
        self.phase = next;
        true
    }

    /// The state after `text`, if `text` keeps the answer valid (empty text is not allowed:
    /// it would let decoding loop).
    pub fn after(&self, text: &str) -> Option<OrderConstraint> {
        if text.is_empty() {
            return None;
        }
        let mut next = self.clone();
        text.chars().all(|c| next.push_char(c)).then_some(next)
    }

    /// Advances by a chosen token: its text, or the end.
    pub fn advance(&mut self, text: &str, is_end: bool) -> bool {
        if is_end {
            if !self.end_allowed() {
                return false;
            }
            if let Phase::InId(d) = &self.phase {
                if let Some(k) = self.complete(d) {
                    self.used[k] = true;
                    self.remaining -= 1;
                }
            }
            self.phase = Phase::Done;
            return true;
        }
        match self.after(text) {
            Some(next) => {
                *self = next;
                true
            }
            None => false,
        }
    }
}

/// Token ids whose text could ever appear in an answer (only `J`, digits and spaces).
pub fn answer_tokens(pieces: &[String]) -> Vec<u32> {
    pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c == 'J' || c == ' ' || c.is_ascii_digit())
        })
        .map(|(i, _)| i as u32)
        .collect()
}

/// The tokens allowed next: candidates that keep the answer valid, and `end` when allowed.
pub fn allowed(
    constraint: &OrderConstraint,
    candidates: &[u32],
    pieces: &[String],
    end: u32,
) -> Vec<u32> {
    let mut out: Vec<u32> = candidates
        .iter()
        .copied()
        .filter(|&t| constraint.after(&pieces[t as usize]).is_some())
        .collect();
    if constraint.end_allowed() {
        out.push(end);
    }
    out
}
