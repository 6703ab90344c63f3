//! `report.md`: the headline first, then the tables; every number from the summary.

use std::fmt::Write as _;

use super::{num, pct, secs, SnapshotSummary};
use crate::stats::{Group, PolicyStats};

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
    let find = |name: &str| s.stats.policies.iter().find(|p| p.policy == name);
    let mut out = Vec::new();
    if let Some(best) = s.stats.ranking.first().and_then(|n| find(n)) {
        out.push(format!(
            "Best: **{}**, {}.",
            best.policy,
            describe(best, &s.objective)
        ));
        if best.policy == "optimal" {
            if let Some(next) = s.stats.ranking.get(1).and_then(|n| find(n)) {
                out.push(format!(
                    "Best without the exact solver: **{}**, {}.",
                    next.policy,
                    describe(next, &s.objective)
                ));
            }
        }
    }
    for p in s.stats.policies.iter().filter(|p| is_text(&p.policy)) {
        out.push(format!(
            "**{}**: {} of answers valid; invalid answers are scored by FCFS (mean {} {}; with \
             lenient repair instead: {}).",
            p.policy,
            pct(Some(p.valid_share)),
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
        "mean (lenient)",
        "time / decision",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let rows = s
        .stats
        .ranking
        .iter()
        .filter_map(|n| s.stats.policies.iter().find(|p| &p.policy == n))
        .map(|p| {
            vec![
                p.policy.clone(),
                num(p.mean_value),
                pct(p.gap.mean),
                pct(p.gap.median),
                pct(p.gap.p90),
                pct(p.gap.max),
                pct(Some(p.optimal_share)),
                pct(Some(p.valid_share)),
                num(p.mean_lenient_value),
                secs(p.mean_seconds),
            ]
        })
        .collect();
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
