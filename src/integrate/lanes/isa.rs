//! Which vector unit runs the lane kernel, picked at run time. One of the CPU engine's
//! two `unsafe` (the other: `simd::Lanes`' slice view of its aligned lines): calling a
//! `#[target_feature]` function is sound only on a CPU that has the feature, which
//! [`Isa`]'s constructors check (an `Isa` value other than `Portable` exists only where
//! its features were detected).

use super::kernel::{self, BlockState, Scratch};
use super::model::BlockModel;

/// FMA on the portable path: baseline on aarch64, or when the build enables it.
const PORTABLE_FMA: bool = cfg!(any(target_arch = "aarch64", target_feature = "fma"));

/// An instruction set the kernel is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Isa(Kind);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Avx512,
    Avx2,
    Portable,
}

impl Isa {
    /// The widest unit this CPU has, unless `METACHRON_SIMD` (`avx512`, `avx2`,
    /// `portable`) asks for a narrower one.
    pub fn detect() -> Isa {
        let best = Self::best();
        match std::env::var("METACHRON_SIMD").ok().as_deref() {
            Some(name) => Self::named(name)
                .filter(|i| i.lanes() <= best.lanes())
                .unwrap_or(best),
            None => best,
        }
    }

    /// The instruction set of a one-lane (solo) run: AVX2 where there is one (it runs
    /// scalar code faster than the AVX-512 build here, measured in docs/benchmarks.md),
    /// else the portable build.
    pub fn solo() -> Isa {
        Self::best().one_lane()
    }

    /// The instruction set for one lane of work planned on `self`: the same arithmetic
    /// (fused or not), so a lone instance gets the bits it would get in a block.
    pub fn one_lane(self) -> Isa {
        match self.0 {
            Kind::Avx512 => Isa(Kind::Avx2),
            _ => self,
        }
    }

    fn best() -> Isa {
        for kind in [Kind::Avx512, Kind::Avx2] {
            if supported(kind) {
                return Isa(kind);
            }
        }
        Isa(Kind::Portable)
    }

    /// The named instruction set, if this CPU has it.
    pub fn named(name: &str) -> Option<Isa> {
        let kind = match name {
            "avx512" => Kind::Avx512,
            "avx2" => Kind::Avx2,
            "portable" => Kind::Portable,
            _ => return None,
        };
        supported(kind).then_some(Isa(kind))
    }

    /// Robots per block: the f64 lanes of one vector register.
    pub fn lanes(self) -> usize {
        match self.0 {
            Kind::Avx512 => 8,
            Kind::Avx2 => 4,
            Kind::Portable => 2,
        }
    }

    pub fn label(self) -> &'static str {
        match self.0 {
            Kind::Avx512 => "avx512",
            Kind::Avx2 => "avx2",
            Kind::Portable => "portable",
        }
    }

    /// Advance every lane of a block by `steps` steps. The AVX-512 build serves the
    /// block width a batch picks it for (8 lanes) and is compiled for that width only;
    /// a narrower block on an AVX-512 machine runs the AVX2 build, with the same bits
    /// (both use FMA, and every operation is lane by lane).
    pub fn advance<const W: usize>(
        self,
        m: &BlockModel<W>,
        st: &mut BlockState<W>,
        s: &mut Scratch<W>,
        steps: usize,
    ) {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an Isa of this kind is only built where `supported` saw the features.
            Kind::Avx512 if W == 8 => unsafe { advance_avx512(m, st, s, steps) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above (AVX-512 implies AVX2 and FMA: `supported`).
            Kind::Avx512 | Kind::Avx2 => unsafe { advance_avx2(m, st, s, steps) },
            _ => advance_portable(m, st, s, steps),
        }
    }
}

fn supported(kind: Kind) -> bool {
    match kind {
        #[cfg(target_arch = "x86_64")]
        Kind::Avx512 => {
            is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
        }
        #[cfg(target_arch = "x86_64")]
        Kind::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        Kind::Portable => true,
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
fn advance_avx512<const W: usize>(
    m: &BlockModel<W>,
    st: &mut BlockState<W>,
    s: &mut Scratch<W>,
    steps: usize,
) {
    specialised::<W, true, 8>(m, st, s, steps)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn advance_avx2<const W: usize>(
    m: &BlockModel<W>,
    st: &mut BlockState<W>,
    s: &mut Scratch<W>,
    steps: usize,
) {
    specialised::<W, true, 4>(m, st, s, steps)
}

fn advance_portable<const W: usize>(
    m: &BlockModel<W>,
    st: &mut BlockState<W>,
    s: &mut Scratch<W>,
    steps: usize,
) {
    specialised::<W, PORTABLE_FMA, 0>(m, st, s, steps)
}

/// Consecutive steps of one `advance` run drift to the next midpoint in one go; the
/// last ends at its step's end, where the driver reads the state.
#[inline(always)]
fn step_end(k: usize, steps: usize) -> kernel::StepEnd {
    if k + 1 == steps {
        kernel::StepEnd::AtEnd
    } else {
        kernel::StepEnd::NextMidpoint
    }
}

/// The step loop, specialised for the paper's five nodes per leg (the common case:
/// its loops unroll) and generic otherwise. With five nodes, at the width a batch runs
/// this instruction set at (`BATCH`, 0 for none), a block whose lanes share the leg
/// matrices (`BlockModel::shared`) reads them once for every lane. Other widths keep
/// two builds (the condition is a constant: the third is not compiled for them).
/// Inlined into each `#[target_feature]` function above, so it is compiled for that
/// instruction set.
#[inline(always)]
fn specialised<const W: usize, const F: bool, const BATCH: usize>(
    m: &BlockModel<W>,
    st: &mut BlockState<W>,
    s: &mut Scratch<W>,
    steps: usize,
) {
    if W == BATCH {
        if let (5, Some(shared)) = (m.n_nodes, &m.shared) {
            for k in 0..steps {
                kernel::step::<W, F, 5, f64>(m, shared, st, s, k > 0, step_end(k, steps));
            }
            return;
        }
    }
    let mx = &m.matrices;
    if m.n_nodes == 5 {
        for k in 0..steps {
            kernel::step::<W, F, 5, _>(m, mx, st, s, k > 0, step_end(k, steps));
        }
    } else {
        for k in 0..steps {
            kernel::step::<W, F, 0, _>(m, mx, st, s, k > 0, step_end(k, steps));
        }
    }
}
