//! SVG line charts (plotters, SVG backend only): every plot of the reports is one of these.

use plotters::prelude::*;

use crate::error::EvalError;

/// One named line of a chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Line {
    /// The legend entry (a policy name, or the reference's label); a long name keeps its end.
    pub name: String,
    /// The (x, y) points in the chart's units, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// A reference rather than a policy: drawn dashed, in black, without taking a color.
    pub reference: bool,
    /// A label written beside each point (e.g. how many records it averages); empty: none.
    pub labels: Vec<String>,
    /// The line's color, an index into the palette ([`color`]): a policy keeps its color in
    /// every chart of a report. `None`: the next color in turn.
    pub color: Option<usize>,
}

/// What a chart shows.
pub struct Chart<'a> {
    /// The caption above the plot.
    pub title: &'a str,
    /// The description of the x axis (with its unit).
    pub x_label: &'a str,
    /// The description of the y axis (with its unit).
    pub y_label: &'a str,
    /// The lines, drawn and listed in the legend in order; lines that are not references take
    /// the colors (Tableau 10) in turn.
    pub lines: &'a [Line],
    /// Draw the lines as steps (for CDFs).
    pub steps: bool,
    /// The x axis counts things (queue lengths, jobs): ticks only at whole numbers.
    pub integer_x: bool,
    /// Show only x up to this value (a zoomed panel); lines are cut there, steps held to it.
    pub x_max: Option<f64>,
    /// Show only y up to this value (a zoomed panel); points above are left out.
    pub y_max: Option<f64>,
}

impl Chart<'_> {
    /// A chart of `lines` with the default options: no steps, real x, no zoom.
    pub fn new<'a>(
        title: &'a str,
        x_label: &'a str,
        y_label: &'a str,
        lines: &'a [Line],
    ) -> Chart<'a> {
        Chart {
            title,
            x_label,
            y_label,
            lines,
            steps: false,
            integer_x: false,
            x_max: None,
            y_max: None,
        }
    }
}

/// The page's width (report.html's body is at most 1100 px wide), so a chart is readable
/// without zooming; the legend gets a column of its own.
const WIDTH: u32 = 1060;
/// The plot's height; a chart grows below it when its legend needs more room.
const HEIGHT: u32 = 440;
/// Width of the legend column right of the plot.
const LEGEND: u32 = 330;
/// Characters per legend line: a longer name is wrapped onto further lines, never cut.
const LEGEND_CHARS: usize = 40;
/// Height of one legend text line, and the gap between two entries.
const LEGEND_LINE: i32 = 16;
const LEGEND_GAP: i32 = 6;
/// Most ticks on an axis.
const TICKS: usize = 10;

/// A legend entry on lines of at most 40 characters, broken after `/`, `@`,
/// `:`, `,` or a space where one is near the end of a line, else anywhere. Nothing is left out.
pub fn legend_lines(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut lines = Vec::new();
    let mut start = 0;
    while chars.len() - start > LEGEND_CHARS {
        let window = &chars[start..start + LEGEND_CHARS];
        let cut = window
            .iter()
            .rposition(|c| matches!(c, '/' | '@' | ':' | ',' | ' '))
            .filter(|&i| i >= LEGEND_CHARS / 2)
            .map_or(LEGEND_CHARS, |i| i + 1);
        lines.push(
            chars[start..start + cut]
                .iter()
                .collect::<String>()
                .trim_end()
                .to_string(),
        );
        start += cut;
    }
    lines.push(chars[start..].iter().collect());
    lines
}

/// Line colors: Tableau 20 reordered so that the first ten are the strong Tableau 10, then
/// their light companions; twenty lines of a chart all differ.
const COLORS: [(u8, u8, u8); 20] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (174, 199, 232),
    (255, 187, 120),
    (152, 223, 138),
    (255, 152, 150),
    (197, 176, 213),
    (196, 156, 148),
    (247, 182, 210),
    (199, 199, 199),
    (219, 219, 141),
    (158, 218, 229),
];

/// The palette's color `i`; past the palette, colors repeat (lines past the twentieth are
/// drawn dotted, so a repeated color is still told apart).
pub fn color(i: usize) -> RGBAColor {
    let (r, g, b) = COLORS[i % COLORS.len()];
    RGBColor(r, g, b).to_rgba()
}

/// How many distinct colors the palette has.
pub const PALETTE: usize = COLORS.len();

/// The empirical CDF of `values` as step points `(x, share <= x)`, from (min, 0).
pub fn cdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mut points = Vec::with_capacity(v.len() + 1);
    if let Some(&first) = v.first() {
        points.push((first, 0.0));
    }
    for (i, &x) in v.iter().enumerate() {
        if i + 1 < v.len() && v[i + 1] == x {
            continue;
        }
        points.push((x, (i + 1) as f64 / n));
    }
    points
}

