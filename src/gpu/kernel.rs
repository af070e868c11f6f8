//! The `advance` entry point, generated for one shape (N legs of n nodes).
//!
//! One invocation per leg, ⌊64/N⌋ robots per workgroup (one robot when N > 32). Each
//! leg keeps its q and v as 8n scalar registers (`var q_0 … v_{4n-1}`) for the whole
//! dispatch: the state buffer is read once at dispatch start and written once at its
//! end. The legs of a robot exchange their basal points, spring loads and sample data
//! through workgroup memory, three barriers per step. The node loops of the kick are
//! unrolled here (n is a constant of the pipeline), so no private array exists, let
//! alone a dynamically indexed one; intermediate vectors are `let` values the shader
//! compiler allocates. docs/gpu.md gives the reasoning, `budget` checks the result.
//!
//! CPU twin of the step: `lanes::kernel::step` (one lane of it is `dkd::step`), stage for
//! stage: each stage of `lanes::kernel::STEP_STAGES` has a generator function here of the
//! same name, which marks its code `// @stage NAME` (tests/suite/stages.rs reads both). The
//! Woodbury solve is the branch-free form: always three columns, the servo and friction
//! columns scaled to zero when inactive, C = I + UᵀP⁻¹U by LDLᵀ, and
//! v_new = P⁻¹(r − U y), so that only P⁻¹u₁ is a full vector.

use super::layout::{KernelShape, MatrixLayout};
use super::tally::{self, StateLayout};
use super::Precision;
use crate::model::terrain::HARMONICS;

/// How the kernel carries what must be exact. `Plain`: every value one `real`.
/// `Compensated` (the f32 kernel): q as an f32 pair q_hi + q_lo advanced by error-free
/// sums, each leg's constraint V = qᵀGq − ℓ carried from step to step by its exact
/// increments and recomputed in double-f32 at every output sample; everything else
/// plain f32. Why and what it costs: docs/gpu.md ("The f32 kernel").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arith {
    Plain,
    Compensated,
}

impl Arith {
    /// The arithmetic of the kernel a precision runs: f32 is compensated. (A plain
    /// f32 kernel is generated only to count what the compensation costs.)
    pub fn of(precision: Precision) -> Arith {
        match precision {
            Precision::F64 => Arith::Plain,
            Precision::F32 => Arith::Compensated,
        }
    }
}

/// Lines of generated WGSL.
struct Code {
    s: String,
    indent: usize,
}

impl Code {
    fn line(&mut self, text: impl AsRef<str>) {
        for _ in 0..self.indent {
            self.s.push_str("    ");
        }
        self.s.push_str(text.as_ref());
        self.s.push('\n');
    }
    /// Marks where a stage of the step begins (`// @stage NAME`): tests/suite/stages.rs
    /// reads the markers of generated kernels against the CPU's stage list.
    fn stage(&mut self, name: &str) {
        self.line(format!("// @stage {name}"));
    }
    fn open(&mut self, text: impl AsRef<str>) {
        self.line(text);
        self.indent += 1;
    }
    fn close(&mut self) {
        self.indent -= 1;
        self.line("}");
    }
    /// An empty block one level in, for [`Code::stepping_block`].
    fn sub(&self) -> Code {
        Code {
            s: String::new(),
            indent: self.indent + 1,
        }
    }
    /// `if stepping { … }` around `block`, with the record members it reads
    /// ([`member_lets`]).
    fn stepping_block(&mut self, block: &Code) {
        self.open("if stepping {");
        self.s.push_str(&member_lets(&block.s, self.indent));
        self.s.push_str(&block.s);
        self.close();
    }
}

/// Index helpers of one leg: [a_1..a_n, b_1..b_n, c_1..c_n, d_1..d_n], blocks X = [a, b]
/// and Y = [c, d] of m = 2n unknowns each.
#[derive(Clone, Copy)]
struct Leg {
    n: usize,
    mats: MatrixLayout,
}

impl Leg {
    fn m(&self) -> usize {
        2 * self.n
    }
    fn l(&self) -> usize {
        4 * self.n
    }
    /// `mats[ms + …]` of entry (row, col) of the block matrix at `at`.
    fn mat(&self, at: usize, row: usize, col: usize) -> String {
        format!("mats[ms + {}u]", at + row * self.m() + col)
    }

    /// `let {out}_i = (A x)_i` for both blocks, A banded (a Hermite FE matrix couples
    /// neighbouring nodes only): the nonzero columns in increasing order, the CPU's sum.
    fn fe_mul(&self, c: &mut Code, at: usize, x: &str, out: &str) {
        let (n, m) = (self.n, self.m());
        for blk in 0..2 {
            for r in 0..m {
                let k = r % n;
                let mut terms = Vec::new();
                for base in [0, n] {
                    for col in k.saturating_sub(1)..=(k + 1).min(n - 1) {
                        let col = base + col;
                        terms.push(format!("{} * {x}_{}", self.mat(at, r, col), blk * m + col));
                    }
                }
                c.line(format!(
                    "let {out}_{} = {};",
                    blk * m + r,
                    terms.join(" + ")
                ));
            }
        }
    }

    /// `{lhs}_i = (A x)_i` for both blocks, A dense (P⁻¹); `lhs` is `let w` for a new
    /// value, or `v` to overwrite the velocity registers with `keep`·v + A x.
    fn dense_mul(&self, c: &mut Code, at: usize, x: &str, lhs: &str, keep: Option<&str>) {
        let m = self.m();
        for blk in 0..2 {
            for r in 0..m {
                let i = blk * m + r;
                let terms: Vec<String> = (0..m)
                    .map(|col| format!("{} * {x}_{}", self.mat(at, r, col), blk * m + col))
                    .collect();
                let kept = keep.map_or(String::new(), |k| format!("{k} * {lhs}_{i} + "));
                c.line(format!("{lhs}_{i} = {kept}{};", terms.join(" + ")));
            }
        }
    }

