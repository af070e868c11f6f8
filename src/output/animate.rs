//! Gait animations: the robot drawn as in the snapshots ([`super::plots::draw_frame`]),
//! frame by frame while a run streams its samples, encoded as an animated GIF.
//!
//! Each frame is drawn into one reused pixel buffer and written to the file at once
//! (palette by NeuQuant, LZW by the `gif` crate), so memory stays flat however long
//! the run. The clip maps the run's horizon onto `duration` seconds of playback at
//! `fps` frames per second; a last frame, held, states the run's status, class and
//! walking metrics.

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::error::OutputError;
use crate::metrics::Metrics;
use crate::model::Robot;
use crate::output::plots::{draw_frame, ensure_font, View};
use crate::parquet::PendingFile;
use crate::sample::Sample;
use crate::vocabulary::{self as voc, metric};

/// Frames per second unless set (GIF delays are whole centiseconds: 20 fps is 5 cs).
pub const DEFAULT_FPS: u32 = 20;
/// Clip length unless set: the run in real time, at most this many seconds (longer
/// runs play faster), which keeps a default clip to 200 frames, a few MB.
pub const DEFAULT_MAX_DURATION: f64 = 10.0;
/// Frame width in pixels unless set (the height follows from the robot's proportions).
pub const DEFAULT_WIDTH: u32 = 640;
/// How long the closing frame (status, class, metrics) stays, in seconds.
const CLOSING_HOLD: f64 = 2.0;
/// Lines of text above each frame (time is the caption; these hold the metrics).
const CORNER_LINES: usize = 2;
/// NeuQuant's speed (1 best .. 30 fastest): 10 is the `gif` crate's recommendation.
const QUANTIZER_SPEED: i32 = 10;

/// How a clip is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnimationSettings {
    /// Frames per second of playback, 1..=50.
    pub fps: u32,
    /// Playback length in seconds; `None`: the horizon, capped at [`DEFAULT_MAX_DURATION`].
    pub duration: Option<f64>,
    /// Frame width in pixels, 200..=2000.
    pub width: u32,
}

impl Default for AnimationSettings {
    fn default() -> Self {
        AnimationSettings {
            fps: DEFAULT_FPS,
            duration: None,
            width: DEFAULT_WIDTH,
        }
    }
}

/// Settings out of range: the flag and what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {value}: allowed is {allowed}")]
pub struct AnimationSettingsError {
    pub flag: &'static str,
    pub value: String,
    pub allowed: &'static str,
}

impl AnimationSettings {
    pub fn validate(&self) -> Result<(), AnimationSettingsError> {
        if !(1..=50).contains(&self.fps) {
            return Err(AnimationSettingsError {
                flag: "--animate-fps",
                value: self.fps.to_string(),
                allowed: "1 to 50 frames per second (GIF delays are whole centiseconds)",
            });
        }
        if let Some(d) = self.duration {
            if !(d.is_finite() && d > 0.0 && d <= 600.0) {
                return Err(AnimationSettingsError {
                    flag: "--animate-duration",
                    value: d.to_string(),
                    allowed: "0 < SECONDS <= 600",
                });
            }
        }
        if !(200..=2000).contains(&self.width) {
            return Err(AnimationSettingsError {
                flag: "--animate-width",
                value: self.width.to_string(),
                allowed: "200 to 2000 pixels",
            });
        }
        Ok(())
    }

    /// Playback length for a run of `horizon` simulated seconds.
    pub fn duration_for(&self, horizon: f64) -> f64 {
        self.duration
            .unwrap_or_else(|| horizon.min(DEFAULT_MAX_DURATION))
    }
}

/// What a finished clip holds.
#[derive(Debug, Clone, PartialEq)]
pub struct AnimationSummary {
    pub path: PathBuf,
    /// Frames of the run (the closing frame not counted).
    pub frames: usize,
    /// Playback length of those frames in seconds.
    pub seconds: f64,
    /// Simulated seconds per second of playback.
    pub speed: f64,
    pub bytes: u64,
}

/// A clip being written: call [`Animator::push`] with every sample of the run in time
/// order, then [`Animator::finish`] with its metrics. Dropped unfinished, it leaves no
/// file behind.
pub struct Animator {
    robot: Robot,
    view: View,
    width: u32,
    height: u32,
    encoder: gif::Encoder<BufWriter<std::fs::File>>,
    pending: PendingFile,
    /// Reused RGB canvas and its RGBA copy for the quantizer.
    rgb: Vec<u8>,
    rgba: Vec<u8>,
    delay_cs: u16,
    /// Simulated time between frames, and when the next one is due.
    frame_dt: f64,
    next_t: f64,
    frames: usize,
    /// Running quantities for the corner: start of the body, largest |V|/ℓ so far.
    y0: Option<f64>,
    max_inext: f64,
    last: Option<Sample>,
}

