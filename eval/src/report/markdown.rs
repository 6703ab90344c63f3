//! `report.md`: the headline first, then the tables; every number from the summary.

use std::cmp::Ordering;
use std::fmt::Write as _;

use schedlm_solver::rules::Rule;

use super::{num, pct, secs, SnapshotSummary};
use crate::stats::{tied, Group, PolicyStats};

/// The label of the best rule per instance in tables and plots.
pub const BEST_RULE_LABEL: &str = "best rule per instance (reference)";

/// Whether a policy answers in text (its validity matters).
pub fn is_text(policy: &str) -> bool {
    ["model:", "openai:", "predictions:"]
        .iter()
        .any(|p| policy.starts_with(p))
}

fn describe(p: &PolicyStats, objective: &str) -> String {
    format!(
        "mean {objective} {}, {} above the reference on average (median {}, p90 {}), optimal \
         on {} of instances",
        num(p.mean_value),
        pct(p.gap.mean),
        pct(p.gap.median),
        pct(p.gap.p90),
        pct(Some(p.optimal_share)),
    )
}

/// The headline sentences (plain text; `**` marks the policy names).
pub fn headline(s: &SnapshotSummary) -> Vec<String> {
    let find = |name: &String| s.stats.policies.iter().find(|p| &p.policy == name);
    let mut out = Vec::new();
    // Only a policy whose every answer was a valid order can be best: the means of the others
    // hold FCFS fallbacks for their invalid or failed answers.
    let ranked: Vec<&PolicyStats> = s
        .stats
        .ranking
        .iter()
        .filter_map(find)
        .filter(|p| p.all_valid())
        .collect();
    match ranked.first() {
        None => out.push(
            "Best: none; every policy had invalid or failed answers (their means hold FCFS fallbacks)."
                .to_string(),
        ),
        Some(best) => {
            out.push(format!(
                "Best: {}, {}.",
                best_names(&ranked),
                describe(best, &s.objective)
            ));
            if best.policy == "optimal" {
                let others: Vec<&PolicyStats> = ranked
                    .iter()
                    .copied()
                    .filter(|p| p.policy != "optimal")
                    .collect();
                if let Some(next) = others.first() {
                    out.push(format!(
                        "Best without the exact solver: {}, {}.",
                        best_names(&others),
                        describe(next, &s.objective)
                    ));
                }
            }
        }
    }
    for p in s.stats.policies.iter().filter(|p| is_text(&p.policy)) {
        if p.all_failed() {
            out.push(format!(
                "**{}**: all {} answers failed (no answer at all); it did not schedule, and its \
                 rows hold the FCFS fallback.",
                p.policy, p.instances
            ));
            continue;
        }
        out.push(against_rules(s, p));
        out.push(format!(
            "**{}**: {} of answers valid{}; invalid answers are scored by FCFS (mean {} {}; \
             with lenient repair instead: {}).",
            p.policy,
            pct(Some(p.valid_share)),
            answer_troubles(p),
            s.objective,
            num(p.mean_value),
            num(p.mean_lenient_value)
        ));
    }
    out.push(format!(
        "Gaps are measured against {}; {} records, objective {}, variant {}.",
        s.reference_words(),
        s.records,
        s.objective,
        s.variant
    ));
    out
}

/// The best policy's name in bold, with those tied with it on the mean value ("**a** (tied
/// with **b**)"); `ranked` is best first.
fn best_names(ranked: &[&PolicyStats]) -> String {
    let Some(best) = ranked.first() else {
        return String::new();
    };
    let tied_with: Vec<String> = ranked[1..]
        .iter()
        .take_while(|p| tied(p.mean_value, best.mean_value))
        .map(|p| format!("**{}**", p.policy))
        .collect();
    if tied_with.is_empty() {
        format!("**{}**", best.policy)
    } else {
        format!("**{}** (tied with {})", best.policy, tied_with.join(", "))
    }
}

