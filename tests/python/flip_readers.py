#!/usr/bin/env python3
"""Which readers fail on each of some Parquet files (byte-flipped copies of a part).

usage: flip_readers.py FILE...

Prints one line per file: the file, then the readers (pyarrow, duckdb, polars) that
raise an error reading all of its rows, comma-separated ("-" when none). A reader
that is not installed is reported on stderr and counted as not failing; with
METACHRON_REQUIRE_PYTHON=1 a missing reader is an error.

The files are read in a worker process: a reader that kills it (an abort, a crash)
fails on the file it was reading, and a new worker goes on with the rest.
"""
import os
import subprocess
import sys

NAMES = ["pyarrow", "duckdb", "polars"]


def load_readers():
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
    return readers, missing


def worker(start, skip, files):
    """Read files[start:], each with every reader (those in `skip` not for the first),
    saying on stdout which it starts (S) and how it ended (R, 1 when it failed)."""
    readers, _ = load_readers()
    for i in range(start, len(files)):
        for name, read in readers.items():
            if i == start and name in skip:
                continue
            print(f"S\t{i}\t{name}", flush=True)
            try:
                read(files[i])
                failed = 0
            except BaseException:  # a reader's panic is a failure too (pyo3 PanicException)
                failed = 1
            print(f"R\t{i}\t{name}\t{failed}", flush=True)
    return 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        start, skip = int(sys.argv[2]), set(filter(None, sys.argv[3].split(",")))
        return worker(start, skip, sys.argv[4:])
    _, missing = load_readers()
    if missing:
        print(f"flip_readers.py: not installed: {', '.join(missing)}", file=sys.stderr)
        if os.environ.get("METACHRON_REQUIRE_PYTHON") == "1":
            return 2
    files = sys.argv[1:]
    broken = [set() for _ in files]
    start, skip = 0, set()
    while start < len(files):
        child = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(start), ",".join(sorted(skip)), *files],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        pending = None
        done = {}  # file index -> readers finished
        for line in child.stdout:
            parts = line.rstrip("\n").split("\t")
            i, name = int(parts[1]), parts[2]
            if parts[0] == "S":
                pending = (i, name)
            else:
                pending = None
                done.setdefault(i, set()).add(name)
                if parts[3] == "1":
                    broken[i].add(name)
        child.wait()
        if pending is None:
            if child.returncode != 0:
                print(f"flip_readers.py: the worker ended with {child.returncode}", file=sys.stderr)
                return 3
            break
        # The worker died reading files[i] with `name`: that reader fails on it.
        i, name = pending
        broken[i].add(name)
        start, skip = i, done.get(i, set()) | {name} | (skip if i == start else set())
    for f, b in zip(files, broken):
        names = [n for n in NAMES if n in b]
        print(f"{f}\t{','.join(names) or '-'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
