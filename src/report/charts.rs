//! The report's figures, drawn with plotters' SVG backend into strings that
//! the page inlines. plotters lays out axes, ticks and labels and escapes
//! every text it writes, so a slice or run named `<script>` stays text.
//!
//! Every figure reads without colour: bars carry their value as text,
//! baseline and candidate differ by marker shape as well as hue, and the
//! hues are the Okabe–Ito palette, which the common colour-vision
//! deficiencies tell apart. No figure grows with the number of queries:
//! callers hand over means, bins and quantiles, never rows.

use anyhow::{anyhow, Result};
use maud::{html, Markup, PreEscaped};
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordi32};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::base::intervals::MeanInterval;

/// Okabe–Ito blue: the main series.
pub const BLUE: RGBColor = RGBColor(0, 114, 178);
/// Okabe–Ito orange: the second series.
pub const ORANGE: RGBColor = RGBColor(230, 159, 0);
/// Okabe–Ito vermillion: losses.
pub const VERMILLION: RGBColor = RGBColor(213, 94, 0);
/// Okabe–Ito bluish green: the third series.
pub const GREEN: RGBColor = RGBColor(0, 158, 115);
/// Okabe–Ito reddish purple.
pub const PURPLE: RGBColor = RGBColor(204, 121, 167);
/// Okabe–Ito sky blue.
pub const SKY: RGBColor = RGBColor(86, 180, 233);
/// Text and axes.
pub(super) const INK: RGBColor = RGBColor(34, 34, 34);
/// Grid lines and reference lines.
pub(super) const GRID: RGBColor = RGBColor(210, 210, 210);

/// The six metric series of a cutoff, one colour each.
pub const SERIES: [RGBColor; 6] = [BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY];

/// Every figure's width in SVG pixels; the page scales it to fit.
pub const WIDTH: u32 = 960;
/// Labels longer than this are cut, with an ellipsis.
const LABEL_CHARS: usize = 30;
/// The text of axes and labels.
const FONT: &str = "sans-serif";

/// A figure: its SVG and the caption said under it.
pub fn figure(svg: String, caption: &str) -> Markup {
    html! {
        figure {
            (PreEscaped(svg))
            figcaption { (caption) }
        }
    }
}

/// Draw on a `WIDTH` × `height` canvas and return the SVG text.
pub(super) fn draw(
    height: u32,
    paint: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<()>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        paint(&root)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// A chart of rows, one segment each, the first on top.
type RowChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, SegmentedCoord<RangedCoordi32>>>;

/// One panel of a trellis: `rows` rows over `x`, captioned `name`, laid
/// out the same in every panel so that rows line up across them.
fn panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    name: &str,
    x: std::ops::Range<f64>,
    rows: usize,
) -> Result<RowChart<'a, 'b>> {
    ChartBuilder::on(area)
        .margin_right(10)
        .margin_top(6)
        .x_label_area_size(0)
        .caption(name, font(13))
        .build_cartesian_2d(x, segments(rows))
        .map_err(plot_error)
}

/// A chart of one row per name, from 0 to `x_max`, each named on its left.
fn named_rows<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    names: &[&str],
    x_max: f64,
) -> Result<RowChart<'a, 'b>> {
    let n = names.len() as i32;
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(0)
        .y_label_area_size(190)
        .build_cartesian_2d(0f64..x_max, segments(names.len()))
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names
                .get((n - 1 - *i) as usize)
                .map(|name| short(name))
                .unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(font(12))
        .axis_style(GRID)
        .draw()
        .map_err(plot_error)?;
    Ok(chart)
}

/// `n` categories, one segment each (at least one, so an empty figure
/// still has an axis).
fn segments(n: usize) -> SegmentedCoord<RangedCoordi32> {
    (0..(n as i32 - 1).max(0)).into_segmented()
}

/// plotters' errors (which its string backend does not raise) as ours.
pub(super) fn plot_error(err: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing a report figure: {err}")
}