/// " (3 failed: no answer; 2 cut off at the token limit)", or nothing.
fn answer_troubles(p: &PolicyStats) -> String {
    let mut parts = Vec::new();
    if p.failed > 0 {
        parts.push(format!("{} failed: no answer", p.failed));
    }
    if p.truncated > 0 {
        parts.push(format!("{} cut off at the token limit", p.truncated));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

/// How mean gap `a` compares with mean gap `b` (equal within the tolerance), when both are
/// defined.
fn compare(a: Option<f64>, b: Option<f64>) -> Option<Ordering> {
    let (a, b) = (a?, b?);
    Some(if tied(a, b) {
        Ordering::Equal
    } else if a < b {
        Ordering::Less
    } else {
        Ordering::Greater
    })
}

/// The verdict on a mean gap against FCFS's and the best single rule's, in words: "worse than
/// FCFS", "better than FCFS but worse than the best single rule sjf", ...
pub fn verdict(gap: Option<f64>, fcfs: Option<f64>, single: Option<(&str, Option<f64>)>) -> String {
    let words = |o: Ordering, equal: &'static str| match o {
        Ordering::Greater => "worse than",
        Ordering::Equal => equal,
        Ordering::Less => "better than",
    };
    let vs_fcfs = compare(gap, fcfs).map(|o| (o, format!("{} FCFS", words(o, "no better than"))));
    let vs_single = single
        .filter(|(rule, _)| *rule != "fcfs")
        .and_then(|(rule, g)| {
            compare(gap, g).map(|o| {
                let w = words(o, "as good as");
                (o, format!("{w} the best single rule {rule}"))
            })
        });
    match (vs_fcfs, vs_single) {
        (Some((Ordering::Less, _)), Some((Ordering::Less, _))) => {
            let rule = single.map_or("", |(r, _)| r);
            format!("better than both FCFS and the best single rule {rule}")
        }
        (Some((a, x)), Some((b, y))) => {
            // "and" when both say the same kind of thing, "but" when they differ ("no better
            // than FCFS" is bad news, "as good as the best single rule" good news).
            let good = (a == Ordering::Less) == (b != Ordering::Greater);
            format!("{x} {} {y}", if good { "and" } else { "but" })
        }
        (Some((_, x)), None) | (None, Some((_, x))) => x,
        (None, None) => String::new(),
    }
}

/// The sentence comparing a (text) policy with the rules: its mean gap next to the best rule
/// per instance's, the best single rule's and FCFS's; a verdict; its wins, ties and losses
/// against the best rule per instance; and how often it answered the queue order or the best
/// rule's order.
pub fn against_rules(s: &SnapshotSummary, p: &PolicyStats) -> String {
    let st = &s.stats;
    let single = st
        .best_single_rule
        .as_ref()
        .map(|b| (b.rule.as_str(), b.gap.mean));
    let single_words = match single {
        Some((rule, g)) => format!(", best single rule {rule} {}", pct(g)),
        None => String::new(),
    };
    let verdict = verdict(p.gap.mean, st.fcfs_gap.mean, single);
    let verdict = if verdict.is_empty() {
        verdict
    } else {
        format!(", {verdict}")
    };
    let t = &p.vs_best_rule;
    format!(
        "**{}**: mean gap {} (best rule per instance {}{single_words}, FCFS {}){verdict}; \
         against the best rule per instance: {}, {}, {}; answers identical to the queue \
         order on {}, to the best rule's order on {}.",
        p.policy,
        pct(p.gap.mean),
        pct(st.best_rule_per_instance_gap.mean),
        pct(st.fcfs_gap.mean),
        count(t.wins, "win", "wins"),
        count(t.ties, "tie", "ties"),
        count(t.losses, "loss", "losses"),
        pct(Some(p.same_as_queue_order)),
        pct(Some(p.same_as_best_rule_order)),
    )
}

/// `1 win`, `3 wins`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The report of a snapshot evaluation.
pub fn snapshot(s: &SnapshotSummary) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# schedlm evaluation: {} on {}\n", s.objective, s.data);
    for line in headline(s) {
        let _ = writeln!(md, "- {line}");
    }
    for note in &s.notes {
        let _ = writeln!(md, "- Note: {note}");
    }
    let _ = writeln!(md, "\n## Policies (best first)\n");
    md.push_str(&policy_table(s));
    if !s.examples.is_empty() {
        let _ = writeln!(md, "\n## Example answers\n");
        md.push_str(&table(example_rows(s)));
    }
    let _ = writeln!(md, "\n## Against the rules\n");
    md.push_str(&table(rules_rows(s)));
    let _ = writeln!(md, "\n{}", rules_note());
    let _ = writeln!(
        md,
        "\n## Wins / ties / losses (row policy against column policy)\n"
    );
    md.push_str(&pair_table(s));
    let _ = writeln!(md, "\n## Mean gap by queue length\n");
    md.push_str(&group_table(s, &s.stats.by_queue, "queue"));
    let _ = writeln!(md, "\n## Mean gap by family\n");
    md.push_str(&group_table(s, &s.stats.by_family, "family"));
    let _ = writeln!(
        md,
        "\nEvery number comes from `summary.json`, computed from the per-instance rows in \
         `instances.csv` (definitions: docs/eval.md). `optimal` ran with a time limit of {} s \
         per instance{}.",
        s.settings.optimal_time_limit_s,
        s.settings
            .optimal_node_limit
            .map(|n| format!(" and a node limit of {n}"))
            .unwrap_or_default()
    );
    md
}

