//! The GPU one caller uses: its options, the device and engine opened from them on
//! first use (or why they cannot be), and what the run layer keeps about it (a device
//! given up on, the notices already given). The command line builds one from its flags
//! and passes it down; nothing is kept per process, so two handles with different
//! options can live side by side (a library caller, the tests).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use super::device::{GpuContext, GpuOptions};
use super::engine::GpuEngine;
use super::GpuUnavailable;

/// Where notices go: printed by the caller as they happen, or kept for
/// [`Gpu::take_notices`].
pub type NoticeSink = fn(&str);

/// A GPU chosen by its options, opened lazily: building one costs nothing, and a
/// program that never runs on the GPU never touches a driver.
pub struct Gpu {
    /// The options, or why they could not be read (a bad environment variable): the
    /// reason is reported by every use, like a device that cannot be opened.
    options: Result<GpuOptions, GpuUnavailable>,
    opened: OnceLock<Result<GpuEngine, GpuUnavailable>>,
    /// Set once the device has failed on a single point: the rest runs on the CPU.
    abandoned: AtomicBool,
    sink: Option<NoticeSink>,
    /// First characters of each notice given (a sweep would repeat it for every chunk).
    seen: Mutex<Vec<String>>,
    /// Notices given without a sink, oldest first.
    kept: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("options", &self.options)
            .field("opened", &self.opened.get().map(|r| r.is_ok()))
            .finish()
    }
}

impl Gpu {
    /// The GPU `options` choose (opened on first use).
    pub fn new(options: GpuOptions) -> Gpu {
        Gpu::with_options(Ok(options))
    }

    /// The GPU that `METACHRON_ADAPTER` and `METACHRON_GPU_PRECISION` choose; a value
    /// they do not take makes it unavailable, with that reason.
    pub fn from_env() -> Gpu {
        Gpu::with_options(GpuOptions::from_env().map_err(GpuUnavailable::new))
    }

    fn with_options(options: Result<GpuOptions, GpuUnavailable>) -> Gpu {
        Gpu {
            options,
            opened: OnceLock::new(),
            abandoned: AtomicBool::new(false),
            sink: None,
            seen: Mutex::new(Vec::new()),
            kept: Mutex::new(Vec::new()),
        }
    }

    /// Hand every later notice to `sink` as it happens instead of keeping it.
    pub fn with_notice_sink(mut self, sink: NoticeSink) -> Gpu {
        self.sink = Some(sink);
        self
    }

    /// The options this handle opens its device with (`None`: they could not be read).
    pub fn options(&self) -> Option<&GpuOptions> {
        self.options.as_ref().ok()
    }

    /// The engine on this handle's device, opened on the first call (its pipelines are
    /// built once and reused by every later batch); the failure is kept and returned
    /// by every later call.
    pub fn engine(&self) -> Result<&GpuEngine, GpuUnavailable> {
        self.opened
            .get_or_init(|| {
                let options = self.options.clone()?;
                Ok(GpuEngine::new(&GpuContext::new(&options)?))
            })
            .as_ref()
            .map_err(|e| e.clone())
    }

    /// The device this handle opened (opening it on the first call).
    pub fn context(&self) -> Result<&GpuContext, GpuUnavailable> {
        self.engine().map(|e| &e.ctx)
    }

    /// Give up on the device: later batches run on the CPU.
    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::Relaxed);
    }

    /// Whether [`Gpu::abandon`] was called.
    pub fn abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Relaxed)
    }

    /// Give `message` once per handle (notices that start alike count as one).
    pub fn notice(&self, message: &str) {
        let key: String = message.chars().take(40).collect();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains(&key) {
            return;
        }
        seen.push(key);
        match self.sink {
            Some(sink) => sink(message),
            None => self
                .kept
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(message.to_string()),
        }
    }

    /// The notices given while no sink was set, oldest first (and forget them).
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.kept.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
