//! One DKD-dc step of a block of W robots (the scheme of `dkd.rs`, written once for
//! every lane width; W = 1 is the solo path). Branch-free where lanes may disagree:
//! contact and the servo enter through 0/1 masks, and the Woodbury update always has
//! three columns (an inactive one is scaled by zero and drops out exactly).
//!
//! Per leg the kick solves (P + UUᵀ) v⁺ = r with P = (ρ + s·hζ)M + θh²K_M·K constant
//! (s the drag's share at the new velocity, `record::KickForm`),
//! U = [√(λ(1+2hημ))·J, √(hK_p)·∇ψ, √(hν)·e_tip]: z = P⁻¹r and P⁻¹J by P's band LDLᵀ
//! (`hermite::BandLdlt`; the inertia part of r needs no product:
//! P⁻¹(ρ − (1 − s)hζ)Mv = a·v, a = (ρ − (1 − s)hζ)/(ρ + s·hζ), with the bending at
//! q − (1 − a)θhv), the servo and friction columns of P⁻¹ read directly, a 3×3 LDLᵀ
//! for y = (I + UᵀP⁻¹U)⁻¹Uᵀz, then v⁺ = z − P⁻¹U·y; last the touchdown correction of
//! v⁺ and of the leg's midpoint (docs/integrators.md, "Touchdown").
//!
//! The step is bound by the vector units' issue rate, so what counts is instructions:
//! the node loops of the solves are written out per node (`each_node!`) where the
//! node count is known, and the 3×3 factorisation takes one division.

use super::model::{
    band, band_present, Banded, BlockModel, CoupleBand, Entry, LegMatrices, NodeForm,
};
use super::simd::{dot, Lanes, L};
use crate::params::MAX_NODES;

const LEG_MAX: usize = 4 * MAX_NODES;

/// `each_node!(NN, n, k => { … })` runs the block for every node k = 0..n (`rev k`:
/// from the last), like [`each_node`] but with the block written out once per node
/// where NN > 0: a closure called from twelve places is not always inlined, and one
/// that is not loses the kernel's target features.
macro_rules! each_node {
    ($nn:ident, $n:expr, $k:ident => $body:block) => {
        if $nn == 0 {
            for $k in 0..$n $body
        } else {
            each_node!(@each $nn, $k, $body, 0 1 2 3 4 5 6 7 8 9 10 11);
        }
    };
    ($nn:ident, $n:expr, rev $k:ident => $body:block) => {
        if $nn == 0 {
            for $k in (0..$n).rev() $body
        } else {
            each_node!(@each $nn, $k, $body, 11 10 9 8 7 6 5 4 3 2 1 0);
        }
    };
    (@each $nn:ident, $k:ident, $body:block, $($i:literal)*) => {
        $( if $i < $nn { let $k: usize = $i; $body } )*
    };
}

/// Nodes per leg: the compile-time `NN` where the kernel was specialised for it
/// (loops of known length unroll and lose their bounds checks), else the model's.
#[inline(always)]
fn nodes<const W: usize, const NN: usize>(m: &BlockModel<W>) -> usize {
    if NN > 0 {
        NN
    } else {
        m.n_nodes
    }
}

/// Positions, velocities, steps taken and accumulated actuation work of every lane, in
/// the robot's layout (`model::robot`): leg i's 4n unknowns, then (X_b, Y_b, θ).
#[derive(Debug, Clone)]
pub struct BlockState<const W: usize> {
    pub q: Lanes<W>,
    pub v: Lanes<W>,
    /// Steps taken (a whole number): the time is steps·h, exactly as the GPU's.
    pub steps: L<W>,
    /// The servos' work, the internal couples' work and the energy the coupling's
    /// dampers dissipated.
    pub work: L<W>,
    pub work_axo: L<W>,
    pub work_coupling: L<W>,
}

impl<const W: usize> BlockState<W> {
    /// Every lane at rest at t = 0 in the given positions (lane j: `q0(j)`).
    pub fn at_rest(nq: usize, q0: impl Fn(usize, usize) -> f64) -> Self {
        BlockState {
            q: Lanes::from_fn(nq, |k| L(std::array::from_fn(|j| q0(j, k)))),
            v: Lanes::from_fn(nq, |_| L::zero()),
            steps: L::zero(),
            work: L::zero(),
            work_axo: L::zero(),
            work_coupling: L::zero(),
        }
    }
}

/// Per-step work space, allocated once per block (nothing is zeroed per step).
/// Aligned to a cache line with the leg arrays first (each a whole number of lines
/// long at every width), so that no lane vector of them straddles two lines.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct Scratch<const W: usize> {
    gq: [L<W>; LEG_MAX],
    tmp: [L<W>; LEG_MAX],
    r: [L<W>; LEG_MAX],
    z: [L<W>; LEG_MAX],
    w: [L<W>; LEG_MAX],
    /// The internal couple's impulse h·Q_A on the leg being kicked.
    qa: [L<W>; LEG_MAX],
    /// (cos, sin) of ω_A t at this step's midpoint.
    axo_phase: [L<W>; 2],
    base_force: Vec<[L<W>; 2]>,
    /// With the coupling's law: per leg, G_i = Σ c·w·eᵀ over its springs to the body
    /// (3×2, by columns), so that those dampers pull the body with G_i·u_i at the base
    /// velocity u_i ([`body_kick`]).
    body_pull: Vec<[L<W>; 6]>,
}

impl<const W: usize> Scratch<W> {
    pub fn new(n_legs: usize) -> Self {
        let z = [L::zero(); LEG_MAX];
        Scratch {
            gq: z,
            tmp: z,
            r: z,
            z,
            w: z,
            qa: z,
            axo_phase: [L::zero(); 2],
            base_force: vec![[L::zero(); 2]; n_legs],
            body_pull: vec![[L::zero(); 6]; n_legs],
        }
    }
}

/// The kick's pass over a leg's band: Gq, and the impulse h_km·Kq + weight into r, for
/// both component blocks (the weight acts on X only), with the quadratic forms
/// [qᵀGq, vᵀGq] summed on the way. Node by node (`node_rows`), each q entry loaded once
/// for both matrices. A loop even where n is a constant: written out, the compiler
/// loads every node's coefficients first and spills them (measured in
/// docs/benchmarks.md).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn banded_pass<const W: usize, const F: bool, const NN: usize, E: Entry<W>>(
    g: &Banded<E>,
    k: &Banded<E>,
    n: usize,
    q: &[L<W>],
    v: &[L<W>],
    gq: &mut [L<W>],
    (r, h_km, weight): (&mut [L<W>], L<W>, &[L<W>]),
) -> [L<W>; 2] {
    let mm = 2 * n;
    let (q, v, weight) = (&q[..2 * mm], &v[..2 * mm], &weight[..mm]);
    let (gq, r) = (&mut gq[..2 * mm], &mut r[..2 * mm]);
    // Named sums (qᵀGq and vᵀGq of the value and the slope rows): an array indexed in
    // the loop would stay in memory.
    let (mut qg_v, mut vg_v, mut qg_s, mut vg_s) = (L::zero(), L::zero(), L::zero(), L::zero());
    each_node!(NN, n, node => {
        let sg = node_rows::<W, F, NN, E>(g, n, q, node);
        let sk = node_rows::<W, F, NN, E>(k, n, q, node);
        macro_rules! row {
            ($r:literal, $i:expr, $qg:ident, $vg:ident) => {
                let i = $i;
                let [gx, gy] = sg[$r];
                gq[i] = gx;
                gq[mm + i] = gy;
                r[i] = h_km.mul_add::<F>(sk[$r][0], weight[i]);
                r[mm + i] = h_km * sk[$r][1];
                $qg = q[i].mul_add::<F>(gx, q[mm + i].mul_add::<F>(gy, $qg));
                $vg = v[i].mul_add::<F>(gx, v[mm + i].mul_add::<F>(gy, $vg));
            };
        }
        row!(0, node, qg_v, vg_v);
        row!(1, n + node, qg_s, vg_s);
        // Written out, the compiler would load every node's operands first and spill
        // them; a compiler fence keeps each node's loads after the previous node's work.
        if NN > 0 {
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        }
    });
    [qg_v + qg_s, vg_v + vg_s]
}

/// xᵀAx over both component blocks of a leg, from A's [`NodeForm`]: nine products
/// per node and component (twelve and two by the band's rows), in four sums.
#[inline(always)]
fn node_form_quad<const W: usize, const F: bool, const NN: usize, E: Entry<W>>(
    a: &NodeForm<E>,
    n: usize,
    x: &[L<W>],
) -> L<W> {
    let mm = 2 * n;
    let (x, coef) = (&x[..2 * mm], &a.coef[..n]);
    // Named sums (value and slope rows, X and Y), not an array indexed in a loop: such
    // an array stays in memory, and every node's sums would wait on a store and a load.
    let (mut vx, mut sx, mut vy, mut sy) = (L::zero(), L::zero(), L::zero(), L::zero());
    each_node!(NN, n, k => {
        // Entry j of node k (a macro: `array::map` or a closure is not always inlined,
        // and a call loses the kernel's target features).
        macro_rules! c {
            ($j:literal) => {
                coef[k][$j].lanes()
            };
        }
        // Node k's two products of component block `o` into the sums (v, s).
        macro_rules! component {
            ($o:expr, $v:ident, $s:ident) => {
                let o = $o;
                let (xv, xs) = (x[o + k], x[o + n + k]);
                let mut row_v = c!(2).mul_add::<F>(xs, c!(0) * xv);
                let mut row_s = c!(1) * xs;
                if k + 1 < n {
                    let (nv, ns) = (x[o + k + 1], x[o + n + k + 1]);
                    row_v = c!(4).mul_add::<F>(ns, c!(3).mul_add::<F>(nv, row_v));
                    row_s = c!(6).mul_add::<F>(ns, c!(5).mul_add::<F>(nv, row_s));
                }
                $v = xv.mul_add::<F>(row_v, $v);
                $s = xs.mul_add::<F>(row_s, $s);
            };
        }
        component!(0, vx, sx);
        component!(mm, vy, sy);
    });
    (vx + sx) + (vy + sy)
}