/// The header and rows of the policy table (shared with the HTML report).
pub fn policy_rows(s: &SnapshotSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "policy",
        &format!("mean {}", s.objective),
        "mean gap",
        "median gap",
        "p90 gap",
        "max gap",
        "optimal",
        "valid",
        "failed",
        "mean (lenient)",
        "time / decision",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let reference = s.stats.best_rule_per_instance_mean_value;
    let mut placed = false;
    for p in s
        .stats
        .ranking
        .iter()
        .filter_map(|n| s.stats.policies.iter().find(|p| &p.policy == n))
    {
        // The reference row goes where its mean value ranks it.
        if !placed && reference.is_finite() && (reference < p.mean_value || !p.all_valid()) {
            rows.push(best_rule_row(s));
            placed = true;
        }
        if p.all_failed() {
            rows.push(failed_row(p));
            continue;
        }
        rows.push(vec![
            p.policy.clone(),
            num(p.mean_value),
            pct(p.gap.mean),
            pct(p.gap.median),
            pct(p.gap.p90),
            pct(p.gap.max),
            pct(Some(p.optimal_share)),
            pct(Some(p.valid_share)),
            p.failed.to_string(),
            num(p.mean_lenient_value),
            secs(p.mean_seconds),
        ]);
    }
    if !placed && reference.is_finite() {
        rows.push(best_rule_row(s));
    }
    (header, rows)
}

/// The policy table's row of a policy whose every answer failed: no value of its own.
fn failed_row(p: &PolicyStats) -> Vec<String> {
    let dash = || "-".to_string();
    let mut row = vec![p.policy.clone()];
    row.extend((0..6).map(|_| dash()));
    row.extend([
        pct(Some(0.0)),
        p.failed.to_string(),
        dash(),
        secs(p.mean_seconds),
    ]);
    row
}

/// The policy table's row of the best rule per instance (not a policy: the best classic
/// rule picked for each record after the fact).
fn best_rule_row(s: &SnapshotSummary) -> Vec<String> {
    let g = &s.stats.best_rule_per_instance_gap;
    let dash = || "-".to_string();
    vec![
        BEST_RULE_LABEL.to_string(),
        num(s.stats.best_rule_per_instance_mean_value),
        pct(g.mean),
        pct(g.median),
        pct(g.p90),
        pct(g.max),
        dash(),
        dash(),
        dash(),
        dash(),
        dash(),
    ]
}

/// A few answers of each text policy beside the label (the first invalid, the first valid
/// but not optimal, and the first optimal answer).
pub fn example_rows(s: &SnapshotSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "policy",
        "record (line)",
        "queue",
        "answer",
        "label (optimal or best known)",
        "value",
        "reference",
        "gap",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let rows = s
        .examples
        .iter()
        .map(|e| {
            let verdict = if !e.valid {
                " (invalid: FCFS fallback)"
            } else if e.optimal {
                " (optimal)"
            } else {
                ""
            };
            vec![
                e.policy.clone(),
                format!("{} ({})", e.record, e.line),
                e.queue.to_string(),
                crate::text_policy::shorten(&e.answer, 160),
                e.label.clone(),
                format!("{}{verdict}", num(e.value)),
                num(e.reference),
                pct(e.gap),
            ]
        })
        .collect();
    (header, rows)
}

/// What the "Against the rules" table means.
pub fn rules_note() -> String {
    let names: Vec<&str> = Rule::CLASSIC.iter().map(|r| r.name()).collect();
    format!(
        "The best rule per instance is, on each record, the classic rule ({}) with the lowest \
         value there, picked after the fact; wins/ties/losses compare each record's value with \
         it. \"Same order\" compares placed orders (after the dependency repair); an invalid \
         answer is never the same. The queue order is the listing order J1 J2 ... Jn (FCFS \
         when the queue is listed by submit time).",
        names.join(", ")
    )
}

