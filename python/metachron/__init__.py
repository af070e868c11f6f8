"""metachron from Python: the library's runs, sweeps and datasets, without a subprocess.

- :func:`simulate` runs one point and returns its metrics (the ``--metrics`` file's row as
  a dict) and, when asked, its time series (the ``--out`` file's table);
- :func:`sweep` runs a sweep file (or the same structure as a dict) into a dataset, with a
  progress bar; Ctrl-C stops it after the chunk in flight, and ``resume=True`` runs the rest;
- :func:`open` verifies a dataset as ``metachron check`` does and gives its rows, its
  summary and its maps;
- :func:`params` is the parameter table ``metachron params`` prints.

Errors are :class:`MetachronError` (``ParameterError`` for a parameter or setting,
``DatasetError`` for a dataset) with the messages the command line prints.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import pyarrow as pa

from . import _native
from ._native import DatasetError, MetachronError, ParameterError

if TYPE_CHECKING:  # pragma: no cover
    import polars

__all__ = [
    "VERSION",
    "MetachronError",
    "ParameterError",
    "DatasetError",
    "simulate",
    "sweep",
    "open",
    "params",
    "Dataset",
    "MapData",
]

VERSION: str = _native.VERSION

PathLike = Union[str, "os.PathLike[str]"]


def _table(stream: Any) -> pa.Table:
    """A table from the extension's Arrow C stream (pyarrow takes the buffers, no copy)."""
    return pa.RecordBatchReader.from_stream(stream).read_all()


def _polars(table: pa.Table) -> "polars.DataFrame":
    try:
        import polars
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("polars is not installed: pip install polars") from e
    return polars.from_arrow(table)  # type: ignore[return-value]


