#!/usr/bin/env python3
"""Compare a refined atlas dataset with its dense twin (docs/atlas.md).

    python3 tests/python/compare_refined.py REFINED_DIR DENSE_DIR X_PARAM Y_PARAM

Reads both datasets with DuckDB. Every refined row must equal the dense row of the
same point id (class, and every metric bit for bit). The refined map is then inferred
at every lattice point of the dense run: a computed point as it is; any other from the
smallest cell around it (spacing 1, 2, 4, ... lattice steps) whose corners were all
computed: their common class, or the nearest corner's when they disagree. Prints the
points run (and % of the dense lattice) and the lattice points whose inferred class
differs from the dense run's.
"""
import math
import sys

import duckdb


def rows(d, x, y):
    q = f"SELECT point_id, {x}, {y}, class, t_run, lag_order, mean_lag FROM '{d}/**/*.parquet'"
    return {r[0]: r[1:] for r in duckdb.sql(q).fetchall()}


def main():
    refined_dir, dense_dir, x, y = sys.argv[1:5]
    refined, dense = rows(refined_dir, x, y), rows(dense_dir, x, y)
    same = sum(1 for pid, r in refined.items() if dense.get(pid) == r)
    xs = sorted({r[0] for r in dense.values()})
    ys = sorted({r[1] for r in dense.values()})
    ix, iy = {v: i for i, v in enumerate(xs)}, {v: j for j, v in enumerate(ys)}
    dense_at = {(ix[r[0]], iy[r[1]]): r[2] for r in dense.values()}
    known = {}
    for r in refined.values():
        known[(ix[r[0]], iy[r[1]])] = r[2]
    nx, ny = len(xs), len(ys)

    def inferred(i, j):
        if (i, j) in known:
            return known[(i, j)]
        s = 1
        while s < max(nx, ny):
            i0, j0 = (i // s) * s, (j // s) * s
            i1, j1 = min(i0 + s if i % s else i0, nx - 1), min(j0 + s if j % s else j0, ny - 1)
            corners = [(a, b) for a in {i0, i1} for b in {j0, j1}]
            if all(c in known for c in corners):
                classes = {known[c] for c in corners}
                if len(classes) == 1:
                    return classes.pop()
                near = min(corners, key=lambda c: (math.hypot(c[0] - i, c[1] - j), c))
                return known[near]
            s *= 2
        return None

    differ = []
    for (i, j), c in sorted(dense_at.items()):
        got = inferred(i, j)
        if got != c:
            differ.append((xs[i], ys[j], got, c))
    print(f"refined points: {len(refined)} of {len(dense)} lattice points "
          f"({100.0 * len(refined) / len(dense):.1f} %)")
    print(f"refined rows equal to the dense rows of the same id: {same} of {len(refined)}")
    print(f"lattice points whose inferred class differs from the dense run: {len(differ)} "
          f"({100.0 * len(differ) / len(dense):.2f} %)")
    for d in differ:
        print(f"  {x} = {d[0]:.6g}, {y} = {d[1]:.6g}: refined {d[2]}, dense {d[3]}")


if __name__ == "__main__":
    main()
