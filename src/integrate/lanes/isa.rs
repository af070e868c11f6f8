//! Which vector unit runs the lane kernel, picked at run time. One of the CPU engine's
//! two `unsafe` (the other: `simd::Lanes`' slice view of its aligned lines): calling a
//! `#[target_feature]` function is sound only on a CPU that has the feature, which
//! [`Isa`]'s constructors check (an `Isa` value other than `Portable` exists only where
//! its features were detected).

use super::kernel::{self, BlockState, Scratch};
use super::model::{BlockModel, LegMatrices};

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

    /// Advance every lane of a block by `steps` steps. Each instruction set's build is
    /// compiled only for the widths a batch runs it at (the kernel is large: every
    /// build is a whole step loop, and the builds are most of the crate's compile
    /// time): AVX-512 for 8 lanes, AVX2 for 4 and for one (the solo path), the
    /// portable build for 2 and for one. A narrower block on an AVX-512 machine runs
    /// the AVX2 build, with the same bits (both use FMA, and every operation is lane by
    /// lane). Any other width on `self` is a caller's error ([`Isa::lanes`] and
    /// [`Isa::one_lane`] give the widths there are) and panics.
    pub fn advance<const W: usize>(
        self,
        m: &BlockModel<W>,
        st: &mut BlockState<W>,
        s: &mut Scratch<W>,
        steps: usize,
    ) {
        // `as_width` is the identity where the widths are equal (a type test the
        // compiler folds): the builds below are instantiated only at their widths.
        match (self.0, W) {
            #[cfg(target_arch = "x86_64")]
            (Kind::Avx512, 8) => {
                let (m, st, s) = as_width::<W, 8>(m, st, s);
                // SAFETY: an Isa of this kind is only built where `supported` saw the features.
                unsafe { avx512_8::advance(m, st, s, steps) }
            }
            #[cfg(target_arch = "x86_64")]
            (Kind::Avx512 | Kind::Avx2, 4) => {
                let (m, st, s) = as_width::<W, 4>(m, st, s);
                // SAFETY: as above (AVX-512 implies AVX2 and FMA: `supported`).
                unsafe { avx2_4::advance(m, st, s, steps) }
            }
            #[cfg(target_arch = "x86_64")]
            (Kind::Avx512 | Kind::Avx2, 1) => {
                let (m, st, s) = as_width::<W, 1>(m, st, s);
                // SAFETY: as above.
                unsafe { avx2_1::advance(m, st, s, steps) }
            }
            (Kind::Portable, 2) => {
                let (m, st, s) = as_width::<W, 2>(m, st, s);
                // SAFETY: the portable build needs no feature.
                unsafe { portable_2::advance(m, st, s, steps) }
            }
            (Kind::Portable, 1) => {
                let (m, st, s) = as_width::<W, 1>(m, st, s);
                // SAFETY: as above.
                unsafe { portable_1::advance(m, st, s, steps) }
            }
            _ => panic!(
                "the lane kernel has no {} build for {W} lanes",
                self.label()
            ),
        }
    }
}

