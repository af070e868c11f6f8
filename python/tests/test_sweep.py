"""`sweep` and `open` against `metachron sweep`, `check` and `summarize`: the same rows,
Ctrl-C loses nothing, a corrupted dataset is refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import metachron
from conftest import cli, differences


def rows(table: pa.Table) -> list:
    return table.sort_by("point_id").to_pylist()


def assert_same_rows(got: pa.Table, want: pa.Table) -> None:
    assert got.column_names == want.column_names
    a, b = rows(got), rows(want)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert not differences(x, y), (x["point_id"], differences(x, y))


def cli_rows(out: Path) -> pa.Table:
    """The CLI's dataset as DuckDB or polars would read it: every part file."""
    parts = sorted(out.glob("shard=*/part-*.parquet"))
    return pa.concat_tables([pq.read_table(p) for p in parts])


def test_a_small_sweep_equals_the_clis_dataset_row_for_row(tmp_path, sweep_file):
    cli("sweep", sweep_file, "--out", tmp_path / "cli", "--batch", "4", "--quiet")
    ds = metachron.sweep(sweep_file, out=tmp_path / "py", batch=4, progress=False)
    assert ds.table().num_rows == 12
    assert_same_rows(ds.table(), cli_rows(tmp_path / "cli"))
    # The dataset the package wrote passes the CLI's check.
    cli("check", tmp_path / "py")
    assert ds.check()["complete"] is True


def test_a_sweep_given_as_a_dict_runs_the_same_points(tmp_path, sweep_file):
    spec = {
        "name": "py-small",
        "repeats": 2,
        "base": {"t_final": 4.0, "actuated": "first"},
        "axes": [
            {"param": "alpha", "logspace": {"start": 50.0, "stop": 5000.0, "num": 3}},
            {"param": "beta", "values": [50.0, 500.0]},
        ],
    }
    cli("sweep", sweep_file, "--out", tmp_path / "cli", "--batch", "4", "--quiet")
    ds = metachron.sweep(spec, out=tmp_path / "py", batch=4, progress=False)
    assert_same_rows(ds.table(), cli_rows(tmp_path / "cli"))


def test_ctrl_c_then_resume_loses_nothing(tmp_path, sweep_file):
    out = tmp_path / "py"
    script = textwrap.dedent(
        f"""
        import metachron
        metachron.sweep({str(sweep_file)!r}, out={str(out)!r}, batch=1, progress=False)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    # Interrupt once the first chunk is written, as a user pressing Ctrl-C would.
    deadline = time.time() + 60
    while not list(out.glob("shard=*/part-*.parquet")) and time.time() < deadline:
        if p.poll() is not None:
            break
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0, "the sweep ended before the interrupt: make it longer"
    assert "KeyboardInterrupt" in err, err
    written = len(list(out.glob("shard=*/part-*.parquet")))
    assert 1 <= written < 12
    # Nothing half-written stays behind, and what was written is sound.
    assert not [f for f in out.rglob("*") if f.is_file() and ".tmp" in f.name]
    r = cli("check", out, check=False)
    assert r.returncode == 1 and "missing" in r.stdout, r.stdout
    # resume runs the rest: the dataset then equals an uninterrupted CLI run's.
    ds = metachron.sweep(sweep_file, out=out, batch=1, resume=True, progress=False)
    cli("sweep", sweep_file, "--out", tmp_path / "cli", "--batch", "1", "--quiet")
    assert_same_rows(ds.table(), cli_rows(tmp_path / "cli"))
    cli("check", out)


def test_open_refuses_a_corrupted_dataset_as_check_does(tmp_path, sweep_file):
    out = tmp_path / "ds"
    cli("sweep", sweep_file, "--out", out, "--batch", "4", "--quiet")
    assert metachron.open(out).table().num_rows == 12
    part = sorted(out.glob("shard=*/part-*.parquet"))[1]
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    assert cli("check", out, check=False).returncode == 1
    with pytest.raises(metachron.DatasetError) as e:
        metachron.open(out)
    assert str(out) in str(e.value) and "metachron check" in str(e.value)
    # Its good parts only, when asked, and it says why.
    ds = metachron.open(out, allow_incomplete=True)
    assert ds.incomplete and ds.table().num_rows == 8


def test_open_refuses_what_is_no_dataset(tmp_path):
    with pytest.raises(metachron.DatasetError, match="no dataset here"):
        metachron.open(tmp_path)
    with pytest.raises(metachron.DatasetError, match="not a directory"):
        metachron.open(tmp_path / "absent")


def test_summarize_and_map_give_the_clis_figures(tmp_path, sweep_file):
    out = tmp_path / "ds"
    cli("sweep", sweep_file, "--out", out, "--batch", "4", "--quiet")
    cli("summarize", out, "--out", tmp_path / "summary.parquet")
    ds = metachron.open(out)
    got = ds.summarize()
    want = pq.read_table(tmp_path / "summary.parquet")
    assert got.column_names == want.column_names
    assert not [differences(a, b) for a, b in zip(got.to_pylist(), want.to_pylist()) if differences(a, b)]
    # One facet, and the combinations pooled by one axis.
    assert ds.summarize(where={"beta": 50.0}).num_rows == 3
    by = ds.summarize(by="alpha")
    assert by.num_rows == 3 and "beta" not in by.column_names

    printed = cli("map", out, "--x", "alpha", "--y", "beta", "--metric", "lag_order",
                  "--out", tmp_path / "m.png").stdout
    m = ds.map("alpha", "beta", "lag_order")
    filled = sum(1 for v in m.value if v == v)
    assert f"into {len(m.runs)} cells ({filled} filled, 2 runs per cell" in printed, printed
    assert (", x log" in printed, ", y log" in printed) == (m.x_log, m.y_log)
    assert m.value == pytest.approx(
        [sum(r["lag_order"] for r in rows(ds.table()) if r["alpha"] == a and r["beta"] == b) / 2
         for b in (50.0, 500.0) for a in sorted({r["alpha"] for r in rows(ds.table())})]
    )
    # A refusal says what the CLI says.
    with pytest.raises(metachron.ParameterError) as e:
        ds.map("alpha", "k_p")
    r = cli("map", out, "--x", "alpha", "--y", "k_p", "--out", tmp_path / "n.png", check=False)
    assert r.returncode == 2 and str(e.value) in r.stderr, (str(e.value), r.stderr)
    assert ds.map("alpha", "k_p", average=["beta"]).runs == [4, 4, 4]
