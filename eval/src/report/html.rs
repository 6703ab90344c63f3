//! `report.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched).

use std::fmt::Write as _;

use super::markdown::{
    answer_rows, ect_note, ect_rows, example_rows, group_rows, headline, is_text, pair_rows,
    policy_key, policy_rows, rules_note, rules_rows, verdict_rows, BEST_RULE_LABEL,
};
use super::plot::{cdf, svg, Chart, Line};
use super::SnapshotSummary;
use crate::error::EvalError;
use crate::snapshot::{gap_to, Row};
use crate::stats::queue_bins;

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:1.5em auto;\
padding:0 1em;color:#222}h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}\
table{border-collapse:collapse;margin:.5em 0;font-size:.85em;max-width:100%}\
td,th{border:1px solid #ccc;padding:.2em .45em;text-align:right;white-space:nowrap}\
th{white-space:normal}td.name{text-align:left;white-space:normal;overflow-wrap:anywhere;\
max-width:22em}td:first-child,th:first-child{text-align:left;white-space:normal;\
overflow-wrap:anywhere;max-width:22em}\
th{background:#f3f3f3}.wide{overflow-x:auto}\
.headline{background:#f6f8fa;border-left:4px solid #2a6;padding:.6em 1em}\
.headline li{margin:.3em 0}.plots{display:flex;flex-wrap:wrap;gap:1em}\
.plots figure{margin:0}.note{color:#a50}\
td.win{background:#dff3e4}td.loss{background:#fbe3e1}td.even{background:#f1f3f4}";

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A headline sentence: escaped, `**x**` as bold.
fn sentence(s: &str) -> String {
    escape(s)
        .split("**")
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<strong>{part}</strong>")
            } else {
                part.to_string()
            }
        })
        .collect()
}

/// An HTML table.
pub fn table(rows: (Vec<String>, Vec<Vec<String>>)) -> String {
    table_with(rows, |_, _| "")
}

/// An HTML table whose data cells get the CSS class `class(column, text)` (none when empty).
fn table_with(
    (header, rows): (Vec<String>, Vec<Vec<String>>),
    class: impl Fn(usize, &str) -> &'static str,
) -> String {
    let mut t = String::from("<div class=\"wide\"><table><tr>");
    for h in header {
        let _ = write!(t, "<th>{}</th>", escape(&h));
    }
    t.push_str("</tr>\n");
    for row in rows {
        t.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            match class(i, cell) {
                // Words (names, decodings, verdicts) wrap and align left; numbers do not.
                "" if words(cell) => {
                    let _ = write!(t, "<td class=\"name\">{}</td>", escape(cell));
                }
                "" => {
                    let _ = write!(t, "<td>{}</td>", escape(cell));
                }
                c => {
                    let _ = write!(t, "<td class=\"{c}\">{}</td>", escape(cell));
                }
            }
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</table></div>\n");
    t
}

/// Whether a table cell holds words (a name, a decoding, a verdict) rather than a number with
/// its unit, a share, a count like `3/4/1` or an interval: it starts with a letter.
fn words(cell: &str) -> bool {
    cell.chars().next().is_some_and(char::is_alphabetic)
}

/// The page around a body.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n",
        escape(title)
    )
}

/// A figure holding an SVG chart.
pub fn figure(svg: &str) -> String {
    format!("<figure>{svg}</figure>\n")
}

/// The report of a snapshot evaluation.
pub fn snapshot(s: &SnapshotSummary, rows: &[Row]) -> Result<String, EvalError> {
    let title = format!("schedlm evaluation: {} on {}", s.objective, s.data);
    let mut b = format!("<h1>{}</h1>\n<ul class=\"headline\">\n", escape(&title));
    for line in headline(s) {
        let _ = writeln!(b, "<li>{}</li>", sentence(&line));
    }
    for note in &s.notes {
        let _ = writeln!(b, "<li class=\"note\">Note: {}</li>", escape(note));
    }
    b.push_str("</ul>\n<h2>Policies (best first)</h2>\n");
    b.push_str(&table(policy_rows(s)));
    if s.stats.policies.iter().any(|p| is_text(&p.policy)) {
        b.push_str("<h2>Text answers</h2>\n");
        b.push_str(&table(answer_rows(s)));
    }
    if !s.examples.is_empty() {
        b.push_str("<h2>Example answers</h2>\n");
        b.push_str(&table(example_rows(s)));
    }
    b.push_str("<h2>Against the rules</h2>\n");
    b.push_str(&table(rules_rows(s)));
    let _ = writeln!(b, "<p>{}</p>", escape(&rules_note()));
    let ect = ect_rows(s);
    if !ect.1.is_empty() {
        b.push_str("<h2>Against the earliest-completion rule (ect)</h2>\n");
        b.push_str(&table(ect));
        let _ = writeln!(b, "<p>{}</p>", escape(&ect_note()));
    }
    if !s.stats.verdicts.is_empty() {
        b.push_str("<h2>Verdicts (paired comparisons)</h2>\n");
        b.push_str(&table(verdict_rows(s, true)));
        let _ = writeln!(
            b,
            "<p>A difference is the policy's gap minus the other's, record by record \
             (negative: the policy is better); {}.</p>",
            escape(&s.stats.verdict_rule.describe())
        );
    }
    b.push_str("<h2>Gaps</h2>\n<div class=\"plots\">\n");
    for chart in gap_cdf(s, rows)?.iter().chain(&gap_by_queue(s, rows)?) {
        b.push_str(&figure(chart));
    }
    b.push_str("</div>\n<h2>Wins / ties / losses (row policy against column policy)</h2>\n");
    b.push_str(&pair_table(s));
    b.push_str(
        "<p>Cells: wins/ties/losses of the row policy against the column's (#k: the policy of \
         row #k), record by record; green where it wins more than it loses, red where it loses \
         more, grey when even.</p>\n",
    );
    b.push_str("<h2>Mean gap by queue length</h2>\n");
    b.push_str(&table(group_rows(s, &s.stats.by_queue, "queue")));
    b.push_str("<h2>Mean gap by family</h2>\n");
    b.push_str(&table(group_rows(s, &s.stats.by_family, "family")));
    let _ = writeln!(b, "<p>{}</p>", escape(&policy_key(s)));
    b.push_str(
        "<p>Every number comes from <code>summary.json</code>, computed from the per-instance \
         rows in <code>instances.csv</code> (definitions: docs/eval.md).</p>\n",
    );
    Ok(page(&title, &b))
}

/// The wins/ties/losses table with each cell coloured by who wins more.
fn pair_table(s: &SnapshotSummary) -> String {
    table_with(pair_rows(s), |column, cell| {
        let counts: Vec<usize> = cell.split('/').filter_map(|n| n.parse().ok()).collect();
        match counts[..] {
            [w, _, l] if column > 0 && w > l => "win",
            [w, _, l] if column > 0 && w < l => "loss",
            [_, _, _] if column > 0 => "even",
            _ => "",
        }
    })
}

/// The policies to plot: those that answered at least once (a policy whose answers all
/// failed did not schedule and is not drawn as if it had).
fn names(s: &SnapshotSummary) -> Vec<&str> {
    s.stats
        .policies
        .iter()
        .filter(|p| !p.all_failed())
        .map(|p| p.policy.as_str())
        .collect()
}

/// A policy's legend entry: its name, and how many failed answers the plot leaves out.
fn legend(s: &SnapshotSummary, policy: &str) -> String {
    match s.stats.policies.iter().find(|p| p.policy == policy) {
        Some(p) if p.failed > 0 => format!("{policy} ({} failed answers not shown)", p.failed),
        _ => policy.to_string(),
    }
}

/// The rows of one policy, standing for the records: the best rule per instance's gap of a
/// record is the same in every policy's row.
fn record_rows(s: &SnapshotSummary, rows: &[Row]) -> Vec<Row> {
    let first = s.stats.policies.first().map(|p| p.policy.as_str());
    rows.iter()
        .filter(|r| Some(r.policy.as_str()) == first)
        .map(|r| Row {
            gap: gap_to(r.best_rule_value, r.reference).1,
            failed: false,
            ..r.clone()
        })
        .collect()
}

/// The upper end (in %) of the band where the best policies sit, for the zoomed panels: the
/// largest p90 gap among the policies whose mean gap is at most twice the best rule per
/// instance's plus 0.5 points (the rules and models near it; FCFS and LJF, often ten times
/// further, are left to the full panel), and the best rule per instance's own p90. `None`
/// when the full range is not at least twice that band (no zoom needed).
fn band(s: &SnapshotSummary) -> Option<f64> {
    let brpi = &s.stats.best_rule_per_instance_gap;
    let limit = 2.0 * brpi.mean? + 0.005;
    let near = s
        .stats
        .policies
        .iter()
        .filter(|p| !p.all_failed() && p.gap.mean.is_some_and(|m| m <= limit));
    let top = near
        .filter_map(|p| p.gap.p90)
        .chain(brpi.p90)
        .fold(0.0f64, f64::max)
        .max(0.001);
    let widest = s
        .stats
        .policies
        .iter()
        .filter_map(|p| p.gap.max)
        .fold(0.0f64, f64::max);
    (widest > 2.0 * top).then_some(100.0 * top * 1.15)
}

/// The palette color of each policy: its place in the summary, so a policy has one color in
/// every chart.
fn color_of(s: &SnapshotSummary, policy: &str) -> Option<usize> {
    s.stats.policies.iter().position(|p| p.policy == policy)
}

/// CDFs of the gap (in %) per policy and of the best rule per instance (dashed): the whole
/// range, and a panel zoomed on the band of the best policies.
fn gap_cdf(s: &SnapshotSummary, rows: &[Row]) -> Result<Vec<String>, EvalError> {
    let cdf_of = |rows: &[Row], p: &str| {
        let gaps: Vec<f64> = rows
            .iter()
            .filter(|r| r.policy == p && !r.failed)
            .filter_map(|r| r.gap.map(|g| g * 100.0))
            .collect();
        cdf(&gaps)
    };
    let mut lines: Vec<Line> = names(s)
        .into_iter()
        .map(|p| Line {
            name: legend(s, p),
            points: cdf_of(rows, p),
            color: color_of(s, p),
            ..Line::default()
        })
        .collect();
    let reference = record_rows(s, rows);
    if let Some(first) = reference.first() {
        lines.push(Line {
            name: BEST_RULE_LABEL.to_string(),
            points: cdf_of(&reference, &first.policy),
            reference: true,
            ..Line::default()
        });
    }
    let full = Chart {
        steps: true,
        ..Chart::new(
            "Gap to the reference: CDF per policy",
            "gap (%)",
            "share of instances with gap <= x",
            &lines,
        )
    };
    let mut out = vec![svg(&full)?];
    if let Some(top) = band(s) {
        let title = format!("The same, zoomed on 0 to {top:.2}% (the band of the best policies)");
        out.push(svg(&Chart {
            title: &title,
            x_max: Some(top),
            ..full
        })?);
    }
    Ok(out)
}

/// Mean gap (in %) per queue-length group and policy, at the group's mean length, and of the
/// best rule per instance (dashed, each point labelled with its group's record count): the
/// whole range, and a panel zoomed on the band of the best policies.
fn gap_by_queue(s: &SnapshotSummary, rows: &[Row]) -> Result<Vec<String>, EvalError> {
    let bins = queue_bins(rows);
    // (mean queue length, mean gap in %, records) of each group with a defined gap.
    let by_queue = |rows: &[Row], p: &str| -> Vec<(f64, f64, usize)> {
        bins.iter()
            .filter_map(|&(lo, hi)| {
                let members: Vec<&Row> = rows
                    .iter()
                    .filter(|r| r.policy == p && !r.failed && lo <= r.queue && r.queue <= hi)
                    .collect();
                let gaps: Vec<f64> = members.iter().filter_map(|r| r.gap).collect();
                if gaps.is_empty() {
                    return None;
                }
                let len =
                    members.iter().map(|r| r.queue as f64).sum::<f64>() / members.len() as f64;
                let mean = 100.0 * gaps.iter().sum::<f64>() / gaps.len() as f64;
                Some((len, mean, members.len()))
            })
            .collect()
    };
    let points = |v: &[(f64, f64, usize)]| v.iter().map(|&(x, y, _)| (x, y)).collect();
    let mut lines: Vec<Line> = names(s)
        .into_iter()
        .map(|p| Line {
            name: legend(s, p),
            points: points(&by_queue(rows, p)),
            color: color_of(s, p),
            ..Line::default()
        })
        .collect();
    let reference = record_rows(s, rows);
    let mut brpi_top = 0.0f64;
    if let Some(first) = reference.first() {
        let groups = by_queue(&reference, &first.policy);
        brpi_top = groups.iter().map(|g| g.1).fold(0.0, f64::max);
        lines.push(Line {
            name: BEST_RULE_LABEL.to_string(),
            points: points(&groups),
            reference: true,
            labels: groups.iter().map(|g| format!("n={}", g.2)).collect(),
            ..Line::default()
        });
    }
    let full = Chart {
        integer_x: true,
        ..Chart::new(
            "Mean gap versus queue length (n: records per point)",
            "queued jobs",
            "mean gap (%)",
            &lines,
        )
    };
    let mut out = vec![svg(&full)?];
    if band(s).is_some() {
        // The best rule per instance at its highest point, with room for those near it.
        let top = (3.0 * brpi_top).max(0.5);
        let title = format!("The same, zoomed on 0 to {top:.2}% (policies above are cut off)");
        out.push(svg(&Chart {
            title: &title,
            y_max: Some(top),
            ..full
        })?);
    }
    Ok(out)
}