/// Rows `node` and n + `node` of A (their six columns are the same) against both
/// component blocks of x: [[row node: X, Y], [row n + node: X, Y]].
#[inline(always)]
fn node_rows<const W: usize, const F: bool, const NN: usize, E: Entry<W>>(
    a: &Banded<E>,
    n: usize,
    x: &[L<W>],
    node: usize,
) -> [[L<W>; 2]; 2] {
    let mm = 2 * n;
    let c = band(n, node);
    let ra = [&a.coef[node], &a.coef[n + node]];
    // Where the node is a constant, the columns an end node lacks are skipped.
    let present = band_present(n, node);
    let skip = |t: usize| NN > 0 && !present[t];
    let first = if skip(0) { 1 } else { 0 };
    // Four named sums, not an array indexed in the loop: the array stayed in memory,
    // each sum rebuilt from pieces on every product.
    let (mut vx, mut vy, mut sx, mut sy) = (L::zero(), L::zero(), L::zero(), L::zero());
    for t in 0..6 {
        if skip(t) {
            continue;
        }
        let (xx, xy) = (x[c[t]], x[mm + c[t]]);
        let (ev, es) = (ra[0][t].lanes(), ra[1][t].lanes());
        let f = t == first;
        vx = product_sum::<W, F>(f, ev, xx, vx);
        vy = product_sum::<W, F>(f, ev, xy, vy);
        sx = product_sum::<W, F>(f, es, xx, sx);
        sy = product_sum::<W, F>(f, es, xy, sy);
    }
    [[vx, vy], [sx, sy]]
}

/// a·x + sum, or a·x alone for the first term of a sum (a multiply where the sum would
/// start from zero: the same value up to the sign of a zero, one instruction less).
#[inline(always)]
fn product_sum<const W: usize, const F: bool>(first: bool, a: L<W>, x: L<W>, sum: L<W>) -> L<W> {
    if first {
        a * x
    } else {
        a.mul_add::<F>(x, sum)
    }
}

/// y = A x for both component blocks of a leg (x, y: 4n entries; 2n rows per block, six
/// fused multiply-adds each), rows k and n + k together as in [`banded_pass`].
#[inline(always)]
fn banded_mul<const W: usize, const F: bool, const NN: usize, E: Entry<W>>(
    a: &Banded<E>,
    n: usize,
    x: &[L<W>],
    y: &mut [L<W>],
) {
    let mm = 2 * n;
    let (x, y) = (&x[..2 * mm], &mut y[..2 * mm]);
    each_node!(NN, n, node => {
        let s = node_rows::<W, F, NN, E>(a, n, x, node);
        for (r, i) in [node, n + node].into_iter().enumerate() {
            y[i] = s[r][0];
            y[mm + i] = s[r][1];
        }
    });
}

/// Force on the end `p` of a spring (stiffness k, rest length l0) whose other end is
/// at `o`: k(l0 − γ)/γ·(p − o), γ = |p − o| (`model::springs::spring_force`).
#[inline(always)]
fn spring_force<const W: usize>(k: L<W>, l0: L<W>, p: [L<W>; 2], o: [L<W>; 2]) -> [L<W>; 2] {
    let d = [p[0] - o[0], p[1] - o[1]];
    let gamma = (d[0] * d[0] + d[1] * d[1]).sqrt();
    let f = k * (l0 - gamma) / gamma;
    [f * d[0], f * d[1]]
}

/// World position of a body-frame offset (`BodyGeometry::world`).
#[inline(always)]
fn world<const W: usize>(body: [L<W>; 3], sc: [L<W>; 2], off: [L<W>; 2]) -> [L<W>; 2] {
    let [s, c] = sc;
    [
        body[0] + c * off[0] - s * off[1],
        body[1] + s * off[0] + c * off[1],
    ]
}

/// The terrain's height h and slope σ = h′ under a contact point of every lane.
#[derive(Clone, Copy)]
struct Surface<const W: usize> {
    h: L<W>,
    sigma: L<W>,
}

/// h(y) and h′(y) of every lane (docs/model.md (T1)–(T2); `model::terrain::Profile::
/// height`). The m-th harmonic comes from the first by angle addition (one sincos per
/// point); on flat ground h = σ = 0 exactly.
#[inline(always)]
fn ground_at<const W: usize, const F: bool>(m: &BlockModel<W>, y: L<W>) -> Surface<W> {
    if !m.ground.terrain {
        return Surface {
            h: L::zero(),
            sigma: L::zero(),
        };
    }
    let d = &m.d;
    let u = y - d.terrain_start;
    let w = (u * d.terrain_inv_blend).map(|x| x.clamp(0.0, 1.0));
    let blend = w * w * (L::splat(3.0) - w * 2.0);
    let blend_slope = w * (L::splat(1.0) - w) * d.terrain_inv_blend * 6.0;
    let mut hp = d.terrain_slope * u;
    let mut dh = L::zero();
    if !m.ground.harmonics.is_empty() {
        let theta = d.terrain_k * u;
        let (s1, c1) = super::trig::sin_cos::<W, F>(theta);
        let (mut sm, mut cm) = (s1, c1);
        for (k, &[a, b]) in m.ground.harmonics.iter().enumerate() {
            hp = a.mul_add::<F>(sm, b.mul_add::<F>(cm, hp));
            dh = (a * cm - b * sm).mul_add::<F>(L::splat((k + 1) as f64), dh);
            (sm, cm) = (
                sm.mul_add::<F>(c1, cm * s1),
                cm.mul_add::<F>(c1, -(sm * s1)),
            );
        }
    }
    let dhp = d.terrain_k.mul_add::<F>(dh, d.terrain_slope);
    Surface {
        h: blend * hp,
        sigma: blend_slope.mul_add::<F>(hp, blend * dhp),
    }
}

/// The springs' load on the body at the midpoint (F_x, F_y, torque about the centre
/// of mass) and (sin θ, cos θ) of its angle, for [`body_kick`]; with the coupling's
/// law, the dampers' matrix on the body's velocity and the power they dissipate.
struct BodyLoad<const W: usize> {
    load: [L<W>; 3],
    sin_cos: [L<W>; 2],
    /// A = Σ c·w·wᵀ over the springs at the body (w = (e_x, e_y, r × e)): the
    /// entries (xx, yy, θθ, xy, xθ, yθ); zero without the law.
    dampers: [L<W>; 6],
    dissipation: L<W>,
}

/// Stage `spring_loads` at the midpoint: the force of every spring on each leg base
/// (into `base_force`) and the springs' load on the body. GPU: `kernel::spring_loads`
/// (`leg_springs` in shaders/springs.wgsl, one leg's share per invocation).
#[inline(always)]
fn spring_loads<const W: usize, const F: bool, const NN: usize>(
    m: &BlockModel<W>,
    q: &[L<W>],
    base_force: &mut [[L<W>; 2]],
) -> BodyLoad<W> {
    let nn = nodes::<W, NN>(m);
    let (n, l) = (m.n_legs, 4 * nn);
    let o = n * l;
    let body = [q[o], q[o + 1], q[o + 2]];
    // In lanes (`trig`, within 2⁻⁵¹ of libm's sincos, which `model::body` calls).
    let (sin, cos) = super::trig::sin_cos::<W, F>(body[2]);
    let sc = [sin, cos];
    // Leg i's base and a body point in the world (macros, not closures: a closure is
    // not always inlined, and one that is not loses the kernel's target features).
    macro_rules! base {
        ($i:expr) => {{
            let i = $i;
            [q[i * l], q[i * l + 2 * nn]]
        }};
    }
    let mut load = [L::zero(); 3];
    // A spring from leg base `leg` to body point `bp`: force on the base, reaction
    // and its torque about the centre of mass on the body.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn to_body<const W: usize>(
        base: [L<W>; 2],
        b: [L<W>; 2],
        body: [L<W>; 3],
        k: L<W>,
        l0: L<W>,
        bf: &mut [L<W>; 2],
        load: &mut [L<W>; 3],
    ) {
        let f = spring_force(k, l0, base, b);
        bf[0] += f[0];
        bf[1] += f[1];
        load[0] -= f[0];
        load[1] -= f[1];
        load[2] -= (b[0] - body[0]) * f[1] - (b[1] - body[1]) * f[0];
    }
    macro_rules! bp {
        ($j:expr) => {
            world(body, sc, *m.b_points[$j])
        };
    }
    base_force.iter_mut().for_each(|f| *f = [L::zero(); 2]);
    // Order of `model::springs::springs`: α_1, α_2..α_N, α_{N+1}, β_1..β_N.
    to_body(
        base!(0),
        bp!(0),
        body,
        m.p.alpha,
        m.p.l_alpha,
        &mut base_force[0],
        &mut load,
    );
    for i in 1..n {
        let f = spring_force(m.p.alpha, m.p.l_alpha, base!(i), base!(i - 1));
        base_force[i][0] += f[0];
        base_force[i][1] += f[1];
        base_force[i - 1][0] -= f[0];
        base_force[i - 1][1] -= f[1];
    }
    let last = &mut base_force[n - 1];
    to_body(
        base!(n - 1),
        bp!(n + 1),
        body,
        m.p.alpha,
        m.p.l_alpha,
        last,
        &mut load,
    );
    for (i, bf) in base_force.iter_mut().enumerate() {
        to_body(
            base!(i),
            bp!(i + 1),
            body,
            m.p.beta,
            m.p.l_beta,
            bf,
            &mut load,
        );
    }
    BodyLoad {
        load,
        sin_cos: sc,
        dampers: [L::zero(); 6],
        dissipation: L::zero(),
    }
}

