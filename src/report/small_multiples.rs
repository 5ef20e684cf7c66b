//! The trend page's figure: small multiples, one panel per series, each
//! its mean across the nights with the 95% band around it. Nights are
//! numbered from 1 on the x axis; the baseline nights are shaded, a change
//! of labels is a vertical line, and an alarm a vermillion triangle on the
//! night it was raised (and the panel's title in vermillion), so that a
//! panel reads without colour too: the triangle is the only one. A series
//! starts afresh at each change of labels, so it may alarm once in each.
//!
//! Each panel has its own vertical scale, fitted to its band: a slice of a
//! few queries has a wide band and a large one a narrow band, and one
//! shared scale would flatten the large slices' drops to a pixel. The
//! scale is written on each panel's axis.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::charts::{draw, font, plot_error, BLUE, GRID, INK, PURPLE, SKY, VERMILLION, WIDTH};

/// Each panel's height in SVG pixels.
const PANEL_HEIGHT: u32 = 150;
/// The narrowest vertical scale: a flat series still shows its band.
const MIN_SPAN: f64 = 0.02;

/// A mean and its 95% interval on one night.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// The mean.
    pub mean: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
}

/// One series across the nights: a panel.
pub struct Panel {
    /// Its name, above it.
    pub title: String,
    /// A line inside it, top left (its last test against what an alarm
    /// needs); empty for none.
    pub note: String,
    /// Its mean and interval on each night (`None`: no query counted, or
    /// the series is not in that night's grading).
    pub nights: Vec<Option<Band>>,
    /// The nights (from 0) it alarmed on: one at most per labels revision.
    pub alarms: Vec<usize>,
}

/// What every panel shares: which nights are a baseline, and each night's
/// labels revision.
pub struct Nights {
    /// Per night: one of its revision's baseline nights.
    pub baseline: Vec<bool>,
    /// Per night: its labels revision.
    pub revision: Vec<u32>,
}

/// `panels` in rows of `columns`, each as the module says.
pub fn small_multiples(panels: &[Panel], nights: &Nights, columns: usize) -> Result<String> {
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    // A title is cut to what its panel's width holds, at about 7 pixels a
    // character.
    let title_chars = (WIDTH as usize / columns / 7).max(8);
    draw(PANEL_HEIGHT * rows as u32, |root| {
        let areas = root.split_evenly((rows, columns));
        for (panel, area) in panels.iter().zip(&areas) {
            draw_panel(area, panel, nights, title_chars)?;
        }
        Ok(())
    })
}

/// One panel; night `i` (from 0) stands at x = i + 1.
fn draw_panel(
    area: &DrawingArea<SVGBackend, Shift>,
    panel: &Panel,
    nights: &Nights,
    title_chars: usize,
) -> Result<()> {
    let (low, high) = scale(panel);
    let count = nights.revision.len();
    let title_colour = if panel.alarms.is_empty() {
        INK
    } else {
        VERMILLION
    };
    let mut chart = ChartBuilder::on(area)
        .margin(4)
        .margin_right(10)
        .caption(
            cut(&panel.title, title_chars),
            font(12).color(&title_colour),
        )
        .x_label_area_size(18)
        .y_label_area_size(38)
        .build_cartesian_2d(0.5..count as f64 + 0.5, low..high)
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(6)
        .y_labels(5)
        .set_tick_mark_size(LabelAreaPosition::Bottom, 0)
        .x_label_formatter(&|&x| night_label(x, count))
        .y_label_formatter(&|y| format!("{y:.digits$}", digits = tick_digits(high - low)))
        .label_style(font(10))
        .axis_style(GRID)
        .draw()
        .map_err(plot_error)?;
    // The baseline nights, shaded.
    let shaded = runs(count, |i, j| nights.baseline[i] == nights.baseline[j]);
    chart
        .draw_series(
            (shaded.iter())
                .filter(|run| nights.baseline[run.start])
                .map(|run| {
                    let span = [(run.start as f64 + 0.5, low), (run.end as f64 + 0.5, high)];
                    Rectangle::new(span, GRID.mix(0.35).filled())
                }),
        )
        .map_err(plot_error)?;
    // A change of labels, between two nights.
    chart
        .draw_series(
            (1..count)
                .filter(|&i| nights.revision[i] != nights.revision[i - 1])
                .map(|i| {
                    let x = i as f64 + 0.5;
                    PathElement::new(vec![(x, low), (x, high)], PURPLE.stroke_width(2))
                }),
        )
        .map_err(plot_error)?;
    // The band and the mean, broken where a night has no value or the
    // labels change: a revision is another measurement.
    let spans = runs(count, |i, j| {
        nights.revision[i] == nights.revision[j]
            && panel.nights[i].is_some() == panel.nights[j].is_some()
    });
    for span in spans.iter().filter(|s| panel.nights[s.start].is_some()) {
        let points: Vec<(f64, Band)> = (span.clone())
            .filter_map(|i| panel.nights[i].map(|v| (i as f64 + 1.0, v)))
            .collect();
        let band = (points.iter().map(|(x, v)| (*x, v.low)))
            .chain(points.iter().rev().map(|(x, v)| (*x, v.high)));
        chart
            .draw_series([Polygon::new(
                band.collect::<Vec<_>>(),
                SKY.mix(0.35).filled(),
            )])
            .map_err(plot_error)?;
        let means: Vec<(f64, f64)> = points.iter().map(|(x, v)| (*x, v.mean)).collect();
        chart
            .draw_series(LineSeries::new(means.clone(), BLUE.stroke_width(2)))
            .map_err(plot_error)?;
        if let [single] = means[..] {
            chart
                .draw_series([Circle::new(single, 2, BLUE.filled())])
                .map_err(plot_error)?;
        }
    }
    if !panel.note.is_empty() {
        // Inside the plot, clear of the axis labels and the title.
        area.draw_text(
            &cut(&panel.note, title_chars),
            &font(10).color(&INK),
            (44, 22),
        )
        .map_err(plot_error)?;
    }
    chart
        .draw_series((panel.alarms.iter()).filter_map(|&night| {
            let value = panel.nights.get(night).copied().flatten()?;
            let at = (night as f64 + 1.0, value.mean);
            Some(TriangleMarker::new(at, 6, VERMILLION.filled()))
        }))
        .map_err(plot_error)?;
    Ok(())
}

