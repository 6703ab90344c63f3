//! Learning curves of a run: `curve.csv` (one row per evaluation point, appended as training
//! goes) and `curve.svg` (redrawn from the CSV at each point): answer loss (train and
//! validation) and the held-out mean gap against training tokens seen.
//!
//! Empty cells mean "not measured": no validation records (`val_loss`) or no held-out records
//! decoded (`val_gap_mean`, `val_valid_share`, `val_optimal_share`); also an undefined gap.

use std::io::Write;
use std::path::Path;

use plotters::prelude::*;

use crate::error::{FinetuneError, Result};

/// File of a run directory with one row per evaluation point, under [`HEADER`].
pub const CURVE_CSV: &str = "curve.csv";
/// File of a run directory with the curves drawn (answer loss and held-out gap against training
/// tokens seen), redrawn from `curve.csv` at each point.
pub const CURVE_SVG: &str = "curve.svg";
/// The header line of `curve.csv`.
pub const HEADER: &str = "step,epoch,tokens_seen,answer_tokens_seen,elapsed_s,train_loss,\
val_loss,val_gap_mean,val_valid_share,val_optimal_share";

/// One evaluation point.
#[derive(Debug, Clone, PartialEq)]
pub struct CurvePoint {
    /// Optimizer steps taken.
    pub step: usize,
    /// Epochs done, fractional (1.5: halfway through the second).
    pub epoch: f64,
    /// Training tokens (prompt and answer) seen so far.
    pub tokens_seen: u64,
    /// Of which answer tokens (those the loss is taken on).
    pub answer_tokens_seen: u64,
    /// Seconds since the run started (training and evaluation; not counting time lost to an
    /// interruption after the last checkpoint).
    pub elapsed_s: f64,
    /// Mean batch loss since the previous point.
    pub train_loss: f64,
    /// Answer-token loss on the validation examples (weighted by answer tokens); `None` without
    /// validation records.
    pub val_loss: Option<f64>,
    /// Mean relative gap `(value - lower_bound) / lower_bound` of the constrained greedy answers to
    /// the held-out records, a fraction (0.05: 5%); `None` without held-out records or when no gap
    /// was defined.
    pub val_gap_mean: Option<f64>,
    /// Share (0 to 1) of held-out records whose unconstrained greedy answer parses strictly as a
    /// valid order; `None` without held-out records.
    pub val_valid_share: Option<f64>,
    /// Share (0 to 1) of held-out records whose constrained greedy answer is at most as costly as
    /// the record's label (1e-9 relative tolerance); `None` without held-out records.
    pub val_optimal_share: Option<f64>,
}

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.filter(|x| x.is_finite())
        .map_or(String::new(), |x| format!("{x:.decimals$}"))
}

impl CurvePoint {
    /// One line for a terminal: `step 400  epoch 0.08  tokens 890013  train loss ...`.
    pub fn line(&self) -> String {
        let opt =
            |v: Option<f64>, scale: f64| v.map_or("-".into(), |x| format!("{:.3}", x * scale));
        format!(
            "step {:>6}  epoch {:.2}  tokens {:>9}  train loss {:.4}  val loss {}  gap {}%  \
             valid {}  optimal {}",
            self.step,
            self.epoch,
            self.tokens_seen,
            self.train_loss,
            opt(self.val_loss, 1.0),
            opt(self.val_gap_mean, 100.0),
            opt(self.val_valid_share, 1.0),
            opt(self.val_optimal_share, 1.0),
        )
    }

    /// The CSV row (no newline).
    pub fn row(&self) -> String {
        format!(
            "{},{:.4},{},{},{:.1},{},{},{},{},{}",
            self.step,
            self.epoch,
            self.tokens_seen,
            self.answer_tokens_seen,
            self.elapsed_s,
            cell(Some(self.train_loss), 6),
            cell(self.val_loss, 6),
            cell(self.val_gap_mean, 6),
            cell(self.val_valid_share, 4),
            cell(self.val_optimal_share, 4),
        )
    }

