#!/usr/bin/env python3
"""Which readers fail on each of some Parquet files (byte-flipped copies of a part).

usage: flip_readers.py FILE...

Prints one line per file: the file, then the readers (pyarrow, duckdb, polars) that
raise an error reading all of its rows, comma-separated ("-" when none). A reader
that is not installed is reported on stderr and counted as not failing; with
METACHRON_REQUIRE_PYTHON=1 a missing reader is an error.
"""
import os
import sys

readers = {}
missing = []
try:
    import pyarrow.parquet as pq

    readers["pyarrow"] = lambda f: pq.read_table(f).to_pylist()
except ImportError:
    missing.append("pyarrow")
try:
    import duckdb

    readers["duckdb"] = lambda f: duckdb.connect().execute(
        "SELECT * FROM read_parquet(?)", [f]
    ).fetchall()
except ImportError:
    missing.append("duckdb")
try:
    import polars as pl

    readers["polars"] = lambda f: pl.read_parquet(f).to_dicts()
except ImportError:
    missing.append("polars")


def main() -> int:
    if missing:
        print(f"flip_readers.py: not installed: {', '.join(missing)}", file=sys.stderr)
        if os.environ.get("METACHRON_REQUIRE_PYTHON") == "1":
            return 2
    for f in sys.argv[1:]:
        broken = []
        for name, read in readers.items():
            try:
                read(f)
            except BaseException:  # a reader's panic is a failure too (pyo3 PanicException)
                broken.append(name)
        print(f"{f}\t{','.join(broken) or '-'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