/// `text` cut to [`LABEL_CHARS`] characters.
pub fn short(text: &str) -> String {
    if text.chars().count() <= LABEL_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(LABEL_CHARS - 1).collect();
    format!("{cut}…")
}

/// A number to three decimals, as the tables show it.
pub fn three(value: f64) -> String {
    format!("{value:.3}")
}

pub(super) fn font(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().color(&INK)
}

/// One row of [`slice_bars`]: a label and a mean with its interval per
/// panel (`None`: no query counts).
pub struct BarRow {
    /// The slice's name.
    pub label: String,
    /// One per panel.
    pub values: Vec<Option<MeanInterval>>,
}

/// Horizontal bars of means in [0, 1] with their intervals: one row per
/// slice, one panel per metric, the value written beside each bar.
pub fn slice_bars(rows: &[BarRow], panels: &[String]) -> Result<String> {
    const ROW: u32 = 22;
    const LABELS: u32 = 190;
    let height = 40 + ROW * rows.len() as u32;
    draw(height, |root| {
        let (labels, plots) = root.split_horizontally(LABELS);
        let areas = plots.split_evenly((1, panels.len().max(1)));
        let n = rows.len() as i32;
        for (p, (area, name)) in areas.iter().zip(panels).enumerate() {
            let mut chart = panel(area, name, 0.0..1.0, rows.len())?;
            let y = |i: usize| n - 1 - i as i32;
            for (i, row) in rows.iter().enumerate() {
                let Some(value) = row.values.get(p).copied().flatten() else {
                    chart
                        .draw_series([Text::new(
                            "none",
                            (0.02, SegmentValue::CenterOf(y(i))),
                            font(11),
                        )])
                        .map_err(plot_error)?;
                    continue;
                };
                let mut bar = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(y(i))),
                        (value.mean, SegmentValue::Exact(y(i) + 1)),
                    ],
                    SKY.filled(),
                );
                bar.set_margin(3, 3, 0, 0);
                chart.draw_series([bar]).map_err(plot_error)?;
                chart
                    .draw_series([ErrorBar::new_horizontal(
                        SegmentValue::CenterOf(y(i)),
                        value.low,
                        value.mean,
                        value.high,
                        INK.stroke_width(1),
                        6,
                    )])
                    .map_err(plot_error)?;
                let at = if value.high < 0.72 {
                    value.high + 0.03
                } else {
                    0.03
                };
                chart
                    .draw_series([Text::new(
                        three(value.mean),
                        (at, SegmentValue::CenterOf(y(i))),
                        font(11),
                    )])
                    .map_err(plot_error)?;
            }
        }
        draw_row_names(&labels, rows.iter().map(|r| r.label.as_str()), n)?;
        Ok(())
    })
}

/// One line of [`cutoff_lines`].
pub struct Series {
    /// Its name, in the legend.
    pub name: String,
    /// One value per cutoff (`None`: no query counts).
    pub values: Vec<Option<MeanInterval>>,
}

/// Each metric's mean at every cutoff, with its interval: how recall grows
/// and precision falls as the ranking is read deeper.
pub fn cutoff_lines(cutoffs: &[String], series: &[Series]) -> Result<String> {
    draw(300, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(44)
            .build_cartesian_2d(segments(cutoffs.len()), 0f64..1f64)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID)
            .x_labels(cutoffs.len() + 1)
            .x_desc("cutoff k")
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => cutoffs.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .label_style(font(12))
            .draw()
            .map_err(plot_error)?;
        for (s, line) in series.iter().enumerate() {
            let colour = SERIES[s % SERIES.len()];
            let points: Vec<(SegmentValue<i32>, f64)> = line
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (SegmentValue::CenterOf(i as i32), v.mean)))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(plot_error)?
                .label(line.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
                });
            draw_markers(&mut chart, s, &points, colour)?;
            chart
                .draw_series(line.values.iter().enumerate().filter_map(|(i, v)| {
                    v.map(|v| {
                        ErrorBar::new_vertical(
                            SegmentValue::CenterOf(i as i32),
                            v.low,
                            v.mean,
                            v.high,
                            colour.stroke_width(1),
                            6,
                        )
                    })
                }))
                .map_err(plot_error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(GRID)
            .label_font(font(12))
            .draw()
            .map_err(plot_error)?;
        Ok(())
    })
}

