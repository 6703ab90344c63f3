//! `report.md`: the headline first, then the tables; every number from the summary.

use std::fmt::Write as _;

use schedlm_solver::rules::Rule;

use super::{num, pct, secs, SnapshotSummary};
use crate::stats::{equal_compute_baselines, tied, Group, PolicyStats, BRPI, ECT, FCFS_REFERENCE};
use crate::verdict::Verdict;

/// The label of the best rule per instance in tables and plots.
pub const BEST_RULE_LABEL: &str = "best rule per instance (reference)";

/// Whether a policy answers in text (its validity matters).
pub fn is_text(policy: &str) -> bool {
    crate::stats::is_text(policy)
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
                best_names(s, &ranked),
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
                        best_names(s, &others),
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
        if let Some(line) = against_ect(s, p) {
            out.push(line);
        }
        out.push(validity(s, p));
    }
    out.push(format!(
        "Gaps are measured against {}; {} records, objective {}, variant {}. Verdicts: {}.",
        s.reference_words(),
        s.records,
        s.objective,
        s.variant,
        s.stats.verdict_rule.describe()
    ));
    out
}

/// The validity sentence of a text policy: its decoding, the share of valid answers (and,
/// for a constrained model, of its unconstrained answers), failures, retries, records outside
/// its training distribution.
fn validity(s: &SnapshotSummary, p: &PolicyStats) -> String {
    let free = match p.unconstrained_valid_share {
        Some(v) => format!(
            "; without the constraint {} of its greedy answers would be valid",
            pct(Some(v))
        ),
        None => String::new(),
    };
    let outside = match p.outside_training {
        Some(n) if n > 0 => format!(
            "; {n} of {} records lie outside its training distribution",
            p.instances
        ),
        _ => String::new(),
    };
    let retries = if p.retries > 0 {
        format!("; {} requests were retried", p.retries)
    } else {
        String::new()
    };
    format!(
        "**{}**: {} of answers valid{}{free}{outside}{retries}; invalid answers are scored by \
         FCFS (mean {} {}; with lenient repair instead: {}).",
        p.policy,
        pct(Some(p.valid_share)),
        answer_troubles(p),
        s.objective,
        num(p.mean_value),
        num(p.mean_lenient_value)
    )
}

