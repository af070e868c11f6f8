//! The per-lane constants of a block of W robots of one shape (N legs, n nodes): every
//! parameter may differ between lanes. Gathered once per block from the lanes'
//! instance records (src/integrate/record.rs); the kernel only reads it.

use super::simd::{Aligned, Lanes, L};
use crate::integrate::record::{Derived, InstanceRecord, LegConstants};
use crate::model::hermite::Dense;
use crate::model::terrain::HARMONICS;
use crate::params::KernelParams;

/// A Hermite matrix of one component block in banded form: row i has six nonzero
/// columns (value and slope unknowns of nodes k−1, k, k+1, k = i mod n) in
/// increasing order; at the end nodes the missing ones carry a zero coefficient and
/// a valid column, so every row is the same six fused multiply-adds.
#[derive(Debug, Clone)]
pub struct Banded<E> {
    pub coef: Vec<[E; 6]>,
}

/// An entry of a block's leg matrices as the kernel reads it: one value per lane
/// (`L<W>`), or one value every lane shares (`f64`, broadcast where it is read).
pub trait Entry<const W: usize>: Copy {
    fn lanes(self) -> L<W>;
}

impl<const W: usize> Entry<W> for L<W> {
    #[inline(always)]
    fn lanes(self) -> L<W> {
        self
    }
}

impl<const W: usize> Entry<W> for f64 {
    #[inline(always)]
    fn lanes(self) -> L<W> {
        L::splat(self)
    }
}

/// The bands of K and G, P's band LDLᵀ and two columns of P⁻¹ of one component block
/// (m = 2n unknowns): the matrices every leg of a lane shares.
#[derive(Debug, Clone)]
pub struct LegMatrices<E> {
    pub bending: Banded<E>,
    pub geometric: Banded<E>,
    /// G again, as its quadratic form (vᵀGv) reads it.
    pub geometric_form: NodeForm<E>,
    /// `BandLdlt::neg_lower`: −L(t, t − k) at 3 − k, interleaved order.
    pub p_lower: Vec<[E; 3]>,
    /// `BandLdlt::inv_d`: 1/D(t).
    pub p_inv_d: Vec<E>,
    /// Row i of P⁻¹'s columns n (the base slope, which the servo's column of U reads)
    /// and n − 1 (the tip's value, friction's column).
    pub p_cols: Vec<[E; 2]>,
}

impl<const W: usize> LegMatrices<L<W>> {
    fn new(r: &[&InstanceRecord; W], n: usize) -> Self {
        LegMatrices {
            bending: Banded::new(&r.map(|x| &x.matrices.bending), n),
            geometric: Banded::new(&r.map(|x| &x.matrices.geometric), n),
            geometric_form: NodeForm::new(&r.map(|x| &x.matrices.geometric), n),
            p_lower: (0..2 * n)
                .map(|t| {
                    std::array::from_fn(|k| {
                        L(std::array::from_fn(|j| {
                            r[j].matrices.p_factor.neg_lower[t][k]
                        }))
                    })
                })
                .collect(),
            p_inv_d: (0..2 * n)
                .map(|t| L(std::array::from_fn(|j| r[j].matrices.p_factor.inv_d[t])))
                .collect(),
            p_cols: (0..2 * n)
                .map(|i| {
                    [n, n - 1]
                        .map(|col| L(std::array::from_fn(|j| r[j].matrices.p_inv.get(i, col))))
                })
                .collect(),
        }
    }

    /// The same matrices held once, where every lane has them bit for bit (lanes
    /// that differ only in gains, couplings or frequencies: most sweeps). A kick that
    /// reads them broadcasts each entry: the same values, in an eighth of the memory
    /// at 8 lanes, and a block's working set then fits in L1.
    fn shared(&self) -> Option<LegMatrices<f64>> {
        let rows = |v: &[L<W>]| {
            v.iter()
                .all(same_in_every_lane)
                .then(|| v.iter().map(|x| x.0[0]).collect())
        };
        Some(LegMatrices {
            bending: Banded {
                coef: shared_rows(&self.bending.coef)?,
            },
            geometric: Banded {
                coef: shared_rows(&self.geometric.coef)?,
            },
            geometric_form: NodeForm {
                coef: shared_rows(&self.geometric_form.coef)?,
            },
            p_lower: shared_rows(&self.p_lower)?,
            p_inv_d: rows(&self.p_inv_d)?,
            p_cols: shared_rows(&self.p_cols)?,
        })
    }
}

