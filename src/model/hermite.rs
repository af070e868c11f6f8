//! Cubic Hermite finite elements for one leg component: docs/model.md (1)-(6).
//!
//! One component (X or Y) of a leg has 2n unknowns ordered
//! `[value_1..value_n, slope_1..slope_n]` (a then b for X, c then d for Y).
//! Assembled matrices are stored dense row-major `2n x 2n` (n <= 12) and know that only
//! neighbouring nodes couple, so products visit the (up to) six nonzero columns of a row,
//! in increasing order: the same sums as the dense product, a third of the work (the
//! shader's `fe_mul` does the same).

/// A small square matrix stored dense, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Dense {
    pub n: usize,
    pub a: Vec<f64>,
    /// `Some(nodes)` for an assembled Hermite matrix: entry (i, j) is zero unless the
    /// nodes of i and j (index mod `nodes`) are equal or neighbours.
    pub nodes: Option<usize>,
}

impl Dense {
    pub fn zeros(n: usize) -> Self {
        Dense {
            n,
            a: vec![0.0; n * n],
            nodes: None,
        }
    }

    #[inline]
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.a[i * self.n + j]
    }

    #[inline]
    fn add(&mut self, i: usize, j: usize, x: f64) {
        self.a[i * self.n + j] += x;
    }

    /// y = A x
    #[inline]
    pub fn mul(&self, x: &[f64], y: &mut [f64]) {
        let n = self.n;
        match self.nodes {
            None => {
                for (i, yi) in y.iter_mut().enumerate().take(n) {
                    let row = &self.a[i * n..(i + 1) * n];
                    *yi = row.iter().zip(x).map(|(a, b)| a * b).sum();
                }
            }
            Some(nn) => {
                for (i, yi) in y.iter_mut().enumerate().take(n) {
                    *yi = self.banded_row(nn, i, x);
                }
            }
        }
    }

    /// Row i of A·x over the nonzero columns of a Hermite matrix, in increasing order:
    /// value columns k−1, k, k+1 then slope columns k−1, k, k+1 (k = node of row i).
    #[inline]
    fn banded_row(&self, nn: usize, i: usize, x: &[f64]) -> f64 {
        let row = &self.a[i * self.n..(i + 1) * self.n];
        let k = i % nn;
        let (rv, xv) = (&row[..nn], &x[..nn]);
        let (rs, xs) = (&row[nn..], &x[nn..2 * nn]);
        let mut s = 0.0;
        if k > 0 {
            s += rv[k - 1] * xv[k - 1];
        }
        s += rv[k] * xv[k];
        if k + 1 < nn {
            s += rv[k + 1] * xv[k + 1];
        }
        if k > 0 {
            s += rs[k - 1] * xs[k - 1];
        }
        s += rs[k] * xs[k];
        if k + 1 < nn {
            s += rs[k + 1] * xs[k + 1];
        }
        s
    }

    /// xᵀ A x (Σ_i x_i (A x)_i, in row order).
    pub fn quad(&self, x: &[f64]) -> f64 {
        let n = self.n;
        match self.nodes {
            None => (0..n)
                .map(|i| {
                    let row = &self.a[i * n..(i + 1) * n];
                    x[i] * row.iter().zip(x).map(|(a, b)| a * b).sum::<f64>()
                })
                .sum(),
            Some(nn) => (0..n).map(|i| x[i] * self.banded_row(nn, i, x)).sum(),
        }
    }

    pub fn scaled(&self, s: f64) -> Dense {
        Dense {
            n: self.n,
            a: self.a.iter().map(|x| x * s).collect(),
            nodes: self.nodes,
        }
    }

    /// Inverse by Gauss-Jordan with partial pivoting; `None` when singular.
    pub fn inverse(&self) -> Option<Dense> {
        let n = self.n;
        let mut m = self.a.clone();
        let mut inv = Dense::zeros(n);
        for i in 0..n {
            inv.a[i * n + i] = 1.0;
        }
        for col in 0..n {
            let piv =
                (col..n).max_by(|&r, &s| m[r * n + col].abs().total_cmp(&m[s * n + col].abs()))?;
            if m[piv * n + col].abs() < 1e-300 {
                return None;
            }
            if piv != col {
                for j in 0..n {
                    m.swap(piv * n + j, col * n + j);
                    inv.a.swap(piv * n + j, col * n + j);
                }
            }
            let d = m[col * n + col];
            for j in 0..n {
                m[col * n + j] /= d;
                inv.a[col * n + j] /= d;
            }
            for r in 0..n {
                if r != col {
                    let f = m[r * n + col];
                    if f != 0.0 {
                        for j in 0..n {
                            m[r * n + j] -= f * m[col * n + j];
                            inv.a[r * n + j] -= f * inv.a[col * n + j];
                        }
                    }
                }
            }
        }
        Some(inv)
    }
}