/// The best policy's name in bold, with those level with it by the verdict rule ("**a** (level
/// with **b**, **c**)"); `ranked` is best first.
fn best_names(s: &SnapshotSummary, ranked: &[&PolicyStats]) -> String {
    let Some(best) = ranked.first() else {
        return String::new();
    };
    let level: Vec<String> = ranked[1..]
        .iter()
        .filter(|p| {
            s.stats.verdict(&best.policy, &p.policy).map_or_else(
                || tied(p.mean_value, best.mean_value),
                |c| c.verdict == Verdict::Level,
            )
        })
        .map(|p| format!("**{}**", p.policy))
        .collect();
    if level.is_empty() {
        format!("**{}**", best.policy)
    } else {
        format!("**{}** (level with {})", best.policy, level.join(", "))
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

/// What an equal-compute baseline is, in words.
pub fn baseline_words(name: &str) -> String {
    match name.split_once('@') {
        Some(("ls", _)) => "local search in the same time per instance".to_string(),
        Some((kind, _)) => {
            let n = kind
                .strip_prefix("ranking+")
                .and_then(|k| k.strip_suffix("swaps"))
                .unwrap_or("N");
            format!("the ranking plus {n} random transpositions (same dispatcher evaluations)")
        }
        None => name.to_string(),
    }
}

/// The sentence comparing a (text) policy with the rules and its equal-compute baselines: its
/// mean gap, a verdict against the best rule per instance, the best single rule and FCFS
/// (each with its gap), then against the baselines given the same compute; its wins, ties and
/// losses against the best rule per instance; and how often it answered the queue order or
/// the best rule's order.
pub fn against_rules(s: &SnapshotSummary, p: &PolicyStats) -> String {
    let st = &s.stats;
    let judged = |against: &str| st.verdict(&p.policy, against);
    let mut rules = Vec::new();
    if let Some(c) = judged(BRPI) {
        rules.push(format!(
            "{} the best rule per instance ({})",
            c.verdict.words(),
            pct(st.best_rule_per_instance_gap.mean)
        ));
    }
    if let Some(b) = st.best_single_rule.as_ref().filter(|b| b.rule != "fcfs") {
        if let Some(c) = judged(&b.rule) {
            rules.push(format!(
                "{} the best single rule {} ({})",
                c.verdict.words(),
                b.rule,
                pct(b.gap.mean)
            ));
        }
    }
    if let Some(c) = judged(FCFS_REFERENCE) {
        rules.push(format!(
            "{} FCFS ({})",
            c.verdict.words(),
            pct(st.fcfs_gap.mean)
        ));
    }
    let names: Vec<String> = st.policies.iter().map(|q| q.policy.clone()).collect();
    let equal: Vec<String> = equal_compute_baselines(&p.policy, &names)
        .into_iter()
        .filter_map(|b| {
            let c = judged(b)?;
            let gap = st.policies.iter().find(|q| &q.policy == b)?.gap.mean;
            Some(format!(
                "{} {} ({})",
                c.verdict.words(),
                baseline_words(b),
                pct(gap)
            ))
        })
        .collect();
    let equal = if equal.is_empty() {
        "no equal-compute baseline (its decision times are unknown)".to_string()
    } else {
        format!("at equal compute, {}", equal.join(", "))
    };
    let decoding = p
        .decoding
        .as_deref()
        .filter(|d| !d.is_empty())
        .map(|d| format!(" (decoding: {d})"))
        .unwrap_or_default();
    let t = &p.vs_best_rule;
    format!(
        "**{}**{decoding}: mean gap {}; {}; {equal}; against the best rule per instance: {}, \
         {}, {}; answers identical to the queue order on {}, to the best rule's order on {}.",
        p.policy,
        pct(p.gap.mean),
        rules.join(", "),
        count(t.wins, "win", "wins"),
        count(t.ties, "tie", "ties"),
        count(t.losses, "loss", "losses"),
        pct(Some(p.same_as_queue_order)),
        pct(Some(p.same_as_best_rule_order)),
    )
}

/// The headline sentence of a text policy against `ect` (the listing of the step prompts
/// followed at every state): whether it is that rule, and else how it differs and whether
/// its departures from the listing pay.
fn against_ect(s: &SnapshotSummary, p: &PolicyStats) -> Option<String> {
    let t = p.vs_ect?;
    if p.instances > 0 && p.same_as_ect_order >= 1.0 {
        return Some(format!(
            "**{}** answers `ect`'s order on all {} records: it is the earliest-completion \
             rule (the listing of the step prompts, followed at every state).",
            p.policy, p.instances
        ));
    }
    let verdict = s
        .stats
        .verdict(&p.policy, ECT)
        .map(|c| {
            format!(
                "{} `ect` (sign test p = {:.3})",
                c.verdict.words(),
                c.sign_test_p
            )
        })
        .unwrap_or_else(|| "against `ect`".to_string());
    let listing = p
        .listing
        .map(|l| {
            format!(
                "; it leaves the listing on {} of {} decisions ({}), {} of them lowering the value",
                l.leaving,
                l.decisions,
                pct((l.decisions > 0).then(|| l.leaving as f64 / l.decisions as f64)),
                l.leaving_right
            )
        })
        .unwrap_or_default();
    Some(format!(
        "**{}** {verdict}: {}, {}, {}; `ect`'s order on {} of records{listing}.",
        p.policy,
        count(t.wins, "win", "wins"),
        count(t.ties, "tie", "ties"),
        count(t.losses, "loss", "losses"),
        pct(Some(p.same_as_ect_order)),
    ))
}

/// The table of text policies against `ect` (shared with the HTML report).
pub fn ect_rows(s: &SnapshotSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "policy",
        "W/T/L against ect",
        "verdict",
        "sign test p",
        "ect's order",
        "decisions",
        "leaving the listing",
        "of those, lowering the value",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let rows = s
        .stats
        .policies
        .iter()
        .filter(|p| is_text(&p.policy) && !p.all_failed())
        .filter_map(|p| {
            let t = p.vs_ect?;
            let c = s.stats.verdict(&p.policy, ECT);
            let l = p.listing;
            let share = |a: usize, b: usize| pct((b > 0).then(|| a as f64 / b as f64));
            Some(vec![
                p.policy.clone(),
                format!("{}/{}/{}", t.wins, t.ties, t.losses),
                c.map_or("-".into(), |c| c.verdict.words().to_string()),
                c.map_or("-".into(), |c| format!("{:.3}", c.sign_test_p)),
                pct(Some(p.same_as_ect_order)),
                l.map_or("-".into(), |l| l.decisions.to_string()),
                l.map_or("-".into(), |l| {
                    format!("{} ({})", l.leaving, share(l.leaving, l.decisions))
                }),
                l.map_or("-".into(), |l| {
                    format!(
                        "{} ({})",
                        l.leaving_right,
                        share(l.leaving_right, l.leaving)
                    )
                }),
            ])
        })
        .collect();
    (header, rows)
}

/// What the `ect` table's columns mean.
pub fn ect_note() -> String {
    "`ect` places, at every state, the job that would end first (ties by the ranking): it is \
     the first job of every step prompt's listing, so a step model that never leaves its \
     listing is `ect`. A decision is a state with at least two jobs to choose from; one that \
     leaves the listing lowers the value when the prefix, that job, then `ect` to the end ends \
     below the prefix, the listed first job, then `ect` (docs/eval.md)."
        .to_string()
}

/// `1 win`, `3 wins`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The verdict table (shared with the HTML report): every comparison of the summary, or with
/// `shown_only` those of the text policies and those behind "level with" in the headline.
/// `summary.json` holds every comparison.
pub fn verdict_rows(s: &SnapshotSummary, shown_only: bool) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "policy",
        "against",
        "records",
        "W/T/L",
        "mean gap difference",
        "95% interval",
        "sign test p",
        "verdict",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let points = |v: f64| format!("{:+.3} pp", 100.0 * v);
    let rows = s
        .stats
        .verdicts
        .iter()
        .filter(|c| !shown_only || is_text(&c.policy) || c.verdict == Verdict::Level)
        .map(|c| {
            vec![
                c.policy.clone(),
                c.against.clone(),
                c.records.to_string(),
                format!("{}/{}/{}", c.wins, c.ties, c.losses),
                points(c.mean_difference),
                format!("[{}, {}]", points(c.interval[0]), points(c.interval[1])),
                format!("{:.3}", c.sign_test_p),
                c.verdict.words().to_string(),
            ]
        })
        .collect();
    (header, rows)
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
    if s.stats.policies.iter().any(|p| is_text(&p.policy)) {
        let _ = writeln!(md, "\n## Text answers\n");
        md.push_str(&table(answer_rows(s)));
    }
    if !s.examples.is_empty() {
        let _ = writeln!(md, "\n## Example answers\n");
        md.push_str(&table(example_rows(s)));
    }
    let _ = writeln!(md, "\n## Against the rules\n");
    md.push_str(&table(rules_rows(s)));
    let _ = writeln!(md, "\n{}", rules_note());
    let ect = ect_rows(s);
    if !ect.1.is_empty() {
        let _ = writeln!(md, "\n## Against the earliest-completion rule (`ect`)\n");
        md.push_str(&table(ect));
        let _ = writeln!(md, "\n{}", ect_note());
    }
    if !s.stats.verdicts.is_empty() {
        let _ = writeln!(md, "\n## Verdicts (paired comparisons)\n");
        md.push_str(&table(verdict_rows(s, true)));
        let _ = writeln!(
            md,
            "\nA difference is the policy's gap minus the other's, record by record \
             (negative: the policy is better); {}.",
            s.stats.verdict_rule.describe()
        );
    }
    let _ = writeln!(
        md,
        "\n## Wins / ties / losses (row policy against column policy)\n"
    );
    md.push_str(&pair_table(s));
    let _ = writeln!(md, "\n{}", policy_key(s));
    let _ = writeln!(md, "\n## Mean gap by queue length\n");
    md.push_str(&group_table(s, &s.stats.by_queue, "queue"));
    let _ = writeln!(md, "\n## Mean gap by family\n");
    md.push_str(&group_table(s, &s.stats.by_family, "family"));
    let _ = writeln!(md, "\n{}", policy_key(s));
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

/// What a terminal shows of a snapshot evaluation: the headline (plain text), each of
/// `notes` as `Note: ...`, then the policy table ([`policy_table_text`]).
pub fn terminal_text(s: &SnapshotSummary, notes: &[String]) -> String {
    let headline = headline(s).into_iter().map(|l| l.replace("**", ""));
    let notes = notes.iter().map(|n| format!("Note: {n}"));
    let mut lines: Vec<String> = headline.chain(notes).collect();
    lines.push(policy_table_text(s));
    lines.join("\n")
}

/// The policy table as plain text for a terminal: aligned columns, names and words
/// (`policy`, `decoding`) left-aligned, numbers right-aligned.
pub fn policy_table_text(s: &SnapshotSummary) -> String {
    let (header, rows) = policy_rows(s);
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let left: Vec<bool> = (header.iter().enumerate())
        .map(|(i, h)| i == 0 || h == "policy" || h == "decoding")
        .collect();
    let line = |cells: &[String]| {
        let cells = cells
            .iter()
            .zip(&widths)
            .zip(&left)
            .map(|((c, &w), &left)| {
                if left {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            });
        cells.collect::<Vec<_>>().join("  ")
    };
    let mut text = line(&header);
    for row in &rows {
        text.push('\n');
        text.push_str(&line(row));
    }
    text
}

/// The header and rows of the policy table (shared with the HTML report).
pub fn policy_rows(s: &SnapshotSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "policy",
        "decoding",
        &format!("mean {}", s.objective),
        "mean gap",
        "mean gap to best known",
        "median gap",
        "p90 gap",
        "max gap",
        "optimal",
        "valid",
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
            decoding_cell(p),
            num(p.mean_value),
            pct(p.gap.mean),
            pct(p.gap_to_best_known.mean),
            pct(p.gap.median),
            pct(p.gap.p90),
            pct(p.gap.max),
            pct(Some(p.optimal_share)),
            pct(Some(p.valid_share)),
            secs(p.mean_seconds),
        ]);
    }
    if !placed && reference.is_finite() {
        rows.push(best_rule_row(s));
    }
    (header, rows)
}

