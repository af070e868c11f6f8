#!/usr/bin/env python3
"""Check that a sweep dataset opens in DuckDB and polars with no glue.

usage: check_dataset.py DIR EXPECTED_ROWS [SUMMARY.parquet]

Reads DIR/**/*.parquet with DuckDB (SQL over the glob) and polars.scan_parquet,
and checks row count, distinct point ids, typed parameter columns (per-leg lists
as list columns), units in the field metadata, the sweep text, the dataset format
and the scheme that ran (a cpu sweep: the fixed step's settings, not the
reference's) in the file metadata. With SUMMARY (`metachron summarize DIR --out
SUMMARY`): integers stay integers and per-leg lists stay lists there too.
"""
import glob
import json
import sys

import duckdb
import polars as pl


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    d, expected = sys.argv[1], int(sys.argv[2])
    summary = sys.argv[3] if len(sys.argv) == 4 else None
    pattern = f"{d}/**/*.parquet"

    con = duckdb.connect()
    n, ids, classes = con.execute(
        f"SELECT count(*), count(DISTINCT point_id), count(DISTINCT class) FROM '{pattern}'"
    ).fetchone()
    assert n == expected and ids == expected, (n, ids, expected)
    cols = {r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM '{pattern}'").fetchall()}
    assert cols["point_id"] == "UBIGINT", cols["point_id"]
    assert cols["alpha"] == "DOUBLE" and cols["n_legs"] == "UINTEGER", (cols["alpha"], cols["n_legs"])
    assert cols["class"] == "VARCHAR" and cols["step"] == "DOUBLE"
    # Per-leg lists are list columns, like the per-pair metrics.
    for name, typ in [
        ("actuated", "BOOLEAN[]"),
        ("axo_actuated", "BOOLEAN[]"),
        ("psi_init", "DOUBLE[]"),
        ("omega_legs", "DOUBLE[]"),
        ("pair_lag", "DOUBLE[]"),
    ]:
        assert cols[name] == typ, (name, cols[name])
    assert cols["level"] == "UINTEGER", cols["level"]
    n_legs, mask = con.execute(
        f"SELECT n_legs, actuated FROM '{pattern}' ORDER BY point_id LIMIT 1"
    ).fetchone()
    assert len(mask) == n_legs and all(mask), mask
    by_class = con.execute(
        f"SELECT class, count(*), avg(lag_order) FROM '{pattern}' GROUP BY class ORDER BY class"
    ).fetchall()
    meta = dict(
        (k.decode(), v.decode())
        for k, v in con.execute(
            f"SELECT key, value FROM parquet_kv_metadata('{pattern}')"
        ).fetchall()
    )
    assert "[[axes]]" in meta["metachron.sweep"], "sweep text in the file metadata"
    assert meta["metachron.backend"] == "cpu", meta["metachron.backend"]
    assert meta["metachron.format"] == "3", meta.get("metachron.format")
    # The scheme that ran and its settings; the reference's tolerances are not claimed.
    assert meta["metachron.scheme"] == "dkd-dc", meta["metachron.scheme"]
    assert "max_step" in meta["metachron.fixed_step"], meta["metachron.fixed_step"]
    assert "metachron.solver" not in meta, "a cpu sweep records no reference settings"

    lf = pl.scan_parquet(pattern)
    df = lf.select(["point_id", "alpha", "beta", "class", "lag_order", "status"]).collect()
    assert df.height == expected, df.height
    assert df["point_id"].n_unique() == expected
    assert df.schema["alpha"] == pl.Float64 and df.schema["point_id"] == pl.UInt64, df.schema
    agg = (
        lf.group_by("class").agg(pl.len().alias("n"), pl.col("lag_order").mean()).sort("class").collect()
    )
    assert agg["n"].sum() == expected

    # Units in the field metadata (Arrow schema stored in the footer).
    try:
        import pyarrow.parquet as pq

        f = sorted(glob.glob(pattern, recursive=True))[0]
        field = pq.read_schema(f).field("alpha")
        assert field.metadata[b"unit"] == b"N/m", field.metadata
        unit_note = "units ok (pyarrow)"
    except ImportError:
        unit_note = "pyarrow absent: units not checked here (tests/suite/sweep_resume.rs does)"

    if summary is not None:
        scols = {
            r[0]: r[1]
            for r in con.execute(f"DESCRIBE SELECT * FROM '{summary}'").fetchall()
        }
        for name, typ in [
            ("level", "UINTEGER"),
            ("n_legs", "UINTEGER"),
            ("n_nodes", "UINTEGER"),
            ("n_runs", "UINTEGER"),
            ("actuated", "BOOLEAN[]"),
            ("axo_actuated", "BOOLEAN[]"),
            ("omega_legs", "DOUBLE[]"),
            ("alpha", "DOUBLE"),
        ]:
            assert scols[name] == typ, ("summary", name, scols[name])
        s = pl.read_parquet(summary)
        assert s.schema["n_legs"] == pl.UInt32 and s.schema["actuated"] == pl.List(pl.Boolean)
        assert s["n_runs"].sum() == expected

    print(
        json.dumps(
            {
                "rows": n,
                "classes": {c: k for c, k, _ in by_class},
                "duckdb": duckdb.__version__,
                "polars": pl.__version__,
                "units": unit_note,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