def _set_text(value: Any) -> str:
    """A Python value written as ``--set KEY=VALUE`` reads it."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return ",".join(_set_text(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def simulate(
    backend: str = "cpu",
    series: Union[bool, str] = False,
    *,
    config: Optional[PathLike] = None,
    dt_out: Optional[float] = None,
    window_start: Optional[float] = None,
    point_timeout: Optional[float] = None,
    max_estimate: Optional[float] = None,
    **params: Any,
) -> Any:
    """Run one parameter point (the paper's robot by default), as ``metachron simulate``.

    ``params`` are model parameters by name (``alpha=50``, ``dphi="-90deg"``,
    ``actuated=[1, 0, 0, 0, 0, 0, 0, 0, 0]`` or ``"every_other"``), applied as ``--set``
    applies them, after ``config`` (a config file). ``backend``: ``"cpu"`` (the fixed-step
    engine of the sweeps), ``"reference"`` or ``"gpu"``.

    Returns the metrics row as a dict: every parameter, every metric, ``status``,
    ``class``, ``backend``, with the names of the ``--metrics`` file's columns. With
    ``series=True`` (or ``"pyarrow"``) returns ``(metrics, table)``, the time series as a
    :class:`pyarrow.Table` (the ``--out`` file's columns); ``series="polars"`` gives a
    polars DataFrame instead.
    """
    if series not in (False, True, "pyarrow", "polars"):
        raise ParameterError(f"series={series!r}: allowed are False, True, 'pyarrow', 'polars'")
    assignments = [f"{k}={_set_text(v)}" for k, v in params.items()]
    metrics, ts, warnings_ = _native.simulate(
        assignments,
        backend,
        bool(series),
        config=None if config is None else os.fspath(config),
        dt_out=dt_out,
        window_start=window_start,
        point_timeout=point_timeout,
        max_estimate=max_estimate,
    )
    if warnings_:
        import warnings

        for w in warnings_:  # a value the run cannot use is never ignored in silence
            warnings.warn(w, stacklevel=2)
    row: Dict[str, Any] = _table(metrics).to_pylist()[0]
    if not series:
        return row
    table = _table(ts)
    return row, (_polars(table) if series == "polars" else table)


# --- sweeps -----------------------------------------------------------------------


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise ParameterError(f"a sweep value of type {type(v).__name__} cannot be written to TOML: {v!r}")


def _toml_key(k: str) -> str:
    if k and all(c.isalnum() or c in "_-" for c in k):
        return k
    return _toml_value(str(k))


def _toml_table(d: Mapping[str, Any], path: List[str], out: List[str]) -> None:
    """Write `d` as TOML: its plain keys, then sub-tables `[a.b]` and arrays of tables."""
    tables: List[Tuple[str, Any, bool]] = []
    for k, v in d.items():
        if isinstance(v, Mapping):
            tables.append((k, v, False))
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, Mapping) for x in v):
            tables.append((k, v, True))
        else:
            out.append(f"{_toml_key(k)} = {_toml_value(v)}")
    for k, v, many in tables:
        sub = path + [_toml_key(k)]
        if many:
            for item in v:
                out.append("")
                out.append(f"[[{'.'.join(sub)}]]")
                _toml_table(item, sub, out)
        else:
            out.append("")
            out.append(f"[{'.'.join(sub)}]")
            _toml_table(v, sub, out)


def _toml_dumps(d: Mapping[str, Any]) -> str:
    out: List[str] = []
    _toml_table(d, [], out)
    return "\n".join(out) + "\n"


class _Bar:
    """The sweep's progress: tqdm.auto (a notebook bar in Jupyter, a terminal bar
    elsewhere) when tqdm is installed, else a line per tenth on stderr."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.total = 0
        self.label = ""
        self.shown = -1
        try:
            from tqdm.auto import tqdm

            self.tqdm: Optional[Callable[..., Any]] = tqdm
        except ImportError:
            self.tqdm = None

    def __call__(self, kind: str, text: str, n: int) -> None:
        if kind == "warning":
            import warnings

            warnings.warn(text, stacklevel=3)
            return
        if kind == "note":
            if self.enabled:
                self.close()
                print(text, file=sys.stderr)
            return
        if not self.enabled:
            return
        if kind == "stage":
            self.close()
            self.total, self.label, self.shown = n, text, -1
            if self.tqdm is not None:
                self.bar = self.tqdm(total=n, desc=text or "sweep", unit="points")
            else:
                print(f"{text or 'sweep'}: {n} points to run", file=sys.stderr)
        elif kind == "advance":
            if self.bar is not None:
                self.bar.update(n - self.bar.n)
            elif self.total:
                tenth = n * 10 // self.total
                if tenth > self.shown:
                    self.shown = tenth
                    print(f"{self.label or 'sweep'}: {n}/{self.total} points", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def sweep(
    spec: Union[PathLike, Mapping[str, Any]],
    out: PathLike,
    backend: str = "cpu",
    resume: bool = True,
    *,
    batch: Optional[int] = None,
    point_timeout: Optional[float] = None,
    until_settled: Optional[float] = None,
    max_estimate: Optional[float] = None,
    progress: bool = True,
) -> "Dataset":
    """Run a sweep into the dataset ``out``, as ``metachron sweep SPEC --out OUT``, and
    return the dataset, verified.

    ``spec`` is a sweep file's path or the same structure as a dict (``{"name": ...,
    "base": {...}, "axes": [{...}, ...]}``; see sweeps/README.md). ``resume=True`` (the
    default) continues a dataset that holds part of the sweep, running only what is
    missing (``--resume``); ``False`` refuses a directory that already holds parts.

    Ctrl-C (KeyboardInterrupt) stops the sweep once the chunk in flight is written:
    nothing is lost, and calling ``sweep`` again with ``resume=True`` runs the rest.
    """
    bar = _Bar(progress)
    kwargs: Dict[str, Any] = dict(
        batch=batch,
        point_timeout=point_timeout,
        until_settled=until_settled,
        max_estimate=max_estimate,
    )
    try:
        if isinstance(spec, Mapping):
            name = str(spec.get("name", "sweep"))
            _native.sweep(
                os.fspath(out), backend, resume, bar, text=_toml_dumps(spec), name=name, **kwargs
            )
        else:
            _native.sweep(os.fspath(out), backend, resume, bar, file=os.fspath(spec), **kwargs)
    except KeyboardInterrupt as e:
        bar.close()
        if hasattr(e, "add_note"):
            e.add_note(
                f"metachron: the sweep stopped after the chunk in flight; the chunks written "
                f"stay in {os.fspath(out)}: sweep(..., resume=True) runs the rest"
            )
        raise
    finally:
        bar.close()
    return open(out)


# --- datasets ---------------------------------------------------------------------


def _conditions(where: Optional[Mapping[str, Any]]) -> List[str]:
    return [f"{k}={_set_text(v)}" for k, v in (where or {}).items()]


@dataclass
class MapData:
    """What ``metachron map`` draws, one entry per tile: its extent in the parameters'
    own units (cell indices on a text axis, whose values are ``x_categories`` /
    ``y_categories``), its value (a fraction or a mean; NaN on a class map), its class (class
    maps), whether its Wilson interval is wide, and the runs it rests on."""

    x: str
    y: str
    metric: str
    x_log: bool
    y_log: bool
    x_categories: List[str]
    y_categories: List[str]
    x_lo: List[float]
    x_hi: List[float]
    y_lo: List[float]
    y_hi: List[float]
    value: List[float]
    klass: List[Optional[str]]
    wide: List[bool]
    runs: List[int]
    range: Tuple[float, float]
    title: List[str]
    what: str

    def table(self) -> pa.Table:
        """The tiles as a table (columns x_lo, x_hi, y_lo, y_hi, value, class, wide, runs)."""
        return pa.table(
            {
                "x_lo": self.x_lo,
                "x_hi": self.x_hi,
                "y_lo": self.y_lo,
                "y_hi": self.y_hi,
                "value": self.value,
                "class": self.klass,
                "wide": self.wide,
                "runs": self.runs,
            }
        )

    def draw(self, ax: Any = None) -> Any:
        """Draw the map on a matplotlib axes (a new figure's when ``ax`` is None) and
        return the axes. matplotlib is imported only here."""
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle

        if ax is None:
            _, ax = plt.subplots(figsize=(7, 5.5))
        cmap = plt.get_cmap("viridis")
        classes = sorted({c for c in self.klass if c})
        palette = {c: plt.get_cmap("tab10")(i % 10) for i, c in enumerate(classes)}
        lo, hi = self.range
        for k in range(len(self.runs)):
            klass = self.klass[k]
            if klass:
                colour: Any = palette[klass]
            elif math.isfinite(self.value[k]):
                colour = cmap((self.value[k] - lo) / (hi - lo) if hi > lo else 0.5)
            else:
                colour = (0.85, 0.85, 0.85, 1.0)
            w, h = self.x_hi[k] - self.x_lo[k], self.y_hi[k] - self.y_lo[k]
            ax.add_patch(
                Rectangle(
                    (self.x_lo[k], self.y_lo[k]),
                    w,
                    h,
                    facecolor=colour,
                    hatch="//" if self.wide[k] else None,
                    edgecolor="white" if self.wide[k] else colour,
                )
            )
        if self.x_log:
            ax.set_xscale("log")
        if self.y_log:
            ax.set_yscale("log")
        if self.x_lo:
            ax.set_xlim(min(self.x_lo), max(self.x_hi))
            ax.set_ylim(min(self.y_lo), max(self.y_hi))
        if self.x_categories:
            ax.set_xticks(range(len(self.x_categories)), self.x_categories)
        if self.y_categories:
            ax.set_yticks(range(len(self.y_categories)), self.y_categories)
        ax.set_xlabel(self.x)
        ax.set_ylabel(self.y)
        ax.set_title("\n".join(self.title))
        if classes:
            ax.legend(
                handles=[Rectangle((0, 0), 1, 1, color=palette[c]) for c in classes],
                labels=classes,
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
            )
        else:
            from matplotlib.cm import ScalarMappable
            from matplotlib.colors import Normalize

            sm = ScalarMappable(norm=Normalize(lo, hi), cmap=cmap)
            ax.figure.colorbar(sm, ax=ax, label=self.what)
        return ax


class Dataset:
    """A sweep's dataset, verified as ``metachron check`` verifies it (every byte of
    every part, unless opened with ``cached=True``): its rows, summary and maps."""

    def __init__(self, native: Any) -> None:
        self._v = native

    @property
    def dir(self) -> str:
        return str(os.fspath(self._v.dir))

    @property
    def name(self) -> str:
        """The sweep's name."""
        return str(self._v.name)

    @property
    def axes(self) -> List[str]:
        """The swept parameters."""
        return list(self._v.axes)

    @property
    def sweep_text(self) -> str:
        """The sweep file the dataset records (its manifest's)."""
        return str(self._v.sweep)

    @property
    def incomplete(self) -> Optional[str]:
        """Why the dataset is not complete and clean (opened with
        ``allow_incomplete=True``), else None."""
        return self._v.incomplete  # type: ignore[no-any-return]

    def check(self) -> Dict[str, Any]:
        """The health report ``metachron check --json`` prints."""
        import json

        return json.loads(self._v.health_json)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<metachron.Dataset {self.dir!r}>\n{self._v.health}"

    def table(self) -> pa.Table:
        """Every row of the good parts, every column as written (units in the field
        metadata)."""
        return _table(self._v.table())

    def polars(self) -> "polars.DataFrame":
        """:meth:`table` as a polars DataFrame."""
        return _polars(self.table())

    def summarize(
        self,
        where: Optional[Mapping[str, Any]] = None,
        by: Optional[Sequence[str]] = None,
    ) -> pa.Table:
        """One row per parameter combination, as ``metachron summarize``: the fraction of
        runs in every class with its Wilson 95 % interval, per-class means. ``where``
        keeps the rows whose columns have these values (``{"terrain": "rough"}``);
        ``by`` groups by these columns instead of the whole combination (``combo``
        then numbers the groups; parameters that vary inside a group are left out)."""
        if isinstance(by, str):
            by = [by]
        return _table(self._v.summarize(_conditions(where), list(by or [])))

    def map(
        self,
        x: str,
        y: str,
        metric: str = "class",
        *,
        where: Optional[Mapping[str, Any]] = None,
        average: Optional[Sequence[str]] = None,
        bins: Optional[int] = None,
        ci_width: Optional[float] = None,
        range: Optional[Tuple[float, float]] = None,
        draw: bool = False,
        ax: Any = None,
    ) -> MapData:
        """The map ``metachron map --x X --y Y --metric METRIC`` draws, as data:
        ``metric`` is a numeric column (mean over repeats), ``class``,
        ``fraction:<class>`` or ``class=<class>``; ``where`` and ``average`` are
        ``--where`` and ``--average``. With ``draw=True`` (or an ``ax``) it is drawn with
        matplotlib as well."""
        if isinstance(average, str):
            average = [average]
        d = self._v.map(
            x,
            y,
            metric,
            _conditions(where),
            list(average or []),
            bins=bins,
            ci_width=ci_width,
            range=None if range is None else (float(range[0]), float(range[1])),
        )
        data = MapData(
            x=d["x"],
            y=d["y"],
            metric=metric,
            x_log=d["x_log"],
            y_log=d["y_log"],
            x_categories=d["x_categories"],
            y_categories=d["y_categories"],
            x_lo=d["x_lo"],
            x_hi=d["x_hi"],
            y_lo=d["y_lo"],
            y_hi=d["y_hi"],
            value=d["value"],
            klass=d["class"],
            wide=d["wide"],
            runs=d["runs"],
            range=(float(d["range"][0]), float(d["range"][1])),
            title=d["title"],
            what=d["what"],
        )
        if draw or ax is not None:
            data.draw(ax)
        return data


def open(dir: PathLike, allow_incomplete: bool = False, cached: bool = False) -> Dataset:
    """Open and verify the dataset in ``dir`` as ``metachron check`` does: every part's
    checksum and contents against the manifest and the sweep's plan. A dataset that
    ``check`` would not pass (missing points, bad or foreign parts) is refused with
    :class:`DatasetError` naming the reasons, unless ``allow_incomplete`` (then only the
    good parts are read, and :attr:`Dataset.incomplete` says why). ``cached=True`` trusts
    parts whose verification is recorded and unchanged since (the fast path of
    ``summarize`` and ``map``)."""
    return Dataset(_native.open(os.fspath(dir), allow_incomplete, cached))


def params() -> pa.Table:
    """The parameter table ``metachron params`` prints: name, unit, default, allowed
    (the range or the values) and meaning of every model parameter."""
    rows = _native.params()
    names = ["name", "unit", "default", "allowed", "meaning"]
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)})