/// One spring under the coupling's law, seen from its end `p`.
struct LawForce<const W: usize> {
    /// [k(l0 − γ) + k₃(l0 − γ)³ − c·γ̇]·e on `p`.
    force: [L<W>; 2],
    /// Its elastic part [k(l0 − γ) + k₃(l0 − γ)³]·e.
    elastic: [L<W>; 2],
    /// e = (p − o)/γ.
    e: [L<W>; 2],
    /// c·γ̇², the power its damper dissipates.
    power: L<W>,
}

/// Spring `[k, k₃, c, l0]` from `p` (velocity `vp`) to `o` (velocity `vo`) under the
/// coupling's law (`model::springs::law_force`).
#[inline(always)]
fn law_force<const W: usize>(
    [k, k3, c, l0]: [L<W>; 4],
    [p, o]: [[L<W>; 2]; 2],
    [vp, vo]: [[L<W>; 2]; 2],
) -> LawForce<W> {
    let d = [p[0] - o[0], p[1] - o[1]];
    let gamma = (d[0] * d[0] + d[1] * d[1]).sqrt();
    let s = l0 - gamma;
    let rate = (d[0] * (vp[0] - vo[0]) + d[1] * (vp[1] - vo[1])) / gamma;
    let elastic = (k * s + k3 * s * s * s) / gamma;
    let f = elastic - c * rate / gamma;
    LawForce {
        force: [f * d[0], f * d[1]],
        elastic: [elastic * d[0], elastic * d[1]],
        e: [d[0] / gamma, d[1] / gamma],
        power: c * rate * rate,
    }
}

/// Stage `spring_loads` where a lane's coupling has its law (docs/model.md, "The
/// coupling's law"): the springs' forces with the cubic term, and the dampers split so
/// that they are implicit without coupling the legs' kicks (docs/integrators.md): each
/// base takes C_b·I implicitly in P and the dampers at the old velocities explicitly (its
/// explicit share gains (1 − a)·C_b·v_base); the body, kicked after the legs, takes the
/// dampers of its springs implicitly in its own velocity against the bases' new ones
/// (the matrix A here, each base's pull G_i into `body_pull`), and only their elastic
/// part explicitly.
#[inline(always)]
fn spring_loads_law<const W: usize, const F: bool, const NN: usize>(
    m: &BlockModel<W>,
    (q, v): (&[L<W>], &[L<W>]),
    base_force: &mut [[L<W>; 2]],
    body_pull: &mut [[L<W>; 6]],
) -> BodyLoad<W> {
    let nn = nodes::<W, NN>(m);
    let (n, l) = (m.n_legs, 4 * nn);
    let o = n * l;
    let body = [q[o], q[o + 1], q[o + 2]];
    let vb = [v[o], v[o + 1], v[o + 2]];
    let (sin, cos) = super::trig::sin_cos::<W, F>(body[2]);
    let sc = [sin, cos];
    // A leg's base, its velocity, and a spring's ends on the body (macros, as in
    // `spring_loads`).
    macro_rules! base {
        ($i:expr) => {{
            let i = $i;
            [q[i * l], q[i * l + 2 * nn]]
        }};
    }
    macro_rules! base_v {
        ($i:expr) => {{
            let i = $i;
            [v[i * l], v[i * l + 2 * nn]]
        }};
    }
    let alpha = [m.p.alpha, m.p.alpha_cubic, m.p.alpha_damping, m.p.l_alpha];
    let beta = [m.p.beta, m.p.beta_cubic, m.p.beta_damping, m.p.l_beta];
    let mut acc = BodyLoad {
        load: [L::zero(); 3],
        sin_cos: sc,
        dampers: [L::zero(); 6],
        dissipation: L::zero(),
    };
    base_force.iter_mut().for_each(|f| *f = [L::zero(); 2]);
    body_pull.iter_mut().for_each(|g| *g = [L::zero(); 6]);
    macro_rules! ends {
        ($i:expr, $j:expr) => {{
            let (i, j) = ($i, $j);
            BodyEnd {
                base: base!(i),
                base_v: base_v!(i),
                point: world(body, sc, *m.b_points[j]),
                body,
                body_v: vb,
            }
        }};
    }
    // Order of `model::springs::springs`: α_1, α_2..α_N, α_{N+1}, β_1..β_N.
    to_body_law::<W, F>(
        alpha,
        ends!(0, 0),
        &mut base_force[0],
        &mut body_pull[0],
        &mut acc,
    );
    let mut between_legs = L::zero();
    for i in 1..n {
        let s = law_force(
            alpha,
            [base!(i), base!(i - 1)],
            [base_v!(i), base_v!(i - 1)],
        );
        between_legs += s.power;
        base_force[i][0] += s.force[0];
        base_force[i][1] += s.force[1];
        base_force[i - 1][0] -= s.force[0];
        base_force[i - 1][1] -= s.force[1];
    }
    let last = n - 1;
    to_body_law::<W, F>(
        alpha,
        ends!(last, n + 1),
        &mut base_force[last],
        &mut body_pull[last],
        &mut acc,
    );
    for i in 0..n {
        to_body_law::<W, F>(
            beta,
            ends!(i, i + 1),
            &mut base_force[i],
            &mut body_pull[i],
            &mut acc,
        );
    }
    acc.dissipation += between_legs;
    for (i, bf) in base_force.iter_mut().enumerate() {
        let u = base_v!(i);
        bf[0] = m.d.base_damping_explicit.mul_add::<F>(u[0], bf[0]);
        bf[1] = m.d.base_damping_explicit.mul_add::<F>(u[1], bf[1]);
    }
    acc
}

/// The two ends of a spring from a leg base to a body point, with their velocities.
struct BodyEnd<const W: usize> {
    base: [L<W>; 2],
    base_v: [L<W>; 2],
    point: [L<W>; 2],
    body: [L<W>; 3],
    body_v: [L<W>; 3],
}

/// A spring under the law `law` from a leg base to a body point: its whole force on
/// the base (`bf`), its elastic reaction on the body and its damper's share of A, of
/// the base's pull G_i (`g`) and of the dissipated power (into `acc`).
#[inline(always)]
fn to_body_law<const W: usize, const F: bool>(
    law: [L<W>; 4],
    e: BodyEnd<W>,
    bf: &mut [L<W>; 2],
    g: &mut [L<W>; 6],
    acc: &mut BodyLoad<W>,
) {
    let (b, body, vb) = (e.point, e.body, e.body_v);
    let r = [b[0] - body[0], b[1] - body[1]];
    let vpoint = [vb[0] - vb[2] * r[1], vb[1] + vb[2] * r[0]];
    let s = law_force(law, [e.base, b], [e.base_v, vpoint]);
    acc.dissipation += s.power;
    bf[0] += s.force[0];
    bf[1] += s.force[1];
    acc.load[0] -= s.elastic[0];
    acc.load[1] -= s.elastic[1];
    acc.load[2] -= r[0] * s.elastic[1] - r[1] * s.elastic[0];
    // The damper on the body: c·w·(e·u − w·v_b), w = (e, r × e).
    let w = [s.e[0], s.e[1], r[0] * s.e[1] - r[1] * s.e[0]];
    let cw = [law[2] * w[0], law[2] * w[1], law[2] * w[2]];
    let a = &mut acc.dampers;
    a[0] = cw[0].mul_add::<F>(w[0], a[0]);
    a[1] = cw[1].mul_add::<F>(w[1], a[1]);
    a[2] = cw[2].mul_add::<F>(w[2], a[2]);
    a[3] = cw[0].mul_add::<F>(w[1], a[3]);
    a[4] = cw[0].mul_add::<F>(w[2], a[4]);
    a[5] = cw[1].mul_add::<F>(w[2], a[5]);
    for k in 0..3 {
        g[k] = cw[k].mul_add::<F>(s.e[0], g[k]);
        g[3 + k] = cw[k].mul_add::<F>(s.e[1], g[3 + k]);
    }
}

