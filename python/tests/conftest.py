"""What the tests compare against: the command line built from the same checkout
(`cargo build --release` or `cargo test --release` puts it in target/release/), or the
binary METACHRON_BIN names."""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path
from typing import Any, List

import pytest

REPO = Path(__file__).resolve().parents[2]


def cli_path() -> Path:
    path = Path(os.environ.get("METACHRON_BIN", REPO / "target" / "release" / "metachron"))
    if not path.is_file():
        pytest.fail(
            f"{path}: no metachron binary to compare with; run `cargo build --release` first "
            "(or set METACHRON_BIN)"
        )
    return path


def cli(*args: Any, check: bool = True, cwd: Any = None) -> subprocess.CompletedProcess:
    """Run the command line; its stdout, stderr and exit code."""
    r = subprocess.run(
        [str(cli_path()), *map(str, args)], capture_output=True, text=True, cwd=cwd
    )
    if check and r.returncode != 0:
        raise AssertionError(f"metachron {' '.join(map(str, args))}: exit {r.returncode}\n{r.stderr}")
    return r


def same(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to NaN (lists element by element)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def differences(a: dict, b: dict) -> List[str]:
    keys = sorted(set(a) | set(b))
    return [f"{k}: {a.get(k, '<absent>')!r} != {b.get(k, '<absent>')!r}" for k in keys if not same(a.get(k), b.get(k))]


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    """A sweep of 12 points of 4 s (a second or two on 2 cores), 3 x 2 combinations
    times 2 repeats."""
    f = tmp_path / "small.toml"
    f.write_text(
        """name = "py-small"
repeats = 2
[base]
t_final = 4.0
actuated = "first"
[[axes]]
param = "alpha"
logspace = { start = 50.0, stop = 5000.0, num = 3 }
[[axes]]
param = "beta"
values = [50.0, 500.0]
"""
    )
    return f
