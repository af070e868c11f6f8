//! Pictures: robot snapshots (like the paper's Figure 5) and basal angles over time
//! (Figure 6), drawn with plotters into PNG files.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::error::OutputError;
use crate::model::hermite::interpolate;
use crate::model::springs::{Anchor, Spring};
use crate::model::{BodyGeometry, Robot};
use crate::sample::Sample;
use crate::vocabulary as voc;

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Register the bundled font once (plotters draws text through ab_glyph).
pub(crate) fn ensure_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

fn plot_err(path: &Path, e: impl std::fmt::Display) -> OutputError {
    OutputError::Plot {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Draw a `size` picture into memory with `draw` and write it to `path` as a PNG
/// through [`crate::output_file`] (a failed drawing or write leaves no file there).
pub(crate) fn write_png(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(
        &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    ) -> Result<(), OutputError>,
) -> Result<(), OutputError> {
    let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        draw(&root)?;
        root.present().map_err(|e| plot_err(path, e))?;
    }
    let bytes = png_bytes(&rgb, size).map_err(|e| plot_err(path, e))?;
    crate::output_file::write_bytes(path, &bytes)
}

/// An RGB buffer (8 bits a channel, rows top to bottom) encoded as a PNG file's bytes.
pub(crate) fn png_bytes(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header()?;
        writer.write_image_data(rgb)?;
    }
    Ok(out)
}

/// Colour of leg i (0-based), cycling a palette.
fn leg_colour(i: usize) -> RGBColor {
    const P: [RGBColor; 10] = [
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
    ];
    P[i % P.len()]
}

/// Outline of the U-shaped body in body-frame offsets from the centre of mass:
/// a bar of thickness τ_T whose lower face carries the β springs, and two arms
/// reaching τ_C below the leg bases.
fn body_outline(robot: &Robot) -> Vec<[f64; 2]> {
    let p = &robot.p;
    let g = &robot.body;
    let x_top = -p.l_beta - p.tau_t - g.xb0;
    let x_bar = x_top + p.tau_t;
    let x_end = x_top + g.tau_b;
    let (yo, yi) = (g.tau_l / 2.0, g.tau_l / 2.0 - p.tau_t);
    vec![
        [x_top, -yo],
        [x_top, yo],
        [x_end, yo],
        [x_end, yi],
        [x_bar, yi],
        [x_bar, -yi],
        [x_end, -yi],
        [x_end, -yo],
        [x_top, -yo],
    ]
}

/// Screen coordinates of a world point: horizontal = y, vertical = −x (x points down).
fn screen(w: [f64; 2]) -> (f64, f64) {
    (w[1], -w[0])
}

type Chart<'a, 'b> = ChartContext<
    'a,
    BitMapBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The terrain's surface over `y_span` in screen coordinates (y, −x): a straight line
/// on flat ground, else 800 points (a profile's shortest wavelength, λ/8, spans many).
fn ground_line(robot: &Robot, y_span: (f64, f64)) -> Vec<(f64, f64)> {
    let at = |y: f64| (y, robot.terrain.height(y).h - robot.p.x_t);
    if robot.terrain.is_flat() {
        return vec![at(y_span.0), at(y_span.1)];
    }
    let n = 800;
    (0..=n)
        .map(|k| at(y_span.0 + (y_span.1 - y_span.0) * k as f64 / n as f64))
        .collect()
}