/// Whether every lane of x holds the same bits.
fn same_in_every_lane<const W: usize>(x: &L<W>) -> bool {
    x.0.iter().all(|y| y.to_bits() == x.0[0].to_bits())
}

/// Rows of K entries, once, where every lane holds each entry bit for bit.
fn shared_rows<const W: usize, const K: usize>(rows: &[[L<W>; K]]) -> Option<Vec<[f64; K]>> {
    rows.iter()
        .flatten()
        .all(same_in_every_lane)
        .then(|| rows.iter().map(|row| row.map(|x| x.0[0])).collect())
}

/// The six columns of row i of a component block (nodes k−1, k, k+1 of the value
/// and slope unknowns, k = i mod n, clamped at the ends where the coefficient is 0).
/// Computed, not looked up: with n known at compile time they are constants.
#[inline(always)]
pub fn band(n: usize, i: usize) -> [usize; 6] {
    let k = i % n;
    let (lo, hi) = (k.saturating_sub(1), (k + 1).min(n - 1));
    [lo, k, hi, n + lo, n + k, n + hi]
}

/// Which of [`band`]'s six columns of row i exist (at the end nodes the clamped ones
/// stand in for missing neighbours).
#[inline(always)]
pub fn band_present(n: usize, i: usize) -> [bool; 6] {
    let k = i % n;
    [k > 0, true, k + 1 < n, k > 0, true, k + 1 < n]
}

/// The internal couple's B_c or B_s by its distinct entries. Each is antisymmetric with
/// a zero diagonal (`CoupleMatrices`: d1ᵢd2ⱼ − d1ⱼd2ᵢ, exactly) and has the Hermite band,
/// so per node k five entries hold it: B[k][n+k] (the node's own value–slope pair), then
/// the block to node k + 1, B[k][k+1], B[k][n+k+1], B[n+k][k+1], B[n+k][n+k+1] (zero at
/// the last node). The rest of the band is their negatives or zero.
#[derive(Debug, Clone)]
pub struct CoupleBand<const W: usize> {
    pub entries: Vec<[L<W>; 5]>,
    /// Every entry of every lane is zero: B_c where k_A = 0 (the default, a standing
    /// wave), whose F has no cos θ part. The kernel then skips it (adding it is exact).
    pub zero: bool,
}

/// Row and column of entry `e` of node `k` in [`CoupleBand`] (n nodes).
#[inline(always)]
fn couple_entry(n: usize, k: usize, e: usize) -> (usize, usize) {
    match e {
        0 => (k, n + k),
        1 => (k, k + 1),
        2 => (k, n + k + 1),
        3 => (n + k, k + 1),
        _ => (n + k, n + k + 1),
    }
}

impl<const W: usize> CoupleBand<W> {
    fn new(lanes: &[&Dense; W], n: usize) -> Self {
        debug_assert!(lanes
            .iter()
            .all(|d| (0..2 * n).all(|i| (0..2 * n).all(|j| d.get(i, j) == -d.get(j, i)))));
        let entries = (0..n)
            .map(|k| {
                std::array::from_fn(|e| {
                    if e > 0 && k + 1 == n {
                        return L::zero();
                    }
                    let (i, j) = couple_entry(n, k, e);
                    L(std::array::from_fn(|lane| lanes[lane].get(i, j)))
                })
            })
            .collect::<Vec<[L<W>; 5]>>();
        let zero = entries
            .iter()
            .flatten()
            .all(|e| e.0.iter().all(|&x| x == 0.0));
        CoupleBand { entries, zero }
    }
}