    /// Parses a row written by [`CurvePoint::row`].
    pub fn parse(line: &str) -> std::result::Result<CurvePoint, String> {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 10 {
            return Err(format!("{} fields, expected 10", f.len()));
        }
        let opt = |s: &str| -> std::result::Result<Option<f64>, String> {
            if s.is_empty() {
                return Ok(None);
            }
            s.parse().map(Some).map_err(|e| format!("`{s}`: {e}"))
        };
        let num = |s: &str| opt(s).map(|v| v.unwrap_or(f64::NAN));
        let int = |s: &str| s.parse::<u64>().map_err(|e| format!("`{s}`: {e}"));
        Ok(CurvePoint {
            step: int(f[0])? as usize,
            epoch: num(f[1])?,
            tokens_seen: int(f[2])?,
            answer_tokens_seen: int(f[3])?,
            elapsed_s: num(f[4])?,
            train_loss: num(f[5])?,
            val_loss: opt(f[6])?,
            val_gap_mean: opt(f[7])?,
            val_valid_share: opt(f[8])?,
            val_optimal_share: opt(f[9])?,
        })
    }
}

/// The points of `dir/curve.csv` (none if there is no file).
pub fn read(dir: &Path) -> Result<Vec<CurvePoint>> {
    let path = dir.join(CURVE_CSV);
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| FinetuneError::io(&path, e))?;
    let mut points = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 || line.trim().is_empty() {
            continue;
        }
        let point = CurvePoint::parse(line).map_err(|message| FinetuneError::Data {
            path: path.clone(),
            line: i + 1,
            message,
        })?;
        points.push(point);
    }
    Ok(points)
}

/// Rewrites `dir/curve.csv` with only the points up to `step` (the checkpoint a run resumes
/// from), so that the rows a resumed run appends continue it exactly.
pub fn truncate(dir: &Path, step: usize) -> Result<Vec<CurvePoint>> {
    let mut points = read(dir)?;
    points.retain(|p| p.step <= step);
    let mut text = format!("{HEADER}\n");
    for p in &points {
        text.push_str(&p.row());
        text.push('\n');
    }
    let path = dir.join(CURVE_CSV);
    crate::io::create_dir(dir)?;
    std::fs::write(&path, text).map_err(|e| FinetuneError::io(&path, e))?;
    Ok(points)
}

/// Appends a point to `dir/curve.csv` (writing the header first if the file is new).
pub fn append(dir: &Path, point: &CurvePoint) -> Result<()> {
    append_row(&dir.join(CURVE_CSV), HEADER, &point.row())
}

/// Appends `row` to the CSV file at `path`, writing `header` first if the file is new (the
/// supervised and the RL curves).
pub(crate) fn append_row(path: &Path, header: &str, row: &str) -> Result<()> {
    let new = !path.is_file();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| FinetuneError::io(path, e))?;
    let text = if new {
        format!("{header}\n{row}\n")
    } else {
        format!("{row}\n")
    };
    file.write_all(text.as_bytes())
        .map_err(|e| FinetuneError::io(path, e))
}

/// Writes `dir/curve.svg` from `points`, titled with `title`.
pub fn plot(dir: &Path, title: &str, points: &[CurvePoint]) -> Result<()> {
    let path = dir.join(CURVE_SVG);
    let mut svg = String::new();
    draw(&mut svg, title, points)
        .map_err(|e| FinetuneError::Model(format!("{}: plot: {e}", path.display())))?;
    std::fs::write(&path, svg).map_err(|e| FinetuneError::io(&path, e))
}

const WIDTH: u32 = 1100;
const HEIGHT: u32 = 440;
const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(255, 127, 14);
const GREEN: RGBColor = RGBColor(44, 160, 44);

/// A named series of (tokens seen, value).
struct Series<'a> {
    name: &'a str,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