/// The internal couple of leg `leg` at the step's midpoint (docs/model.md (A5)), as
/// the kick's impulse qa = h·Q_A: added to the kick's right-hand side `r` and kept for
/// the power at the new velocity; returns qa·v (v: the old velocities).
/// (cw, sw) = (cos, sin) of ω_A t.
/// Q_X = B Y, Q_Y = −B X, B = c·B_c + s·B_s with (c, s) = f_A A_i (cos θ_i, sin θ_i).
/// B is antisymmetric with a zero diagonal, so its distinct band entries
/// (`CoupleBand`: 5 per node) hold it: rows k and n + k of node k take node k's own
/// entry, its block to node k + 1 and, mirrored and negated, node k − 1's block to
/// node k. Each node's entries are combined once, in registers, and serve all four
/// uses there: their own rows now, the mirrored rows of node k + 1 as a carry.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn couple_force<const W: usize, const F: bool, const NN: usize>(
    m: &BlockModel<W>,
    [b_cos, b_sin]: &[CoupleBand<W>; 2],
    leg: usize,
    [cw, sw]: [L<W>; 2],
    q: &[L<W>],
    v: &[L<W>],
    r: &mut [L<W>],
    qa: &mut [L<W>],
) -> L<W> {
    let n = nodes::<W, NN>(m);
    let lc = &m.legs[leg];
    let amp = m.d.h * lc.axo_amp;
    let c = amp * cw.mul_add::<F>(lc.axo_cos, -(sw * lc.axo_sin));
    let sn = amp * sw.mul_add::<F>(lc.axo_cos, cw * lc.axo_sin);
    let mm = 2 * n;
    let (x, y, v) = (&q[..mm], &q[mm..2 * mm], &v[..2 * mm]);
    let (r, qa) = (&mut r[..2 * mm], &mut qa[..2 * mm]);
    let (bc, bs) = (&b_cos.entries[..n], &b_sin.entries[..n]);
    // Without a travelling wave in any lane (B_c = 0) B = sn·B_s: the same bits as
    // c·0 + sn·B_s, so a lane's neighbours in a block do not change its result.
    let travelling = !b_cos.zero;
    // The mirrored contributions of node k − 1's block to rows k and n + k, of B·X and B·Y.
    let mut carry = [L::zero(); 4];
    // h·Q_A·v at the old velocities, summed as the impulse is made.
    let mut power = [L::zero(); 4];
    each_node::<NN>(
        n,
        #[inline(always)]
        |k| {
            let last = k + 1 == n;
            // A macro, not a closure: a closure compiled on its own lacks the kernel's
            // target features, and its multiply-adds become calls.
            macro_rules! entry {
                ($j:literal) => {
                    if travelling {
                        c.mul_add::<F>(bc[k][$j], sn * bs[k][$j])
                    } else {
                        sn * bs[k][$j]
                    }
                };
            }
            let own = entry!(0);
            let (mut bx0, mut bx1) = (own * x[n + k], -(own * x[k]));
            let (mut by0, mut by1) = (own * y[n + k], -(own * y[k]));
            let mut next_carry = [L::zero(); 4];
            if !last {
                let (e1, e2, e3, e4) = (entry!(1), entry!(2), entry!(3), entry!(4));
                bx0 = e2.mul_add::<F>(x[n + k + 1], e1.mul_add::<F>(x[k + 1], bx0));
                bx1 = e4.mul_add::<F>(x[n + k + 1], e3.mul_add::<F>(x[k + 1], bx1));
                by0 = e2.mul_add::<F>(y[n + k + 1], e1.mul_add::<F>(y[k + 1], by0));
                by1 = e4.mul_add::<F>(y[n + k + 1], e3.mul_add::<F>(y[k + 1], by1));
                next_carry = [
                    e3.mul_add::<F>(x[n + k], e1 * x[k]),
                    e4.mul_add::<F>(x[n + k], e2 * x[k]),
                    e3.mul_add::<F>(y[n + k], e1 * y[k]),
                    e4.mul_add::<F>(y[n + k], e2 * y[k]),
                ];
            }
            if k > 0 {
                bx0 -= carry[0];
                bx1 -= carry[1];
                by0 -= carry[2];
                by1 -= carry[3];
            }
            carry = next_carry;
            // Q_X = B·Y, Q_Y = −B·X.
            let (fx0, fy0, fx1, fy1) = (by0, -bx0, by1, -bx1);
            power[0] = fx0.mul_add::<F>(v[k], power[0]);
            power[1] = fy0.mul_add::<F>(v[mm + k], power[1]);
            power[2] = fx1.mul_add::<F>(v[n + k], power[2]);
            power[3] = fy1.mul_add::<F>(v[mm + n + k], power[3]);
            qa[k] = fx0;
            qa[mm + k] = fy0;
            qa[n + k] = fx1;
            qa[mm + n + k] = fy1;
            r[k] += fx0;
            r[mm + k] += fy0;
            r[n + k] += fx1;
            r[mm + n + k] += fy1;
        },
    );
    (power[0] + power[1]) + (power[2] + power[3])
}

/// Calls `f(k)` for every node k = 0..n in order; where the kernel is specialised for
/// its node count (NN > 0), unrolled by hand, so that k is a constant in each call and
/// every index and boundary test in `f` folds away (the compiler does not unroll the
/// longer node loops itself).
#[inline(always)]
fn each_node<const NN: usize>(n: usize, mut f: impl FnMut(usize)) {
    const { assert!(NN <= 12 && MAX_NODES <= 12, "each_node unrolls 12 nodes") };
    if NN == 0 {
        for k in 0..n {
            f(k);
        }
        return;
    }
    macro_rules! unrolled {
        ($($k:literal)*) => { $( if $k < NN { f($k); } )* };
    }
    unrolled!(0 1 2 3 4 5 6 7 8 9 10 11);
}

/// The tip's contact in the kick (docs/model.md (T3)–(T4)): the explicit impulse h·F on
/// (a_n, c_n), the friction's Woodbury column scale and its direction t.
struct TipContact<const W: usize> {
    impulse: [L<W>; 2],
    s_friction: L<W>,
    tangent: [L<W>; 2],
}

/// The normal penalty ε·c·d·n explicit; the tangential force F_T(v_t) linearised about
/// the kick's incoming v_t, its damping D = ν + μ_C F_N sech²(v_t/v_C)/v_C implicit
/// (the Woodbury column √(hD)·t), the rest, F_T(v_t) + D·v_t = μ_C F_N (sech²·v_t/v_C −
/// tanh), explicit. Out of contact (d < 0) every part is zero. On flat ground without
/// Coulomb friction this is the paper's (17) to the bit: c = 1, t = (0, 1), D = ν.
#[inline(always)]
fn tip_contact<const W: usize, const F: bool>(
    m: &BlockModel<W>,
    tip: [L<W>; 2],
    tip_v: [L<W>; 2],
) -> TipContact<W> {
    let g = ground_at::<W, F>(m, tip[1]);
    let out = m.p.x_t - tip[0] - g.h;
    let contact = L::zero().ge_mask(out);
    let hc = m.d.h * contact;
    if !(m.ground.terrain || m.ground.coulomb) {
        return TipContact {
            impulse: [hc * m.p.epsilon * out, L::zero()],
            s_friction: m.d.s_friction * contact,
            tangent: [L::zero(), L::splat(1.0)],
        };
    }
    let c2 = L::splat(1.0) / g.sigma.mul_add::<F>(g.sigma, L::splat(1.0));
    let c = c2.sqrt();
    let tangent = [-(g.sigma * c), c];
    // h·F_N·n = h·ε·c²·(X_t − x − h)·(1, σ).
    let fx = hc * m.p.epsilon * c2 * out;
    let mut impulse = [fx, fx * g.sigma];
    let mut hd = m.d.h * m.p.nu;
    if m.ground.coulomb {
        let f_n = contact * m.p.epsilon * c * -out;
        let vt = tangent[0].mul_add::<F>(tip_v[0], tangent[1] * tip_v[1]);
        let x = vt / m.p.v_c;
        let th = super::trig::tanh::<W, F>(x);
        let sech2 = L::splat(1.0) - th * th;
        let mu_fn = m.p.mu_c * f_n;
        let rest = hc * mu_fn * (sech2 * x - th);
        impulse[0] = rest.mul_add::<F>(tangent[0], impulse[0]);
        impulse[1] = rest.mul_add::<F>(tangent[1], impulse[1]);
        hd += m.d.h * mu_fn * sech2 / m.p.v_c;
    }
    TipContact {
        impulse,
        s_friction: hd.sqrt() * contact,
        tangent,
    }
}

/// What [`leg_forces`] leaves for the solve and the touchdown correction (the vectors
/// r' and Gq stay in the scratch).
struct LegForces<const W: usize> {
    /// vᵀGq (Jᵀv = 2vᵀGq) and vᵀGv at the incoming velocity.
    vgq: L<W>,
    vgv: L<W>,
    /// The multiple c of Gq that the right-hand side carries beside r' (λJ(Jᵀv) − h·pen·J).
    c_gq: L<W>,
    /// ∇ψ of the basal angle: (∂ψ/∂b₁, ∂ψ/∂d₁).
    grad_psi: [L<W>; 2],
    tip: TipContact<W>,
    /// h·Q_A·v at the incoming velocity (0 without a couple).
    couple_power_old: L<W>,
}