/// Markers at `points` whose shape tells series `s` apart without colour.
fn draw_markers<X: Ranged>(
    chart: &mut ChartContext<SVGBackend, Cartesian2d<X, RangedCoordf64>>,
    s: usize,
    points: &[(X::ValueType, f64)],
    colour: RGBColor,
) -> Result<()>
where
    X::ValueType: Clone + 'static,
{
    let at = points.iter().map(|(x, y)| (x.clone(), *y));
    match s % 3 {
        0 => chart.draw_series(at.map(|p| Circle::new(p, 4, colour.filled()))),
        1 => chart.draw_series(at.map(|p| TriangleMarker::new(p, 5, colour.filled()))),
        _ => chart.draw_series(at.map(|p| Cross::new(p, 4, colour.stroke_width(2)))),
    }
    .map_err(plot_error)?;
    Ok(())
}

/// Vertical bars of shares in [0, 1] over named bins, the value on each
/// bar, and a line of the running total over the first `running` bins:
/// the distribution of first relevant ranks and the hit rate by depth in
/// one picture.
pub fn share_bars(bins: &[String], shares: &[f64], running: usize) -> Result<String> {
    draw(280, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(44)
            .build_cartesian_2d(segments(bins.len()), 0f64..1f64)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID)
            .x_labels(bins.len() + 1)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => bins.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .y_label_formatter(&|v| format!("{:.0}%", v * 100.0))
            .label_style(font(12))
            .draw()
            .map_err(plot_error)?;
        chart
            .draw_series(shares.iter().enumerate().map(|(i, &share)| {
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i as i32), 0.0),
                        (SegmentValue::Exact(i as i32 + 1), share),
                    ],
                    SKY.filled(),
                );
                bar.set_margin(0, 0, 4, 4);
                bar
            }))
            .map_err(plot_error)?
            .label("share of queries")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], SKY.filled()));
        chart
            .draw_series(shares.iter().enumerate().map(|(i, &share)| {
                Text::new(
                    percent(share),
                    (SegmentValue::CenterOf(i as i32), (share + 0.05).min(0.97)),
                    font(10).pos(Pos::new(HPos::Center, VPos::Bottom)),
                )
            }))
            .map_err(plot_error)?;
        if running > 0 {
            let totals: Vec<(SegmentValue<i32>, f64)> = shares[..running.min(shares.len())]
                .iter()
                .scan(0.0, |total, &share| {
                    *total += share;
                    Some(*total)
                })
                .enumerate()
                .map(|(i, total)| (SegmentValue::CenterOf(i as i32), total))
                .collect();
            chart
                .draw_series(LineSeries::new(totals.clone(), BLUE.stroke_width(2)))
                .map_err(plot_error)?
                .label("found by this rank (running total)")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE.stroke_width(2)));
            draw_markers(&mut chart, 0, &totals, BLUE)?;
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::MiddleRight)
                .background_style(WHITE.mix(0.9))
                .border_style(GRID)
                .label_font(font(12))
                .draw()
                .map_err(plot_error)?;
        }
        Ok(())
    })
}

/// A share as a whole percentage (one decimal under 10%).
pub fn percent(share: f64) -> String {
    if share > 0.0 && share < 0.1 {
        format!("{:.1}%", share * 100.0)
    } else {
        format!("{:.0}%", share * 100.0)
    }
}

/// A reference line on a histogram: a name and where it stands.
pub struct Mark {
    /// What it is (`p95`).
    pub name: String,
    /// Its value.
    pub value: f64,
}

