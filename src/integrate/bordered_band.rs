//! LU with partial pivoting for a matrix that is banded except for a dense border
//! (its last `border` rows and columns).
//!
//! This is the shape of the robot's Newton matrix: leg i couples to legs i±1 only
//! through their base nodes (a band of width ~2·4n around the diagonal) and every leg
//! couples to the three body unknowns (the border). The factorisation costs
//! O(n·(wl+border)·(wl+wu+border)) instead of O(n³).

/// Dense storage, band-limited elimination.
#[derive(Debug, Clone)]
pub struct BorderedBand {
    pub n: usize,
    /// Rows/columns `n - border .. n` are dense.
    pub border: usize,
    /// Lower and upper bandwidth of the banded part.
    pub wl: usize,
    pub wu: usize,
    /// Row-major n×n; after `factor` holds L (unit, below diagonal) and U.
    pub a: Vec<f64>,
    piv: Vec<usize>,
    /// Compact copies of the factors for fast, contiguous solves:
    /// L multipliers of band column k (`wl` band rows, then `border` rows) and
    /// U row k (`wl + wu` entries right of the diagonal, then `border` columns).
    lmul: Vec<f64>,
    urow: Vec<f64>,
}

/// The factorisation met a zero pivot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SingularMatrix {
    pub column: usize,
}

impl BorderedBand {
    pub fn new(n: usize, border: usize, wl: usize, wu: usize) -> Self {
        BorderedBand {
            n,
            border,
            wl,
            wu,
            a: vec![0.0; n * n],
            piv: vec![0; n],
            lmul: vec![0.0; n * (wl + border)],
            urow: vec![0.0; n * (wl + wu + border)],
        }
    }

    #[inline]
    pub fn at(&mut self, r: usize, c: usize) -> &mut f64 {
        &mut self.a[r * self.n + c]
    }

    /// Columns of row `r` that may be non-zero before factorisation (band + border).
    pub fn pattern(
        &self,
        r: usize,
    ) -> std::iter::Chain<std::ops::Range<usize>, std::ops::Range<usize>> {
        let nb = self.nb();
        if r >= nb {
            return (0..0).chain(0..self.n);
        }
        (r.saturating_sub(self.wl)..(r + self.wu + 1).min(nb)).chain(nb..self.n)
    }

    fn nb(&self) -> usize {
        self.n - self.border
    }

    /// In-place LU. Pivots are searched in the band rows only (the border rows are
    /// eliminated like ordinary rows), then the trailing border block is factorised
    /// with full partial pivoting.
    pub fn factor(&mut self) -> Result<(), SingularMatrix> {
        let (n, nb) = (self.n, self.nb());
        let a = &mut self.a;
        for k in 0..nb {
            let rmax = (k + self.wl).min(nb - 1);
            let cmax = (k + self.wl + self.wu).min(nb - 1);
            let p = pivot(a, n, k, rmax + 1)?;
            self.piv[k] = p;
            if p != k {
                for c in (k..=cmax).chain(nb..n) {
                    a.swap(k * n + c, p * n + c);
                }
            }
            let d = a[k * n + k];
            for r in (k + 1..=rmax).chain(nb..n) {
                let m = a[r * n + k] / d;
                a[r * n + k] = m;
                if m != 0.0 {
                    let (head, tail) = a.split_at_mut(r * n);
                    let (rk, rr) = (&head[k * n..(k + 1) * n], &mut tail[..n]);
                    for (x, y) in rr[k + 1..=cmax].iter_mut().zip(&rk[k + 1..=cmax]) {
                        *x -= m * y;
                    }
                    for (x, y) in rr[nb..].iter_mut().zip(&rk[nb..]) {
                        *x -= m * y;
                    }
                }
            }
        }
        // Trailing dense block.
        for k in nb..n {
            let p = pivot(a, n, k, n)?;
            self.piv[k] = p;
            if p != k {
                for c in k..n {
                    a.swap(k * n + c, p * n + c);
                }
            }
            let d = a[k * n + k];
            for r in k + 1..n {
                let m = a[r * n + k] / d;
                a[r * n + k] = m;
                for c in k + 1..n {
                    a[r * n + c] -= m * a[k * n + c];
                }
            }
        }
        self.compact();
        Ok(())
    }