/// Stage `leg_forces` of one leg at the midpoint: the constraint terms (Gq, V, Jᵀv,
/// vᵀGv), the bending impulse −hK_M·K(q − θ'hv) and the weight into r, then the
/// penalty's multiple of J, the spring load on the base, the servo, the tip's contact and
/// the internal couple: r' of (P + UUᵀ)v⁺ = a·Pv + r' without the inertia term, which
/// enters the solve as a·v. GPU: `kernel::leg_forces`.
#[inline(always)]
fn leg_forces<const W: usize, const F: bool, const NN: usize, E: Entry<W>>(
    m: &BlockModel<W>,
    mx: &LegMatrices<E>,
    leg: usize,
    (q, v): (&[L<W>], &[L<W>]),
    base_force: [L<W>; 2],
    s: &mut Scratch<W>,
) -> LegForces<W> {
    let n = nodes::<W, NN>(m);
    let (mm, l) = (2 * n, 4 * n);
    let (ib, id, itip, ictip) = (n, 3 * n, n - 1, 3 * n - 1);
    let (gq, tmp, r) = (&mut s.gq[..l], &mut s.tmp[..l], &mut s.r[..l]);
    // Constraint terms: Gq (J = 2Gq), V = qᵀGq − ℓ, Jᵀv and vᵀGv, and the bending
    // impulse −hK_M·K(q − θ'hv) plus the weight's into r, in the same pass where θ' = 0
    // in every lane (the default); otherwise the pass's r is replaced (θ > 0 is a library
    // setting, not worth a second pass kind).
    let h_km = -(m.d.h * m.p.k_m);
    let weight = &m.weight_impulse[..mm];
    let [qgq, vgq] =
        banded_pass::<W, F, NN, E>(&mx.geometric, &mx.bending, n, q, v, gq, (r, h_km, weight));
    let vgv = node_form_quad::<W, F, NN, E>(&mx.geometric_form, n, v);
    if !m.explicit_bending {
        for k in 0..l {
            tmp[k] = (-m.d.theta_h).mul_add::<F>(v[k], q[k]);
        }
        banded_mul::<W, F, NN, E>(&mx.bending, n, tmp, r);
        for k in 0..mm {
            r[k] = h_km.mul_add::<F>(r[k], weight[k]);
            r[mm + k] = h_km * r[mm + k];
        }
    }
    let (residual, jv) = (qgq - m.p.leg_length, vgq * 2.0);
    // Penalty force factor with the drift-consistency term (h²vᵀGv added to V per drift).
    let pen = (m.p.lambda * 2.0 + m.d.lambda_2etamu * m.d.h) * vgv + m.d.lambda_eta2 * residual;
    // Right-hand side r' = λJ(Jᵀv) + h·F, F = −K_M·K(q − θ'hv) − pen·J + weight + the
    // point forces (springs, servo, contact). The inertia term (ρ − (1 − s)hζ)Mv of the
    // kick's right-hand side is aPv − aθh²K_M·Kv (`Derived::inertia_share`): its P⁻¹ is
    // a·v, and the rest is the θ' = (1 − a)θ of the bending. The multiple c·Gq of J enters as c·P⁻¹Gq = c·w
    // (a column of the same pass), so the pass over P⁻¹ need not wait for the quadratic
    // forms. Both a·v and c·w are added where z is read, not stored: the velocity
    // update takes c·w in with the constraint column's own multiple of w.
    let c_gq = (m.p.lambda * jv - m.d.h * pen) * 2.0;
    r[0] = m.d.h.mul_add::<F>(base_force[0], r[0]);
    r[2 * n] = m.d.h.mul_add::<F>(base_force[1], r[2 * n]);
    // ∇ψ at q + lead·v: the step's end where the velocity terms are centred (the
    // middle of the drift that v⁺ drives), else the midpoint (lead 0).
    let lead = m.d.servo_lead;
    let (b1, d1) = (
        lead.mul_add::<F>(v[ib], q[ib]),
        lead.mul_add::<F>(v[id], q[id]),
    );
    let inv_r2 = L::splat(1.0) / (b1 * b1 + d1 * d1);
    let (gb, gd) = (-d1 * inv_r2, b1 * inv_r2);
    let h_servo = m.d.h * m.legs[leg].k_p * m.legs[leg].omega;
    r[ib] -= h_servo * gb;
    r[id] -= h_servo * gd;
    let tip = tip_contact::<W, F>(m, [q[itip], q[ictip]], [v[itip], v[ictip]]);
    r[itip] += tip.impulse[0];
    if m.ground.terrain || m.ground.coulomb {
        r[ictip] += tip.impulse[1];
    }
    // The couple's power is taken at the step's mean velocity (v_old + v_new)/2: Q_A·Δq/h
    // over the step. (The new velocity alone carries the top bending mode's step-to-step
    // swing, which |·| would count as work.)
    let mut couple_power_old = L::zero();
    if let Some(couple) = &m.couple {
        couple_power_old =
            couple_force::<W, F, NN>(m, couple, leg, s.axo_phase, q, v, r, &mut s.qa);
    }
    LegForces {
        vgq,
        vgv,
        c_gq,
        grad_psi: [gb, gd],
        tip,
        couple_power_old,
    }
}

/// What [`kick_solve`] leaves for the touchdown correction: the 3×3 C's factors and
/// the Woodbury columns' scales (constraint, servo, friction) and the friction's direction.
struct KickSolve<const W: usize> {
    c: Ldlt3<W>,
    scales: [L<W>; 3],
    tangent: [L<W>; 2],
}

/// Stage `kick_solve` of one leg: v⁺ from (P + UUᵀ)v⁺ = a·Pv + r' by Woodbury, with
/// U = [√(λ(1+2hημ))·J, √(hK_p)·∇ψ, √(hν)·t] (an inactive column scaled to zero):
/// z = a·v + P⁻¹r' and P⁻¹J by P's band LDLᵀ ([`p_solve`]), C = I + UᵀP⁻¹U by a 3×3
/// LDLᵀ, v⁺ = z − P⁻¹U·C⁻¹Uᵀz. GPU: `kernel::kick_solve` (the same algebra; it multiplies
/// by a stored P⁻¹ where this solves with P's band factor, docs/gpu.md).
#[inline(always)]
fn kick_solve<const W: usize, const F: bool, const NN: usize, E: Entry<W>>(
    m: &BlockModel<W>,
    mx: &LegMatrices<E>,
    leg: usize,
    v: &mut [L<W>],
    f: &LegForces<W>,
    s: &mut Scratch<W>,
) -> KickSolve<W> {
    let n = nodes::<W, NN>(m);
    let (mm, l) = (2 * n, 4 * n);
    let (ib, id, itip, ictip) = (n, 3 * n, n - 1, 3 * n - 1);
    let [gb, gd] = f.grad_psi;
    let c_gq = f.c_gq;
    let (gq, r) = (&s.gq[..l], &s.r[..l]);
    // z₀ = P⁻¹r' and w = P⁻¹Gq = ½P⁻¹J, with P's band factor; the kick's
    // z = a·v + c·w + z₀. (J's factor 2 enters where w is used: scaling by 2 is exact,
    // so the bits are those of P⁻¹J.)
    let (z0, w) = (&mut s.z[..l], &mut s.w[..l]);
    p_solve::<W, F, NN, E>(mx, n, r, gq, z0, w);
    let share = m.d.inertia_share;
    // An entry of z, where the Woodbury right-hand side reads one (a macro: a closure
    // is not always inlined, and one that is not loses the kernel's target features).
    macro_rules! z {
        ($i:expr) => {{
            let i = $i;
            share.mul_add::<F>(v[i], c_gq.mul_add::<F>(w[i], z0[i]))
        }};
    }
    // Woodbury: C = I + UᵀP⁻¹U (3×3, SPD), right-hand side Uᵀz.
    // The friction column lies along the tip's tangent t = (tx, ty): P⁻¹ is block
    // diagonal with equal blocks, so P⁻¹u₃ is column n − 1 of P⁻¹ in each component.
    let (s1, s2, s3) = (m.d.s_constraint, m.legs[leg].s_servo, f.tip.s_friction);
    let [tx, ty] = f.tip.tangent;
    let pi = |i: usize| {
        let [a, b] = mx.p_cols[i];
        [a.lanes(), b.lanes()]
    };
    let ([p_bb, p_bt], p_tt) = (pi(n), pi(n - 1)[1]);
    let gqw = dot::<W, F>(gq, w);
    let jw = gqw * 4.0;
    // Jᵀz = 2Gq·(a·v + c·w + z₀), with Gq·v = vgq and Gq·w from Jᵀw.
    let jz = c_gq.mul_add::<F>(gqw, share.mul_add::<F>(f.vgq, dot::<W, F>(gq, z0))) * 2.0;
    let c11 = (s1 * s1).mul_add::<F>(jw, L::splat(1.0));
    let c12 = s1 * s2 * ((gb * w[ib] + gd * w[id]) * 2.0);
    // On flat ground t = (0, 1) in every lane (tx's terms are exact zeros, skipped).
    let sloped = m.ground.terrain;
    let (c13, c23, rhs3) = if sloped {
        (
            s1 * s3 * (tx.mul_add::<F>(w[itip], ty * w[ictip]) * 2.0),
            s2 * s3 * gb.mul_add::<F>(tx, gd * ty) * p_bt,
            s3 * tx.mul_add::<F>(z!(itip), ty * z!(ictip)),
        )
    } else {
        (
            s1 * s3 * (w[ictip] * 2.0),
            s2 * s3 * gd * p_bt,
            s3 * z!(ictip),
        )
    };
    let c22 = (s2 * s2 * (gb * gb + gd * gd)).mul_add::<F>(p_bb, L::splat(1.0));
    let c33 = (s3 * s3).mul_add::<F>(p_tt, L::splat(1.0));
    let rhs = [s1 * jz, s2 * (gb * z!(ib) + gd * z!(id)), rhs3];
    let c = Ldlt3::new::<F>([[c11, c12, c13], [c12, c22, c23], [c13, c23, c33]]);
    let y = c.solve(rhs);
    // v⁺ = z − P⁻¹U·y: the constraint column in full, servo and friction as columns
    // n (b₁, d₁) and n − 1 (tip c) of P⁻¹.
    let (a1, a2, a3) = (y[0] * s1, y[1] * s2, y[2] * s3);
    // w's multiple: c of z and −2a₁ of the constraint column, in one coefficient.
    let (c_w, n_a2b, n_a2d) = (c_gq - a1 * 2.0, -(a2 * gb), -(a2 * gd));
    let (n_a3x, n_a3y) = (-(a3 * tx), -(a3 * ty));
    // On flat ground tx = 0 in every lane: its terms are exact zeros, and the loop
    // without them is the one that runs (the branch is outside the loop).
    macro_rules! solve_update {
        ($sloped:literal) => {
            for i in 0..mm {
                let [pb, pt] = pi(i);
                let (zx, zy) = (
                    share.mul_add::<F>(v[i], z0[i]),
                    share.mul_add::<F>(v[mm + i], z0[mm + i]),
                );
                let vx = n_a2b.mul_add::<F>(pb, c_w.mul_add::<F>(w[i], zx));
                v[i] = if $sloped {
                    n_a3x.mul_add::<F>(pt, vx)
                } else {
                    vx
                };
                let vy = n_a2d.mul_add::<F>(pb, c_w.mul_add::<F>(w[mm + i], zy));
                v[mm + i] = n_a3y.mul_add::<F>(pt, vy);
            }
        };
    }
    if sloped {
        solve_update!(true)
    } else {
        solve_update!(false)
    }
    KickSolve {
        c,
        scales: [s1, s2, s3],
        tangent: [tx, ty],
    }
}