/// Terrain (over `y_span`), body outline, springs and legs (from the Hermite
/// interpolation, tips dotted) of the robot in configuration `q`.
fn draw_robot(
    chart: &mut Chart,
    robot: &Robot,
    q: &[f64],
    y_span: (f64, f64),
    path: &Path,
) -> Result<(), OutputError> {
    let p = &robot.p;
    let to = screen;
    // The ground x = X_t − h(y), shaded below (screen: up is −x).
    let ground = ground_line(robot, y_span);
    let depth = ground.iter().map(|g| g.1).fold(f64::INFINITY, f64::min) - 10.0;
    let soil: Vec<(f64, f64)> = ground
        .iter()
        .copied()
        .chain([(y_span.1, depth), (y_span.0, depth)])
        .collect();
    chart
        .draw_series(std::iter::once(Polygon::new(
            soil,
            RGBColor(225, 215, 195).filled(),
        )))
        .map_err(|e| plot_err(path, e))?;
    chart
        .draw_series(LineSeries::new(ground, BLACK.stroke_width(2)))
        .map_err(|e| plot_err(path, e))?;
    let body = &q[robot.n_legs * robot.leg_dofs..];
    let outline: Vec<(f64, f64)> = body_outline(robot)
        .into_iter()
        .map(|o| to(BodyGeometry::world(body, o)))
        .collect();
    chart
        .draw_series(std::iter::once(Polygon::new(
            outline.clone(),
            RGBColor(200, 200, 210).filled(),
        )))
        .map_err(|e| plot_err(path, e))?;
    chart
        .draw_series(LineSeries::new(
            outline,
            RGBColor(60, 60, 80).stroke_width(2),
        ))
        .map_err(|e| plot_err(path, e))?;
    for sp in &robot.springs {
        let (a, b) = spring_ends(robot, q, sp);
        chart
            .draw_series(LineSeries::new(
                [to(a), to(b)],
                RGBColor(120, 120, 120).stroke_width(1),
            ))
            .map_err(|e| plot_err(path, e))?;
    }
    let m = 2 * robot.n_nodes;
    for i in 0..robot.n_legs {
        let leg = robot.leg(q, i);
        let pts: Vec<(f64, f64)> = (0..=60)
            .map(|k| {
                let sa = p.leg_length * k as f64 / 60.0;
                to([
                    interpolate(&leg[..m], robot.n_nodes, p.leg_length, sa),
                    interpolate(&leg[m..], robot.n_nodes, p.leg_length, sa),
                ])
            })
            .collect();
        let c = leg_colour(i);
        chart
            .draw_series(std::iter::once(PathElement::new(pts, c.stroke_width(3))))
            .map_err(|e| plot_err(path, e))?;
        let tip = robot.tip(q, i);
        chart
            .draw_series(std::iter::once(Circle::new(to(tip), 4, c.filled())))
            .map_err(|e| plot_err(path, e))?;
    }
    Ok(())
}

/// World positions of a spring's two ends (leg base, and a leg base or body point).
fn spring_ends(robot: &Robot, q: &[f64], sp: &Spring) -> ([f64; 2], [f64; 2]) {
    let body = &q[robot.n_legs * robot.leg_dofs..];
    let a = robot.base(q, sp.leg);
    let b = match sp.other {
        Anchor::Leg(j) => robot.base(q, j),
        Anchor::Body(j) => BodyGeometry::world(body, robot.body.b_points[j]),
    };
    (a, b)
}

/// Is `name` one of the pictures a `--snapshots` run writes ([`snapshots`],
/// [`BASAL_ANGLES_FILE`])? Only these are removed when a directory is reused.
fn is_own_picture(name: &str) -> bool {
    name == BASAL_ANGLES_FILE || (name.starts_with("snapshot_t") && name.ends_with(".png"))
}

/// File name of the basal-angle plot in a snapshot directory.
pub const BASAL_ANGLES_FILE: &str = "basal_angles.png";