/// The x axis' label at `x`: the night's number (from 1) where a night
/// stands, nothing between two nights (plotters puts its ticks at round
/// numbers, halves among them when there are one or two nights).
fn night_label(x: f64, count: usize) -> String {
    let night = x.round();
    if (x - night).abs() < 1e-6 && night >= 1.0 && night <= count as f64 {
        format!("{night:.0}")
    } else {
        String::new()
    }
}

/// The vertical scale of `panel`: its band's reach, widened by a fifth
/// and to at least [`MIN_SPAN`], kept within [0, 1] where the band is.
fn scale(panel: &Panel) -> (f64, f64) {
    let values = panel.nights.iter().flatten();
    let low = values.clone().map(|v| v.low).fold(f64::INFINITY, f64::min);
    let high = values.map(|v| v.high).fold(f64::NEG_INFINITY, f64::max);
    if !(low.is_finite() && high.is_finite()) {
        return (0.0, 1.0);
    }
    let (centre, width) = ((low + high) / 2.0, ((high - low) * 1.2).max(MIN_SPAN));
    let (mut bottom, mut top) = (centre - width / 2.0, centre + width / 2.0);
    if bottom < 0.0 && low >= 0.0 {
        (bottom, top) = (0.0, top - bottom);
    }
    if top > 1.0 && high <= 1.0 {
        let floor = if low >= 0.0 { 0.0 } else { f64::NEG_INFINITY };
        (bottom, top) = ((bottom - (top - 1.0)).max(floor), 1.0);
    }
    (bottom, top)
}

/// The maximal runs of nights `0..count` in which `same` holds of
/// neighbours.
fn runs(count: usize, same: impl Fn(usize, usize) -> bool) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=count {
        if i == count || !same(i - 1, i) {
            runs.push(start..i);
            start = i;
        }
    }
    runs
}

/// `text` cut to `chars` characters, with an ellipsis.
fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let kept: String = text.chars().take(chars - 1).collect();
    format!("{kept}…")
}

