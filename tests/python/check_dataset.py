#!/usr/bin/env python3
"""Check that a sweep dataset opens in DuckDB and polars with no glue.

usage: check_dataset.py DIR EXPECTED_ROWS

Reads DIR/**/*.parquet with DuckDB (SQL over the glob) and polars.scan_parquet,
and checks row count, distinct point ids, typed parameter columns, units in the
field metadata and the sweep text in the file metadata.
"""
import glob
import json
import sys

import duckdb
import polars as pl


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    d, expected = sys.argv[1], int(sys.argv[2])
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
    assert meta["metachron.backend"], meta

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
        unit_note = "pyarrow absent: units not checked here (tests/sweep_resume.rs does)"

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
