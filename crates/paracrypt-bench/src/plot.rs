//! `--plot`: speed-up against threads per algorithm, with the ideal line, as SVG (plotters).

use std::path::Path;

use plotters::prelude::*;

use crate::Result;
use crate::report::Report;

fn plot_error(e: impl std::fmt::Display) -> crate::Error {
    crate::Error::Plot(e.to_string())
}

/// Colours dark enough to read on white (Tableau 10 and a few more); series past the end reuse
/// them in order.
const PALETTE: [RGBColor; 16] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 0, 0),
    RGBColor(0, 100, 0),
    RGBColor(85, 85, 0),
    RGBColor(0, 128, 128),
    RGBColor(204, 0, 153),
];

/// Draws one line per algorithm (and mode), at its largest size, plus the ideal `y = x`.
pub fn speedup_svg(report: &Report, path: &Path) -> Result<()> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut keys: Vec<(String, Option<String>, Option<crate::report::Medium>)> = Vec::new();
    for m in &report.measurements {
        let key = (m.algorithm.clone(), m.provider.clone(), m.mode);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for (algorithm, provider, mode) in keys {
        let rows: Vec<_> = report
            .measurements
            .iter()
            .filter(|m| m.algorithm == algorithm && m.provider == provider && m.mode == mode)
            .collect();
        let algorithm = match provider {
            Some(p) => format!("{algorithm} [{p}]"),
            None => algorithm,
        };
        let largest = rows.iter().filter_map(|m| m.size).max();
        let mut points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|m| m.size == largest)
            .filter_map(|m| Some((m.threads as f64, m.speedup?)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let label = match mode {
            Some(crate::report::Medium::Memory) => format!("{algorithm} (memory)"),
            Some(crate::report::Medium::File) => format!("{algorithm} (file)"),
            None => algorithm,
        };
        series.push((label, points));
    }
    let max_threads = report
        .measurements
        .iter()
        .map(|m| m.threads)
        .max()
        .unwrap_or(1) as f64;
    let max_speedup = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(_, y)| y))
        .fold(max_threads, f64::max);
    let height = 480 + 18 * series.len() as u32;
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "paracrypt: speed-up against threads (largest size of each series)",
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(
            0.8f64..max_threads + 0.2,
            0f64..(max_speedup * 1.1).max(1.2),
        )
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .x_desc("threads")
        .y_desc("speed-up over the fewest threads")
        .draw()
        .map_err(plot_error)?;
    chart
        .draw_series(LineSeries::new(
            [(1.0, 1.0), (max_threads, max_threads)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_error)?
        .label("ideal")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
    for (i, (label, points)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(plot_error)?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(plot_error)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(plot_error)?;
    root.present()
        .map_err(|e| crate::Error::Plot(format!("writing {}: {e}", path.display())))?;
    Ok(())
}
