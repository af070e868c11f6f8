//! The metric running sums the kernel keeps on the device, listed once. The list
//! places them in the state buffer ([`StateLayout`]), declares them as registers of
//! each leg's invocation (loaded at dispatch start, stored at its end: [`wgsl_load`],
//! [`wgsl_store`]) and names them for the host, which turns them into the
//! [`crate::metrics::Tally`] of the CPU twin (`engine::finish_instance`). A new running
//! sum is one entry here, its update in `shaders/metrics.wgsl`, and its line there.

use crate::vocabulary::metric;

/// Who owns a running sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    /// One per leg, kept by that leg's invocation.
    Leg,
    /// One per robot, kept (identically) by every leg, stored by leg 0.
    Robot,
}

/// One running sum: WGSL variable `t_<name>`.
#[derive(Debug, Clone, Copy)]
pub struct RunningSum {
    pub name: &'static str,
    pub per: Per,
}

const fn leg(name: &'static str) -> RunningSum {
    RunningSum {
        name,
        per: Per::Leg,
    }
}

const fn robot(name: &'static str) -> RunningSum {
    RunningSum {
        name,
        per: Per::Robot,
    }
}

/// Actuation work ∫|M0ψ̇|dt of this leg (summed over legs at each sample), and the
/// internal couple's ∫|Q_A·q̇|dt (kept by kernels with the couple, else 0).
pub const WORK: RunningSum = leg(metric::work);
pub const WORK_AXO: RunningSum = leg(metric::work_axo);
/// The energy this leg's springs' dampers dissipated, ∫c·γ̇²dt (each spring counted by
/// one leg; kept by kernels with the coupling's law, else 0).
pub const WORK_COUPLING: RunningSum = leg(metric::work_coupling);
/// Unwrapped phase φ (0 at t = 0) and its value at the first window sample.
pub const PHI: RunningSum = leg("phi");
pub const PHI_START: RunningSum = leg("phi_start");
/// The previous sample's unit basal tangent.
pub const PREV_TX: RunningSum = leg("prev_tx");
pub const PREV_TY: RunningSum = leg("prev_ty");
/// Σ e^{iΔ} over the window for the pair (leg, leg + 1); the last leg's stays 0.
pub const PAIR_RE: RunningSum = leg("pair_re");
pub const PAIR_IM: RunningSum = leg("pair_im");
/// Window samples with the tip in contact.
pub const CONTACT_COUNT: RunningSum = leg("contact_count");
/// φ and the pair sums at the first sample of the window's second half (before it
/// is added): the halves of the `settled` check (`MetricsAccumulator::settled`).
pub const MID_PHI: RunningSum = leg("mid_phi");
pub const MID_PAIR_RE: RunningSum = leg("mid_pair_re");
pub const MID_PAIR_IM: RunningSum = leg("mid_pair_im");
/// Largest |qᵀGq − ℓ|/ℓ of this leg over the run's samples.
pub const MAX_INEXT: RunningSum = leg("max_inext");
/// Σ over window samples of |mean e^{iφ}|.
pub const KURAMOTO_SUM: RunningSum = robot("kuramoto_sum");
/// Y_b at the first sample, the first window sample and the last sample.
pub const FIRST_Y: RunningSum = robot("first_y");
pub const WINDOW_Y: RunningSum = robot("window_y");
pub const LAST_Y: RunningSum = robot("last_y");
/// Actuation work and the couples' work of the robot at the last sample.
pub const LAST_WORK: RunningSum = robot("last_work");
pub const LAST_WORK_AXO: RunningSum = robot("last_work_axo");
pub const LAST_WORK_COUPLING: RunningSum = robot("last_work_coupling");

/// The running sums only kernels with the coupling's law keep.
const LAW_SUMS: &[RunningSum] = &[WORK_COUPLING, LAST_WORK_COUPLING];

/// The running sums, in state-buffer order (after q and v).
pub const RUNNING_SUMS: &[RunningSum] = &[
    WORK,
    WORK_AXO,
    WORK_COUPLING,
    PHI,
    PHI_START,
    PREV_TX,
    PREV_TY,
    PAIR_RE,
    PAIR_IM,
    CONTACT_COUNT,
    MID_PHI,
    MID_PAIR_RE,
    MID_PAIR_IM,
    MAX_INEXT,
    KURAMOTO_SUM,
    FIRST_Y,
    WINDOW_Y,
    LAST_Y,
    LAST_WORK,
    LAST_WORK_AXO,
    LAST_WORK_COUPLING,
];