/// A policy's decoding for the tables: its text policy's words, `-` for rules and solvers.
fn decoding_cell(p: &PolicyStats) -> String {
    p.decoding.clone().unwrap_or_else(|| "-".into())
}

/// The text policies' answers (shared with the HTML report): validity with and without the
/// constraint, failures, answers cut off, retries, records outside the model's training
/// distribution, and the mean with lenient repair.
pub fn answer_rows(s: &SnapshotSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "policy",
        "decoding",
        "valid",
        "valid unconstrained",
        "failed",
        "cut off",
        "retries",
        "outside training data",
        "mean (lenient repair)",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let rows = s
        .stats
        .policies
        .iter()
        .filter(|p| is_text(&p.policy))
        .map(|p| {
            let retries = match p.retry_reasons.first() {
                Some((why, n)) => format!("{} ({n} x {why})", p.retries),
                None => p.retries.to_string(),
            };
            vec![
                p.policy.clone(),
                decoding_cell(p),
                pct(Some(p.valid_share)),
                p.unconstrained_valid_share
                    .map_or("-".into(), |v| pct(Some(v))),
                p.failed.to_string(),
                p.truncated.to_string(),
                retries,
                p.outside_training
                    .map_or("unknown".into(), |n| format!("{n} of {}", p.instances)),
                num(p.mean_lenient_value),
            ]
        })
        .collect();
    (header, rows)
}