/// Bars of counts between ascending positive `edges` on a log scale, with
/// marks (percentiles) as dashed lines: a latency or context-size
/// distribution. The axis runs over the edges' base-10 logarithms, which
/// stay small for any finite value.
pub fn log_histogram(edges: &[f64], counts: &[u64], unit: &str, marks: &[Mark]) -> Result<String> {
    draw(240, |root| {
        let log: Vec<f64> = edges.iter().map(|e| e.log10()).collect();
        let (Some(&low), Some(&high)) = (log.first(), log.last()) else {
            return Ok(());
        };
        // A single value still gets a visible bar around it.
        let (low, high) = if high > low {
            (low, high)
        } else {
            (low - 0.5, high + 0.5)
        };
        let top = counts.iter().copied().max().unwrap_or(0).max(1) as f64 * 1.15;
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(56)
            .build_cartesian_2d(low..high, 0f64..top)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID)
            .x_desc(unit)
            .y_desc("queries")
            .x_label_formatter(&|v| compact(10f64.powf(*v)))
            .y_label_formatter(&|v| compact(*v))
            .label_style(font(12))
            .draw()
            .map_err(plot_error)?;
        let bars = counts.iter().enumerate().map(|(i, &count)| {
            let (from, to) = match (log.get(i), log.get(i + 1)) {
                (Some(&from), Some(&to)) => (from, to),
                _ => (low, high),
            };
            Rectangle::new([(from, 0.0), (to, count as f64)], SKY.filled())
        });
        chart.draw_series(bars).map_err(plot_error)?;
        for (i, mark) in marks.iter().enumerate() {
            let x = mark.value.log10();
            if !(low..=high).contains(&x) {
                continue;
            }
            let dashes = (0..20).map(|d| {
                let from = top * f64::from(d) / 20.0;
                PathElement::new(vec![(x, from), (x, from + top / 40.0)], INK.stroke_width(1))
            });
            chart.draw_series(dashes).map_err(plot_error)?;
            let level = top * (0.96 - 0.08 * i as f64);
            chart
                .draw_series([Text::new(
                    format!(" {} {}", mark.name, compact(mark.value)),
                    (x, level),
                    font(11),
                )])
                .map_err(plot_error)?;
        }
        Ok(())
    })
}

/// A number short enough for an axis: 1.5k, 2M, 0.25, 12, 3.2e12.
pub fn compact(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e9 || (magnitude > 0.0 && magnitude < 1e-3) || !value.is_finite() {
        format!("{value:.1e}")
    } else if magnitude >= 1e6 {
        format!("{}M", trim(value / 1e6))
    } else if magnitude >= 1e4 {
        format!("{}k", trim(value / 1e3))
    } else {
        trim(value)
    }
}

/// Up to three significant decimals, trailing zeros dropped.
fn trim(value: f64) -> String {
    let digits = if value.abs() >= 100.0 {
        0
    } else if value.abs() >= 1.0 {
        1
    } else {
        3
    };
    let text = format!("{value:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Horizontal bars of counts with the count written on each: how much
/// evidence each stage still holds, from first to last.
pub fn count_bars(rows: &[(String, u64)], colour: RGBColor) -> Result<String> {
    const ROW: u32 = 28;
    let height = 24 + ROW * rows.len() as u32;
    draw(height, |root| {
        let n = rows.len() as i32;
        let top = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1) as f64;
        let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        let mut chart = named_rows(root, &names, top * 1.2)?;
        for (i, (_, count)) in rows.iter().enumerate() {
            let y = n - 1 - i as i32;
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(y)),
                    (*count as f64, SegmentValue::Exact(y + 1)),
                ],
                colour.filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            chart.draw_series([bar]).map_err(plot_error)?;
            chart
                .draw_series([Text::new(
                    count.to_string(),
                    (*count as f64 + top * 0.01, SegmentValue::CenterOf(y)),
                    font(12).pos(Pos::new(HPos::Left, VPos::Center)),
                )])
                .map_err(plot_error)?;
        }
        Ok(())
    })
}

/// A change with its interval, for [`forest`].
#[derive(Debug, Clone, Copy)]
pub struct Change {
    /// Candidate minus baseline.
    pub delta: f64,
    /// The interval's ends; none where compare could give no valid one.
    pub interval: Option<(f64, f64)>,
    /// Whether it is significant after Holm's adjustment.
    pub significant: bool,
}