/// Unknown of interleaved position t of a component block of n nodes: t = 2k is node k's
/// value, t = 2k + 1 its slope. In this order a Hermite matrix is banded, half-bandwidth 3.
#[inline(always)]
pub fn interleaved(n: usize, t: usize) -> usize {
    if t % 2 == 0 {
        t / 2
    } else {
        n + t / 2
    }
}

/// Whether L of [`BandLdlt`] may hold entry (t, t − k), k = 1..=3: a value row (even t)
/// reaches back to the previous node's value (k = 2), a slope row to it as well (k = 3).
/// Every other entry is zero, exactly (a band factor fills in only inside the profile).
#[inline(always)]
pub fn ldlt_present(t: usize, k: usize) -> bool {
    t >= k && (k < 3 || t % 2 == 1)
}

/// LDLᵀ of a symmetric positive definite Hermite matrix in the interleaved order
/// ([`interleaved`]): P = LDLᵀ with L unit lower triangular of half-bandwidth 3, no
/// pivoting. A solve costs about 5 multiply-adds per unknown where P⁻¹ costs 2n.
#[derive(Debug, Clone, PartialEq)]
pub struct BandLdlt {
    pub nodes: usize,
    /// −L(t, t − k) at index 3 − k (k = 3, 2, 1 in that order; zero where absent).
    pub neg_lower: Vec<[f64; 3]>,
    /// 1/D(t).
    pub inv_d: Vec<f64>,
}

impl BandLdlt {
    /// The factors of an assembled Hermite matrix; `None` when it is not positive
    /// definite (a pivot ≤ 0) or not a Hermite matrix.
    pub fn new(a: &Dense) -> Option<Self> {
        let n = a.nodes?;
        let m = 2 * n;
        let at = |t: usize, s: usize| a.get(interleaved(n, t), interleaved(n, s));
        let mut lower = vec![[0.0; 3]; m];
        let mut d = vec![0.0; m];
        for t in 0..m {
            for k in (1..=3).rev().filter(|&k| ldlt_present(t, k)) {
                let j = t - k;
                // Σ over the columns s < j that both rows t and j reach.
                let mut x = at(t, j);
                for kk in (k + 1..=3).filter(|&kk| ldlt_present(t, kk)) {
                    let s = t - kk;
                    if ldlt_present(j, j - s) {
                        x -= lower[t][3 - kk] * lower[j][3 - (j - s)] * d[s];
                    }
                }
                lower[t][3 - k] = x / d[j];
            }
            let mut dt = at(t, t);
            for k in (1..=3).filter(|&k| ldlt_present(t, k)) {
                dt -= lower[t][3 - k] * lower[t][3 - k] * d[t - k];
            }
            if dt.is_nan() || dt <= 0.0 {
                return None;
            }
            d[t] = dt;
        }
        Some(BandLdlt {
            nodes: n,
            neg_lower: lower.iter().map(|row| row.map(|x| -x)).collect(),
            inv_d: d.iter().map(|x| 1.0 / x).collect(),
        })
    }

    /// b ← P⁻¹b (b in the block's own order).
    pub fn solve(&self, b: &mut [f64]) {
        let (n, m) = (self.nodes, 2 * self.nodes);
        let mut y: Vec<f64> = (0..m).map(|t| b[interleaved(n, t)]).collect();
        for t in 0..m {
            for k in (1..=3).rev().filter(|&k| ldlt_present(t, k)) {
                y[t] = self.neg_lower[t][3 - k].mul_add(y[t - k], y[t]);
            }
        }
        for t in (0..m).rev() {
            y[t] *= self.inv_d[t];
            for k in (1..=3)
                .rev()
                .filter(|&k| t + k < m && ldlt_present(t + k, k))
            {
                y[t] = self.neg_lower[t + k][3 - k].mul_add(y[t + k], y[t]);
            }
        }
        for (t, yt) in y.into_iter().enumerate() {
            b[interleaved(n, t)] = yt;
        }
    }
}