    /// Copy the band-column multipliers and the U rows into contiguous storage.
    fn compact(&mut self) {
        let (n, nb, bo) = (self.n, self.nb(), self.border);
        let (lw, uw) = (self.wl + bo, self.wl + self.wu + bo);
        self.lmul.fill(0.0);
        self.urow.fill(0.0);
        for k in 0..nb {
            let l = &mut self.lmul[k * lw..(k + 1) * lw];
            for (j, r) in (k + 1..(k + self.wl).min(nb - 1) + 1).enumerate() {
                l[j] = self.a[r * n + k];
            }
            for j in 0..bo {
                l[self.wl + j] = self.a[(nb + j) * n + k];
            }
            let u = &mut self.urow[k * uw..(k + 1) * uw];
            let cmax = (k + self.wl + self.wu).min(nb - 1);
            u[..cmax - k].copy_from_slice(&self.a[k * n + k + 1..k * n + cmax + 1]);
            u[self.wl + self.wu..].copy_from_slice(&self.a[k * n + nb..k * n + n]);
        }
    }

    /// Solve A x = b in place after `factor`.
    pub fn solve(&self, b: &mut [f64]) {
        let (n, nb, bo, a) = (self.n, self.nb(), self.border, &self.a);
        let (lw, uw, wl, wlu) = (
            self.wl + bo,
            self.wl + self.wu + bo,
            self.wl,
            self.wl + self.wu,
        );
        for k in 0..nb {
            b.swap(k, self.piv[k]);
            let bk = b[k];
            if bk != 0.0 {
                let l = &self.lmul[k * lw..(k + 1) * lw];
                let hi = (k + wl).min(nb - 1);
                for (x, m) in b[k + 1..=hi].iter_mut().zip(&l[..hi - k]) {
                    *x -= m * bk;
                }
                for (x, m) in b[nb..].iter_mut().zip(&l[wl..]) {
                    *x -= m * bk;
                }
            }
        }
        for k in nb..n {
            b.swap(k, self.piv[k]);
            let bk = b[k];
            for r in k + 1..n {
                b[r] -= a[r * n + k] * bk;
            }
        }
        for k in (nb..n).rev() {
            let mut s = b[k];
            for c in k + 1..n {
                s -= a[k * n + c] * b[c];
            }
            b[k] = s / a[k * n + k];
        }
        for k in (0..nb).rev() {
            let u = &self.urow[k * uw..(k + 1) * uw];
            let hi = (k + wlu).min(nb - 1);
            let mut s = b[k];
            s -= u[..hi - k]
                .iter()
                .zip(&b[k + 1..=hi])
                .map(|(x, y)| x * y)
                .sum::<f64>();
            s -= u[wlu..]
                .iter()
                .zip(&b[nb..])
                .map(|(x, y)| x * y)
                .sum::<f64>();
            b[k] = s / a[k * n + k];
        }
    }
}

/// Row of the largest |a[r][k]| for r in k..end (partial pivoting); an error when it is
/// zero or not finite.
fn pivot(a: &[f64], n: usize, k: usize, end: usize) -> Result<usize, SingularMatrix> {
    let mut p = k;
    for r in k + 1..end {
        if a[r * n + k].abs() > a[p * n + k].abs() {
            p = r;
        }
    }
    let v = a[p * n + k];
    if v == 0.0 || !v.is_finite() {
        return Err(SingularMatrix { column: k });
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random bordered-band matrix solved against nalgebra's dense LU.
    #[test]
    fn matches_dense_lu() {
        let (n, border, wl, wu) = (47, 3, 7, 5);
        let mut seed = 12345u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 10_000) as f64 / 5_000.0 - 1.0
        };
        let mut m = BorderedBand::new(n, border, wl, wu);
        let nb = n - border;
        for r in 0..n {
            for c in 0..n {
                let in_band = r < nb && c < nb && c + wl >= r && c <= r + wu;
                if in_band || r >= nb || c >= nb {
                    // Weak diagonal so that pivoting is exercised.
                    *m.at(r, c) = rnd() + if r == c { 0.1 } else { 0.0 };
                }
            }
        }
        let dense = nalgebra::DMatrix::from_row_slice(n, n, &m.a);
        let b: Vec<f64> = (0..n).map(|_| rnd()).collect();
        let expect = dense
            .lu()
            .solve(&nalgebra::DVector::from_vec(b.clone()))
            .unwrap();
        m.factor().unwrap();
        let mut x = b;
        m.solve(&mut x);
        for i in 0..n {
            assert!(
                (x[i] - expect[i]).abs() < 1e-9 * (1.0 + expect[i].abs()),
                "{i}: {} vs {}",
                x[i],
                expect[i]
            );
        }
    }
}
