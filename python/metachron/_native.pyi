"""Types of the extension module `metachron._native` (the package `metachron` wraps it)."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

VERSION: str

class MetachronError(Exception): ...
class ParameterError(MetachronError): ...
class DatasetError(MetachronError): ...

class ArrowStream:
    """Record batches offered once through the Arrow C stream interface."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...

class Verified:
    dir: str
    name: str
    axes: List[str]
    parts: List[str]
    health: str
    health_json: str
    incomplete: Optional[str]
    sweep: str
    def table(self) -> ArrowStream: ...
    def summarize(self, conditions: Sequence[str], by: Sequence[str]) -> ArrowStream: ...
    def map(
        self,
        x: str,
        y: str,
        metric: str,
        conditions: Sequence[str],
        averaged: Sequence[str],
        bins: Optional[int] = None,
        ci_width: Optional[float] = None,
        range: Optional[Tuple[float, float]] = None,
    ) -> Dict[str, Any]: ...

def simulate(
    assignments: Sequence[str],
    backend: str,
    series: bool,
    config: Optional[str] = None,
    dt_out: Optional[float] = None,
    window_start: Optional[float] = None,
    point_timeout: Optional[float] = None,
    max_estimate: Optional[float] = None,
) -> Tuple[ArrowStream, Optional[ArrowStream], List[str]]: ...
def sweep(
    out: str,
    backend: str,
    resume: bool,
    on_event: Callable[[str, str, int], None],
    file: Optional[str] = None,
    text: Optional[str] = None,
    name: Optional[str] = None,
    batch: Optional[int] = None,
    point_timeout: Optional[float] = None,
    until_settled: Optional[float] = None,
    max_estimate: Optional[float] = None,
) -> int: ...
def open(dir: str, allow_incomplete: bool = False, cached: bool = False) -> Verified: ...
def params() -> List[Tuple[str, str, str, str, str]]: ...