/// Element mass matrix ∫HHᵀ for local order (value_L, slope_L, value_R, slope_R).
pub fn element_mass(h: f64) -> [[f64; 4]; 4] {
    let c = h / 420.0;
    [
        [156.0 * c, 22.0 * h * c, 54.0 * c, -13.0 * h * c],
        [
            22.0 * h * c,
            4.0 * h * h * c,
            13.0 * h * c,
            -3.0 * h * h * c,
        ],
        [54.0 * c, 13.0 * h * c, 156.0 * c, -22.0 * h * c],
        [
            -13.0 * h * c,
            -3.0 * h * h * c,
            -22.0 * h * c,
            4.0 * h * h * c,
        ],
    ]
}

/// Element bending matrix ∫H″H″ᵀ.
pub fn element_bending(h: f64) -> [[f64; 4]; 4] {
    let c = 1.0 / (h * h * h);
    [
        [12.0 * c, 6.0 * h * c, -12.0 * c, 6.0 * h * c],
        [6.0 * h * c, 4.0 * h * h * c, -6.0 * h * c, 2.0 * h * h * c],
        [-12.0 * c, -6.0 * h * c, 12.0 * c, -6.0 * h * c],
        [6.0 * h * c, 2.0 * h * h * c, -6.0 * h * c, 4.0 * h * h * c],
    ]
}

/// Element geometric matrix ∫H′H′ᵀ.
pub fn element_geometric(h: f64) -> [[f64; 4]; 4] {
    let c = 1.0 / (30.0 * h);
    [
        [36.0 * c, 3.0 * h * c, -36.0 * c, 3.0 * h * c],
        [3.0 * h * c, 4.0 * h * h * c, -3.0 * h * c, -h * h * c],
        [-36.0 * c, -3.0 * h * c, 36.0 * c, -3.0 * h * c],
        [3.0 * h * c, -h * h * c, -3.0 * h * c, 4.0 * h * h * c],
    ]
}

/// Element load vector ∫H.
pub fn element_load(h: f64) -> [f64; 4] {
    [h / 2.0, h * h / 12.0, h / 2.0, -h * h / 12.0]
}

/// Component-block indices of the local DOFs of element `e` (nodes e, e+1).
#[inline]
pub fn element_dofs(n_nodes: usize, e: usize) -> [usize; 4] {
    [e, n_nodes + e, e + 1, n_nodes + e + 1]
}

/// Assembled matrices of one component of one leg.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub mass: Dense,
    pub bending: Dense,
    pub geometric: Dense,
    pub load: Vec<f64>,
}

/// Assemble M, K, G, f for a leg of `n_nodes` nodes and length `length`.
pub fn assemble(n_nodes: usize, length: f64) -> Assembled {
    let dim = 2 * n_nodes;
    let h = length / (n_nodes - 1) as f64;
    let (me, ke, ge, fe) = (
        element_mass(h),
        element_bending(h),
        element_geometric(h),
        element_load(h),
    );
    let mut mass = Dense::zeros(dim);
    let mut bending = Dense::zeros(dim);
    let mut geometric = Dense::zeros(dim);
    let mut load = vec![0.0; dim];
    for e in 0..n_nodes - 1 {
        let d = element_dofs(n_nodes, e);
        for i in 0..4 {
            load[d[i]] += fe[i];
            for j in 0..4 {
                mass.add(d[i], d[j], me[i][j]);
                bending.add(d[i], d[j], ke[i][j]);
                geometric.add(d[i], d[j], ge[i][j]);
            }
        }
    }
    for m in [&mut mass, &mut bending, &mut geometric] {
        m.nodes = Some(n_nodes);
    }
    Assembled {
        mass,
        bending,
        geometric,
        load,
    }
}

/// Hermite shape functions and their s-derivatives at ξ on an element of length h.
pub fn shape(xi: f64, h: f64) -> ([f64; 4], [f64; 4]) {
    let (x2, x3) = (xi * xi, xi * xi * xi);
    let n = [
        1.0 - 3.0 * x2 + 2.0 * x3,
        h * (xi - 2.0 * x2 + x3),
        3.0 * x2 - 2.0 * x3,
        h * (x3 - x2),
    ];
    let dn = [
        (-6.0 * xi + 6.0 * x2) / h,
        1.0 - 4.0 * xi + 3.0 * x2,
        (6.0 * xi - 6.0 * x2) / h,
        3.0 * x2 - 2.0 * xi,
    ];
    (n, dn)
}