fn gif_err(path: &Path, e: impl std::fmt::Display) -> OutputError {
    OutputError::Plot {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

impl Animator {
    /// Create the clip's file (under a temporary name until [`Animator::finish`]) for a
    /// run of `robot` over `horizon` simulated seconds whose samples are `dt_out` apart.
    pub fn create(
        path: &Path,
        robot: Robot,
        horizon: f64,
        dt_out: f64,
        settings: &AnimationSettings,
    ) -> Result<Animator, OutputError> {
        settings.validate().map_err(|e| OutputError::Invalid {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        ensure_font();
        let mut pending = PendingFile::create(path)?;
        let view = View::of(&robot);
        let width = settings.width;
        let height = view.height_for(width, CORNER_LINES);
        let file = BufWriter::new(pending.take_file()?);
        let (w16, h16) = (
            u16::try_from(width).map_err(|e| gif_err(path, e))?,
            u16::try_from(height).map_err(|e| gif_err(path, e))?,
        );
        let mut encoder = gif::Encoder::new(file, w16, h16, &[]).map_err(|e| gif_err(path, e))?;
        encoder
            .set_repeat(gif::Repeat::Infinite)
            .map_err(|e| gif_err(path, e))?;
        let frames_wanted = (settings.duration_for(horizon) * settings.fps as f64).max(1.0);
        // Never more than one frame per sample: a finer frame interval has nothing new to show.
        let frame_dt = (horizon / frames_wanted).max(dt_out);
        Ok(Animator {
            robot,
            view,
            width,
            height,
            encoder,
            pending,
            rgb: vec![0; (width * height * 3) as usize],
            rgba: Vec::with_capacity((width * height * 4) as usize),
            delay_cs: (100.0 / settings.fps as f64).round() as u16,
            frame_dt,
            next_t: 0.0,
            frames: 0,
            y0: None,
            max_inext: 0.0,
            last: None,
        })
    }

    /// Take the next sample of the run; draws and writes a frame when one is due.
    pub fn push(&mut self, s: &Sample) -> Result<(), OutputError> {
        let y0 = *self.y0.get_or_insert(s.body[1]);
        self.max_inext = s.inext.iter().fold(self.max_inext, |m, &x| m.max(x));
        if s.q.is_empty() || s.t < self.next_t - 1e-9 * self.frame_dt {
            return Ok(());
        }
        while self.next_t <= s.t + 1e-9 * self.frame_dt {
            self.next_t += self.frame_dt;
        }
        let travelled = s.body[1] - y0;
        let speed = if s.t > 0.0 { travelled / s.t } else { 0.0 };
        let corner = [
            format!("displacement {travelled:+.3} m, mean speed {speed:+.3} m/s"),
            format!(
                "actuation work {:.2} J, max |V|/l {:.1e}",
                s.work, self.max_inext
            ),
        ];
        self.frame(s, &corner, self.delay_cs)?;
        self.frames += 1;
        self.last = Some(s.clone());
        Ok(())
    }

    /// Draw `s` with `corner` and write it as one frame shown for `delay_cs`.
    fn frame(&mut self, s: &Sample, corner: &[String], delay_cs: u16) -> Result<(), OutputError> {
        let path = self.pending.target().to_path_buf();
        {
            let root = BitMapBackend::with_buffer(&mut self.rgb, (self.width, self.height))
                .into_drawing_area();
            draw_frame(&root, &self.robot, &self.view, s, corner, &path)?;
            root.present().map_err(|e| gif_err(&path, e))?;
        }
        self.rgba.clear();
        for px in self.rgb.chunks_exact(3) {
            self.rgba.extend_from_slice(&[px[0], px[1], px[2], 255]);
        }
        let mut frame = gif::Frame::from_rgba_speed(
            self.width as u16,
            self.height as u16,
            &mut self.rgba,
            QUANTIZER_SPEED,
        );
        frame.delay = delay_cs;
        self.encoder
            .write_frame(&frame)
            .map_err(|e| gif_err(&path, e))
    }

    /// Close the clip: a last frame stating how the run ended (held for two seconds),
    /// then the file is flushed and renamed onto its name.
    pub fn finish(mut self, metrics: &Metrics) -> Result<AnimationSummary, OutputError> {
        let path = self.pending.target().to_path_buf();
        if let Some(s) = self.last.take() {
            let m = metrics;
            let head = format!("status {}, class {}", m.status.label(), m.class.label());
            let corner = if m.status.is_ok() {
                [
                    format!(
                        "{head}, mean lag {}, lag order {:.3}",
                        voc::show(metric::mean_lag, m.mean_lag, 1),
                        m.lag_order
                    ),
                    format!(
                        "mean speed {}, cost of transport {}",
                        voc::show(metric::mean_speed, m.mean_speed, 4),
                        voc::show(metric::cost_of_transport, m.cost_of_transport, 3)
                    ),
                ]
            } else {
                [
                    head,
                    format!(
                        "stopped at t = {}",
                        voc::show(voc::STATUS_TIME, m.status.time(), 3)
                    ),
                ]
            };
            self.frame(&s, &corner, (CLOSING_HOLD * 100.0) as u16)?;
        }
        let Animator {
            encoder,
            pending,
            frames,
            frame_dt,
            delay_cs,
            ..
        } = self;
        let mut file = encoder.into_inner().map_err(|e| gif_err(&path, e))?;
        std::io::Write::flush(&mut file).map_err(|e| gif_err(&path, e))?;
        drop(file);
        pending.commit()?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        Ok(AnimationSummary {
            path,
            frames,
            seconds: frames as f64 * delay_cs as f64 / 100.0,
            speed: frame_dt * 100.0 / delay_cs as f64,
            bytes,
        })
    }
}