impl Change {
    /// The interval's ends, or the point twice where there is none.
    fn ends(&self) -> (f64, f64) {
        self.interval.unwrap_or((self.delta, self.delta))
    }
}

/// One row of [`forest`]: a slice and its change per panel.
pub struct ForestRow {
    /// The slice's name.
    pub label: String,
    /// One per panel (`None`: not compared there).
    pub changes: Vec<Option<Change>>,
}

/// A forest plot: per slice and metric the mean change as a point with
/// its interval, against a line at zero; significant changes are filled
/// and starred, losses drawn in vermillion, gains in blue, and every
/// value written beside its point.
pub fn forest(rows: &[ForestRow], panels: &[String]) -> Result<String> {
    const ROW: u32 = 22;
    const LABELS: u32 = 190;
    let height = 40 + ROW * rows.len() as u32;
    let reach = rows
        .iter()
        .flat_map(|r| r.changes.iter().flatten())
        .map(|c| {
            let (low, high) = c.ends();
            low.abs().max(high.abs())
        })
        .filter(|r| r.is_finite())
        .fold(0.05f64, f64::max)
        .min(1.0)
        * 1.15;
    draw(height, |root| {
        let (labels, plots) = root.split_horizontally(LABELS);
        let areas = plots.split_evenly((1, panels.len().max(1)));
        let n = rows.len() as i32;
        let y = |i: usize| n - 1 - i as i32;
        for (p, (area, name)) in areas.iter().zip(panels).enumerate() {
            let mut chart = panel(area, name, -reach..reach, rows.len())?;
            chart
                .draw_series([PathElement::new(
                    vec![(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Exact(n))],
                    GRID.stroke_width(2),
                )])
                .map_err(plot_error)?;
            for (i, row) in rows.iter().enumerate() {
                let Some(change) = row.changes.get(p).copied().flatten() else {
                    continue;
                };
                let colour = if change.delta < 0.0 { VERMILLION } else { BLUE };
                let at = SegmentValue::CenterOf(y(i));
                let (low, high) = change.ends();
                if change.interval.is_some() {
                    chart
                        .draw_series([ErrorBar::new_horizontal(
                            at.clone(),
                            low.max(-reach),
                            change.delta,
                            high.min(reach),
                            colour.stroke_width(1),
                            6,
                        )])
                        .map_err(plot_error)?;
                }
                let style = if change.significant {
                    colour.filled()
                } else {
                    WHITE.filled()
                };
                chart
                    .draw_series([
                        Circle::new((change.delta, at.clone()), 4, style),
                        Circle::new((change.delta, at.clone()), 4, colour.stroke_width(1)),
                    ])
                    .map_err(plot_error)?;
                let text = format!(
                    "{:+.3}{}",
                    change.delta,
                    if change.significant { "*" } else { "" }
                );
                let (x, anchor) = if change.delta < 0.0 {
                    (high.min(reach) + reach * 0.04, HPos::Left)
                } else {
                    (low.max(-reach) - reach * 0.04, HPos::Right)
                };
                chart
                    .draw_series([Text::new(
                        text,
                        (x, at),
                        font(11).pos(Pos::new(anchor, VPos::Center)),
                    )])
                    .map_err(plot_error)?;
            }
        }
        draw_row_names(&labels, rows.iter().map(|r| r.label.as_str()), n)?;
        Ok(())
    })
}

/// Row names right-aligned in `area`, on a chart laid out as the panels
/// beside it are, so that each stands level with its row.
fn draw_row_names<'a>(
    area: &DrawingArea<SVGBackend, Shift>,
    names: impl Iterator<Item = &'a str>,
    n: i32,
) -> Result<()> {
    let mut chart = panel(area, " ", 0.0..1.0, n as usize)?;
    chart
        .draw_series(names.enumerate().map(|(i, name)| {
            Text::new(
                short(name),
                (0.97, SegmentValue::CenterOf(n - 1 - i as i32)),
                font(12).pos(Pos::new(HPos::Right, VPos::Center)),
            )
        }))
        .map_err(plot_error)?;
    Ok(())
}

