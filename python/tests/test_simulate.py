"""`simulate` against `metachron simulate`: the same numbers, the same refusals."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

import metachron
from conftest import cli, differences


def test_the_papers_point_gives_the_clis_numbers(tmp_path):
    # The paper's robot for its 50 s on the cpu engine (about half a second of CPU).
    cli("simulate", "--backend", "cpu", "--quiet", "--metrics", tmp_path / "m.parquet",
        "--out", tmp_path / "ts.parquet")
    want = pq.read_table(tmp_path / "m.parquet").to_pylist()[0]
    got, series = metachron.simulate(backend="cpu", series=True)
    assert not differences(got, want), differences(got, want)
    assert got["status"] == "ok" and got["class"] == "metachronal"
    # Every metric of the vocabulary is there, named as the Parquet column.
    listed = [l.split()[0] for l in cli("columns").stdout.splitlines()[1:] if " metric " in l]
    assert listed and not [m for m in listed if m not in got]
    ts = pq.read_table(tmp_path / "ts.parquet")
    assert series.column_names == ts.column_names
    assert series.num_rows == ts.num_rows
    assert series.cast(ts.schema).equals(ts)


def test_parameters_and_settings_apply_as_set_does(tmp_path):
    cli("simulate", "--backend", "cpu", "--quiet", "--set", "n_legs=5", "--set",
        "actuated=1,0,1,0,1", "--set", "dphi=-90deg", "--set", "t_final=3",
        "--dt-out", "0.02", "--metrics", tmp_path / "m.parquet")
    want = pq.read_table(tmp_path / "m.parquet").to_pylist()[0]
    got = metachron.simulate(actuated=[1, 0, 1, 0, 1], n_legs=5, dphi="-90deg", t_final=3.0,
                             dt_out=0.02)
    assert not differences(got, want), differences(got, want)


def test_series_as_polars():
    pl = pytest.importorskip("polars")
    metrics, df = metachron.simulate(series="polars", t_final=1.0)
    assert isinstance(df, pl.DataFrame)
    assert df.height == 101 and "psi_1" in df.columns
    assert metrics["t_final"] == 1.0


def cli_error(*sets: str) -> str:
    args = [a for s in sets for a in ("--set", s)]
    r = cli("simulate", "--backend", "cpu", "--quiet", *args, check=False)
    assert r.returncode == 2, r.stderr
    (line,) = [l for l in r.stderr.splitlines() if l.startswith("error: ")]
    return line


def test_a_wrong_name_is_refused_with_the_clis_suggestion():
    with pytest.raises(metachron.ParameterError) as e:
        metachron.simulate(alpah=50)
    assert "did you mean `alpha`" in str(e.value)
    assert str(e.value) in cli_error("alpah=50")


def test_out_of_range_names_the_field_and_range_as_the_cli_does():
    with pytest.raises(metachron.ParameterError) as e:
        metachron.simulate(n_legs=1000)
    assert "n_legs" in str(e.value) and "allowed is" in str(e.value)
    assert str(e.value) in cli_error("n_legs=1000")
    with pytest.raises(metachron.ParameterError, match="allowed are cpu, reference, gpu"):
        metachron.simulate(backend="abacus")


def test_a_value_the_run_cannot_use_is_warned_of_as_the_cli_does():
    r = cli("simulate", "--backend", "cpu", "--quiet", "--set", "t_final=0.5", "--set",
            "terrain_height=0.01")
    (line,) = [l for l in r.stderr.splitlines() if l.startswith("warning: ")]
    with pytest.warns(UserWarning) as caught:
        metachron.simulate(t_final=0.5, terrain_height=0.01)
    assert [f"warning: {w.message}" for w in caught] == [line]