/// A symmetric Hermite matrix A of one component block as its quadratic form xᵀAx
/// needs it: each pair of unknowns once. Node k's row holds, for its value v and
/// slope s and node k + 1's v′ and s′ (zeros at the last node),
/// [A_vv, A_ss, 2A_vs, 2A_vv′, 2A_vs′, 2A_sv′, 2A_ss′], so that
/// xᵀAx = Σ_k v(A_vv·v + 2A_vs·s + 2A_vv′·v′ + 2A_vs′·s′) + s(A_ss·s + 2A_sv′·v′ + 2A_ss′·s′):
/// seven products and two per node where the band's rows take twelve and two.
#[derive(Debug, Clone)]
pub struct NodeForm<E> {
    pub coef: Vec<[E; 7]>,
}

impl<const W: usize> NodeForm<L<W>> {
    fn new(lanes: &[&Dense; W], n: usize) -> Self {
        let coef = (0..n)
            .map(|k| {
                let (v, s) = (k, n + k);
                let pair = |i: usize, j: usize, twice: f64| {
                    L(std::array::from_fn(|l| twice * lanes[l].get(i, j)))
                };
                let own = [pair(v, v, 1.0), pair(s, s, 1.0), pair(v, s, 2.0)];
                let next = if k + 1 < n {
                    let (nv, ns) = (k + 1, n + k + 1);
                    [
                        pair(v, nv, 2.0),
                        pair(v, ns, 2.0),
                        pair(s, nv, 2.0),
                        pair(s, ns, 2.0),
                    ]
                } else {
                    [L::zero(); 4]
                };
                std::array::from_fn(|e| if e < 3 { own[e] } else { next[e - 3] })
            })
            .collect();
        NodeForm { coef }
    }
}

impl<const W: usize> Banded<L<W>> {
    fn new(lanes: &[&Dense; W], n: usize) -> Self {
        let coef = (0..2 * n)
            .map(|i| {
                let present = band_present(n, i);
                let mut row = [L::zero(); 6];
                for (c, slot) in row.iter_mut().enumerate() {
                    if present[c] {
                        for (j, d) in lanes.iter().enumerate() {
                            slot.0[j] = d.get(i, band(n, i)[c]);
                        }
                    }
                }
                row
            })
            .collect();
        Banded { coef }
    }
}

/// Constants of one block: W instance records gathered into lanes. Field names follow
/// the record (src/integrate/record.rs), itself named after `Params` and the model.
/// The lane vectors the kernel reads come first, from a cache-line boundary: each
/// starts a line at 8 lanes (a vector across two lines costs two loads).
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct BlockModel<const W: usize> {
    /// The table's kernel parameters and the derived constants, one lane each.
    pub p: KernelParams<L<W>>,
    pub d: Derived<L<W>>,
    /// Contact points P_1, P_2 in the body frame.
    pub p_points: [[L<W>; 2]; 2],
    pub n_legs: usize,
    pub n_nodes: usize,
    /// Per leg: target rate, servo gain (0 where passive) and its Woodbury scale.
    pub legs: Vec<Aligned<LegConstants<L<W>>>>,
    /// K, G and P⁻¹, one value per lane.
    pub matrices: LegMatrices<L<W>>,
    /// The same, once, where every lane has the same (`LegMatrices::shared`).
    pub shared: Option<LegMatrices<f64>>,
    /// h·ρg·load vector of the X component (the only one gravity acts on): the weight's
    /// impulse over one step.
    pub weight_impulse: Lanes<W>,
    /// Whether θ' = 0 in every lane (the default): bending at q, in the pass over q.
    pub explicit_bending: bool,
    /// Body points B_1..B_{N+2} in the body frame.
    pub b_points: Vec<Aligned<[L<W>; 2]>>,
    /// The internal couple's B_c, B_s where a lane has a couple (lanes without it hold
    /// zeros and add exact zeros); `None` where no lane has one, and the kick skips it.
    pub couple: Option<[CoupleBand<W>; 2]>,
    /// What the block's contact needs beyond the paper's flat line; lanes on flat
    /// ground hold zeros there and add exact zeros.
    pub ground: Ground<W>,
    /// A lane's springs have a cubic term or a damper (lanes without hold zeros and add
    /// exact zeros); without, the springs are the paper's linear ones.
    pub coupling_law: bool,
}

