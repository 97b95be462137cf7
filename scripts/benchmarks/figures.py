"""One measured figure: its value, the baseline measured beside it in the same run, a target."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Target:
    of: str  # "ratio", "value", or "margin" (value minus the baseline measured beside it)
    op: str  # ">=" or "<="
    limit: float

    def text(self, unit: str) -> str:
        if self.of == "ratio":
            return f"ratio {self.op} {self.limit:g}"
        if self.of == "margin":
            return f"{self.op} baseline + {self.limit:g} {unit}"
        return f"{self.op} {self.limit:g} {unit}"

    def met(self, value: float | None, ratio: float | None,
            baseline: float | None = None) -> bool | None:
        if self.of == "margin":
            x = None if value is None or baseline is None else value - baseline
        else:
            x = ratio if self.of == "ratio" else value
        if x is None:
            return None
        return x >= self.limit if self.op == ">=" else x <= self.limit


@dataclass
class Figure:
    name: str
    value: float | None
    unit: str
    baseline: float | None
    baseline_what: str
    target: Target | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.value is None or self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    @property
    def met(self) -> bool | None:
        return (self.target.met(self.value, self.ratio, self.baseline) if self.target
                else None)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "value": self.value, "unit": self.unit,
            "baseline": self.baseline, "baseline_what": self.baseline_what,
            "ratio": self.ratio,
            "target": None if self.target is None else {
                "of": self.target.of, "op": self.target.op, "limit": self.target.limit,
                "text": self.target.text(self.unit)},
            "met": self.met, "notes": self.notes,
        }


def pct(xs: list[float], p: float) -> float:
    """Linear-interpolated percentile (p in 0..100)."""
    if not xs:
        raise ValueError("no samples")
    s = sorted(xs)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def log(msg: str) -> None:
    """Progress on stderr (the table goes to stdout)."""
    print(f"  .. {msg}", file=sys.stderr, flush=True)
