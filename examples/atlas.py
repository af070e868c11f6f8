"""A walk through metachron from Python: the paper's run, one small sweep, its summary
and a map. Run it from the checkout after installing the package (README, "From
Python"):

    python3 examples/atlas.py            # writes under out/py-atlas/ (seconds on 2 cores)

CI runs it (.ci/run).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import metachron

out = Path("out/py-atlas")
shutil.rmtree(out, ignore_errors=True)  # the walk starts afresh every time
out.mkdir(parents=True)

# 1. The paper's run: nine legs, 50 s, on the fixed-step cpu engine (the sweeps' scheme).
m, series = metachron.simulate(backend="cpu", series=True)
print(
    f"paper's run: status {m['status']}, class {m['class']}, mean lag "
    f"{math.degrees(m['mean_lag']):.1f} deg, walked {m['displacement']:.2f} m in "
    f"{m['t_final']:g} s ({series.num_rows} samples of {series.num_columns} columns)"
)

# The same point with only leg 1 driven and weak springs: does the wave survive?
weak = metachron.simulate(alpha=50, beta=50, actuated="first", t_final=20)
print(f"weak coupling, leg 1 driven: class {weak['class']}, lag order {weak['lag_order']:.3f}")

# 2. One small sweep: alpha x beta, 4 x 4 points of 3 s (sweeps/first.toml), with a
# progress bar. Ctrl-C stops it after the chunk in flight; running this again resumes.
ds = metachron.sweep("sweeps/first.toml", out=out / "first")
print(ds)

# 3. Its summary: one row per (alpha, beta), class fractions with Wilson 95 % intervals;
# then the runs pooled per alpha (all betas together).
summary = ds.summarize()
print(f"summary: {summary.num_rows} combinations, columns {', '.join(summary.column_names[:6])}, ...")
for row in ds.summarize(by="alpha").to_pylist():
    print(
        f"  alpha = {row['alpha']:8.1f} N/m: {row['n_runs']} runs, unlocked "
        f"{row['fraction_unlocked']:.2f} [{row['fraction_unlocked_lo']:.2f}, "
        f"{row['fraction_unlocked_hi']:.2f}], mean lag order {row['lag_order_mean_unlocked']:.3f}"
    )

# 4. A map: the lag order over alpha x beta, as data (one entry per cell) and, where
# matplotlib is installed, as a picture.
m = ds.map("alpha", "beta", "lag_order")
print(f"map: {len(m.runs)} cells, lag order from {min(m.value):.3f} to {max(m.value):.3f}")
try:
    import matplotlib

    matplotlib.use("Agg")
    ax = m.draw()
    ax.figure.savefig(out / "first-lag-order.png", dpi=100, bbox_inches="tight")
    print(f"map drawn -> {out / 'first-lag-order.png'}")
except ImportError:
    print("map not drawn: matplotlib is not installed (pip install matplotlib)")