/// Remove the pictures of a previous run from `dir` (metachron's own file names only;
/// anything else there is left alone), so a reused directory never mixes two runs.
/// Returns how many files were removed.
pub fn clear_previous_pictures(dir: &Path) -> Result<usize, OutputError> {
    let io = |source| OutputError::Io {
        path: dir.display().to_string(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io(e)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(io)?;
        let own = entry.file_name().to_str().is_some_and(is_own_picture);
        if own && entry.file_type().map_err(io)?.is_file() {
            std::fs::remove_file(entry.path()).map_err(io)?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// The part of the world a robot picture shows: the body's vertical extent with room
/// for the legs and the terrain, and `half` metres either side of the body's centre.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View {
    half: f64,
    x_lo: f64,
    x_hi: f64,
}

impl View {
    pub(crate) fn of(robot: &Robot) -> View {
        let p = &robot.p;
        View {
            half: robot.body.tau_l / 2.0 + robot.body.tau_b + 1.0,
            x_lo: p.x_t + 0.3,
            x_hi: -(p.l_beta + p.tau_t + 0.8),
        }
    }

    /// Picture height for `width` pixels at equal scale on both axes, with a strip of
    /// `text_lines` lines of text above the drawing.
    pub(crate) fn height_for(&self, width: u32, text_lines: usize) -> u32 {
        (width.saturating_sub(60) as f64 * (self.x_lo - self.x_hi) / (2.0 * self.half)) as u32
            + 80
            + strip_height(text_lines)
    }
}

/// Line height of the text strip above a robot picture, in pixels.
const STRIP_LINE: u32 = 20;

fn strip_height(lines: usize) -> u32 {
    if lines == 0 {
        0
    } else {
        STRIP_LINE * lines as u32 + 10
    }
}

/// One robot picture on `root`: the robot at sample `s` (terrain, body, springs, legs
/// from the Hermite interpolation) centred on its body, captioned with the time, under
/// a strip holding the `corner` lines of text at its upper left. The snapshots and the
/// animation frames are both drawn here, so they look the same.
pub(crate) fn draw_frame(
    root: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    robot: &Robot,
    view: &View,
    s: &Sample,
    corner: &[String],
    path: &Path,
) -> Result<(), OutputError> {
    root.fill(&WHITE).map_err(|e| plot_err(path, e))?;
    let (strip, picture) = root.split_vertically(strip_height(corner.len()));
    let font = ("sans-serif", 17).into_font().color(&RGBColor(20, 20, 20));
    for (k, line) in corner.iter().enumerate() {
        strip
            .draw(&Text::new(
                line.clone(),
                (12, 8 + (STRIP_LINE * k as u32) as i32),
                font.clone(),
            ))
            .map_err(|e| plot_err(path, e))?;
    }
    // The y axis keeps absolute positions, so the walk shows from one picture to the next;
    // the x axis follows the ground's height under the body, so a robot that climbs stays
    // in the picture (on flat ground it does not move).
    let half = view.half;
    let (ymin, ymax) = (s.body[1] - half, s.body[1] + half);
    let rise = robot.terrain.height(s.body[1]).h;
    let mut chart = ChartBuilder::on(&picture)
        .caption(format!("t = {:.2} s", s.t), ("sans-serif", 22))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d(ymin..ymax, rise - view.x_lo..rise - view.x_hi)
        .map_err(|e| plot_err(path, e))?;
    chart
        .configure_mesh()
        .x_desc("y (m)")
        .y_desc("-x (m)")
        .disable_mesh()
        .draw()
        .map_err(|e| plot_err(path, e))?;
    draw_robot(&mut chart, robot, &s.q, (ymin, ymax), path)
}

/// Draw the robot at the sample nearest each requested time; one PNG per time,
/// `snapshot_t<time>.png` in `dir`, after removing a previous run's pictures there.
/// Returns the files written.
pub fn snapshots(
    robot: &Robot,
    samples: &[Sample],
    times: &[f64],
    dir: &Path,
) -> Result<Vec<PathBuf>, OutputError> {
    ensure_font();
    std::fs::create_dir_all(dir).map_err(|source| OutputError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    clear_previous_pictures(dir)?;
    let with_q: Vec<&Sample> = samples.iter().filter(|s| !s.q.is_empty()).collect();
    let mut written = Vec::new();
    if with_q.is_empty() {
        return Ok(written);
    }
    let view = View::of(robot);
    let width = 1400u32;
    let height = view.height_for(width, 0);
    for &t in times {
        let s = with_q
            .iter()
            .min_by(|a, b| (a.t - t).abs().total_cmp(&(b.t - t).abs()))
            .expect("non-empty");
        let path = dir.join(format!("snapshot_t{:06.2}.png", s.t));
        write_png(&path, (width, height), |root| {
            draw_frame(root, robot, &view, s, &[], &path)
        })?;
        written.push(path);
    }
    Ok(written)
}

/// What the basal-angle picture plots, in degrees (the one angle unit of the picture):
/// per leg ψ_i(t) unwrapped continuously from its initial angle, and per neighbour pair
/// the phase difference ψ_{i+1} − ψ_i wrapped to (−180, 180].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AngleSeries {
    /// (t in s, ψ_i in degrees) per leg.
    pub angles: Vec<Vec<(f64, f64)>>,
    /// (t in s, ψ_{i+1} − ψ_i in degrees) per neighbour pair.
    pub lags: Vec<Vec<(f64, f64)>>,
}

impl AngleSeries {
    /// The series of `samples`, each leg unwrapped from the initial angles `start`
    /// (radians, as the model holds them), so legs started a full turn apart stay apart.
    pub(crate) fn of(samples: &[Sample], start: &[f64]) -> AngleSeries {
        let deg = |x: f64| voc::shown_value(voc::RADIANS, x);
        let angles = (0..start.len())
            .map(|i| {
                let Some(first) = samples.first() else {
                    return Vec::new();
                };
                let mut un = start[i] + crate::metrics::wrap(first.psi[i] - start[i]);
                let mut prev = first.psi[i];
                samples
                    .iter()
                    .map(|s| {
                        un += crate::metrics::wrap(s.psi[i] - prev);
                        prev = s.psi[i];
                        (s.t, deg(un))
                    })
                    .collect()
            })
            .collect();
        let lags = (0..start.len().saturating_sub(1))
            .map(|i| {
                samples
                    .iter()
                    .map(|s| (s.t, deg(crate::metrics::wrap(s.psi[i + 1] - s.psi[i]))))
                    .collect()
            })
            .collect();
        AngleSeries { angles, lags }
    }
}

/// A rectangle of a picture in pixels: (left, top) to (right, bottom), right and
/// bottom excluded.
pub(crate) type PixelRect = ((i32, i32), (i32, i32));

/// Where the basal-angle picture put its parts, and what its axes say.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AnglesLayout {
    /// The plotting rectangles of the two panels (angles, then lags).
    pub panels: [PixelRect; 2],
    /// The legends' boxes, in the band right of the panels.
    pub legends: [PixelRect; 2],
    /// The panels' vertical axis labels.
    pub y_labels: [String; 2],
}

/// Width of the band right of the panels that holds their legends, in pixels.
const LEGEND_BAND: u32 = 130;
/// Height of one legend entry, in pixels (smaller where many entries must fit).
const LEGEND_LINE: i32 = 22;

/// A legend in `band`, `y0` pixels from its top and at most `room` pixels tall: a line
/// in each series' colour and its name. Returns the box drawn.
fn draw_band_legend(
    band: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    entries: &[(String, RGBColor)],
    y0: i32,
    room: i32,
    path: &Path,
) -> Result<PixelRect, OutputError> {
    let (ox, oy) = band.get_base_pixel();
    let step = match entries.len() {
        0 => LEGEND_LINE,
        n => LEGEND_LINE.min((room - 12) / n as i32).max(8),
    };
    let size = step.clamp(8, 16) as f64;
    let (x0, x1) = (8, LEGEND_BAND as i32 - 8);
    let y1 = y0 + 12 + step * entries.len() as i32;
    band.draw(&Rectangle::new([(x0, y0), (x1, y1)], BLACK))
        .map_err(|e| plot_err(path, e))?;
    for (k, (name, c)) in entries.iter().enumerate() {
        let y = y0 + 6 + step * k as i32 + step / 2;
        band.draw(&PathElement::new(
            vec![(x0 + 8, y), (x0 + 30, y)],
            c.stroke_width(2),
        ))
        .map_err(|e| plot_err(path, e))?;
        band.draw(&Text::new(
            name.clone(),
            (x0 + 36, y - size as i32 / 2),
            ("sans-serif", size),
        ))
        .map_err(|e| plot_err(path, e))?;
    }
    Ok(((ox + x0, oy + y0), (ox + x1 + 1, oy + y1 + 1)))
}

/// The plotting rectangle of a chart, in the picture's pixels.
fn plotting_rect(chart: &Chart) -> PixelRect {
    let (x, y) = chart.plotting_area().get_pixel_range();
    ((x.start, y.start), (x.end, y.end))
}

/// Basal angles ψ_i(t) of every leg, one line each, unwrapped continuously from the
/// initial angles `start` (so legs started a full turn apart stay apart); below them
/// the neighbour phase differences ψ_{i+1} − ψ_i, wrapped to (−180°, 180°], where a
/// lag that the legs keep (a wave) reads as flat lines away from zero. Every angle of
/// the picture is in degrees; the legends stand in a band right of the panels, clear
/// of the curves.
pub fn basal_angles(samples: &[Sample], start: &[f64], path: &Path) -> Result<(), OutputError> {
    draw_basal_angles(samples, start, path).map(|_| ())
}

/// [`basal_angles`], returning where the picture put its parts (`None`: no samples, no
/// picture).
pub(crate) fn draw_basal_angles(
    samples: &[Sample],
    start: &[f64],
    path: &Path,
) -> Result<Option<AnglesLayout>, OutputError> {
    ensure_font();
    if samples.is_empty() {
        return Ok(None);
    }
    let AngleSeries { angles, lags } = AngleSeries::of(samples, start);
    let (lo, hi) = angles
        .iter()
        .flatten()
        .fold((f64::MAX, f64::MIN), |(a, b), &(_, y)| (a.min(y), b.max(y)));
    let t_end = samples.last().map(|s| s.t).unwrap_or(1.0);
    let unit = voc::shown_unit(voc::RADIANS);
    let y_labels = [
        format!("ψ ({unit}, unwrapped)"),
        format!("ψ(i+1) − ψ(i) ({unit}, wrapped)"),
    ];
    let half_turn = voc::shown_value(voc::RADIANS, std::f64::consts::PI);
    let pad = voc::shown_value(voc::RADIANS, 0.5);
    let e = |x: &dyn std::fmt::Display| plot_err(path, x);
    let mut layout = None;
    write_png(path, (1100 + LEGEND_BAND, 950), |root| {
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let (plots, band) = root.split_horizontally(1100);
        let (upper, lower) = plots.split_vertically(590);
        let mut chart = ChartBuilder::on(&upper)
            .caption("Basal angles", ("sans-serif", 24))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_end, lo - pad..hi + pad)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc("t (s)")
            .y_desc(y_labels[0].as_str())
            .draw()
            .map_err(|x| e(&x))?;
        for (i, pts) in angles.into_iter().enumerate() {
            chart
                .draw_series(LineSeries::new(pts, leg_colour(i).stroke_width(2)))
                .map_err(|x| e(&x))?;
        }

        let mut diff = ChartBuilder::on(&lower)
            .caption("Neighbour phase differences", ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_end, -half_turn..half_turn)
            .map_err(|x| e(&x))?;
        diff.configure_mesh()
            .x_desc("t (s)")
            .y_desc(y_labels[1].as_str())
            .y_labels(9)
            .draw()
            .map_err(|x| e(&x))?;
        let n_pairs = lags.len();
        for (i, pts) in lags.into_iter().enumerate() {
            // A wrap from +180 to −180 is a jump, not a line across the panel.
            let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for p in pts {
                if let Some(&(_, last)) = runs.last().and_then(|r| r.last()) {
                    if (p.1 - last).abs() > half_turn {
                        runs.push(Vec::new());
                    }
                }
                if let Some(r) = runs.last_mut() {
                    r.push(p);
                }
            }
            for r in runs {
                diff.draw_series(LineSeries::new(r, leg_colour(i).stroke_width(2)))
                    .map_err(|x| e(&x))?;
            }
        }

        let panels = [plotting_rect(&chart), plotting_rect(&diff)];
        let legs: Vec<(String, RGBColor)> = (0..start.len())
            .map(|i| (format!("leg {}", i + 1), leg_colour(i)))
            .collect();
        let pairs: Vec<(String, RGBColor)> = (0..n_pairs)
            .map(|i| (format!("{}−{}", i + 2, i + 1), leg_colour(i)))
            .collect();
        let (_, band_top) = band.get_base_pixel();
        let top = |r: PixelRect| r.0 .1 - band_top;
        // Each panel's legend beside it, as tall as the panel.
        let legend = |entries: &[(String, RGBColor)], p: PixelRect| {
            draw_band_legend(&band, entries, top(p), p.1 .1 - p.0 .1, path)
        };
        let legends = [legend(&legs, panels[0])?, legend(&pairs, panels[1])?];
        layout = Some(AnglesLayout {
            panels,
            legends,
            y_labels: y_labels.clone(),
        });
        Ok(())
    })?;
    Ok(layout)
}

/// The robot at its initial state with its symbols (docs/model.md's figure): body
/// points B_j, contact points P_1, P_2, centre of mass C, springs α and β with their
/// rest lengths, basal angle ψ, terrain X_t and the frame.
pub fn model_figure(robot: &Robot, path: &Path) -> Result<(), OutputError> {
    ensure_font();
    let p = &robot.p;
    let g = &robot.body;
    let (q, _) = robot.initial_state();
    let body = &q[robot.n_legs * robot.leg_dofs..];
    let half = g.tau_l / 2.0 + g.tau_b + 0.6;
    let (top, bottom) = (p.l_beta + p.tau_t + 0.9, -(p.x_t + 0.45));
    let width = 1600u32;
    let height = ((width - 40) as f64 * (top - bottom) / (2.0 * half)) as u32 + 60;
    write_png(path, (width, height), |root| {
        root.fill(&WHITE).map_err(|e| plot_err(path, e))?;
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!(
                    "metachron's robot at t = 0 (N = {}, n = {}; x points down, y along the body)",
                    robot.n_legs, robot.n_nodes
                ),
                ("sans-serif", 22),
            )
            .margin(10)
            .build_cartesian_2d(-half..half, bottom..top)
            .map_err(|e| plot_err(path, e))?;
        draw_robot(&mut chart, robot, &q, (-half, half), path)?;

        let ink = RGBColor(20, 20, 20);
        let font = ("sans-serif", 20).into_font().color(&ink);
        let mut text = |at: (f64, f64), label: String| {
            chart
                .draw_series(std::iter::once(Text::new(label, at, font.clone())))
                .map(|_| ())
                .map_err(|e| plot_err(path, e))
        };
        let world = |o: [f64; 2]| screen(BodyGeometry::world(body, o));
        let mut marks: Vec<(f64, f64)> = Vec::new();
        // Body points and contact points.
        let last = g.b_points.len() - 1;
        for (j, label) in [
            (0, "B_1".to_string()),
            (1, "B_2".to_string()),
            (last, format!("B_{}", last + 1)),
        ] {
            let at = world(g.b_points[j]);
            marks.push(at);
            text((at.0 + 0.08, at.1 + 0.32), label)?;
        }
        for (k, off) in g.p_points.iter().enumerate() {
            let at = world(*off);
            marks.push(at);
            text((at.0 - 0.35, at.1 + 0.3), format!("P_{}", k + 1))?;
        }
        let c = screen([body[0], body[1]]);
        marks.push(c);
        text((c.0 + 0.1, c.1 + 0.3), "C = (X_b, Y_b), θ".into())?;
        // Springs: the first α (leg 1 to B_1), an α between legs 1 and 2, the first β.
        let mid = |sp: &Spring| {
            let (a, b) = spring_ends(robot, &q, sp);
            screen([(a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0])
        };
        let alpha_legs = robot
            .springs
            .iter()
            .find(|s| matches!(s.other, Anchor::Leg(_)));
        let beta_1 = robot
            .springs
            .iter()
            .find(|s| s.k == p.beta && s.rest == p.l_beta && s.other == Anchor::Body(s.leg + 1));
        if let Some(sp) = alpha_legs {
            let m = mid(sp);
            text((m.0 - 0.3, m.1 - 0.06), "α, L_α".into())?;
        }
        if let Some(sp) = beta_1 {
            let m = mid(sp);
            text((m.0 + 0.08, m.1 + 0.1), "β, L_β".into())?;
        }
        let first = mid(&robot.springs[0]);
        text((first.0 - 0.1, first.1 - 0.06), "α".into())?;
        // Legs: base (s = 0), tip (s = ℓ), basal angle ψ from +x.
        let base = screen(robot.base(&q, 0));
        text((base.0 + 0.06, base.1 - 0.32), "s = 0".into())?;
        let tip = screen(robot.tip(&q, 0));
        text((tip.0 + 0.08, tip.1 + 0.25), "s = ℓ (tip)".into())?;
        if robot.n_legs > 1 {
            let b2 = screen(robot.base(&q, 1));
            text(
                (b2.0 + 0.1, b2.1 - 0.1),
                format!("ψ_2 = {:.0}°", p.initial_angle(1).to_degrees()),
            )?;
        }
        for i in [0, robot.n_legs - 1] {
            let t = screen(robot.tip(&q, i));
            text((t.0 - 0.25, t.1 - 0.12), format!("leg {}", i + 1))?;
        }
        // Body dimensions, terrain and frame.
        let bar_top = -p.l_beta - p.tau_t - g.xb0;
        let at = world([bar_top + 0.6 * p.tau_t, 0.5 * p.l_alpha]);
        text(at, "τ_T".into())?;
        let arm = world([-g.xb0 + p.tau_c, g.tau_l / 2.0 + 0.1]);
        text(arm, "τ_C".into())?;
        text((half - 3.2, -p.x_t - 0.08), "terrain x = X_t".into())?;
        let o = (-half + 0.3, top - 0.35);
        chart
            .draw_series([
                PathElement::new(vec![o, (o.0, o.1 - 0.8)], ink.stroke_width(2)),
                PathElement::new(vec![o, (o.0 + 0.8, o.1)], ink.stroke_width(2)),
            ])
            .map_err(|e| plot_err(path, e))?;
        let mut text2 = |at: (f64, f64), label: &str| {
            chart
                .draw_series(std::iter::once(Text::new(
                    label.to_string(),
                    at,
                    font.clone(),
                )))
                .map(|_| ())
                .map_err(|e| plot_err(path, e))
        };
        text2((o.0 + 0.08, o.1 - 0.55), "x")?;
        text2((o.0 + 0.85, o.1 + 0.12), "y")?;
        chart
            .draw_series(
                marks
                    .into_iter()
                    .map(|m| Circle::new(m, 5, RGBColor(200, 30, 30).filled())),
            )
            .map_err(|e| plot_err(path, e))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether two pixel rectangles share a pixel.
    fn overlap(a: PixelRect, b: PixelRect) -> bool {
        a.0 .0 < b.1 .0 && b.0 .0 < a.1 .0 && a.0 .1 < b.1 .1 && b.0 .1 < a.1 .1
    }

    /// Three legs turning at 1 rad/s from 0, 1.2 and 2.4 rad, their angles stored
    /// wrapped to (−π, π] as the model reports them.
    fn turning_legs() -> (Vec<Sample>, Vec<f64>) {
        let start = vec![0.0, 1.2, 2.4];
        let samples = (0..=100)
            .map(|k| {
                let t = 0.1 * k as f64;
                Sample {
                    t,
                    psi: start.iter().map(|s| crate::metrics::wrap(s + t)).collect(),
                    tangent: Vec::new(),
                    tip: Vec::new(),
                    inext: Vec::new(),
                    body: [0.0; 3],
                    work: 0.0,
                    work_axo: 0.0,
                    work_coupling: 0.0,
                    q: Vec::new(),
                    v: Vec::new(),
                }
            })
            .collect();
        (samples, start)
    }

    #[test]
    fn the_angle_series_are_unwrapped_and_in_degrees() {
        let (samples, start) = turning_legs();
        let series = AngleSeries::of(&samples, &start);
        const DEG_PER_RAD: f64 = 57.295_779_513_082_32;
        assert_eq!(series.angles.len(), 3);
        for (i, leg) in series.angles.iter().enumerate() {
            assert_eq!(leg.len(), samples.len());
            for &(t, psi) in leg {
                // Unwrapped: ψ keeps growing past 180° (10 rad is 573°).
                let want = (start[i] + t) * DEG_PER_RAD;
                assert!((psi - want).abs() < 1e-9, "leg {i} at {t}: {psi} vs {want}");
            }
        }
        assert_eq!(series.lags.len(), 2);
        for pair in &series.lags {
            for &(t, lag) in pair {
                assert!((lag - 1.2 * DEG_PER_RAD).abs() < 1e-9, "at {t}: {lag}");
            }
        }
    }

    #[test]
    fn the_legends_stand_clear_of_the_curves_and_every_angle_is_in_degrees() {
        let (samples, start) = turning_legs();
        let dir = std::env::temp_dir().join(format!("metachron-angles-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(BASAL_ANGLES_FILE);
        let layout = draw_basal_angles(&samples, &start, &path)
            .unwrap()
            .expect("samples were given");
        for label in &layout.y_labels {
            assert!(label.contains("(deg,"), "{label}");
            assert!(!label.contains("rad"), "{label}");
        }
        for legend in layout.legends {
            for panel in layout.panels {
                assert!(
                    !overlap(legend, panel),
                    "legend {legend:?} covers panel {panel:?}"
                );
            }
        }
        // The picture as written: leg 1's colour appears inside the first legend's box
        // (its entry), so the box measured is the one drawn.
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let width = info.width as i32;
        let RGBColor(r, g, b) = leg_colour(0);
        let ((x0, y0), (x1, y1)) = layout.legends[0];
        let found = (y0..y1).any(|y| {
            (x0..x1).any(|x| {
                let k = 3 * (y * width + x) as usize;
                buf[k..k + 3] == [r, g, b]
            })
        });
        assert!(found, "no legend entry in {:?}", layout.legends[0]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn rectangles_overlap_only_where_they_share_a_pixel() {
        let a = ((0, 0), (10, 10));
        assert!(overlap(a, ((9, 9), (20, 20))));
        assert!(!overlap(a, ((10, 0), (20, 10))));
        assert!(!overlap(a, ((0, 10), (10, 20))));
        assert!(overlap(a, ((2, 2), (3, 3))));
    }
}