    /// Σ_i a_i b_i over `range`.
    fn dot(&self, a: &str, b: &str, range: std::ops::Range<usize>) -> String {
        range
            .map(|i| format!("{a}_{i} * {b}_{i}"))
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// Σ_c P⁻¹(row, c) x_{off + c}: row `row` of the block inverse against one block of x.
    fn p_row(&self, row: usize, x: &str, off: usize) -> String {
        (0..self.m())
            .map(|col| {
                format!(
                    "{} * {x}_{}",
                    self.mat(self.mats.p_inv(), row, col),
                    off + col
                )
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// Stage `leg_forces` of this leg at the midpoint (q, v in registers, spring force
/// `fb`): the constraint quantities, the bending, the weight, the penalty's multiple of
/// J, the servo, the tip's contact and the internal couple, into the kick's right-hand
/// side r' (`r_*`). `ground`: the tip's contact on the terrain with Coulomb friction
/// ([`tip_contact`]); without it the paper's flat, viscous tip.
/// CPU: `lanes::kernel::leg_forces`.
fn leg_forces(c: &mut Code, leg: Leg, couple: bool, ground: bool, arith: Arith) {
    c.stage("leg_forces");
    let (n, m, l) = (leg.n, leg.m(), leg.l());
    let mats = leg.mats;
    let (ib, id, tip) = (n, 3 * n, n - 1);
    let cn = 3 * n - 1;
    let qk = constraint_quantities(c, leg, arith);
    for i in 0..l {
        c.line(format!("let j_{i} = 2.0 * gq_{i};"));
    }
    c.line("// The drift-consistency (\"dc\") term: the drift adds h²vᵀGv to V every step.");
    c.line("let pen = (p_lambda * 2.0 + p_lambda_2etamu * h) * vgv + p_lambda_eta2 * v_res;");
    c.line("// The inertia term (ρ − (1 − s)hζ)Mv of the right-hand side is a·Pv − aθh²K_M·Kv,");
    c.line("// a = (ρ − (1 − s)hζ)/(ρ + s·hζ), s the drag's share at the new velocity:");
    c.line(
        "// its P⁻¹ is a·v (added after the solve), the rest moves the bending to θ' = (1 − a)θ.",
    );
    c.line("// Explicit force F_exp: bending, gravity, penalty, springs, servo, contact.");
    for i in 0..l {
        c.line(format!("let tb_{i} = {qk}_{i} - p_theta_h * v_{i};"));
    }
    leg.fe_mul(c, mats.bending(), "tb", "kb");
    c.line("// ∇ψ at q + lead·v: the step's end where the velocity terms are centred.");
    c.line(format!("let b1 = q_{ib} + p_servo_lead * v_{ib};"));
    c.line(format!("let d1 = q_{id} + p_servo_lead * v_{id};"));
    c.line("let r2 = b1 * b1 + d1 * d1;");
    c.line("let gb = -d1 / r2;");
    c.line("let gd = b1 / r2;");
    if ground {
        tip_contact(c, leg, arith);
    } else {
        c.line(format!("let contact = q_{tip} >= p_x_t;"));
    }
    if couple {
        couple_force(c, leg);
    }
    for i in 0..l {
        let mut f = format!("-p_k_m * kb_{i}");
        if i < m {
            f += &format!(" + p_rho * p_g * mats[ms + {}u]", mats.load() + i);
        }
        f += &format!(" - pen * j_{i}");
        if i == 0 {
            f += " + fb.x";
        }
        if i == 2 * n {
            f += " + fb.y";
        }
        if i == ib {
            f += " - lg_k_p * lg_omega * gb";
        }
        if i == id {
            f += " - lg_k_p * lg_omega * gd";
        }
        match (i, ground) {
            (_, false) if i == tip => {
                f += &format!(" + select(0.0, p_epsilon * (p_x_t - q_{tip}), contact)");
            }
            (_, true) if i == tip => f += " + tip_fx + tip_rest * tip_tx",
            (_, true) if i == cn => f += " + tip_fx * tip_g.y + tip_rest * tip_ty",
            _ => {}
        }
        if couple {
            f += &format!(" + qa_{i}");
        }
        c.line(format!("let f_{i} = {f};"));
    }
    c.line("// r' = λJ(Jᵀv) + h·F_exp (r = a·Pv + r')");
    for i in 0..l {
        c.line(format!("let r_{i} = p_lambda * j_{i} * jv + h * f_{i};"));
    }
}

/// Stage `kick_solve` of this leg: v_new from (P + UUᵀ)v_new = a·Pv + r' by Woodbury
/// with three columns (an inactive one scaled to zero): w = P⁻¹u₁ as a full vector, the
/// other two columns of U hit single entries of P⁻¹, C = I + UᵀP⁻¹U by an unrolled 3×3
/// LDLᵀ, v_new = a·v + P⁻¹(r' − U y). P⁻¹ is stored dense (the CPU solves with P's band
/// factor instead; docs/gpu.md says why). Compensated: one refinement along u₁.
/// CPU: `lanes::kernel::kick_solve`.
fn kick_solve(c: &mut Code, leg: Leg, ground: bool, arith: Arith) {
    c.stage("kick_solve");
    let (n, l) = (leg.n, leg.l());
    let mats = leg.mats;
    let (ib, id, tip) = (n, 3 * n, n - 1);
    let cn = 3 * n - 1;
    c.line("// Woodbury, three columns: u₁ = s₁J; u₂ = s₂(gb e_b1 + gd e_d1) (servo);");
    if ground {
        c.line("// u₃ = s₃(tx e_an + ty e_cn) (tip friction along t); s₂, s₃ = 0 while inactive.");
    } else {
        c.line("// u₃ = s₃ e_cn (tip friction); s₂, s₃ = 0 while inactive.");
    }
    c.line("let s1 = p_s_constraint;");
    c.line("let s2 = lg_s_servo;");
    if ground {
        c.line("let s3 = select(0.0, sqrt(tip_hd), contact);");
        c.line("let u3x = s3 * tip_tx;");
        c.line("let u3y = s3 * tip_ty;");
    } else {
        c.line("let s3 = select(0.0, p_s_friction, contact);");
    }
    c.line("let u2b = s2 * gb;");
    c.line("let u2d = s2 * gd;");
    for i in 0..l {
        c.line(format!("let u1_{i} = s1 * j_{i};"));
    }
    c.line("// w = P⁻¹u₁; P⁻¹u₂ and P⁻¹u₃ are columns of P⁻¹ (entries read where needed).");
    leg.dense_mul(c, mats.p_inv(), "u1", "let w", None);
    woodbury_system(c, leg, ground);
    c.line("// C y = Uᵀ P⁻¹ r by LDLᵀ (C is SPD: I plus a Gram matrix).");
    c.line("let l21 = c21 / c11;");
    c.line("let l31 = c31 / c11;");
    c.line("let d2 = c22 - l21 * c21;");
    c.line("let l32 = (c32 - l31 * c21) / d2;");
    c.line("let d3 = c33 - l31 * c31 - l32 * l32 * d2;");
    ldlt_solve(c, ["y1r", "y2r", "y3r"], "y");
    c.line("// v_new = a·v + P⁻¹(r' − U y).");
    for i in 0..l {
        let mut x = format!("r_{i} - y1 * u1_{i}");
        if i == ib {
            x += " - y2 * u2b";
        }
        if i == id {
            x += " - y2 * u2d";
        }
        if ground && i == tip {
            x += " - y3 * u3x";
        }
        if i == cn {
            x += if ground { " - y3 * u3y" } else { " - y3 * s3" };
        }
        c.line(format!("let x_{i} = {x};"));
    }
    leg.dense_mul(c, mats.p_inv(), "x", "v", Some("p_inertia_share"));
    if arith == Arith::Compensated {
        penalty_direction_refined(c, leg);
    }
}

/// The Woodbury system C y = Uᵀ(a·v + P⁻¹r'): C = I + UᵀP⁻¹U from w = P⁻¹u₁ and
/// single entries of P⁻¹ (`c11` … `c33`), the right-hand side `y1r` … `y3r`.
fn woodbury_system(c: &mut Code, leg: Leg, ground: bool) {
    let (n, m, l) = (leg.n, leg.m(), leg.l());
    let (ib, id, tip, cn) = (n, 3 * n, n - 1, 3 * n - 1);
    let p = |r: usize, col: usize| leg.mat(leg.mats.p_inv(), r, col);
    c.line(format!("let c11 = {} + 1.0;", leg.dot("u1", "w", 0..l)));
    c.line(format!("let c21 = u2b * w_{ib} + u2d * w_{id};"));
    if ground {
        c.line(format!(
            "let c31 = s3 * (tip_tx * w_{tip} + tip_ty * w_{cn});"
        ));
    } else {
        c.line(format!("let c31 = s3 * w_{cn};"));
    }
    c.line(format!(
        "let c22 = u2b * {pnn} * u2b + u2d * {pnn} * u2d + 1.0;",
        pnn = p(n, n)
    ));
    if ground {
        c.line(format!(
            "let c32 = s3 * {} * (u2b * tip_tx + u2d * tip_ty);",
            p(n - 1, n)
        ));
    } else {
        c.line(format!("let c32 = s3 * {} * u2d;", p(n - 1, n)));
    }
    c.line(format!("let c33 = s3 * {} * s3 + 1.0;", p(n - 1, n - 1)));
    c.line("// Uᵀ P⁻¹ r = Uᵀ(a·v + P⁻¹r').");
    c.line(format!(
        "let y1r = p_inertia_share * s1 * jv + {};",
        leg.dot("w", "r", 0..l)
    ));
    c.line(format!(
        "let y2r = p_inertia_share * (u2b * v_{ib} + u2d * v_{id}) + u2b * ({}) + u2d * ({});",
        leg.p_row(n, "r", 0),
        leg.p_row(n, "r", m)
    ));
    if ground {
        c.line(format!(
            "let y3r = s3 * (tip_tx * (p_inertia_share * v_{tip} + {}) + tip_ty * (p_inertia_share * v_{cn} + {}));",
            leg.p_row(n - 1, "r", 0),
            leg.p_row(n - 1, "r", m)
        ));
    } else {
        c.line(format!(
            "let y3r = s3 * (p_inertia_share * v_{cn} + {});",
            leg.p_row(n - 1, "r", m)
        ));
    }
}

/// Stage `touchdown` of this leg (docs/integrators.md, "Touchdown"): along
/// D = P⁻¹U·C⁻¹e₁ the velocity gets the re-solve for the consistent vᵀGv and the leg's
/// q the shift of the step end (compensated: left in `sh_*` for the closing drift);
/// then the servo's and the couple's work into `t_work`, `t_work_axo`.
/// CPU: `lanes::kernel::touchdown`.
fn touchdown(c: &mut Code, leg: Leg, couple: bool, ground: bool, arith: Arith) {
    c.stage("touchdown");
    let (n, m, l) = (leg.n, leg.m(), leg.l());
    let mats = leg.mats;
    let (ib, id) = (n, 3 * n);
    let p = |r: usize, col: usize| leg.mat(mats.p_inv(), r, col);
    c.line("// Touchdown correction: along D = P⁻¹U·C⁻¹e₁ = s₁S⁻¹J the");
    c.line("// kick is re-solved for its consistent vᵀGv, (2 + k)σ = ½s_old + (3/2)(1 + k)s_new,");
    c.line("// and the midpoint moves by ½h²·s_new·S⁻¹J/(JᵀS⁻¹J), JᵀS⁻¹J = (1 − e1)/s₁².");
    leg.fe_mul(c, mats.geometric(), "v", "gvn");
    c.line(format!(
        "let s_new = ({}) + ({});",
        leg.dot("v", "gvn", 0..m),
        leg.dot("v", "gvn", m..l)
    ));
    ldlt_solve(c, ["1.0", "0.0", "0.0"], "e");
    c.line("let dv_scale = -(h * s1 * (s_new * 1.5 - p_touchdown_old * vgv));");
    c.line("let dq_scale = p_half_h2 * s_new * s1 / (1.0 - e1);");
    c.line("let dd2b = e2 * u2b;");
    c.line("let dd2d = e2 * u2d;");
    if ground {
        c.line("let dd3x = e3 * u3x;");
        c.line("let dd3y = e3 * u3y;");
    } else {
        c.line("let dd3 = e3 * s3;");
    }
    for i in 0..l {
        let d = match (i < m, ground) {
            (true, false) => format!("e1 * w_{i} + dd2b * {}", p(i, n)),
            (true, true) => format!("e1 * w_{i} + dd2b * {} + dd3x * {}", p(i, n), p(i, n - 1)),
            (false, false) => format!(
                "e1 * w_{i} + dd2d * {} + dd3 * {}",
                p(i - m, n),
                p(i - m, n - 1)
            ),
            (false, true) => format!(
                "e1 * w_{i} + dd2d * {} + dd3y * {}",
                p(i - m, n),
                p(i - m, n - 1)
            ),
        };
        c.line(format!("let dd_{i} = {d};"));
        c.line(format!("v_{i} += dv_scale * dd_{i};"));
        match arith {
            Arith::Plain => c.line(format!("q_{i} += dq_scale * dd_{i};")),
            Arith::Compensated => c.line(format!("let sh_{i} = dq_scale * dd_{i};")),
        }
    }
    c.line(format!("let psi_dot = gb * v_{ib} + gd * v_{id};"));
    c.line("t_work += h * abs(lg_k_p * (-lg_omega - psi_dot) * psi_dot);");
    if couple {
        c.line("// At the step's mean velocity, as the CPU (`lanes::kernel::touchdown`).");
        c.line(format!(
            "t_work_axo += h * abs((qa_v_old + {}) * 0.5);",
            leg.dot("qa", "v", 0..l)
        ));
    }
}

/// u = y − y₀ of the tip (node n's c unknown) for `ground_at`, with the low word of the
/// compensated kernel's pair (y grows along the walk: its f32 rounding alone would
/// move the profile). `start` is how the code at hand reads y₀.
fn tip_u(leg: Leg, arith: Arith, start: &str) -> String {
    let cn = 3 * leg.n - 1;
    match arith {
        Arith::Plain => format!("q_{cn} - {start}"),
        Arith::Compensated => format!("(q_{cn} - {start}) + ql_{cn}"),
    }
}

/// The tip on the terrain at the step's midpoint (docs/model.md (T3)–(T4); CPU:
/// `lanes::kernel::tip_contact`): `contact` (depth d ≥ 0), the normal force and the
/// rest of the friction as forces `tip_fx`, `tip_rest` (the kick multiplies by h), the
/// tangent (`tip_tx`, `tip_ty`) and h·D for the friction's Woodbury column √(hD)·t.
fn tip_contact(c: &mut Code, leg: Leg, arith: Arith) {
    let (tip, cn) = (leg.n - 1, 3 * leg.n - 1);
    c.line("// The tip on the terrain (CPU: `tip_contact`): the normal force ε·c·d·n =");
    c.line(
        "// ε·c²·(X_t − x − h)·(1, σ) explicit; the friction F_T = −ν v_t − μ_C F_N tanh(v_t/v_C)",
    );
    c.line(
        "// linearised about the incoming v_t: its damping D = ν + μ_C F_N sech²(v_t/v_C)/v_C in",
    );
    c.line(
        "// the column √(hD)·t, the rest F_T + D·v_t = μ_C F_N (sech²·v_t/v_C − tanh) explicit.",
    );
    c.line(format!(
        "let tip_g = ground_at(ri, {});",
        tip_u(leg, arith, "p_terrain_start")
    ));
    c.line(format!("let tip_out = p_x_t - q_{tip} - tip_g.x;"));
    c.line("let contact = tip_out <= 0.0;");
    c.line("let tip_c2 = 1.0 / (tip_g.y * tip_g.y + 1.0);");
    c.line("let tip_c = sqrt(tip_c2);");
    c.line("let tip_tx = -(tip_g.y * tip_c);");
    c.line("let tip_ty = tip_c;");
    c.line("let tip_fx = select(0.0, p_epsilon * tip_c2 * tip_out, contact);");
    c.line("let tip_fn = select(0.0, p_epsilon * tip_c * -tip_out, contact);");
    c.line(format!("let tip_vt = tip_tx * v_{tip} + tip_ty * v_{cn};"));
    c.line("let tip_xv = tip_vt / p_v_c;");
    c.line("let tip_th = tanh_real(tip_xv);");
    c.line("let tip_sech2 = 1.0 - tip_th * tip_th;");
    c.line("let tip_mu_fn = p_mu_c * tip_fn;");
    c.line("let tip_rest = tip_mu_fn * (tip_sech2 * tip_xv - tip_th);");
    c.line("let tip_hd = h * p_nu + h * tip_mu_fn * tip_sech2 / p_v_c;");
}

/// WGSL `ground_at(ri, u)`: the terrain's height h and slope σ = h′ at u = y − y₀ as
/// (h, σ) (docs/model.md (T1)–(T2); CPU twin: `lanes::kernel::ground_at`, in its order
/// of operations): the blend S(w) and S′, the slope s·u, and `harmonics` harmonics of
/// θ = k·u, the m-th from the first by angle addition (one sincos), unrolled. The
/// coefficients of the first eight are instance members; those of m = 9..M (a rough
/// profile with more modes) close the instance's matrix set (`MatrixLayout::terrain_extra`).
pub fn ground_function(harmonics: usize, lay: MatrixLayout) -> String {
    let mut c = Code {
        s: String::new(),
        indent: 0,
    };
    c.line("// Generated by src/gpu/kernel.rs: the terrain at u = y − y₀ as (h, σ = h′).");
    c.open("fn ground_at(ri: u32, u: real) -> vec2<real> {");
    c.line("let inv_blend = instances[ri].terrain_inv_blend;");
    c.line("let w = min(max(u * inv_blend, 0.0), 1.0);");
    c.line("let blend = w * w * (3.0 - w * 2.0);");
    c.line("let blend_slope = w * (1.0 - w) * inv_blend * 6.0;");
    c.line("let slope = instances[ri].terrain_slope;");
    c.line("let hp0 = slope * u;");
    if harmonics == 0 {
        c.line("let hp = hp0;");
        c.line("let dhp = slope;");
    } else {
        c.line("let k = instances[ri].terrain_k;");
        c.line("let sc1 = sincos(k * u);");
        c.line("let s1 = sc1.x;");
        c.line("let c1 = sc1.y;");
        if harmonics > HARMONICS {
            c.line("let ms = ints[ri].matrix_set * MAT_STRIDE;");
        }
        for m in 1..=harmonics {
            if m <= HARMONICS {
                c.line(format!("let a{m} = instances[ri].terrain_a{m};"));
                c.line(format!("let b{m} = instances[ri].terrain_b{m};"));
            } else {
                let at = lay.terrain_extra() + 2 * (m - HARMONICS - 1);
                c.line(format!("let a{m} = mats[ms + {at}u];"));
                c.line(format!("let b{m} = mats[ms + {}u];", at + 1));
            }
            c.line(format!(
                "let hp{m} = a{m} * s{m} + (b{m} * c{m} + hp{});",
                m - 1
            ));
            if m == 1 {
                c.line("let dh1 = a1 * c1 - b1 * s1;");
            } else {
                c.line(format!(
                    "let dh{m} = (a{m} * c{m} - b{m} * s{m}) * {m}.0 + dh{};",
                    m - 1
                ));
            }
            if m < harmonics {
                c.line(format!("let s{} = s{m} * c1 + c{m} * s1;", m + 1));
                c.line(format!("let c{} = c{m} * c1 - s{m} * s1;", m + 1));
            }
        }
        c.line(format!("let hp = hp{harmonics};"));
        c.line(format!("let dhp = k * dh{harmonics} + slope;"));
    }
    c.line("return vec2<real>(blend * hp, blend_slope * hp + blend * dhp);");
    c.close();
    c.s
}

/// The internal couple Q_A of this leg at the step's midpoint into `qa_*` (docs/model.md
/// (A4); CPU: `lanes::kernel::couple_force`): Q_X = B Y, Q_Y = −B X with
/// B = c·B_c + s·B_s, (c, s) = f_A A_i (cos θ_i, sin θ_i), θ_i = ω_A t + (i−1)Δφ_A: the
/// bands of B_c and B_s unrolled like the node loops, (c, s) applied to their products.
fn couple_force(c: &mut Code, leg: Leg) {
    let (n, m) = (leg.n, leg.m());
    let mats = leg.mats;
    c.line("// The internal couple: Q_X = c·B_c Y + s·B_s Y, Q_Y = −(c·B_c X + s·B_s X).");
    c.line("let axo_sc = sincos(p_axo_omega * ((real(s) - 0.5) * h));");
    c.line("let axo_c = lg_axo_amp * (axo_sc.y * lg_axo_cos - axo_sc.x * lg_axo_sin);");
    c.line("let axo_s = lg_axo_amp * (axo_sc.x * lg_axo_cos + axo_sc.y * lg_axo_sin);");
    for r in 0..m {
        let k = r % n;
        let cols: Vec<usize> = [0, n]
            .into_iter()
            .flat_map(|base| (k.saturating_sub(1)..=(k + 1).min(n - 1)).map(move |c| base + c))
            .collect();
        let prod = |at: usize, off: usize| {
            cols.iter()
                .map(|&col| format!("{} * q_{}", leg.mat(at, r, col), off + col))
                .collect::<Vec<_>>()
                .join(" + ")
        };
        let (bc, bs) = (mats.couple_cos(), mats.couple_sin());
        c.line(format!(
            "let qa_{r} = axo_c * ({}) + axo_s * ({});",
            prod(bc, m),
            prod(bs, m)
        ));
        c.line(format!(
            "let qa_{} = -(axo_c * ({}) + axo_s * ({}));",
            m + r,
            prod(bc, 0),
            prod(bs, 0)
        ));
    }
    c.line(format!("let qa_v_old = {};", leg.dot("qa", "v", 0..2 * m)));
}

/// The constraint quantities at the midpoint: `gq` = Gq, `gv` = Gv, `v_res` = V,
/// `vgv` = vᵀGv, `jv` = Jᵀv. Returns the name of the q the banded products take.
///
/// Plain: V = qᵀGq − ℓ from the registers. Compensated: rounding V at f32's ε and
/// multiplying it by the penalty's λη² (3·10⁸ for the paper) would make forces of
/// ~10 N, so V is carried instead: the first half drift moved q by δ = (h/2)v, and
/// V(q + δ) − V(q) = δᵀ(J − Gδ) at the new q, i.e. (h/2)Jᵀv − (h/2)²vᵀGv, from the two
/// products the kick needs anyway (its rounding is ε of an O(h) increment). Gq is taken
/// with the value unknowns relative to the base node (G annihilates a translation, and
/// q's values are metres away from 0 while the leg is 1 m long), and so is Kq.
fn constraint_quantities(c: &mut Code, leg: Leg, arith: Arith) -> &'static str {
    let (n, m, l) = (leg.n, leg.m(), leg.l());
    let g = leg.mats.geometric();
    let q = match arith {
        Arith::Plain => "q",
        Arith::Compensated => {
            for i in 0..l {
                let base = match i {
                    _ if i < n => " - q_0".to_string(),
                    _ if (2 * n..3 * n).contains(&i) => format!(" - q_{}", 2 * n),
                    _ => String::new(),
                };
                c.line(format!("let qr_{i} = q_{i}{base};"));
            }
            "qr"
        }
    };
    c.line("// Constraint quantities at the midpoint: Gq, V = qᵀGq − ℓ, vᵀGv, Jᵀv.");
    leg.fe_mul(c, g, q, "gq");
    leg.fe_mul(c, g, "v", "gv");
    c.line(format!(
        "let vgv = ({}) + ({});",
        leg.dot("v", "gv", 0..m),
        leg.dot("v", "gv", m..l)
    ));
    c.line(format!("let jv = 2.0 * ({});", leg.dot("v", "gq", 0..l)));
    match arith {
        Arith::Plain => c.line(format!(
            "let v_res = {} - p_leg_length;",
            leg.dot("q", "gq", 0..l)
        )),
        Arith::Compensated => {
            c.line("// V at the midpoint: the step end's V plus the first half drift's increment.");
            c.line("let v_res = vres + 0.5 * h * jv - 0.25 * h * h * vgv;");
        }
    }
    q
}

/// Compensated: one step of refinement along the penalty's column. In exact arithmetic
/// the solve gives Uᵀv_new = y, so s₁Jᵀv_new = y₁. But Jᵀv_new comes out of a
/// cancellation of terms C₁₁ ≈ λ(1 + k)JᵀP⁻¹J times larger (10⁶–10⁷), which in f32
/// leaves an error of the order of Jᵀv itself: the constraint velocity is noise, V
/// wanders to 1e-5 and finer meshes diverge. y₁ itself is accurate (a well-scaled
/// 3×3 solve), so v moves along w = P⁻¹u₁ until s₁Jᵀv = y₁ (u₁ᵀw = C₁₁ − 1).
fn penalty_direction_refined(c: &mut Code, leg: Leg) {
    let l = leg.l();
    c.line(format!("let u1v = s1 * ({});", leg.dot("j", "v", 0..l)));
    c.line("let refine = select(0.0, (y1 - u1v) / (c11 - 1.0), c11 > 1.0);");
    for i in 0..l {
        c.line(format!("v_{i} += refine * w_{i};"));
    }
}

/// `let {name} = two_sum(a, b)`-style lines: (hi, lo) += d for each of `pairs`
/// (hi register, lo register, increment): lo absorbs d, then an error-free sum moves
/// what fits into hi and keeps the rest in lo.
fn compensated_add(c: &mut Code, tag: &str, pairs: &[(String, String, String)]) {
    for (k, (hi, lo, d)) in pairs.iter().enumerate() {
        c.line(format!("let {tag}{k} = two_sum({hi}, {lo} + {d}, one);"));
        c.line(format!("{hi} = {tag}{k}.x;"));
        c.line(format!("{lo} = {tag}{k}.y;"));
    }
}

/// The body copy's (hi, lo) pairs with increment `d` (a vec3 expression).
fn body_pairs(d: &str) -> Vec<(String, String, String)> {
    ["x", "y", "z"]
        .iter()
        .map(|x| (format!("qb.{x}"), format!("qbl.{x}"), format!("{d}.{x}")))
        .collect()
}

/// Compensated first half drift: q += (h/2)v for the leg and the body copy, in pairs.
fn first_drift_compensated(c: &mut Code, l: usize) {
    c.line("let hh = 0.5 * h;");
    let mut pairs: Vec<_> = (0..l)
        .map(|i| (format!("q_{i}"), format!("ql_{i}"), format!("hh * v_{i}")))
        .collect();
    pairs.extend(body_pairs("(hh * vb)"));
    compensated_add(c, "dr1_", &pairs);
}

/// Compensated second half drift with the kick's step-end shift: δ = sh + (h/2)v moves
/// q (in pairs), and the carried V goes to the step end by δᵀ(J + Gδ) (J at the
/// midpoint: V(q + δ) − V(q) exactly, up to the products' rounding).
fn second_drift_compensated(c: &mut Code, leg: Leg, part: Drift) {
    let l = leg.l();
    c.line("let hh = 0.5 * h;");
    if part == Drift::Body {
        compensated_add(c, "dr2_", &body_pairs("(hh * vb)"));
        return;
    }
    for i in 0..l {
        c.line(format!("let d2_{i} = sh_{i} + hh * v_{i};"));
    }
    leg.fe_mul(c, leg.mats.geometric(), "d2", "g2");
    let terms: Vec<String> = (0..l)
        .map(|i| format!("d2_{i} * (j_{i} + g2_{i})"))
        .collect();
    c.line(format!("vres = v_res + ({});", terms.join(" + ")));
    let mut pairs: Vec<_> = (0..l)
        .map(|i| (format!("q_{i}"), format!("ql_{i}"), format!("d2_{i}")))
        .collect();
    if part == Drift::Both {
        pairs.extend(body_pairs("(hh * vb)"));
    }
    compensated_add(c, "dr2_", &pairs);
}

/// `let constraint = qᵀGq − ℓ` at an output sample, from q = q_hi + q_lo in double-f32
/// (compensated kernel): the value unknowns relative to the base node (t + e, exact
/// differences), u = G_hi·t with exact products (fma) and error-free sums, tᵀu the
/// same way; 2eᵀu, tᵀG_lo t and ℓ's low word are small and added in f32. The carried V
/// restarts from it, so its increments' rounding never accumulates past one interval.
fn exact_constraint(c: &mut Code, leg: Leg) {
    let (n, l) = (leg.n, leg.l());
    let mats = leg.mats;
    for i in 0..l {
        let base = if i < n {
            Some(0)
        } else if (2 * n..3 * n).contains(&i) {
            Some(2 * n)
        } else {
            None
        };
        match base {
            Some(b) => {
                c.line(format!("let vx_{i} = two_sum(q_{i}, -q_{b}, one);"));
                c.line(format!("let vt_{i} = vx_{i}.x;"));
                c.line(format!("let ve_{i} = vx_{i}.y + (ql_{i} - ql_{b});"));
            }
            None => {
                c.line(format!("let vt_{i} = q_{i};"));
                c.line(format!("let ve_{i} = ql_{i};"));
            }
        }
    }
    // u = G_hi t, row by row over the banded columns (as fe_mul).
    let m = leg.m();
    for blk in 0..2 {
        for r in 0..m {
            let k = r % n;
            let mut acc: Option<String> = None;
            for base in [0, n] {
                for col in k.saturating_sub(1)..=(k + 1).min(n - 1) {
                    let col = base + col;
                    let p = format!(
                        "two_prod({}, vt_{}, one)",
                        leg.mat(mats.geometric(), r, col),
                        blk * m + col
                    );
                    acc = Some(match acc {
                        None => p,
                        Some(a) => format!("df_add({a}, {p}, one)"),
                    });
                }
            }
            c.line(format!(
                "let vu_{} = {};",
                blk * m + r,
                acc.unwrap_or_default()
            ));
        }
    }
    c.line("var vs = vec2<real>(0.0, 0.0);");
    for i in 0..l {
        c.line(format!(
            "vs = df_add(vs, df_mul_f(vu_{i}, vt_{i}, one), one);"
        ));
    }
    leg.fe_mul(c, mats.geometric_lo(), "vt", "vg");
    c.line(format!(
        "let v_small = 2.0 * ({}) + ({}) - mats[ms + {}u];",
        (0..l)
            .map(|i| format!("ve_{i} * vu_{i}.x"))
            .collect::<Vec<_>>()
            .join(" + "),
        leg.dot("vt", "vg", 0..l),
        mats.leg_length_lo()
    ));
    c.line("let constraint = (vs.x - instances[ri].leg_length) + (vs.y + v_small);");
    c.line("vres = constraint;");
}

/// `let {out}1..{out}3` = C⁻¹·rhs from the LDLᵀ factors of the kick's 3×3 C (c11 = d1,
/// l21, l31, l32, d2, d3); CPU: `Ldlt3::solve`.
fn ldlt_solve(c: &mut Code, rhs: [&str; 3], out: &str) {
    let [r1, r2, r3] = rhs;
    c.line(format!("let {out}z2 = {r2} - l21 * {r1};"));
    c.line(format!("let {out}z3 = {r3} - l31 * {r1} - l32 * {out}z2;"));
    c.line(format!("let {out}3 = {out}z3 / d3;"));
    c.line(format!("let {out}2 = {out}z2 / d2 - l32 * {out}3;"));
    c.line(format!(
        "let {out}1 = {r1} / c11 - l21 * {out}2 - l31 * {out}3;"
    ));
}

/// Stage `body_kick`: the body's explicit loads (springs summed over the robot's legs, contact),
/// implicit damping (CPU: the end of `lanes::kernel::step`). `ground`: P_1, P_2 on the
/// terrain (`body_contact_ground`, with the body's low y word where compensated).
/// `law`: [`body_kick_law`].
fn body_kick(c: &mut Code, n_legs: usize, ground: bool, law: bool, arith: Arith) {
    c.stage("body_kick");
    c.line("// Body: explicit loads (springs summed over legs, contact), implicit damping.");
    let loads: Vec<String> = (0..n_legs)
        .map(|j| format!("wg_load[first + {j}u].xyz"))
        .collect();
    let contact = match (ground, arith) {
        (false, _) => "body_contact(ri, qb, sincos(qb.z))",
        (true, Arith::Plain) => "body_contact_ground(ri, qb, sincos(qb.z), 0.0)",
        (true, Arith::Compensated) => "body_contact_ground(ri, qb, sincos(qb.z), qbl.y)",
    };
    c.line(format!("let load = {} + {contact};", loads.join(" + ")));
    c.line("let bm = p_body_mass;");
    if law {
        body_kick_law(c, n_legs);
        return;
    }
    c.line("let kept = bm - p_body_drag_old;");
    c.line("let turn_kept = p_inertia - p_body_turn_drag_old;");
    c.line("vb.x = (kept * vb.x + h * (bm * p_g + load.x)) / (bm + p_body_drag);");
    c.line("vb.y = (kept * vb.y + h * load.y) / (bm + p_body_drag);");
    c.line("vb.z = (turn_kept * vb.z + h * load.z) / (p_inertia + p_body_turn_drag);");
}

/// The body kick under the coupling's law (CPU: `lanes::kernel::body_kick_law`): the
/// dampers at the body implicit in its velocity, pulling towards the bases' new
/// velocities (each leg's share of A and of the pull summed over the robot's legs); the
/// 3×3 system by the CPU's symmetric elimination.
fn body_kick_law(c: &mut Code, n_legs: usize) {
    let sum = |f: &dyn Fn(usize) -> String| (0..n_legs).map(f).collect::<Vec<_>>().join(" + ");
    c.line(format!(
        "let a_lo = h * ({});",
        sum(&|j| format!("wg_damp_a[first + {j}u]"))
    ));
    c.line(format!(
        "let a_hi = h * ({});",
        sum(&|j| format!("wg_damp_b[first + {j}u]"))
    ));
    c.line(format!(
        "let pull = h * ({});",
        sum(&|j| format!("wg_pull[first + {j}u].xyz"))
    ));
    c.line("let kept = bm - p_body_drag_old;");
    c.line("let turn_kept = p_inertia - p_body_turn_drag_old;");
    c.line("let r0 = kept * vb.x + h * (bm * p_g + load.x) + pull.x;");
    c.line("let xx = bm + p_body_drag + a_lo.x;");
    c.line("let l10 = a_lo.w / xx;");
    c.line("let r1 = kept * vb.y + h * load.y + pull.y - l10 * r0;");
    c.line("let l20 = a_hi.x / xx;");
    c.line("let yy1 = bm + p_body_drag + a_lo.y - l10 * a_lo.w;");
    c.line("let yt1 = a_hi.y - l20 * a_lo.w;");
    c.line("let tt1 = p_inertia + p_body_turn_drag + a_lo.z - l20 * a_hi.x;");
    c.line("let r2 = turn_kept * vb.z + h * load.z + pull.z - l20 * r0;");
    c.line("let l21 = yt1 / yy1;");
    c.line("let t = (r2 - l21 * r1) / (tt1 - l21 * yt1);");
    c.line("let y = (r1 - yt1 * t) / yy1;");
    c.line("vb = vec3<real>((r0 - a_lo.w * y - a_hi.x * t) / xx, y, t);");
}

/// The `let` lines that read the instance-record members a block of generated code
/// uses: `p_NAME` is `instances[ri].NAME` (WGSL `Instance`), `lg_NAME` is this leg's
/// `legs[…].NAME` (WGSL `LegParams`). Every such name must be a member (a generator
/// bug otherwise), so the code and the record cannot drift apart.
fn member_lets(code: &str, indent: usize) -> String {
    let instance = super::instance::instance_members();
    let leg = super::instance::leg_members();
    let mut used: Vec<(&str, String)> = Vec::new();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for (at, _) in code.match_indices(['p', 'l']) {
        if at > 0 && code[..at].chars().next_back().is_some_and(ident) {
            continue;
        }
        let word: String = code[at..].chars().take_while(|&c| ident(c)).collect();
        for (prefix, members) in [("p_", &instance), ("lg_", &leg)] {
            if let Some(name) = word.strip_prefix(prefix) {
                assert!(
                    members.contains(&name),
                    "generated WGSL reads `{word}`, but `{name}` is no member of the record"
                );
                if !used.iter().any(|(p, n)| *p == prefix && n == name) {
                    used.push((prefix, name.to_string()));
                }
            }
        }
    }
    let pad = "    ".repeat(indent);
    used.iter()
        .map(|(prefix, name)| match *prefix {
            "p_" => format!("{pad}let p_{name} = instances[ri].{name};\n"),
            _ => format!("{pad}let lg_{name} = legs[ri * N_LEGS + leg].{name};\n"),
        })
        .collect()
}

/// q += h/2·v for the leg's registers and its body copy (CPU: `q[i] += 0.5 * h * v[i]`).
fn half_drift(c: &mut Code, l: usize, part: Drift) {
    c.line("let hh = 0.5 * h;");
    if part != Drift::Body {
        for i in 0..l {
            c.line(format!("q_{i} += hh * v_{i};"));
        }
    }
    if part != Drift::Legs {
        c.line("qb += hh * vb;");
    }
}

/// What a closing drift moves: the leg and the body copy together, or (under the
/// coupling's law, whose body kick waits for every leg's kick) the leg at the end of
/// its kick and the body after its own, as on the CPU.
#[derive(Clone, Copy, PartialEq)]
enum Drift {
    Both,
    Legs,
    Body,
}

/// What an invocation keeps of the state, declared and read once at dispatch start:
/// this leg's q and v, the body (every leg keeps a copy and updates it identically);
/// compensated also q's low words and the leg's carried V.
fn state_load(c: &mut Code, lay: StateLayout) {
    for (name, at, lo) in state_registers(lay) {
        c.line(format!("var {name}: real = state[slot({at}u{lo}, ri)];"));
    }
    let body = lay.n_legs * lay.leg_dofs();
    let mut bodies = vec![("qb", body), ("vb", lay.nq() + body)];
    if let Some(q_lo) = lay.q_lo() {
        bodies.push(("qbl", q_lo + body));
    }
    for (name, at) in bodies {
        c.line(format!(
            "var {name} = vec3<real>(state[slot({at}u, ri)], state[slot({}u, ri)], state[slot({}u, ri)]);",
            at + 1,
            at + 2
        ));
    }
}

/// The state written once at dispatch end (the body by leg 0), as [`state_load`] read it.
fn state_store(c: &mut Code, lay: StateLayout) {
    for (name, at, lo) in state_registers(lay) {
        c.line(format!("state[slot({at}u{lo}, ri)] = {name};"));
    }
    let body = lay.n_legs * lay.leg_dofs();
    let mut bodies = vec![("qb", body), ("vb", lay.nq() + body)];
    if let Some(q_lo) = lay.q_lo() {
        bodies.push(("qbl", q_lo + body));
    }
    c.open("if leg == 0u {");
    for (name, at) in bodies {
        for (k, x) in ["x", "y", "z"].iter().enumerate() {
            c.line(format!("state[slot({}u, ri)] = {name}.{x};", at + k));
        }
    }
    c.close();
}

/// The per-leg scalar registers and their slots: (name, first slot, per-leg offset).
fn state_registers(lay: StateLayout) -> Vec<(String, usize, &'static str)> {
    let l = lay.leg_dofs();
    let mut out = Vec::new();
    for i in 0..l {
        out.push((format!("q_{i}"), i, " + leg * L"));
    }
    for i in 0..l {
        out.push((format!("v_{i}"), lay.nq() + i, " + leg * L"));
    }
    if let (Some(q_lo), Some(v_res)) = (lay.q_lo(), lay.v_res()) {
        for i in 0..l {
            out.push((format!("ql_{i}"), q_lo + i, " + leg * L"));
        }
        out.push(("vres".into(), v_res, " + leg"));
    }
    out
}

/// What the entry point's parts are generated for: one kernel shape in one arithmetic.
#[derive(Clone, Copy)]
struct Kernel {
    lay: StateLayout,
    leg: Leg,
    couple: bool,
    ground: bool,
    /// The coupling's law (shaders/coupling.wgsl).
    law: bool,
    arith: Arith,
}

/// The entry point for `shape` in `arith` (after the header and the shader files): the
/// state read once, the step loop (the step's stages, then an output sample's metrics),
/// the state written once.
pub fn entry_point(shape: KernelShape, arith: Arith) -> String {
    let KernelShape {
        n_legs,
        n_nodes,
        couple,
        ground,
        law,
        ..
    } = shape;
    let lay = StateLayout {
        n_legs,
        n_nodes,
        compensated: arith == Arith::Compensated,
    };
    let leg = Leg {
        n: n_nodes,
        mats: shape.matrices(),
    };
    let k = Kernel {
        lay,
        leg,
        couple,
        ground,
        law,
        arith,
    };
    let mut c = Code {
        s: String::new(),
        indent: 0,
    };
    dispatch_start(&mut c, k);
    c.open("for (var s = ctl.step_begin; s < ctl.step_end; s++) {");
    c.line("// Step s (s ≥ 1) of this robot, then the output sample it completes.");
    c.line("let act = live && s <= total;");
    c.line("let stepping = act && s > 0u;");
    c.line("// @step-loop (a marker for the budget tests)");
    step_stages(&mut c, k);
    sample_metrics(&mut c, k);
    c.close();
    dispatch_end(&mut c, lay, law);
    c.close();
    c.s
}

/// The entry point's opening: which robot and leg this invocation is, its schedule, and
/// its state and running sums read once.
fn dispatch_start(c: &mut Code, k: Kernel) {
    c.line("// Generated by src/gpu/kernel.rs: one invocation per leg, the robot's legs");
    c.line("// side by side in the workgroup. CPU twin: `lanes::kernel::step` (stage by");
    c.line("// stage, `// @stage` below) and, at a sample, `MetricsAccumulator::push`.");
    if k.couple {
        c.line("// Each leg's couple work at a sample, summed over the robot's legs.");
        c.line("var<workgroup> wg_axo: array<real, WORKGROUP_SIZE>;");
    }
    if k.law {
        c.line("// Each leg's share of the energy the dampers dissipated, at a sample.");
        c.line("var<workgroup> wg_coupling: array<real, WORKGROUP_SIZE>;");
    }
    c.line("@compute @workgroup_size(WORKGROUP_SIZE)");
    c.open("fn advance(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {");
    c.line("let leg = lid % N_LEGS;");
    c.line("// This robot's first lane in the workgroup.");
    c.line("let first = lid - leg;");
    c.line("let robot = wid.x * ROBOTS_PER_WORKGROUP + lid / N_LEGS;");
    c.line("let inside = robot < ctl.batch;");
    c.line("// Lanes past the batch mirror its last robot and store nothing; every lane");
    c.line("// runs the step loop (barriers need the whole workgroup).");
    c.line("let ri = min(robot, ctl.batch - 1u);");
    c.line("var live = inside && status[ri] == 0u;");
    c.line("var diverged = 0u;");
    c.line("let ms = ints[ri].matrix_set * MAT_STRIDE;");
    c.line("let per = ints[ri].steps_per_sample;");
    c.line("let n_samples = ints[ri].n_samples;");
    c.line("let total = (n_samples - 1u) * per + ints[ri].steps_last;");
    c.line("let window_first = ints[ri].window_first;");
    c.line("let h = instances[ri].h;");
    if k.arith == Arith::Compensated {
        c.line(format!(
            "let one = mats[ms + {}u]; // 1, opaque to the compiler",
            k.leg.mats.one()
        ));
    }
    state_load(c, k.lay);
    c.s.push_str(&tally::wgsl_load(&k.lay, k.law));
    c.line("var fb = vec2<real>(0.0, 0.0);");
    if k.law {}
}

/// One step, stage by stage in the order of the CPU's `lanes::kernel::STEP_STAGES`. The
/// legs of a robot meet twice in workgroup memory: the basal points after the opening
/// drift, the spring loads before the kicks.
fn step_stages(c: &mut Code, k: Kernel) {
    let (n, l) = (k.leg.n, k.lay.leg_dofs());
    c.open("if stepping {");
    opening_drift(c, k.arith, l);
    c.line(format!("wg_base[lid] = vec2<real>(q_0, q_{});", 2 * n));
    if k.law {
        c.line(format!("wg_base_v[lid] = vec2<real>(v_0, v_{});", 2 * n));
    }
    c.close();
    c.line("workgroupBarrier();");
    c.open("if stepping {");
    spring_loads(c, k.law);
    c.close();
    c.line("workgroupBarrier();");
    let mut legs_code = c.sub();
    leg_forces(&mut legs_code, k.leg, k.couple, k.ground, k.arith);
    kick_solve(&mut legs_code, k.leg, k.ground, k.arith);
    touchdown(&mut legs_code, k.leg, k.couple, k.ground, k.arith);
    if k.law {
        // The body's dampers pull towards the bases' new velocities: every leg's share
        // into workgroup memory before the body kick.
        legs_code.line(format!(
            "wg_pull[lid] = vec4<real>(wg_pull[lid].xyz * v_0 + wg_pull_y[lid].xyz * v_{}, 0.0);",
            2 * n
        ));
        closing_drift(&mut legs_code, k.leg, k.arith, Drift::Legs);
        c.stepping_block(&legs_code);
        c.line("workgroupBarrier();");
        legs_code = c.sub();
    }
    body_kick(&mut legs_code, k.lay.n_legs, k.ground, k.law, k.arith);
    let part = if k.law { Drift::Body } else { Drift::Both };
    closing_drift(&mut legs_code, k.leg, k.arith, part);
    c.stepping_block(&legs_code);
}

/// Stage `opening_drift`: q += h/2·v for the leg's registers and its body copy
/// (compensated: in pairs). CPU: `lanes::kernel::opening_drift`.
fn opening_drift(c: &mut Code, arith: Arith, l: usize) {
    c.stage("opening_drift");
    match arith {
        Arith::Plain => half_drift(c, l, Drift::Both),
        Arith::Compensated => first_drift_compensated(c, l),
    }
    // A run's first step drifted at the start velocity the engine uploaded (zero unless
    // the scheme resolves the start, `lanes::driver::start_velocity`); it kicks from rest.
    c.open("if s == 1u {");
    for i in 0..l {
        c.line(format!("v_{i} = 0.0;"));
    }
    c.line("vb = vec3<real>(0.0, 0.0, 0.0);");
    c.close();
}

/// Stage `spring_loads`: this leg's share of the springs (`leg_springs`,
/// shaders/springs.wgsl) from the basal points in workgroup memory: the force on its
/// base and its part of the body's load. CPU: `lanes::kernel::spring_loads`.
/// `law`: the coupling's law (`leg_springs_law`, shaders/coupling.wgsl): also this
/// leg's share of the dampers' matrix on the body and its pull's matrix G_i (in
/// workgroup memory until the kick gives u_i: private memory is the scarcer), and the
/// dissipated energy's running sum.
fn spring_loads(c: &mut Code, law: bool) {
    c.stage("spring_loads");
    if law {
        c.line("let share = leg_springs_law(ri, leg, lid, qb, vb, sincos(qb.z));");
        c.line("wg_damp_a[lid] = share.a_lo;");
        c.line("wg_damp_b[lid] = share.a_hi;");
        c.line("wg_pull[lid] = vec4<real>(share.pull_x, 0.0);");
        c.line("wg_pull_y[lid] = vec4<real>(share.pull_y, 0.0);");
        c.line("t_work_coupling += h * share.dissipation;");
    } else {
        c.line("let share = leg_springs(ri, leg, lid, qb, sincos(qb.z));");
    }
    c.line("fb = share.base;");
    c.line("wg_load[lid] = vec4<real>(share.load, 0.0);");
}

/// Stage `closing_drift`: q += h/2·v after the touchdown's shift (compensated: the
/// shift and the drift in pairs, and the carried V moved to the step end).
/// CPU: `lanes::kernel::closing_drift`.
/// `part`: [`Drift`]; the legs' part alone belongs to the touchdown's block and is
/// no stage of its own (CPU: the touchdown's last loop).
fn closing_drift(c: &mut Code, leg: Leg, arith: Arith, part: Drift) {
    if part != Drift::Legs {
        c.stage("closing_drift");
    }
    match arith {
        Arith::Plain => half_drift(c, leg.l(), part),
        Arith::Compensated => second_drift_compensated(c, leg, part),
    }
}

/// At an output sample: every leg's tangent, work and sanity into workgroup memory, then
/// the divergence check over the robot's legs and the metrics' running sums
/// (shaders/metrics.wgsl). CPU: the lane driver's read-off and `MetricsAccumulator::push`.
fn sample_metrics(c: &mut Code, k: Kernel) {
    let (n, l, n_legs) = (k.leg.n, k.lay.leg_dofs(), k.lay.n_legs);
    c.line("let k = sample_index(s, per, total, n_samples);");
    c.line("let sampling = act && k != NO_SAMPLE;");
    c.open("if sampling {");
    c.line(format!(
        "let rt = sqrt(q_{n} * q_{n} + q_{m3} * q_{m3});",
        m3 = 3 * n
    ));
    let mut sane: Vec<String> = (0..l)
        .map(|i| format!("abs(q_{i}) < DIVERGENCE_BOUND & abs(v_{i}) <= REAL_MAX"))
        .collect();
    for x in ["x", "y", "z"] {
        sane.push(format!(
            "abs(qb.{x}) < DIVERGENCE_BOUND & abs(vb.{x}) <= REAL_MAX"
        ));
    }
    c.line("// Physical: every coordinate finite and below DIVERGENCE_BOUND, every velocity");
    c.line("// finite (comparisons, not isnan: NaN fails every `<`). CPU: `state_is_sane`.");
    c.line("// `&`, not `&&`: no short-circuit, so naga needs no bool locals for the chain.");
    c.line(format!("let sane = {};", sane.join(" & ")));
    c.line(format!(
        "wg_sample[lid] = vec4<real>(q_{n} / rt, q_{} / rt, t_work, select(real(0.0), real(1.0), sane));",
        3 * n
    ));
    if k.couple {
        c.line("wg_axo[lid] = t_work_axo;");
    }
    if k.law {
        c.line("wg_coupling[lid] = t_work_coupling;");
    }
    c.close();
    c.line("workgroupBarrier();");
    c.open("if sampling {");
    let all =
        |f: &dyn Fn(usize) -> String, sep: &str| (0..n_legs).map(f).collect::<Vec<_>>().join(sep);
    c.line(format!(
        "let all_sane = {};",
        all(&|j| format!("wg_sample[first + {j}u].w > 0.5"), " & ")
    ));
    c.open("if k > 0u && !all_sane {");
    c.line("live = false;");
    c.line("diverged = k + 1u;");
    c.close();
    c.open("else {");
    sample_sums(c, k);
    c.close();
    c.close();
}

/// The metrics' running sums of a sane sample: the robot's tangents, work, Kuramoto
/// phasor, tip and body positions and the leg's constraint, then shaders/metrics.wgsl.
fn sample_sums(c: &mut Code, k: Kernel) {
    let (n, leg, n_legs) = (k.leg.n, k.leg, k.lay.n_legs);
    let comp = k.arith == Arith::Compensated;
    let all =
        |f: &dyn Fn(usize) -> String, sep: &str| (0..n_legs).map(f).collect::<Vec<_>>().join(sep);
    c.line("let tangent = wg_sample[lid].xy;");
    c.line("let next = wg_sample[min(lid + 1u, WORKGROUP_SIZE - 1u)].xy;");
    if k.ground {
        c.line("// The tip's x plus the terrain's height there: tip_x ≥ X_t is its depth");
        c.line("// d = x − X_t + h(y) ≥ 0 (CPU: `MetricsAccumulator::push`).");
        c.line(format!(
            "let tip_x = q_{} + ground_at(ri, {}).x;",
            n - 1,
            tip_u(leg, k.arith, "instances[ri].terrain_start")
        ));
    } else {
        c.line(format!("let tip_x = q_{};", n - 1));
    }
    c.line(if comp {
        "let y_body = qb.y + qbl.y;"
    } else {
        "let y_body = qb.y;"
    });
    c.line(format!(
        "let work_sum = {};",
        all(&|j| format!("wg_sample[first + {j}u].z"), " + ")
    ));
    c.line(format!(
        "let kura = vec2<real>({}, {});",
        all(&|j| format!("wg_sample[first + {j}u].x"), " + "),
        all(&|j| format!("-wg_sample[first + {j}u].y"), " + ")
    ));
    if comp {
        exact_constraint(c, leg);
    } else {
        leg.fe_mul(c, leg.mats.geometric(), "q", "gs");
        c.line(format!(
            "let constraint = ({}) + ({}) - instances[ri].leg_length;",
            leg.dot("q", "gs", 0..leg.m()),
            leg.dot("q", "gs", leg.m()..leg.l())
        ));
    }
    for line in include_str!("../../shaders/metrics.wgsl").lines() {
        if !line.starts_with("//") {
            c.line(line);
        }
    }
    if k.couple {
        c.line("// The couples' work of the robot at this sample (CPU: `Sample::work_axo`).");
        c.line(format!(
            "t_last_work_axo = {};",
            all(&|j| format!("wg_axo[first + {j}u]"), " + ")
        ));
    }
    if k.law {
        c.line("// The dampers' dissipated energy at this sample (CPU: `Sample::work_coupling`).");
        c.line(format!(
            "t_last_work_coupling = {};",
            all(&|j| format!("wg_coupling[first + {j}u]"), " + ")
        ));
    }
}

/// The state and the running sums written once, and a diverged robot's status.
fn dispatch_end(c: &mut Code, lay: StateLayout, law: bool) {
    c.line("// The state, written once.");
    c.open("if inside {");
    state_store(c, lay);
    c.open("if leg == 0u {");
    c.open("if diverged > 0u {");
    c.line("status[ri] = diverged;");
    c.close();
    c.close();
    c.s.push_str(&tally::wgsl_store(&lay, law));
    c.close();
}