/// Which parts of the general contact (docs/model.md (T1)–(T4)) a block evaluates.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ground<const W: usize> {
    /// A lane's terrain is not flat: heights, slopes and tangents are evaluated.
    pub terrain: bool,
    /// The profile's harmonic coefficients (aₘ, bₘ) in use, m = 1..(the largest count
    /// over the lanes): gathered once, read by every contact point of every step.
    pub harmonics: Vec<[L<W>; 2]>,
    /// A lane has Coulomb friction at the tips (μ_C > 0).
    pub coulomb: bool,
}

/// The block's harmonic coefficients (aₘ, bₘ), m = 1..(the largest count over the
/// lanes): the first [`HARMONICS`] from the gathered constants, the rest from each
/// record's `terrain_extra` (zeros in lanes with fewer, which add exact zeros).
fn terrain_harmonics<const W: usize>(
    d: &Derived<L<W>>,
    r: &[&InstanceRecord; W],
) -> Vec<[L<W>; 2]> {
    let count = r.iter().map(|x| x.terrain_harmonics()).max().unwrap_or(0);
    let extra = (HARMONICS..count).map(|m| {
        let coef = |j: usize, k: usize| r[j].terrain_extra.get(m - HARMONICS).map_or(0.0, |c| c[k]);
        [
            L(std::array::from_fn(|j| coef(j, 0))),
            L(std::array::from_fn(|j| coef(j, 1))),
        ]
    });
    d.terrain_harmonics()
        .into_iter()
        .take(count)
        .chain(extra)
        .collect()
}