/// Columns of a help/hurt plot at most: more queries are drawn as this
/// many evenly spaced quantiles of their sorted changes.
pub const HELP_HURT_COLUMNS: usize = 400;

/// Every query's change, sorted from the worst loss to the best gain: a
/// bar down (vermillion) for each query hurt, up (blue) for each helped.
/// Beyond [`HELP_HURT_COLUMNS`] queries, each column is the change at an
/// evenly spaced quantile, so the picture keeps its shape at any size.
pub fn help_hurt(sorted: &[f64], metric: &str) -> Result<String> {
    draw(260, |root| {
        let columns: Vec<f64> = if sorted.len() <= HELP_HURT_COLUMNS {
            sorted.to_vec()
        } else {
            (0..HELP_HURT_COLUMNS)
                .map(|j| sorted[(2 * j + 1) * sorted.len() / (2 * HELP_HURT_COLUMNS)])
                .collect()
        };
        let n = columns.len().max(1) as f64;
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..n, -1f64..1f64)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(GRID)
            .x_desc("queries, from the largest loss to the largest gain")
            .y_desc(format!("change in {metric}"))
            .x_label_formatter(&|v| percent(*v / n))
            .label_style(font(12))
            .draw()
            .map_err(plot_error)?;
        chart
            .draw_series(
                columns
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| **d != 0.0)
                    .map(|(i, &d)| {
                        let colour = if d < 0.0 { VERMILLION } else { BLUE };
                        Rectangle::new([(i as f64, 0.0), (i as f64 + 1.0, d)], colour.filled())
                    }),
            )
            .map_err(plot_error)?;
        chart
            .draw_series([PathElement::new(
                vec![(0.0, 0.0), (n, 0.0)],
                INK.stroke_width(1),
            )])
            .map_err(plot_error)?;
        Ok(())
    })
}

/// Won, tied and lost queries per metric, as shares of one bar each.
pub fn wins_ties_losses(rows: &[(String, [u64; 3])]) -> Result<String> {
    let rows: Vec<(String, Vec<u64>)> = rows
        .iter()
        .map(|(name, counts)| (name.clone(), counts.to_vec()))
        .collect();
    stacked_shares(
        &rows,
        &[("won", BLUE), ("tied", GRID), ("lost", VERMILLION)],
    )
}