/// Per policy: mean gap, wins/ties/losses against the best rule per instance, and the shares
/// of orders identical to the queue order and to the best rule's order (shared with the HTML
/// report).
pub fn rules_rows(s: &SnapshotSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "policy",
        "mean gap",
        "vs best rule per instance (W/T/L)",
        "same order as queue",
        "same order as best rule",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let st = &s.stats;
    let mut rows: Vec<Vec<String>> = st
        .policies
        .iter()
        // A policy whose every answer failed has no order to set against the rules.
        .filter(|p| !p.all_failed())
        .map(|p| {
            let t = &p.vs_best_rule;
            vec![
                p.policy.clone(),
                pct(p.gap.mean),
                format!("{}/{}/{}", t.wins, t.ties, t.losses),
                pct(Some(p.same_as_queue_order)),
                pct(Some(p.same_as_best_rule_order)),
            ]
        })
        .collect();
    let dash = || "-".to_string();
    rows.push(vec![
        BEST_RULE_LABEL.to_string(),
        pct(st.best_rule_per_instance_gap.mean),
        dash(),
        dash(),
        dash(),
    ]);
    if let Some(b) = &st.best_single_rule {
        rows.push(vec![
            format!("best single rule: {} (from {})", b.rule, b.source),
            pct(b.gap.mean),
            dash(),
            dash(),
            dash(),
        ]);
    }
    rows.push(vec![
        "FCFS (reference)".to_string(),
        pct(st.fcfs_gap.mean),
        dash(),
        dash(),
        dash(),
    ]);
    (header, rows)
}

/// The win/tie/loss matrix (shared with the HTML report).
pub fn pair_rows(s: &SnapshotSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let names: Vec<&String> = s.stats.policies.iter().map(|p| &p.policy).collect();
    let mut header = vec!["".to_string()];
    header.extend(names.iter().map(|n| n.to_string()));
    let rows = names
        .iter()
        .map(|a| {
            let mut row = vec![a.to_string()];
            for b in &names {
                let cell = s
                    .stats
                    .pairs
                    .iter()
                    .find(|p| &&p.a == a && &&p.b == b)
                    .map(|p| format!("{}/{}/{}", p.wins, p.ties, p.losses))
                    .unwrap_or_else(|| "-".into());
                row.push(cell);
            }
            row
        })
        .collect();
    (header, rows)
}

/// Mean gap per group (rows) and policy (columns), with the group's size.
pub fn group_rows(
    s: &SnapshotSummary,
    groups: &[Group],
    what: &str,
) -> (Vec<String>, Vec<Vec<String>>) {
    let names: Vec<&String> = s.stats.policies.iter().map(|p| &p.policy).collect();
    let mut header = vec![what.to_string(), "records".to_string()];
    header.extend(names.iter().map(|n| n.to_string()));
    let mut keys: Vec<&String> = Vec::new();
    for g in groups {
        if !keys.contains(&&g.group) {
            keys.push(&g.group);
        }
    }
    let rows = keys
        .iter()
        .map(|k| {
            let of = |p: &str| groups.iter().find(|g| &&g.group == k && g.policy == p);
            let size = names.first().and_then(|p| of(p)).map_or(0, |g| g.instances);
            let mut row = vec![k.to_string(), size.to_string()];
            row.extend(
                names
                    .iter()
                    .map(|p| of(p).map_or("-".into(), |g| pct(g.gap.mean))),
            );
            row
        })
        .collect();
    (header, rows)
}

/// A Markdown table (`|` inside a cell is escaped).
pub fn table((header, rows): (Vec<String>, Vec<Vec<String>>)) -> String {
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut t = line(&header);
    let _ = writeln!(t, "|{}", "---|".repeat(header.len()));
    for row in rows {
        t.push_str(&line(&row));
    }
    t
}

fn policy_table(s: &SnapshotSummary) -> String {
    table(policy_rows(s))
}

fn pair_table(s: &SnapshotSummary) -> String {
    table(pair_rows(s))
}

fn group_table(s: &SnapshotSummary, groups: &[Group], what: &str) -> String {
    table(group_rows(s, groups, what))
}