/// A block of width `W` seen as width `V`: the same types when `W == V` (the caller's
/// match has checked it).
fn as_width<'a, const W: usize, const V: usize>(
    m: &'a BlockModel<W>,
    st: &'a mut BlockState<W>,
    s: &'a mut Scratch<W>,
) -> (&'a BlockModel<V>, &'a mut BlockState<V>, &'a mut Scratch<V>) {
    use std::any::Any;
    let same = "a width the match checked";
    (
        (m as &dyn Any).downcast_ref().expect(same),
        (st as &mut dyn Any).downcast_mut().expect(same),
        (s as &mut dyn Any).downcast_mut().expect(same),
    )
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

/// The builds, one per instruction set and width, each made of plain (non-generic)
/// functions in modules of their own: compiled once, in this crate (a generic one would
/// be compiled again in every crate that calls it, the test suite included). Each build
/// has one function per step loop it runs (the paper's five nodes with the block's
/// shared leg matrices, five nodes, any node count), each in its own module: LLVM
/// optimises three moderate functions, in parallel codegen units, instead of one that
/// inlines all three loops.
macro_rules! build {
    ($module:ident, $w:literal, $fma:expr, $shared:ident $(, $features:literal)?) => {
        mod $module {
            use super::super::kernel::{BlockState, Scratch};
            use super::super::model::BlockModel;

            /// # Safety
            /// Only on a CPU with the build's features (`super::supported`).
            // The portable builds' step loops have no features: safe to call.
            #[allow(unused_unsafe)]
            pub(super) unsafe fn advance(
                m: &BlockModel<$w>,
                st: &mut BlockState<$w>,
                s: &mut Scratch<$w>,
                steps: usize,
            ) {
                build!(@shared_call $shared, m, st, s, steps);
                if m.n_nodes == 5 {
                    // SAFETY: the caller's contract.
                    unsafe { five::run(m, st, s, steps) }
                } else {
                    // SAFETY: the caller's contract.
                    unsafe { any::run(m, st, s, steps) }
                }
            }

            build!(@shared_mod $shared, $w, $fma $(, $features)?);

            build!(@loop_mod five, 5, $w, $fma $(, $features)?);
            build!(@loop_mod any, 0, $w, $fma $(, $features)?);
        }
    };
    // A step loop of the build over its own leg matrices (`$nn` nodes, 0 = any),
    // compiled with its features in a module of its own.
    (@loop_mod $name:ident, $nn:literal, $w:literal, $fma:expr $(, $features:literal)?) => {
        mod $name {
            use super::super::super::kernel::{BlockState, Scratch};
            use super::super::super::model::BlockModel;

            $(#[target_feature(enable = $features)])?
            pub(super) fn run(
                m: &BlockModel<$w>,
                st: &mut BlockState<$w>,
                s: &mut Scratch<$w>,
                steps: usize,
            ) {
                super::super::own_matrices::<$w, { $fma }, $nn>(m, st, s, steps)
            }
        }
    };
    // The width a batch runs this instruction set at: a block whose lanes share the leg
    // matrices (`BlockModel::shared`) with five nodes reads them once for every lane.
    (@shared_call shared, $m:ident, $st:ident, $s:ident, $steps:ident) => {
        if let (5, Some(mx)) = ($m.n_nodes, &$m.shared) {
            // SAFETY: the caller's contract.
            unsafe { shared::run($m, mx, $st, $s, $steps) };
            return;
        }
    };
    (@shared_call own, $m:ident, $st:ident, $s:ident, $steps:ident) => {};
    (@shared_mod shared, $w:literal, $fma:expr $(, $features:literal)?) => {
        mod shared {
            use super::super::super::kernel::{BlockState, Scratch};
            use super::super::super::model::{BlockModel, LegMatrices};

            $(#[target_feature(enable = $features)])?
            pub(super) fn run(
                m: &BlockModel<$w>,
                mx: &LegMatrices<f64>,
                st: &mut BlockState<$w>,
                s: &mut Scratch<$w>,
                steps: usize,
            ) {
                super::super::shared_five_nodes::<$w, { $fma }>(m, mx, st, s, steps)
            }
        }
    };
    (@shared_mod own, $w:literal, $fma:expr $(, $features:literal)?) => {};
}

#[cfg(target_arch = "x86_64")]
build!(avx512_8, 8, true, shared, "avx512f,avx2,fma");
#[cfg(target_arch = "x86_64")]
build!(avx2_4, 4, true, shared, "avx2,fma");
#[cfg(target_arch = "x86_64")]
build!(avx2_1, 1, true, own, "avx2,fma");
build!(portable_2, 2, super::super::PORTABLE_FMA, own);
build!(portable_1, 1, super::super::PORTABLE_FMA, own);

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

/// The step loop of the paper's five nodes per leg (its loops unroll) at the width a
/// batch runs its instruction set at, the block's lanes sharing the leg matrices: read
/// once for every lane. Inlined into its build, so compiled for the build's instruction set.
#[inline(always)]
fn shared_five_nodes<const W: usize, const F: bool>(
    m: &BlockModel<W>,
    mx: &LegMatrices<f64>,
    st: &mut BlockState<W>,
    s: &mut Scratch<W>,
    steps: usize,
) {
    for k in 0..steps {
        kernel::step::<W, F, 5, f64>(m, mx, st, s, k > 0, step_end(k, steps));
    }
}

/// The step loop of each lane's own leg matrices: `NN` = 5 for the paper's five nodes
/// per leg (its loops unroll), 0 for any node count (its loops run to the block's count).
#[inline(always)]
fn own_matrices<const W: usize, const F: bool, const NN: usize>(
    m: &BlockModel<W>,
    st: &mut BlockState<W>,
    s: &mut Scratch<W>,
    steps: usize,
) {
    let mx = &m.matrices;
    for k in 0..steps {
        kernel::step::<W, F, NN, _>(m, mx, st, s, k > 0, step_end(k, steps));
    }
}