/// One bar per row, split into its `parts`' shares of the row's total,
/// each part named on it where it is wide enough.
pub fn stacked_shares(rows: &[(String, Vec<u64>)], parts: &[(&str, RGBColor)]) -> Result<String> {
    const ROW: u32 = 30;
    let height = 30 + ROW * rows.len() as u32;
    draw(height, |root| {
        let n = rows.len() as i32;
        let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        let mut chart = named_rows(root, &names, 1.0)?;
        for (i, (_, counts)) in rows.iter().enumerate() {
            let total = counts.iter().sum::<u64>().max(1) as f64;
            let y = n - 1 - i as i32;
            let mut from = 0.0;
            for (&count, &(name, colour)) in counts.iter().zip(parts) {
                let to = from + count as f64 / total;
                let mut bar = Rectangle::new(
                    [
                        (from, SegmentValue::Exact(y)),
                        (to, SegmentValue::Exact(y + 1)),
                    ],
                    colour.filled(),
                );
                bar.set_margin(4, 4, 0, 0);
                chart.draw_series([bar]).map_err(plot_error)?;
                if to - from > 0.12 {
                    let ink = if colour == GRID { INK } else { WHITE };
                    chart
                        .draw_series([Text::new(
                            format!("{count} {name}"),
                            ((from + to) / 2.0, SegmentValue::CenterOf(y)),
                            font(11)
                                .color(&ink)
                                .pos(Pos::new(HPos::Center, VPos::Center)),
                        )])
                        .map_err(plot_error)?;
                }
                from = to;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::intervals::Method;

    fn interval(mean: f64) -> Option<MeanInterval> {
        Some(MeanInterval {
            mean,
            low: mean - 0.1,
            high: mean + 0.1,
            n: 10,
            method: Method::Bootstrap,
        })
    }

    #[test]
    fn labels_from_the_inputs_stay_text() {
        let rows = [BarRow {
            label: "<script>alert(1)</script>".to_string(),
            values: vec![interval(0.5)],
        }];
        let svg = slice_bars(&rows, &["recall@10".to_string()]).unwrap();
        assert!(
            svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{svg}"
        );
        assert!(!svg.contains("<script"));
        let svg = count_bars(&[("a&b\"<c>".to_string(), 3)], BLUE).unwrap();
        assert!(!svg.contains("a&b") && !svg.contains("<c>"), "{svg}");
    }

    #[test]
    fn long_labels_are_cut_and_numbers_made_short() {
        assert_eq!(short("short"), "short");
        let long = "x".repeat(40);
        assert_eq!(short(&long).chars().count(), LABEL_CHARS);
        assert!(short(&long).ends_with('…'));
        assert_eq!(compact(1_500_000.0), "1.5M");
        assert_eq!(compact(25_000.0), "25k");
        assert_eq!(compact(250.0), "250");
        assert_eq!(compact(12.5), "12.5");
        assert_eq!(compact(0.125), "0.125");
        assert_eq!(compact(1.7e308), "1.7e308");
        assert_eq!(compact(2e-7), "2.0e-7");
        assert_eq!(percent(0.05), "5.0%");
        assert_eq!(percent(0.5), "50%");
    }

    #[test]
    fn every_figure_draws_on_edge_cases() {
        // No rows, no bins, one value, a missing mean: still an SVG.
        for svg in [
            slice_bars(&[], &["a".to_string()]).unwrap(),
            slice_bars(
                &[BarRow {
                    label: "x".into(),
                    values: vec![None, interval(0.95)],
                }],
                &["a".to_string(), "b".to_string()],
            )
            .unwrap(),
            cutoff_lines(&["10".into()], &[]).unwrap(),
            share_bars(&[], &[], 0).unwrap(),
            share_bars(&["1".into(), "none".into()], &[0.5, 0.5], 1).unwrap(),
            log_histogram(&[], &[], "ms", &[]).unwrap(),
            log_histogram(&[5.0], &[3], "ms", &[]).unwrap(),
            log_histogram(&[f64::MAX, f64::MAX], &[7], "ms", &[]).unwrap(),
            log_histogram(
                &[f64::MIN_POSITIVE, 1e6],
                &[u64::MAX],
                "ms",
                &[Mark {
                    name: "p50".into(),
                    value: 1e200,
                }],
            )
            .unwrap(),
            count_bars(&[("x".into(), u64::MAX), ("y".into(), 0)], BLUE).unwrap(),
            count_bars(&[], BLUE).unwrap(),
            forest(&[], &["a".to_string()]).unwrap(),
            forest(
                &[ForestRow {
                    label: "all".into(),
                    changes: vec![
                        Some(Change {
                            delta: -0.2,
                            interval: Some((-0.4, f64::NAN)),
                            significant: true,
                        }),
                        None,
                        Some(Change {
                            delta: 0.1,
                            interval: None,
                            significant: false,
                        }),
                    ],
                }],
                &["a".to_string(), "b".to_string(), "c".to_string()],
            )
            .unwrap(),
            help_hurt(&[], "recall@10").unwrap(),
            help_hurt(
                &(0..1000)
                    .map(|i| f64::from(i) / 500.0 - 1.0)
                    .collect::<Vec<_>>(),
                "x",
            )
            .unwrap(),
            wins_ties_losses(&[("recall@10".into(), [3, 0, 1]), ("rr".into(), [0, 0, 0])]).unwrap(),
        ] {
            assert!(
                svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
                "{svg}"
            );
        }
    }
}
