// Finite-element matrix products on one component block (m = 2n unknowns: n nodal
// values, then n slopes). CPU twin: `Dense::mul` in src/model/hermite.rs. Hermite
// matrices couple only neighbouring nodes, so the sparse rows are summed over their
// nonzero columns in increasing order, the same sum as the dense CPU product.

alias LegVec = array<real, L>;

// y[off..off+m] = A x[off..off+m], A banded (mass, bending, geometric) at mats[a].
// Straight-line over the (up to) six nonzero columns: no inner loop, which keeps the
// kernel inside software adapters' per-invocation loop budget (see engine.rs).
fn fe_mul(a: u32, x: ptr<function, LegVec>, off: u32, y: ptr<function, LegVec>) {
    for (var r = 0u; r < M; r++) {
        let k = r % N_NODES;
        let row = a + r * M;
        var s = real(0.0);
        if k > 0u {
            s += mats[row + k - 1u] * (*x)[off + k - 1u];
        }
        s += mats[row + k] * (*x)[off + k];
        if k + 1u < N_NODES {
            s += mats[row + k + 1u] * (*x)[off + k + 1u];
        }
        let sl = row + N_NODES;
        let xs = off + N_NODES;
        if k > 0u {
            s += mats[sl + k - 1u] * (*x)[xs + k - 1u];
        }
        s += mats[sl + k] * (*x)[xs + k];
        if k + 1u < N_NODES {
            s += mats[sl + k + 1u] * (*x)[xs + k + 1u];
        }
        (*y)[off + r] = s;
    }
}

// y[off..off+m] = A x[off..off+m], A dense (P⁻¹) at mats[a].
fn dense_mul(a: u32, x: ptr<function, LegVec>, off: u32, y: ptr<function, LegVec>) {
    for (var r = 0u; r < M; r++) {
        var s = real(0.0);
        for (var c = 0u; c < M; c++) {
            s += mats[a + r * M + c] * (*x)[off + c];
        }
        (*y)[off + r] = s;
    }
}

// xᵀ A x over one block (A banded), the CPU's `Dense::quad`.
fn fe_quad(a: u32, x: ptr<function, LegVec>, off: u32) -> real {
    var y: LegVec;
    fe_mul(a, x, off, &y);
    var s = real(0.0);
    for (var r = 0u; r < M; r++) {
        s += (*x)[off + r] * y[off + r];
    }
    return s;
}
