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
}

/// The page's width (report.html's body is at most 1100 px wide), so a chart is readable
/// without zooming; the legend gets a column of its own.
const WIDTH: u32 = 1060;
const HEIGHT: u32 = 440;
/// Width of the legend column right of the plot.
const LEGEND: u32 = 330;
/// Longest legend entry, in characters (longer names keep their end).
const LEGEND_CHARS: usize = 46;
/// Most ticks on an axis.
const TICKS: usize = 10;

/// A legend entry: the name, or its last characters after an ellipsis.
fn legend_name(name: &str) -> String {
    let n = name.chars().count();
    if n <= LEGEND_CHARS {
        return name.to_string();
    }
    let tail: String = name.chars().skip(n - (LEGEND_CHARS - 1)).collect();
    format!("…{tail}")
}

/// Line colors (Tableau 10), repeated when there are more lines.
const COLORS: [(u8, u8, u8); 10] = [
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
];

fn color(i: usize) -> RGBAColor {
    let (r, g, b) = COLORS[i % COLORS.len()];
    RGBColor(r, g, b).to_rgba()
}

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

fn draw(chart: &Chart<'_>, out: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let all = || chart.lines.iter().flat_map(|l| l.points.iter());
    let (x0, x1) = range(all().map(|p| p.0));
    let (y0, y1) = range(all().map(|p| p.1));
    {
        let root = SVGBackend::with_string(out, (WIDTH, HEIGHT)).into_drawing_area();
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
        for (i, line) in chart.lines.iter().enumerate() {
            let color = if line.reference {
                BLACK.to_rgba()
            } else {
                colors += 1;
                color(colors - 1)
            };
            let points = if chart.steps {
                as_steps(&line.points)
            } else {
                line.points.clone()
            };
            let style = color.stroke_width(2);
            let y = 40 + 20 * i as i32;
            if line.reference {
                c.draw_series(DashedLineSeries::new(points, 6, 4, style))?;
                legend.draw(&PathElement::new(vec![(4, y), (11, y)], style))?;
                legend.draw(&PathElement::new(vec![(17, y), (24, y)], style))?;
            } else {
                c.draw_series(LineSeries::new(points, style))?;
                legend.draw(&PathElement::new(vec![(4, y), (24, y)], style))?;
            }
            legend.draw(&Text::new(
                legend_name(&line.name),
                (30, y - 7),
                ("sans-serif", 13),
            ))?;
            // Each label a little above and right of its point.
            c.draw_series(line.points.iter().zip(&line.labels).map(|(&p, label)| {
                EmptyElement::at(p)
                    + Text::new(
                        label.clone(),
                        (4, -18),
                        ("sans-serif", 12).into_font().color(&color),
                    )
            }))?;
            if !chart.steps && line.points.len() <= 40 {
                c.draw_series(
                    line.points
                        .iter()
                        .map(|&p| Circle::new(p, 3, color.filled())),
                )?;
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
            title: "t",
            x_label: "x",
            y_label: "y",
            lines: &lines,
            steps: true,
            integer_x: false,
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
            title: "t",
            x_label: "queued jobs",
            y_label: "y",
            lines: &lines,
            steps: false,
            integer_x: true,
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