fn series<'a>(
    name: &'a str,
    color: RGBColor,
    points: &[CurvePoint],
    y: impl Fn(&CurvePoint) -> Option<f64>,
) -> Series<'a> {
    let points = points
        .iter()
        .filter_map(|p| {
            y(p).filter(|v| v.is_finite())
                .map(|v| (p.tokens_seen as f64, v))
        })
        .collect();
    Series {
        name,
        color,
        points,
    }
}

/// (low, high) of finite values, padded; (0, 1) without any.
fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let lo = if from_zero { lo.min(0.0) } else { lo };
    let pad = ((hi - lo) * 0.05).max(1e-6);
    (if from_zero { lo } else { lo - pad }, hi + pad)
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn draw(out: &mut String, title: &str, points: &[CurvePoint]) -> DrawResult {
    let loss = [
        series("train loss", BLUE, points, |p| Some(p.train_loss)),
        series("validation loss", ORANGE, points, |p| p.val_loss),
    ];
    let gap = [series("held-out mean gap", GREEN, points, |p| {
        p.val_gap_mean.map(|g| g * 100.0)
    })];
    let root = SVGBackend::with_string(out, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 20))?;
    let (left, right) = root.split_horizontally(WIDTH / 2);
    panel(&left, "answer loss", "answer-token loss (nats)", &loss)?;
    panel(
        &right,
        "held-out mean gap",
        "mean gap to the lower bound (%)",
        &gap,
    )?;
    root.present()?;
    Ok(())
}

fn panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    caption: &str,
    y_label: &str,
    lines: &[Series],
) -> DrawResult {
    let all = || lines.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = range(all().map(|p| p.0), true);
    let (y0, y1) = range(all().map(|p| p.1), true);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc("training tokens seen")
        .y_desc(y_label)
        .x_label_formatter(&|x| tokens_label(*x))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for s in lines {
        let style = s.color.stroke_width(2);
        chart
            .draw_series(LineSeries::new(s.points.clone(), style))?
            .label(s.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        if s.points.len() <= 60 {
            chart.draw_series(
                s.points
                    .iter()
                    .map(|&p| Circle::new(p, 3, s.color.filled())),
            )?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

/// Tokens as `950`, `12k`, `1.2M`.
fn tokens_label(x: f64) -> String {
    if x.abs() >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if x.abs() >= 1e3 {
        format!("{:.0}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(step: usize) -> CurvePoint {
        CurvePoint {
            step,
            epoch: step as f64 / 4.0,
            tokens_seen: 1000 * step as u64,
            answer_tokens_seen: 50 * step as u64,
            elapsed_s: 1.5 * step as f64,
            train_loss: 4.0 / step as f64,
            val_loss: Some(3.0 / step as f64),
            val_gap_mean: (step > 1).then_some(0.1 / step as f64),
            val_valid_share: Some(0.5),
            val_optimal_share: None,
        }
    }

    #[test]
    fn rows_parse_back_and_truncate_keeps_earlier_points() {
        let dir = tempfile::tempdir().unwrap();
        for step in 1..=4 {
            append(dir.path(), &point(step)).unwrap();
        }
        let text = std::fs::read_to_string(dir.path().join(CURVE_CSV)).unwrap();
        assert!(text.starts_with(&format!("{HEADER}\n")));
        let back = read(dir.path()).unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back[1].row(), point(2).row());
        assert_eq!(back[0].val_gap_mean, None);
        let kept = truncate(dir.path(), 2).unwrap();
        assert_eq!(kept.iter().map(|p| p.step).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(read(dir.path()).unwrap(), kept);
        plot(dir.path(), "run test", &kept).unwrap();
        let svg = std::fs::read_to_string(dir.path().join(CURVE_SVG)).unwrap();
        assert!(svg.contains("held-out mean gap") && svg.contains("run test"));
    }
}