/// A time-weighted CDF: each value counts for its weight (e.g. how long it lasted).
pub fn weighted_cdf(values: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = values
        .iter()
        .copied()
        .filter(|(x, w)| x.is_finite() && *w > 0.0)
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = v.iter().map(|p| p.1).sum();
    let mut points = Vec::with_capacity(v.len() + 1);
    if let Some(&(first, _)) = v.first() {
        points.push((first, 0.0));
    }
    let mut acc = 0.0;
    for (i, &(x, w)) in v.iter().enumerate() {
        acc += w;
        if i + 1 < v.len() && v[i + 1].0 == x {
            continue;
        }
        points.push((x, acc / total));
    }
    points
}

fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        return (lo - 0.5, hi + 0.5);
    }
    let pad = (hi - lo) * 0.03;
    (lo - pad, hi + pad)
}

fn as_steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &p) in points.iter().enumerate() {
        if i > 0 {
            out.push((p.0, points[i - 1].1));
        }
        out.push(p);
    }
    out
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart<'_>) -> Result<String, EvalError> {
    let mut out = String::new();
    draw(chart, &mut out).map_err(|e| EvalError::Report(format!("plot {}: {e}", chart.title)))?;
    Ok(out)
}

/// The points of a line inside the chart's zoom: a step line is held at `x_max` (its share so
/// far), a plain line drops points beyond either limit.
fn zoomed(chart: &Chart<'_>, points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let x_max = chart.x_max.unwrap_or(f64::INFINITY);
    let y_max = chart.y_max.unwrap_or(f64::INFINITY);
    if chart.steps {
        let mut out: Vec<(f64, f64)> = points.iter().copied().filter(|p| p.0 <= x_max).collect();
        if let (Some(&last), true) = (out.last(), x_max.is_finite()) {
            if points.len() > out.len() || last.0 < x_max {
                out.push((x_max, last.1));
            }
        }
        return out;
    }
    points
        .iter()
        .copied()
        .filter(|p| p.0 <= x_max && p.1 <= y_max)
        .collect()
}

