//! The policies under test, as named on the command line.

use std::path::PathBuf;
use std::str::FromStr;

use schedlm_solver::rules::Rule;

use crate::error::EvalError;

/// One policy under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalPolicy {
    /// A priority rule of SPEC section 6 (`fcfs`, `sjf`, `saf`, `ljf`, `wfp3`, `unicep`, `f1`,
    /// `random`).
    Rule(Rule),
    /// Local search (`ls`), from the best rule, with a deterministic evaluation budget.
    LocalSearch,
    /// Earliest completion first (`ect`): each next job the one that would end first if placed
    /// next on the schedule so far, ties by the best rule's ranking
    /// ([`schedlm_solver::greedy`]); the order step-v2 prompts list the jobs in.
    Ect,
    /// The exact portfolio (`optimal`) under the evaluation's time budget.
    Optimal,
    /// The clairvoyant look-ahead teacher (`lookahead`, online only): at every event each
    /// classic rule's order is tried on the true future (true run times, the arrivals within
    /// the horizon) and the best is kept ([`schedlm_solver::lookahead`]). It sees what no
    /// scheduler sees: a reference and a source of labels, not a deployable policy.
    Lookahead,
    /// The same choice on futures drawn from the past (`rollout`, online only): run times are
    /// walltimes times ratios of jobs that ended before now, no future arrival is known.
    Rollout,
    /// A schedlm model directory (`model:DIR`), greedy and best-of-N reported apart.
    Model(PathBuf),
    /// An OpenAI-compatible chat-completions endpoint (`openai:URL#MODEL`).
    OpenAi {
        /// The API base (e.g. `http://127.0.0.1:8000/v1`) or the full `.../chat/completions`
        /// address: the text between `openai:` and the last `#`.
        url: String,
        /// The model name sent in each request's `model` field: the text after the last `#`.
        model: String,
    },
    /// Raw outputs produced elsewhere (`predictions:FILE`, JSON Lines keyed by record id).
    Predictions(PathBuf),
}

impl EvalPolicy {
    /// Whether the policy answers in text (a model or an endpoint), whose answers are logged.
    pub fn answers_in_text(&self) -> bool {
        matches!(self, EvalPolicy::Model(_) | EvalPolicy::OpenAi { .. })
    }

    /// The name used in reports: the spec as written.
    pub fn name(&self) -> String {
        match self {
            EvalPolicy::Rule(r) => r.name().to_string(),
            EvalPolicy::LocalSearch => "ls".into(),
            EvalPolicy::Ect => "ect".into(),
            EvalPolicy::Optimal => "optimal".into(),
            EvalPolicy::Lookahead => "lookahead".into(),
            EvalPolicy::Rollout => "rollout".into(),
            EvalPolicy::Model(dir) => format!("model:{}", dir.display()),
            EvalPolicy::OpenAi { url, model } => format!("openai:{url}#{model}"),
            EvalPolicy::Predictions(file) => format!("predictions:{}", file.display()),
        }
    }

    /// Whether the policy decides from a replay's future and so runs only online.
    pub fn is_online_only(&self) -> bool {
        matches!(self, EvalPolicy::Lookahead | EvalPolicy::Rollout)
    }

    /// Whether the policy answers in text (its answers go through the parser).
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            EvalPolicy::Model(_) | EvalPolicy::OpenAi { .. } | EvalPolicy::Predictions(_)
        )
    }
}

impl FromStr for EvalPolicy {
    type Err = EvalError;

    fn from_str(s: &str) -> Result<Self, EvalError> {
        let s = s.trim();
        let nonempty = |rest: &str, what: &str| {
            if rest.is_empty() {
                Err(EvalError::policy(s, format!("{what} is empty")))
            } else {
                Ok(rest.to_string())
            }
        };
        if let Some(rest) = s.strip_prefix("model:") {
            return Ok(EvalPolicy::Model(nonempty(rest, "DIR")?.into()));
        }
        if let Some(rest) = s.strip_prefix("predictions:") {
            return Ok(EvalPolicy::Predictions(nonempty(rest, "FILE")?.into()));
        }
        if let Some(rest) = s.strip_prefix("openai:") {
            let (url, model) = rest.rsplit_once('#').ok_or_else(|| {
                EvalError::policy(
                    s,
                    "write openai:URL#MODEL, e.g. openai:http://127.0.0.1:8000/v1#qwen",
                )
            })?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(EvalError::policy(
                    s,
                    "the URL must start with http:// or https://",
                ));
            }
            return Ok(EvalPolicy::OpenAi {
                url: url.to_string(),
                model: nonempty(model, "MODEL")?,
            });
        }
        match s {
            "ls" => Ok(EvalPolicy::LocalSearch),
            "ect" => Ok(EvalPolicy::Ect),
            "optimal" => Ok(EvalPolicy::Optimal),
            "lookahead" => Ok(EvalPolicy::Lookahead),
            "rollout" => Ok(EvalPolicy::Rollout),
            _ => Rule::from_name(s).map(EvalPolicy::Rule).ok_or_else(|| {
                EvalError::policy(
                    s,
                    "unknown policy: use a rule (fcfs, sjf, saf, ljf, wfp3, unicep, f1, random), \
                     ect, ls, optimal, lookahead, rollout, model:DIR, openai:URL#MODEL or \
                     predictions:FILE",
                )
            }),
        }
    }
}

/// Parses a comma-separated list of policies; a policy named twice is an error.
pub fn parse_list(list: &str) -> Result<Vec<EvalPolicy>, EvalError> {
    let mut out: Vec<EvalPolicy> = Vec::new();
    for part in list.split(',').filter(|p| !p.trim().is_empty()) {
        let spec: EvalPolicy = part.parse()?;
        if out.contains(&spec) {
            return Err(EvalError::policy(part.trim(), "named twice"));
        }
        out.push(spec);
    }
    if out.is_empty() {
        return Err(EvalError::Input("no policy given".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        let list = parse_list(
            "fcfs, sjf,ls,optimal,model:runs/x,predictions:p.jsonl,openai:http://h:1/v1#m,\
             lookahead,rollout",
        )
        .unwrap();
        assert_eq!(list.len(), 9);
        assert!(list[7].is_online_only() && list[8].is_online_only() && !list[3].is_online_only());
        assert_eq!(list[0], EvalPolicy::Rule(Rule::Fcfs));
        assert_eq!(
            list[6],
            EvalPolicy::OpenAi {
                url: "http://h:1/v1".into(),
                model: "m".into()
            }
        );
        assert_eq!(list[6].name(), "openai:http://h:1/v1#m");
        assert!(parse_list("fcfs,fcfs").is_err());
        assert!(parse_list("nope").is_err());
        assert!(parse_list("openai:h#m").is_err());
        assert!(parse_list("model:").is_err());
        assert!(parse_list("").is_err());
    }
}