/// Stage `touchdown` of one leg (docs/integrators.md, "Touchdown"): the correction of
/// v⁺ and of the leg's midpoint, the leg's closing drift (see [`closing_drift`]), then
/// the leg's actuation power at the new velocity.
/// Both parts share the direction D = P⁻¹U·C⁻¹e₁ = s₁·S⁻¹J (the kick's own response to
/// its penalty):
/// - the leg's midpoint moves by ½h²·s_new along S⁻¹J/(JᵀS⁻¹J), so that V at the
///   step end is the mean of the neighbouring midpoints' V (without it the end of
///   the drift lies (h²/4)·vᵀGv inside the constraint, and vᵀGv is large while a
///   struck leg rattles). JᵀS⁻¹J = (1 − (C⁻¹e₁)₁)/s₁² costs nothing.
/// - the kick's vᵀGv is the one that makes the midpoints follow the penalty's
///   dynamics with the shifted drift: (2 + k)σ = ½·s_old + (3/2)(1 + k)·s_new,
///   k = 2hημ. The kick is linear in the penalty, which changes by
///   λ(2 + k)(σ − s_old) = s₁²·(3/2·s_new − b·s_old), b = (3/2 + k)/(1 + k); the
///   re-solve is Δv = −h·s₁·(3/2·s_new − b·s_old)·D.
///
/// Returns the servo's |M0 ψ̇| and the internal couple's work over the step,
/// h·|Q_A·v| at the step's mean velocity (0 without one). GPU: `kernel::touchdown`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn touchdown<const W: usize, const F: bool, const NN: usize, E: Entry<W>>(
    m: &BlockModel<W>,
    mx: &LegMatrices<E>,
    leg: usize,
    (q, v): (&mut [L<W>], &mut [L<W>]),
    f: &LegForces<W>,
    k: &KickSolve<W>,
    s: &Scratch<W>,
    end: StepEnd,
) -> [L<W>; 2] {
    let (half, next) = (m.d.h * 0.5, end == StepEnd::NextMidpoint);
    let n = nodes::<W, NN>(m);
    let (mm, l) = (2 * n, 4 * n);
    let (ib, id) = (n, 3 * n);
    let [gb, gd] = f.grad_psi;
    let [s1, s2, s3] = k.scales;
    let [tx, ty] = k.tangent;
    let (w, qa) = (&s.w[..l], &s.qa[..l]);
    let pi = |i: usize| {
        let [a, b] = mx.p_cols[i];
        [a.lanes(), b.lanes()]
    };
    // The shift's factor ½h²·s₁/(1 − (C⁻¹e₁)₁) comes before vᵀGv: its division overlaps
    // the update and the quadratic form instead of following them.
    let e = k.c.solve([L::splat(1.0), L::zero(), L::zero()]);
    let shift = m.d.half_h2 * s1 / (L::splat(1.0) - e[0]);
    let s_new = node_form_quad::<W, F, NN, E>(&mx.geometric_form, n, v);
    let dv = -(m.d.h * s1 * (s_new * 1.5 - m.d.touchdown_old * f.vgv));
    let dq = s_new * shift;
    let (d1, d2, d3) = (e[0] * s1 * 2.0, e[1] * s2, e[2] * s3);
    let (d2b, d2d, d3x, d3y) = (d2 * gb, d2 * gd, d3 * tx, d3 * ty);
    // With a couple, its power at the new velocity, while the leg is at hand.
    let mut power = [L::zero(); 4];
    macro_rules! touchdown_update {
        ($sloped:literal, $couple:literal) => {
            for i in 0..mm {
                let [pb, pt] = pi(i);
                let dx = if $sloped {
                    d1.mul_add::<F>(w[i], d2b.mul_add::<F>(pb, d3x * pt))
                } else {
                    d1.mul_add::<F>(w[i], d2b * pb)
                };
                let dy = d1.mul_add::<F>(w[mm + i], d2d.mul_add::<F>(pb, d3y * pt));
                let (vx, vy) = (dv.mul_add::<F>(dx, v[i]), dv.mul_add::<F>(dy, v[mm + i]));
                v[i] = vx;
                v[mm + i] = vy;
                // The leg's closing drift while it is at hand (the same roundings as
                // the shift followed by a pass of `closing_drift`; written out here: a
                // helper for it measured 30 % slower).
                let mut qx = half.mul_add::<F>(vx, dq.mul_add::<F>(dx, q[i]));
                let mut qy = half.mul_add::<F>(vy, dq.mul_add::<F>(dy, q[mm + i]));
                if next {
                    qx = half.mul_add::<F>(vx, qx);
                    qy = half.mul_add::<F>(vy, qy);
                }
                q[i] = qx;
                q[mm + i] = qy;
                if $couple {
                    let o = 2 * (i % 2);
                    power[o] = qa[i].mul_add::<F>(vx, power[o]);
                    power[o + 1] = qa[mm + i].mul_add::<F>(vy, power[o + 1]);
                }
            }
        };
    }
    match (m.ground.terrain, m.couple.is_some()) {
        (true, true) => touchdown_update!(true, true),
        (true, false) => touchdown_update!(true, false),
        (false, true) => touchdown_update!(false, true),
        (false, false) => touchdown_update!(false, false),
    }
    let k_p = m.legs[leg].k_p;
    let psi_dot = gb * v[ib] + gd * v[id];
    let servo = (k_p * (-m.legs[leg].omega - psi_dot) * psi_dot).abs();
    let couple = match m.couple {
        Some(_) => {
            ((f.couple_power_old + (power[0] + power[1]) + (power[2] + power[3])) * 0.5).abs()
        }
        None => L::zero(),
    };
    [servo, couple]
}

/// The kick's solves with P's band LDLᵀ: z₀ = P⁻¹r' and w = P⁻¹Gq.
/// The four right-hand sides (r' and Gq, X and Y) go side by side through the
/// interleaved order, where row t of L reaches back at most three rows: those rows'
/// solutions are held in registers, and the multiply-add that needs row t − 1 comes last
/// (the chain from row to row is one multiply-add long).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
#[allow(unused_assignments)] // the last node's rows are carried to no next node
fn p_solve<const W: usize, const F: bool, const NN: usize, E: Entry<W>>(
    mx: &LegMatrices<E>,
    n: usize,
    r: &[L<W>],
    gq: &[L<W>],
    z: &mut [L<W>],
    w: &mut [L<W>],
) {
    let mm = 2 * n;
    let (r, gq) = (&r[..2 * mm], &gq[..2 * mm]);
    let (z, w) = (&mut z[..2 * mm], &mut w[..2 * mm]);
    let (lower, inv_d) = (&mx.p_lower[..mm], &mx.p_inv_d[..mm]);
    // −L(t, t − k).
    macro_rules! l {
        ($t:expr, $k:expr) => {
            lower[$t][3 - $k].lanes()
        };
    }
    // Forward, L·y = b, node by node: its value row t = 2k reaches the previous node's
    // value and slope, its slope row also its own value (`ldlt_present`), the nearest
    // row last. (pv, ps): the previous node's rows.
    let (mut pv, mut ps) = ([L::zero(); 4], [L::zero(); 4]);
    each_node!(NN, n, k => {
        let (tv, ts, iv, is) = (2 * k, 2 * k + 1, k, n + k);
        let mut yv = [r[iv], r[mm + iv], gq[iv], gq[mm + iv]];
        let mut ys = [r[is], r[mm + is], gq[is], gq[mm + is]];
        if k > 0 {
            fma4::<W, F>(l!(tv, 2), pv, &mut yv);
            fma4::<W, F>(l!(tv, 1), ps, &mut yv);
            fma4::<W, F>(l!(ts, 3), pv, &mut ys);
            fma4::<W, F>(l!(ts, 2), ps, &mut ys);
        }
        fma4::<W, F>(l!(ts, 1), yv, &mut ys);
        (z[iv], z[mm + iv], w[iv], w[mm + iv]) = (yv[0], yv[1], yv[2], yv[3]);
        (z[is], z[mm + is], w[is], w[mm + is]) = (ys[0], ys[1], ys[2], ys[3]);
        (pv, ps) = (yv, ys);
    });
    // Backward, D·Lᵀ·x = y, from the last node: the slope row reaches the next node's
    // slope and value, the value row also its own slope. Each row is final here and is
    // stored as it is made. (nv, ns): the next node's rows.
    let (mut nv, mut ns) = ([L::zero(); 4], [L::zero(); 4]);
    each_node!(NN, n, rev k => {
        let (tv, ts, iv, is) = (2 * k, 2 * k + 1, k, n + k);
        let (dv, ds) = (inv_d[tv].lanes(), inv_d[ts].lanes());
        let mut xv = [z[iv] * dv, z[mm + iv] * dv, w[iv] * dv, w[mm + iv] * dv];
        let mut xs = [z[is] * ds, z[mm + is] * ds, w[is] * ds, w[mm + is] * ds];
        if k + 1 < n {
            fma4::<W, F>(l!(ts + 2, 2), ns, &mut xs);
            fma4::<W, F>(l!(ts + 1, 1), nv, &mut xs);
            fma4::<W, F>(l!(tv + 3, 3), ns, &mut xv);
            fma4::<W, F>(l!(tv + 2, 2), nv, &mut xv);
        }
        fma4::<W, F>(l!(tv + 1, 1), xs, &mut xv);
        for (x, i) in [(xv, iv), (xs, is)] {
            z[i] = x[0];
            z[mm + i] = x[1];
            w[i] = x[2];
            w[mm + i] = x[3];
        }
        (nv, ns) = (xv, xs);
    });
}

