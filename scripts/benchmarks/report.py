"""What a run prints (one table, a noise line, the errors) and the JSON document it can write."""

from __future__ import annotations

import datetime as dt
import platform
import sqlite3
from typing import Any

import aiohttp

from scripts.benchmarks import configs
from scripts.benchmarks.figures import Figure
from scripts.benchmarks.meters import Noise, nproc

SCHEMA = "llamon-playground-bench/1"
BUSY_CORES = 0.25  # above this much foreign load, the figures come with a warning


def header(quick: bool, started: dt.datetime) -> str:
    return (f"llamon Playground bench ({'quick' if quick else 'full'})  "
            f"date {started.isoformat(timespec='seconds')}  nproc {nproc()}  "
            f"python {platform.python_version()}  sqlite {sqlite3.sqlite_version}  "
            f"aiohttp {aiohttp.__version__}")


def fmt_num(x: float | None, unit: str) -> str:
    if x is None:
        return "-"
    if unit in ("events/s", "req/s"):
        return f"{x:,.0f}"
    return f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"


def render(figures: list[Figure], head: str) -> str:
    """The table: one row per figure, numbers right-aligned."""
    rows = [("figure", "value", "unit", "baseline", "ratio", "target", "met")]
    for f in figures:
        rows.append((f.name, fmt_num(f.value, f.unit), f.unit, fmt_num(f.baseline, f.unit),
                     "-" if f.ratio is None else f"{f.ratio:.2f}",
                     f.target.text(f.unit) if f.target else "-",
                     {True: "yes", False: "NO", None: "-"}[f.met]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {1, 3, 4}
    lines = [head]
    for n, r in enumerate(rows):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                 enumerate(zip(r, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def noise_line(noise: Noise) -> str:
    line = (f"noise: other processes used {noise.foreign_cores:.2f} of {nproc()} cores on "
            f"average; loadavg {noise.loadavg_before:.2f} -> {noise.loadavg_after:.2f}")
    if noise.foreign_cores > BUSY_CORES:
        line += "  (busy machine: treat figures with care)"
    return line


def json_doc(quick: bool, started: dt.datetime, noise: Noise, figures: list[Figure],
             errors: list[dict[str, str]]) -> dict[str, Any]:
    return {"schema": SCHEMA, "date": started.isoformat(),
            "mode": "quick" if quick else "full", "nproc": nproc(),
            "python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
            "aiohttp": aiohttp.__version__, "platform": platform.platform(),
            "duration_s": round(noise.duration, 1),
            "noise": {"foreign_cpu_cores": round(noise.foreign_cores, 3),
                      "loadavg_before": noise.loadavg_before,
                      "loadavg_after": noise.loadavg_after},
            "config": configs.as_json(quick),
            "figures": [f.as_json() for f in figures], "errors": errors}
