"""Every ```python block of README.md and docs/python.md runs as printed, from a
directory laid out as the checkout (its sweeps/ and examples/), as a reader would run it."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import REPO

FILES = ["README.md", "docs/python.md"]


def python_blocks(text: str) -> list:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_the_blocks_are_found():
    assert python_blocks("a\n```python\nx = 1\n```\n```sh\nls\n```\n") == ["x = 1\n"]
    assert python_blocks((REPO / "README.md").read_text())


@pytest.mark.parametrize("name", FILES)
def test_python_blocks_run_as_printed(name, tmp_path, monkeypatch):
    blocks = python_blocks((REPO / name).read_text())
    for d in ("sweeps", "examples"):
        shutil.copytree(REPO / d, tmp_path / d)
    monkeypatch.chdir(tmp_path)
    for k, code in enumerate(blocks):
        exec(compile(code, f"{name} (python block {k + 1})", "exec"), {"__name__": "__readme__"})