/// y += a·x for four right-hand sides.
#[inline(always)]
fn fma4<const W: usize, const F: bool>(a: L<W>, x: [L<W>; 4], y: &mut [L<W>; 4]) {
    for c in 0..4 {
        y[c] = a.mul_add::<F>(x[c], y[c]);
    }
}

/// LDLᵀ factors of an SPD 3×3 matrix (no pivoting needed: C = I + UᵀP⁻¹U), with the
/// pivots stored inverted. The pivots are ratios of leading minors (d₁ = D₁,
/// d₂ = D₂/D₁, d₃ = D₃/D₂), and the minors come from multiply-adds alone (fraction-free
/// elimination: D₂ = c₁₁c₂₂ − c₁₂², D₁D₃ = D₂(c₁₁c₃₃ − c₁₃²) − (c₁₁c₂₃ − c₁₂c₁₃)²), so
/// one division, of their product, gives every reciprocal: the divider's latency and
/// throughput are the kick's scarcest resources. A product past f64's range turns
/// the factors into NaN (the lane is then flagged), never into a silent zero.
struct Ldlt3<const W: usize> {
    inv_d: [L<W>; 3],
    l21: L<W>,
    l31: L<W>,
    l32: L<W>,
}

impl<const W: usize> Ldlt3<W> {
    #[inline(always)]
    fn new<const F: bool>(c: [[L<W>; 3]; 3]) -> Self {
        let (c11, c12, c13) = (c[0][0], c[1][0], c[2][0]);
        let d2_minor = c11.mul_add::<F>(c[1][1], -(c12 * c12));
        let a23 = c11.mul_add::<F>(c[2][1], -(c12 * c13));
        let a33 = c11.mul_add::<F>(c[2][2], -(c13 * c13));
        let d1_d3 = d2_minor.mul_add::<F>(a33, -(a23 * a23));
        let (d1_d2, prod) = (c11 * d2_minor, c11 * d2_minor * d1_d3);
        // prod·0 is 0 where prod is finite, NaN where it overflowed.
        let inv = L::splat(1.0) / prod + prod * 0.0;
        // 1/D₁ = D₂·(D₁D₃)·inv, D₁/D₂ = D₁²·(D₁D₃)·inv, D₂/D₃ = (D₁D₂)²·inv.
        let inv_d1 = d2_minor * d1_d3 * inv;
        let inv_minor2 = c11 * d1_d3 * inv;
        Ldlt3 {
            inv_d: [inv_d1, c11 * inv_minor2, d1_d2 * d1_d2 * inv],
            l21: c12 * inv_d1,
            l31: c13 * inv_d1,
            l32: a23 * inv_minor2,
        }
    }

    /// y = C⁻¹b.
    #[inline(always)]
    fn solve(&self, b: [L<W>; 3]) -> [L<W>; 3] {
        let z1 = b[0];
        let z2 = b[1] - self.l21 * z1;
        let z3 = b[2] - self.l31 * z1 - self.l32 * z2;
        let y3 = z3 * self.inv_d[2];
        let y2 = z2 * self.inv_d[1] - self.l32 * y3;
        let y1 = z1 * self.inv_d[0] - self.l21 * y2 - self.l31 * y3;
        [y1, y2, y3]
    }
}

/// Where a step leaves the positions: at its end (the state a sample reads), or half a
/// drift further, at the next step's midpoint, when that step follows at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepEnd {
    AtEnd,
    NextMidpoint,
}

/// The step's stages in order, as [`step`] calls them and the GPU kernel's generator
/// emits them (`gpu::kernel::STEP_STAGES`; tests/suite/stages.rs holds the two to it).
/// The per-leg stages run for each leg in turn.
pub const STEP_STAGES: [&str; 7] = [
    "opening_drift",
    "spring_loads",
    "leg_forces",
    "kick_solve",
    "touchdown",
    "body_kick",
    "closing_drift",
];

/// One DKD-dc step of every lane, stage by stage ([`STEP_STAGES`]): half drift, the
/// springs at the midpoint, each leg's kick (forces, solve, touchdown correction), the
/// body's kick (damping implicit), half drift. Adds h·power to work.
/// `at_midpoint`: the state is already at this step's midpoint (the step before ended
/// with [`StepEnd::NextMidpoint`]), so the opening drift is skipped.
#[inline(always)]
pub fn step<const W: usize, const F: bool, const NN: usize, E: Entry<W>>(
    m: &BlockModel<W>,
    mx: &LegMatrices<E>,
    st: &mut BlockState<W>,
    s: &mut Scratch<W>,
    at_midpoint: bool,
    end: StepEnd,
) {
    if !at_midpoint {
        opening_drift::<W, F>(m, st);
    }
    if m.couple.is_some() {
        // ω_A t at the midpoint, t = (steps + ½)h; one sincos per lane for every leg.
        let arg = m.p.axo_omega * ((st.steps + 0.5) * m.d.h);
        let (sin, cos) = super::trig::sin_cos::<W, F>(arg);
        s.axo_phase = [cos, sin];
    }
    let mut base_force = std::mem::take(&mut s.base_force);
    let body = if m.coupling_law {
        spring_loads_law::<W, F, NN>(m, (&st.q, &st.v), &mut base_force, &mut s.body_pull)
    } else {
        spring_loads::<W, F, NN>(m, &st.q, &mut base_force)
    };
    let dissipation = body.dissipation;
    let l = 4 * nodes::<W, NN>(m);
    let (mut power, mut work_axo) = (L::zero(), L::zero());
    for (i, &bf) in base_force.iter().enumerate() {
        let r = i * l..(i + 1) * l;
        let (q, v) = (&mut st.q[r.clone()], &mut st.v[r]);
        let forces = leg_forces::<W, F, NN, E>(m, mx, i, (q, v), bf, s);
        let solve = kick_solve::<W, F, NN, E>(m, mx, i, v, &forces, s);
        let [servo, couple] = touchdown::<W, F, NN, E>(m, mx, i, (q, v), &forces, &solve, s, end);
        power += servo;
        work_axo += couple;
    }
    s.base_force = base_force;
    body_kick::<W, F>(m, st, &s.body_pull, body);
    closing_drift::<W, F>(m, st, end);
    st.work = m.d.h.mul_add::<F>(power, st.work);
    if m.couple.is_some() {
        st.work_axo += work_axo;
    }
    if m.coupling_law {
        st.work_coupling = m.d.h.mul_add::<F>(dissipation, st.work_coupling);
    }
    st.steps += L::splat(1.0);
}

/// Stage `opening_drift`: q += h/2·v for every unknown, legs and body.
/// GPU: `kernel::opening_drift`.
#[inline(always)]
fn opening_drift<const W: usize, const F: bool>(m: &BlockModel<W>, st: &mut BlockState<W>) {
    let half = m.d.h * 0.5;
    for (q, v) in st.q.iter_mut().zip(&st.v) {
        *q = half.mul_add::<F>(*v, *q);
    }
}