/// First and second s-derivatives of the Hermite shape functions at ξ on an element of
/// length h (the curvature's ingredients).
pub fn shape_derivatives(xi: f64, h: f64) -> ([f64; 4], [f64; 4]) {
    let x2 = xi * xi;
    let d1 = [
        (-6.0 * xi + 6.0 * x2) / h,
        1.0 - 4.0 * xi + 3.0 * x2,
        (6.0 * xi - 6.0 * x2) / h,
        3.0 * x2 - 2.0 * xi,
    ];
    let d2 = [
        (-6.0 + 12.0 * xi) / (h * h),
        (-4.0 + 6.0 * xi) / h,
        (6.0 - 12.0 * xi) / (h * h),
        (6.0 * xi - 2.0) / h,
    ];
    (d1, d2)
}

/// Interpolate one component (2n unknowns) at arc length `s` in [0, length].
pub fn interpolate(comp: &[f64], n_nodes: usize, length: f64, s: f64) -> f64 {
    let h = length / (n_nodes - 1) as f64;
    let e = ((s / h).floor() as usize).min(n_nodes - 2);
    let xi = (s - e as f64 * h) / h;
    let (nf, _) = shape(xi, h);
    let d = element_dofs(n_nodes, e);
    (0..4).map(|i| nf[i] * comp[d[i]]).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mass_integrates_to_length_and_load_matches() {
        for n in [2, 3, 5, 8] {
            let a = assemble(n, 1.3);
            // Σ over value DOFs of M (times the constant-1 field: values 1, slopes 0).
            let mut ones = vec![0.0; 2 * n];
            ones[..n].fill(1.0);
            assert!((a.mass.quad(&ones) - 1.3).abs() < 1e-12);
            let s: f64 = a.load[..n].iter().sum();
            assert!((s - 1.3).abs() < 1e-12);
        }
    }

    #[test]
    fn geometric_quadratic_form_of_a_straight_unit_speed_leg_is_length() {
        let n = 5;
        let a = assemble(n, 2.0);
        let (psi, len) = (0.7_f64, 2.0);
        let h = len / (n - 1) as f64;
        let mut x = vec![0.0; 2 * n];
        let mut y = vec![0.0; 2 * n];
        for k in 0..n {
            let s = k as f64 * h;
            x[k] = s * psi.cos();
            x[n + k] = psi.cos();
            y[k] = 3.0 + s * psi.sin();
            y[n + k] = psi.sin();
        }
        let v = a.geometric.quad(&x) + a.geometric.quad(&y) - len;
        assert!(v.abs() < 1e-12, "V = {v}");
    }

    #[test]
    fn inverse_inverts() {
        let a = assemble(5, 1.0);
        let inv = a.mass.inverse().unwrap();
        for i in 0..10 {
            for j in 0..10 {
                let s: f64 = (0..10).map(|k| a.mass.get(i, k) * inv.get(k, j)).sum();
                assert!((s - if i == j { 1.0 } else { 0.0 }).abs() < 1e-9);
            }
        }
    }

    /// The band factor solves P x = b for the kick's P = (ρ + hζ)M + θh²K_M·K: P·x
    /// gives b back to round-off, and x is P⁻¹b by the dense inverse. A matrix that
    /// is not positive definite has no factor.
    #[test]
    fn band_ldlt_solves_the_kicks_matrix() {
        for (n, theta) in [(2, 0.0), (3, 0.5), (5, 0.0), (5, 1.0), (12, 0.5)] {
            let a = assemble(n, 1.7);
            let (rho_h, th2k) = (0.9, theta * 2.5e-4 * 2.5e-4 * 3e5);
            let mut p = a.mass.scaled(rho_h);
            for (x, k) in p.a.iter_mut().zip(&a.bending.a) {
                *x += th2k * k;
            }
            let f = BandLdlt::new(&p).expect("P is positive definite");
            let inv = p.inverse().unwrap();
            let m = 2 * n;
            let b: Vec<f64> = (0..m).map(|i| ((i * 7 + 3) % 11) as f64 - 5.0).collect();
            let mut x = b.clone();
            f.solve(&mut x);
            let mut back = vec![0.0; m];
            p.mul(&x, &mut back);
            let mut dense = vec![0.0; m];
            inv.mul(&b, &mut dense);
            let scale = x.iter().fold(0.0_f64, |s, v| s.max(v.abs()));
            for i in 0..m {
                assert!((back[i] - b[i]).abs() < 1e-12 * 5.0, "n={n} P·x row {i}");
                assert!((x[i] - dense[i]).abs() < 1e-12 * scale, "n={n} x[{i}]");
            }
        }
        let mut indefinite = assemble(3, 1.0).mass;
        indefinite.a[0] = -1.0;
        assert!(BandLdlt::new(&indefinite).is_none());
        assert!(
            BandLdlt::new(&Dense::zeros(4)).is_none(),
            "not a Hermite matrix"
        );
    }
}