/// Slots of one instance's resident state (SoA: slot s of instance i is
/// `state[s * batch + i]`): q, v (legs then body), then the running sums; in the
/// compensated f32 kernel also the low words of q (q = q_hi + q_lo, legs then body)
/// and each leg's carried constraint V = qᵀGq − ℓ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateLayout {
    pub n_legs: usize,
    pub n_nodes: usize,
    pub compensated: bool,
}

impl StateLayout {
    /// The layout the kernel of `precision` uses (f32 is compensated).
    pub fn new(n_legs: usize, n_nodes: usize, precision: super::Precision) -> StateLayout {
        StateLayout {
            n_legs,
            n_nodes,
            compensated: precision == super::Precision::F32,
        }
    }
    pub fn leg_dofs(&self) -> usize {
        4 * self.n_nodes
    }
    pub fn nq(&self) -> usize {
        self.n_legs * self.leg_dofs() + 3
    }
    pub fn q(&self) -> usize {
        0
    }
    pub fn v(&self) -> usize {
        self.nq()
    }
    /// First slot of the running sums.
    pub fn sums(&self) -> usize {
        2 * self.nq()
    }
    fn width(&self, per: Per) -> usize {
        match per {
            Per::Leg => self.n_legs,
            Per::Robot => 1,
        }
    }
    /// First slot of running sum `sum` (leg l of a per-leg sum is at `+ l`).
    pub fn sum(&self, sum: RunningSum) -> usize {
        let mut at = self.sums();
        for s in RUNNING_SUMS {
            if s.name == sum.name {
                return at;
            }
            at += self.width(s.per);
        }
        panic!("running sum {:?} is not listed in RUNNING_SUMS", sum.name)
    }
    fn sums_end(&self) -> usize {
        self.sums()
            + RUNNING_SUMS
                .iter()
                .map(|s| self.width(s.per))
                .sum::<usize>()
    }
    /// First slot of q's low words (compensated layout only).
    pub fn q_lo(&self) -> Option<usize> {
        self.compensated.then(|| self.sums_end())
    }
    /// First slot of the legs' carried V (compensated layout only).
    pub fn v_res(&self) -> Option<usize> {
        self.compensated.then(|| self.sums_end() + self.nq())
    }
    pub fn slots(&self) -> usize {
        self.sums_end()
            + if self.compensated {
                self.nq() + self.n_legs
            } else {
                0
            }
    }
}

/// WGSL: declare and load the running sums this invocation keeps ([`kept`]; leg `leg`,
/// robot `ri`).
pub fn wgsl_load(lay: &StateLayout, law: bool) -> String {
    let mut s = String::new();
    for r in kept(law) {
        let at = lay.sum(*r);
        let idx = match r.per {
            Per::Leg => format!("{at}u + leg"),
            Per::Robot => format!("{at}u"),
        };
        s.push_str(&format!(
            "    var t_{}: real = state[slot({idx}, ri)];\n",
            r.name
        ));
    }
    s
}

/// The running sums a kernel keeps: those of the coupling's law only in kernels with
/// it (elsewhere their slots keep the zero they start with, and the kernel's private
/// memory stays what it is without the law).
fn kept(law: bool) -> impl Iterator<Item = &'static RunningSum> {
    RUNNING_SUMS
        .iter()
        .filter(move |r| law || LAW_SUMS.iter().all(|l| l.name != r.name))
}

/// WGSL: store the running sums this invocation keeps (per-robot ones by leg 0 only).
pub fn wgsl_store(lay: &StateLayout, law: bool) -> String {
    let mut s = String::new();
    for r in kept(law) {
        let at = lay.sum(*r);
        let line = match r.per {
            Per::Leg => format!("state[slot({at}u + leg, ri)] = t_{};", r.name),
            Per::Robot => format!("if leg == 0u {{ state[slot({at}u, ri)] = t_{}; }}", r.name),
        };
        s.push_str(&format!("        {line}\n"));
    }
    s
}