fn draw(chart: &Chart<'_>, out: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    // Each line with its points inside the zoom and its legend lines.
    type Drawn<'l> = (&'l Line, Vec<(f64, f64)>, Vec<String>);
    let lines: Vec<Drawn<'_>> = chart
        .lines
        .iter()
        .map(|l| (l, zoomed(chart, &l.points), legend_lines(&l.name)))
        .collect();
    let all = || lines.iter().flat_map(|l| l.1.iter());
    let (x0, mut x1) = range(all().map(|p| p.0));
    let (mut y0, mut y1) = range(all().map(|p| p.1));
    if let Some(x) = chart.x_max {
        x1 = x1.min(x * 1.02);
    }
    if let Some(y) = chart.y_max {
        y1 = y1.min(y * 1.03);
    }
    if chart.steps {
        (y0, y1) = (y0.min(0.0), y1.max(1.0));
    }
    let legend_rows: i32 = lines
        .iter()
        .map(|l| l.2.len() as i32 * LEGEND_LINE + LEGEND_GAP)
        .sum();
    let height = HEIGHT.max((40 + legend_rows + 20) as u32);
    {
        let root = SVGBackend::with_string(out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, legend) = root.split_horizontally(WIDTH - LEGEND);
        let mut c = ChartBuilder::on(&plot)
            .caption(chart.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        let whole = |x: &f64| format!("{x:.0}");
        let mut mesh = c.configure_mesh();
        mesh.x_desc(chart.x_label)
            .y_desc(chart.y_label)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .light_line_style(WHITE.mix(0.0));
        if chart.integer_x {
            // One tick per whole number in range, at most TICKS of them.
            let span = (x1.floor() - x0.ceil()).max(0.0) as usize + 1;
            mesh.x_labels(span.min(TICKS)).x_label_formatter(&whole);
        }
        mesh.draw()?;
        let mut colors = 0;
        let mut y = 40;
        for (line, kept, names) in &lines {
            let index = if line.reference {
                None
            } else {
                let i = line.color.unwrap_or(colors);
                colors += 1;
                Some(i)
            };
            let color = index.map_or(BLACK.to_rgba(), color);
            let points = if chart.steps {
                as_steps(kept)
            } else {
                kept.clone()
            };
            let style = color.stroke_width(2);
            let dotted = index.is_some_and(|i| i >= PALETTE);
            if line.reference {
                c.draw_series(DashedLineSeries::new(points, 6, 4, style))?;
                legend.draw(&PathElement::new(vec![(4, y), (11, y)], style))?;
                legend.draw(&PathElement::new(vec![(17, y), (24, y)], style))?;
            } else if dotted {
                c.draw_series(DashedLineSeries::new(points, 2, 3, style))?;
                for x in [4, 10, 16, 22] {
                    legend.draw(&PathElement::new(vec![(x, y), (x + 2, y)], style))?;
                }
            } else {
                c.draw_series(LineSeries::new(points, style))?;
                legend.draw(&PathElement::new(vec![(4, y), (24, y)], style))?;
            }
            for (k, text) in names.iter().enumerate() {
                legend.draw(&Text::new(
                    text.clone(),
                    (30, y - 7 + LEGEND_LINE * k as i32),
                    ("sans-serif", 13),
                ))?;
            }
            y += LEGEND_LINE * names.len() as i32 + LEGEND_GAP;
            // Each label a little above and right of its point (inside the zoom).
            let inside = |p: &(f64, f64)| kept.contains(p);
            c.draw_series(
                line.points
                    .iter()
                    .zip(&line.labels)
                    .filter(|(p, _)| inside(p))
                    .map(|(&p, label)| {
                        EmptyElement::at(p)
                            + Text::new(
                                label.clone(),
                                (4, -18),
                                ("sans-serif", 12).into_font().color(&color),
                            )
                    }),
            )?;
            if !chart.steps && kept.len() <= 40 {
                c.draw_series(kept.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
        }
        root.present()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_names_wrap_whole_and_colors_differ() {
        let name = "ranking+8swaps@model:/work/main/schedlm-out/model (best-of)";
        let lines = legend_lines(name);
        assert!(lines.len() >= 2 && lines.iter().all(|l| l.chars().count() <= LEGEND_CHARS));
        assert_eq!(lines.concat().replace(' ', ""), name.replace(' ', ""));
        assert_eq!(legend_lines("sjf"), vec!["sjf"]);
        let colors: std::collections::HashSet<(u8, u8, u8)> = COLORS.iter().copied().collect();
        assert_eq!(colors.len(), PALETTE);
    }

    #[test]
    fn a_zoomed_panel_cuts_lines_at_its_limits() {
        let step = [(0.0, 0.0), (0.5, 0.4), (1.5, 0.8), (60.0, 1.0)];
        let lines = [Line::default()];
        let cdf_chart = Chart {
            steps: true,
            x_max: Some(2.0),
            ..Chart::new("t", "x", "y", &lines)
        };
        assert_eq!(
            zoomed(&cdf_chart, &step),
            vec![(0.0, 0.0), (0.5, 0.4), (1.5, 0.8), (2.0, 0.8)]
        );
        let plain = Chart {
            y_max: Some(1.0),
            ..Chart::new("t", "x", "y", &lines)
        };
        assert_eq!(zoomed(&plain, &[(1.0, 0.5), (2.0, 3.0)]), vec![(1.0, 0.5)]);
    }

    #[test]
    fn cdfs_and_svg() {
        assert_eq!(
            cdf(&[2.0, 1.0, 2.0, 3.0]),
            vec![(1.0, 0.0), (1.0, 0.25), (2.0, 0.75), (3.0, 1.0)]
        );
        assert_eq!(
            weighted_cdf(&[(1.0, 3.0), (2.0, 1.0)]),
            vec![(1.0, 0.0), (1.0, 0.75), (2.0, 1.0)]
        );
        let lines = [
            Line {
                name: "a<b".into(),
                points: cdf(&[0.0, 0.1, 0.5]),
                ..Line::default()
            },
            Line {
                name: "ref".into(),
                points: cdf(&[0.0, 0.2]),
                reference: true,
                ..Line::default()
            },
        ];
        let s = svg(&Chart {
            steps: true,
            ..Chart::new("t", "x", "y", &lines)
        })
        .unwrap();
        assert!(
            s.starts_with("<svg") && s.contains("a&lt;b"),
            "{}",
            &s[..200]
        );
    }

    #[test]
    fn integer_axes_have_whole_ticks_and_points_their_labels() {
        let lines = [Line {
            name: "p".into(),
            points: vec![(3.0, 1.0), (4.5, 2.0), (7.0, 0.5)],
            labels: vec!["n=12".into(), "n=7".into(), "n=3".into()],
            ..Line::default()
        }];
        let s = svg(&Chart {
            integer_x: true,
            ..Chart::new("t", "queued jobs", "y", &lines)
        })
        .unwrap();
        assert!(s.contains("n=12") && s.contains("n=3"));
        // Tick labels are whole numbers: no "4.5" and no decimals like "3.0".
        let texts: Vec<&str> = s
            .split("</text>")
            .filter_map(|t| t.rsplit('>').next())
            .map(str::trim)
            .collect();
        for t in texts.iter().filter(|t| t.parse::<f64>().is_ok()) {
            if t.contains('.') {
                // Only the y axis may have decimals; an x tick is whole.
                assert!(
                    !["3.0", "4.0", "4.5", "5.0", "6.0", "7.0"].contains(t),
                    "{t}"
                );
            }
        }
        assert!(texts.contains(&"4") && texts.contains(&"6"), "{texts:?}");
    }
}