/// Decimals enough to tell apart the ticks of a scale `span` high: at
/// most five ticks, at round steps, so a step is near a fifth of it.
fn tick_digits(span: f64) -> usize {
    let step = (span / 5.0).log10().floor();
    if step.is_finite() {
        (-step).clamp(2.0, 4.0) as usize
    } else {
        2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(mean: f64, half: f64) -> Option<Band> {
        Some(Band {
            mean,
            low: mean - half,
            high: mean + half,
        })
    }

    #[test]
    fn a_scale_holds_the_band_within_the_unit_interval() {
        let panel = |nights| Panel {
            title: String::new(),
            note: String::new(),
            nights,
            alarms: vec![],
        };
        let (low, high) = scale(&panel(vec![at(0.5, 0.1), None, at(0.6, 0.1)]));
        assert!(
            (low - 0.37).abs() < 1e-12 && (high - 0.73).abs() < 1e-12,
            "{low} {high}"
        );
        // A flat series is drawn MIN_SPAN high.
        let (low, high) = scale(&panel(vec![at(0.5, 0.0), at(0.5, 0.0)]));
        assert!((low - 0.49).abs() < 1e-12 && (high - 0.51).abs() < 1e-12);
        // Near 1 the widening goes below, never past 1.
        let (low, high) = scale(&panel(vec![at(0.999, 0.0)]));
        assert!((low - (1.0 - MIN_SPAN)).abs() < 1e-12 && high == 1.0);
        // A band over all of [0, 1] is drawn over exactly that.
        assert_eq!(scale(&panel(vec![at(0.5, 0.5)])), (0.0, 1.0));
        assert_eq!(scale(&panel(vec![at(0.0, 0.0)])), (0.0, MIN_SPAN));
        assert_eq!(scale(&panel(vec![None])), (0.0, 1.0));
    }

    #[test]
    fn ticks_have_the_decimals_their_steps_need() {
        // A band of 0.39 steps by 0.1; the narrowest scale by 0.005,
        // whose ticks two decimals would write twice.
        assert_eq!(tick_digits(0.39), 2);
        assert_eq!(tick_digits(1.0), 2);
        assert_eq!(tick_digits(MIN_SPAN), 3);
        assert_eq!(tick_digits(0.0), 2);
    }

    #[test]
    fn runs_break_where_neighbours_differ() {
        let revision = [1, 1, 2, 2, 2, 3];
        let found = runs(revision.len(), |i, j| revision[i] == revision[j]);
        assert_eq!(found, vec![0..2, 2..5, 5..6]);
        assert_eq!(runs(0, |_, _| true), Vec::<std::ops::Range<usize>>::new());
    }

    #[test]
    fn a_title_stays_text_and_an_alarm_is_marked_once() {
        let panel = Panel {
            title: "<script>alert(1)</script>".into(),
            note: "p <0.01 · alarm at 0.001".into(),
            nights: vec![at(0.7, 0.05), at(0.7, 0.05), None, at(0.5, 0.05)],
            alarms: vec![3],
        };
        let nights = Nights {
            baseline: vec![true, true, false, false],
            revision: vec![1, 1, 1, 2],
        };
        let svg = small_multiples(&[panel], &nights, 5).unwrap();
        assert!(!svg.contains("<script"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"), "{svg}");
        // The note is drawn as text too.
        assert!(svg.contains("p &lt;0.01 · alarm at 0.001"), "{svg}");
        assert_eq!(svg.matches("fill=\"#D55E00\" points=").count(), 1);
        assert_eq!(svg.matches("stroke=\"#CC79A7\"").count(), 1);
        // Two spans of values (nights 1–2, and night 4 alone after the
        // change of labels): two lines, the lone night with a dot.
        assert_eq!(
            svg.matches("stroke=\"#0072B2\" stroke-width=\"2\"").count(),
            2
        );
        assert_eq!(svg.matches("<circle").count(), 1);
    }

    #[test]
    fn the_axis_names_whole_nights_only() {
        assert_eq!(night_label(1.0000000001, 1), "1");
        assert_eq!(night_label(1.5, 2), "");
        assert_eq!(night_label(0.0, 2), "");
        assert_eq!(night_label(3.0, 2), "");
        // Drawn, one night is named once and two nights twice, nothing else.
        for count in [1, 2] {
            let panel = Panel {
                title: "t".into(),
                note: String::new(),
                nights: vec![at(0.5, 0.1); count],
                alarms: vec![],
            };
            let nights = Nights {
                baseline: vec![true; count],
                revision: vec![1; count],
            };
            let svg = small_multiples(&[panel], &nights, 1).unwrap();
            let mut labels: Vec<&str> = (svg.split("<text").skip(1))
                .filter_map(|t| t.split('>').nth(1)?.split('<').next())
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.contains('.') && *l != "t")
                .collect();
            labels.sort_unstable();
            let want: Vec<String> = (1..=count).map(|n| n.to_string()).collect();
            assert_eq!(labels, want, "{count} nights");
        }
    }

    #[test]
    fn titles_are_cut_to_their_panel() {
        assert_eq!(cut("billing · en", 20), "billing · en");
        assert_eq!(cut("abcdefghij", 5), "abcd…");
    }
}