impl<const W: usize> BlockModel<W> {
    /// The block of `records` (all of one shape). Lanes beyond `records.len()` repeat
    /// the first record (padding).
    pub fn new(records: &[&InstanceRecord]) -> Self {
        assert!(!records.is_empty() && records.len() <= W);
        let r: [&InstanceRecord; W] = std::array::from_fn(|j| records[j.min(records.len() - 1)]);
        let (n_legs, n_nodes) = (r[0].n_legs, r[0].n_nodes);
        assert!(r.iter().all(|x| x.n_legs == n_legs && x.n_nodes == n_nodes));
        let per = |f: &dyn Fn(usize) -> f64| L(std::array::from_fn(f));
        let m = 2 * n_nodes;
        let p = KernelParams::gather(&r.map(|x| x.params), per);
        let d = Derived::gather(&r.map(|x| x.derived), per);
        let legs: Vec<_> = (0..n_legs)
            .map(|i| Aligned(LegConstants::gather(&r.map(|x| x.legs[i]), per)))
            .collect();
        let b_points = std::iter::once([d.b_first_x, d.b_first_y])
            .chain(legs.iter().map(|l| [l.b_point_x, l.b_point_y]))
            .chain(std::iter::once([d.b_last_x, d.b_last_y]))
            .map(Aligned)
            .collect();
        let couple = r.iter().any(|x| x.has_couple()).then(|| {
            let zero = Dense {
                nodes: Some(n_nodes),
                ..Dense::zeros(m)
            };
            let (mut cos, mut sin) = ([&zero; W], [&zero; W]);
            for (j, x) in r.iter().enumerate() {
                if let Some(c) = &x.matrices.couple {
                    (cos[j], sin[j]) = (&c.cos, &c.sin);
                }
            }
            [
                CoupleBand::new(&cos, n_nodes),
                CoupleBand::new(&sin, n_nodes),
            ]
        });
        let ground = Ground {
            terrain: r.iter().any(|x| !x.terrain_is_flat()),
            harmonics: terrain_harmonics(&d, &r),
            coulomb: r.iter().any(|x| x.params.mu_c != 0.0),
        };
        let matrices = LegMatrices::new(&r, n_nodes);
        BlockModel {
            couple,
            ground,
            coupling_law: r.iter().any(|x| x.has_coupling_law()),
            n_legs,
            n_nodes,
            shared: matrices.shared(),
            matrices,
            weight_impulse: Lanes::from_fn(m, |k| {
                per(&|j| r[j].h() * r[j].params.rho * r[j].params.g * r[j].matrices.load[k])
            }),
            explicit_bending: d.theta_h.0.iter().all(|&x| x == 0.0),
            b_points,
            p_points: [[d.p_first_x, d.p_first_y], [d.p_second_x, d.p_second_y]],
            p,
            d,
            legs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::axoneme::CoupleMatrices;
    use crate::params::Params;

    /// The kernel reads the couple's matrices from their distinct entries only: B_c and
    /// B_s must be exactly antisymmetric and zero outside the Hermite band, so that the
    /// entries of [`CoupleBand`] and their mirrors give back every entry, bit for bit.
    #[test]
    fn the_couple_band_gives_back_the_whole_matrices() {
        for (n, k_a) in [(2, 0.0), (5, 0.0), (5, 3.0), (12, 1.5)] {
            let mut p = Params::default();
            for o in [
                format!("n_nodes={n}"),
                format!("axo_k={k_a}"),
                "axo_f=100".into(),
            ] {
                p.apply_override(&o).unwrap();
            }
            let c = CoupleMatrices::new(&p);
            let m = 2 * n;
            for (d, name) in [(&c.cos, "B_c"), (&c.sin, "B_s")] {
                let band = CoupleBand::<1>::new(&[d], n);
                let mut full = vec![0.0; m * m];
                for node in 0..n {
                    let used = if node + 1 < n { 5 } else { 1 };
                    for e in 0..used {
                        let (i, j) = couple_entry(n, node, e);
                        full[i * m + j] = band.entries[node][e].0[0];
                        full[j * m + i] = -band.entries[node][e].0[0];
                    }
                }
                for i in 0..m {
                    for j in 0..m {
                        assert_eq!(d.get(i, j), full[i * m + j], "{name} n={n} ({i}, {j})");
                    }
                }
                // B_c vanishes exactly for a standing wave (k_A = 0); the kernel skips it.
                let zero = d.a.iter().all(|&x| x == 0.0);
                assert_eq!(band.zero, zero, "{name} n={n}");
                assert_eq!(zero, name == "B_c" && k_a == 0.0, "{name} n={n} k_A={k_a}");
            }
        }
    }

    /// Lanes that differ only in gains share their leg matrices, entry for entry; a
    /// lane with another mass density (another P) does not.
    #[test]
    fn lanes_share_their_matrices_only_where_every_entry_is_the_same() {
        use crate::model::Robot;
        let record = |o: &str| {
            let mut p = Params::default();
            p.apply_override(o).unwrap();
            InstanceRecord::new(&Robot::new(&p), 2e-4, 0.0)
        };
        let (a, b, c) = (record("k_p=3"), record("k_p=300"), record("rho=1.2"));
        let same = BlockModel::<4>::new(&[&a, &b, &a]);
        let shared = same
            .shared
            .as_ref()
            .expect("gains alone leave the matrices alike");
        assert_eq!(shared.p_inv_d, a.matrices.p_factor.inv_d);
        assert_eq!(shared.p_lower, a.matrices.p_factor.neg_lower);
        // Each shared entry is every lane's entry, bit for bit.
        let every_lane = |x: f64, l: &L<4>| l.0.iter().all(|y| y.to_bits() == x.to_bits());
        for (mine, lanes) in [
            (&shared.bending, &same.matrices.bending),
            (&shared.geometric, &same.matrices.geometric),
        ] {
            let pairs = mine.coef.iter().flatten().zip(lanes.coef.iter().flatten());
            assert!(
                pairs.clone().count() == 60 && pairs.into_iter().all(|(&x, l)| every_lane(x, l))
            );
        }
        let form = shared.geometric_form.coef.iter().flatten();
        assert!(form
            .zip(same.matrices.geometric_form.coef.iter().flatten())
            .all(|(&x, l)| every_lane(x, l)));
        let cols = shared.p_cols.iter().flatten();
        assert!(cols
            .zip(same.matrices.p_cols.iter().flatten())
            .all(|(&x, l)| every_lane(x, l)));
        assert!(shared
            .p_lower
            .iter()
            .flatten()
            .zip(same.matrices.p_lower.iter().flatten())
            .all(|(&x, l)| every_lane(x, l)));
        assert!(BlockModel::<4>::new(&[&a, &c]).shared.is_none());
    }
}
