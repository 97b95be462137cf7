"""The comparison's figures: the Playground's value beside ADK's two session modes, the
ratios, and whether the Playground meets its targets (ahead of ADK with SQLite sessions,
the durable mode; within 1.5× of ADK in memory); the printed table and its JSON."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

WITHIN_MEMORY = 1.5  # the Playground's value may be at most this many times ADK in memory's


@dataclass
class Row:
    """One figure: the median over repetitions of each system's value (lower is better)."""

    name: str
    unit: str
    playground: float | None
    adk_memory: float | None
    adk_sqlite: float | None
    targeted: bool = False  # the targets hold for this figure, else report only
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio_memory(self) -> float | None:
        return _ratio(self.playground, self.adk_memory)

    @property
    def ratio_sqlite(self) -> float | None:
        return _ratio(self.playground, self.adk_sqlite)

    @property
    def ahead_of_sqlite(self) -> bool | None:
        r = self.ratio_sqlite
        return None if r is None else r < 1.0

    @property
    def within_memory(self) -> bool | None:
        r = self.ratio_memory
        return None if r is None else r <= WITHIN_MEMORY

    @property
    def met(self) -> bool | None:
        """Both targets held (None: report only, or a value is missing)."""
        if not self.targeted or self.ahead_of_sqlite is None or self.within_memory is None:
            return None
        return self.ahead_of_sqlite and self.within_memory

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "unit": self.unit, "playground": self.playground,
                "adk_memory": self.adk_memory, "adk_sqlite": self.adk_sqlite,
                "ratio_memory": self.ratio_memory, "ratio_sqlite": self.ratio_sqlite,
                "targeted": self.targeted, "ahead_of_sqlite": self.ahead_of_sqlite,
                "within_memory": self.within_memory, "met": self.met, "notes": self.notes}


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return value / base


def median_of(values: list[float]) -> float | None:
    """The median of the repetitions' values (None when a system gave none)."""
    return statistics.median(values) if values else None


def _num(x: float | None, unit: str) -> str:
    if x is None:
        return "-"
    if unit == "MB":
        return f"{x:,.1f}"
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "no")


def render(rows: list[Row]) -> str:
    """The table: each figure, the three systems, the ratios, the targets."""
    head = ["figure", "Playground", "ADK in memory", "ADK SQLite", "÷ in memory",
            "÷ SQLite", "ahead of SQLite", f"≤ {WITHIN_MEMORY:g}× in memory"]
    lines = [head]
    for row in rows:
        ratios = [("-" if r is None else f"{r:.2f}") for r in (row.ratio_memory,
                                                                row.ratio_sqlite)]
        flags = ([_yes(row.ahead_of_sqlite), _yes(row.within_memory)] if row.targeted
                 else ["(report)", "(report)"])
        lines.append([f"{row.name} ({row.unit})", _num(row.playground, row.unit),
                      _num(row.adk_memory, row.unit), _num(row.adk_sqlite, row.unit),
                      *ratios, *flags])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for n, line in enumerate(lines):
        cells = [cell.ljust(w) if i == 0 else cell.rjust(w)
                 for i, (cell, w) in enumerate(zip(line, widths, strict=True))]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    targeted = [r for r in rows if r.targeted]
    held = sum(1 for r in targeted if r.met)
    out.append(f"targets held: {held} of {len(targeted)} figures (ahead of ADK SQLite and "
               f"within {WITHIN_MEMORY:g}× of ADK in memory)")
    return "\n".join(out)