/// Stage `body_kick`: the body's load (the springs' and the contact of P_1, P_2 with
/// the terrain) explicit, its damping implicit; with the coupling's law also the
/// dampers of its springs, pulling towards the bases' new velocities. GPU:
/// `kernel::body_kick`.
#[inline(always)]
fn body_kick<const W: usize, const F: bool>(
    m: &BlockModel<W>,
    st: &mut BlockState<W>,
    body_pull: &[[L<W>; 6]],
    BodyLoad {
        mut load,
        sin_cos: sc,
        dampers,
        ..
    }: BodyLoad<W>,
) {
    let o = m.n_legs * 4 * m.n_nodes;
    let body = [st.q[o], st.q[o + 1], st.q[o + 2]];
    // Body–terrain penalty ε·c·d·n at P_1, P_2 while at or beyond the terrain (d ≥ 0):
    // ε·c²·(X_t − x − h)·(1, σ). On flat ground c = 1, h = σ = 0.
    for off in m.p_points {
        let w = world(body, sc, off);
        let g = ground_at::<W, F>(m, w[1]);
        let out = m.p.x_t - w[0] - g.h;
        let contact = L::zero().ge_mask(out);
        if m.ground.terrain {
            let c2 = L::splat(1.0) / g.sigma.mul_add::<F>(g.sigma, L::splat(1.0));
            let fx = contact * m.p.epsilon * c2 * out;
            let fy = fx * g.sigma;
            load[0] += fx;
            load[1] += fy;
            load[2] += (w[0] - body[0]) * fy - (w[1] - body[1]) * fx;
        } else {
            let f = contact * m.p.epsilon * out;
            load[0] += f;
            load[2] -= (w[1] - body[1]) * f;
        }
    }
    let (mass, h) = (m.p.body_mass, m.d.h);
    let v = &mut st.v;
    if m.coupling_law {
        body_kick_law::<W, F>(m, st, body_pull, dampers, load);
        return;
    }
    // (m + s·hζ)v⁺ = (m − (1 − s)hζ)v + h·F, s the drag's share at the new velocity.
    let (kept, turn_kept) = (
        mass - m.d.body_drag_old,
        m.d.inertia - m.d.body_turn_drag_old,
    );
    v[o] = (kept * v[o] + h * (mass * m.p.g + load[0])) / (mass + m.d.body_drag);
    v[o + 1] = (kept * v[o + 1] + h * load[1]) / (mass + m.d.body_drag);
    v[o + 2] = (turn_kept * v[o + 2] + h * load[2]) / (m.d.inertia + m.d.body_turn_drag);
}

/// The body kick under the coupling's law:
/// (M_b + s·hZ + hA)·v_b⁺ = (M_b − (1 − s)hZ)·v_b + h(F + Σ G_i·u_i⁺), with
/// M_b = diag(m, m, I_b), Z its viscous damping (s its share at the new velocity,
/// `record::KickForm`), A and G_i from [`spring_loads_law`] and u_i⁺ the bases'
/// velocities after the legs' kicks: the dampers at the body implicit in its own velocity
/// (Gauss–Seidel after the legs), so a body that moves with its bases feels none of them.
/// The 3×3 system by symmetric elimination, which gives a lane whose dampers are zero the
/// bits of the linear coupling's kick (its zeros add and multiply exactly).
#[inline(always)]
fn body_kick_law<const W: usize, const F: bool>(
    m: &BlockModel<W>,
    st: &mut BlockState<W>,
    body_pull: &[[L<W>; 6]],
    a: [L<W>; 6],
    load: [L<W>; 3],
) {
    let (l, h) = (4 * m.n_nodes, m.d.h);
    let o = m.n_legs * l;
    let v = &mut st.v;
    let (mass, inertia) = (m.p.body_mass, m.d.inertia);
    let mut pull = [L::zero(); 3];
    for (i, g) in body_pull.iter().enumerate() {
        let u = [v[i * l], v[i * l + 2 * m.n_nodes]];
        for k in 0..3 {
            pull[k] = g[k].mul_add::<F>(u[0], pull[k]);
            pull[k] = g[3 + k].mul_add::<F>(u[1], pull[k]);
        }
    }
    // The linear kick's right-hand sides and diagonal, then the dampers'.
    let (kept, turn_kept) = (mass - m.d.body_drag_old, inertia - m.d.body_turn_drag_old);
    let r0 = kept * v[o] + h * (mass * m.p.g + load[0]) + h * pull[0];
    let r1 = kept * v[o + 1] + h * load[1] + h * pull[1];
    let r2 = turn_kept * v[o + 2] + h * load[2] + h * pull[2];
    let xx = mass + m.d.body_drag + h * a[0];
    let yy = mass + m.d.body_drag + h * a[1];
    let tt = inertia + m.d.body_turn_drag + h * a[2];
    let [xy, xt, yt] = [h * a[3], h * a[4], h * a[5]];
    let [l10, l20] = [xy / xx, xt / xx];
    let (yy1, yt1, tt1) = (yy - l10 * xy, yt - l20 * xy, tt - l20 * xt);
    let (r1, r2) = (r1 - l10 * r0, r2 - l20 * r0);
    let l21 = yt1 / yy1;
    let t = (r2 - l21 * r1) / (tt1 - l21 * yt1);
    let y = (r1 - yt1 * t) / yy1;
    v[o] = (r0 - xy * y - xt * t) / xx;
    v[o + 1] = y;
    v[o + 2] = t;
}

/// Stage `closing_drift`: q += h/2·v, twice where the next step follows at once
/// ([`StepEnd::NextMidpoint`]: the same two roundings as two passes over the state).
/// Here for the body: each leg's unknowns take the same drift in the touchdown's last
/// loop, while the leg is at hand (a pass of its own over the state made the step
/// about 5 % slower, docs/benchmarks.md). GPU: `kernel::closing_drift`, legs and body.
#[inline(always)]
fn closing_drift<const W: usize, const F: bool>(
    m: &BlockModel<W>,
    st: &mut BlockState<W>,
    end: StepEnd,
) {
    let half = m.d.h * 0.5;
    let o = m.n_legs * 4 * m.n_nodes;
    for (q, v) in st.q[o..].iter_mut().zip(&st.v[o..]) {
        *q = half.mul_add::<F>(*v, *q);
        if end == StepEnd::NextMidpoint {
            *q = half.mul_add::<F>(*v, *q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrate::record::InstanceRecord;
    use crate::model::Robot;
    use crate::params::Params;

    /// vᵀGv from G's node form (each pair of unknowns once, written out for five nodes
    /// and as the generic loop) against the dense quadratic form over both components,
    /// for a velocity with every entry in play.
    #[test]
    fn the_node_form_is_the_dense_quadratic_form() {
        for n in [2, 5, 7] {
            let p = Params {
                n_nodes: n,
                ..Params::default()
            };
            let rec = InstanceRecord::new(&Robot::new(&p), 2e-4, 0.5);
            let m = BlockModel::<1>::new(&[&rec]);
            let mm = 2 * n;
            let x: Vec<L<1>> = (0..2 * mm)
                .map(|k| L([((k * 5 + 2) % 13) as f64 * 0.37 - 2.1]))
                .collect();
            let plain: Vec<f64> = x.iter().map(|e| e.0[0]).collect();
            let g = &rec.matrices.geometric;
            let dense = g.quad(&plain[..mm]) + g.quad(&plain[mm..]);
            let scale: f64 = (0..mm)
                .flat_map(|i| (0..mm).map(move |j| (i, j)))
                .map(|(i, j)| (g.get(i, j) * plain[i] * plain[j]).abs())
                .sum::<f64>()
                * 2.0;
            for nn in [0, 5].into_iter().filter(|&nn| nn == 0 || nn == n) {
                let quad = match nn {
                    5 => node_form_quad::<1, true, 5, L<1>>,
                    _ => node_form_quad::<1, true, 0, L<1>>,
                };
                let form = quad(&m.matrices.geometric_form, n, &x).0[0];
                assert!(
                    (form - dense).abs() <= 1e-14 * scale,
                    "n={n} NN={nn}: {form} against {dense}"
                );
            }
        }
    }

    /// The kick's band solve, written out for five nodes and as the generic loop,
    /// against the dense P⁻¹ of the same record: z = P⁻¹r and w = P⁻¹Gq to round-off.
    #[test]
    fn the_band_solve_is_the_dense_inverse() {
        for (n, o) in [(5, "k_p=3"), (5, "rho=1.3"), (7, "zeta=0.5"), (2, "k_m=40")] {
            let mut p = Params::default();
            p.apply_override(o).unwrap();
            p.n_nodes = n;
            let rec = InstanceRecord::new(&Robot::new(&p), 2e-4, 0.5);
            let m = BlockModel::<1>::new(&[&rec]);
            let mm = 2 * n;
            let f = |s: f64| -> Vec<L<1>> {
                (0..2 * mm)
                    .map(|k| L([((k * 7 + 3) % 11) as f64 * s - 2.0]))
                    .collect()
            };
            let (r, gq) = (f(0.3), f(-1.1));
            let dense = |x: &[L<1>], o: usize, i: usize| -> f64 {
                (0..mm)
                    .map(|j| rec.matrices.p_inv.get(i, j) * x[o + j].0[0])
                    .sum()
            };
            let mut runs = Vec::new();
            for nn in [0, 5].into_iter().filter(|&nn| nn == 0 || nn == n) {
                let (mut z, mut w) = (vec![L::zero(); 2 * mm], vec![L::zero(); 2 * mm]);
                let solve = match nn {
                    5 => p_solve::<1, true, 5, L<1>>,
                    _ => p_solve::<1, true, 0, L<1>>,
                };
                solve(&m.matrices, n, &r, &gq, &mut z, &mut w);
                runs.push((nn, z, w));
            }
            for (nn, z, w) in runs {
                for o in [0, mm] {
                    for i in 0..mm {
                        let (pr, pg) = (dense(&r, o, i), dense(&gq, o, i));
                        let (zi, wi) = (pr, pg);
                        let tol = 1e-12 * (pr.abs() + pg.abs() + 1.0);
                        assert!(
                            (z[o + i].0[0] - zi).abs() <= tol,
                            "n={n} NN={nn} z[{}]",
                            o + i
                        );
                        assert!(
                            (w[o + i].0[0] - wi).abs() <= tol,
                            "n={n} NN={nn} w[{}]",
                            o + i
                        );
                    }
                }
            }
        }
    }
}