/// The policy table's row of a policy whose every answer failed: no value of its own.
fn failed_row(p: &PolicyStats) -> Vec<String> {
    let dash = || "-".to_string();
    let mut row = vec![p.policy.clone(), decoding_cell(p)];
    row.extend((0..7).map(|_| dash()));
    row.extend([pct(Some(0.0)), secs(p.mean_seconds)]);
    row
}

/// The policy table's row of the best rule per instance (not a policy: the best classic
/// rule picked for each record after the fact).
fn best_rule_row(s: &SnapshotSummary) -> Vec<String> {
    let g = &s.stats.best_rule_per_instance_gap;
    let dash = || "-".to_string();
    vec![
        BEST_RULE_LABEL.to_string(),
        dash(),
        num(s.stats.best_rule_per_instance_mean_value),
        pct(g.mean),
        pct(s.stats.best_rule_per_instance_gap_to_best_known.mean),
        pct(g.median),
        pct(g.p90),
        pct(g.max),
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
/// Columns are numbered (`#1`, `#2`, ...: the policy of that row), so the matrix fits the page
/// whatever the policies' names.
pub fn pair_rows(s: &SnapshotSummary) -> (Vec<String>, Vec<Vec<String>>) {
    let names: Vec<&String> = s.stats.policies.iter().map(|p| &p.policy).collect();
    let mut header = vec!["".to_string()];
    header.extend((1..=names.len()).map(|k| format!("#{k}")));
    let rows = names
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let mut row = vec![format!("#{} {a}", k + 1)];
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

/// The key of the numbered columns: `#1 fcfs, #2 sjf, ...`.
pub fn policy_key(s: &SnapshotSummary) -> String {
    let items: Vec<String> = s
        .stats
        .policies
        .iter()
        .enumerate()
        .map(|(k, p)| format!("#{} {}", k + 1, p.policy))
        .collect();
    format!("Columns: {}.", items.join(", "))
}

/// Mean gap per group (rows) and policy (numbered columns, [`policy_key`]), with the group's
/// size.
pub fn group_rows(
    s: &SnapshotSummary,
    groups: &[Group],
    what: &str,
) -> (Vec<String>, Vec<Vec<String>>) {
    let names: Vec<&String> = s.stats.policies.iter().map(|p| &p.policy).collect();
    let mut header = vec![what.to_string(), "records".to_string()];
    header.extend((1..=names.len()).map(|k| format!("#{k}")));
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
