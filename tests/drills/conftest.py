"""Fault drills: the normal suite runs a short version; `scripts/drills` runs the long one
(LLAMON_DRILL_SCALE=long)."""

from __future__ import annotations

import os
import random

import pytest


class Scale:
    def __init__(self, name: str) -> None:
        self.name = name
        self.long = name == "long"

    def n(self, short: int, long: int) -> int:
        return long if self.long else short


@pytest.fixture
def scale() -> Scale:
    return Scale(os.environ.get("LLAMON_DRILL_SCALE", "short"))


@pytest.fixture
def rng() -> random.Random:
    seed = int(os.environ.get("LLAMON_DRILL_SEED", random.randrange(1 << 30)))
    print(f"drill seed {seed} (LLAMON_DRILL_SEED={seed} repeats it)")
    return random.Random(seed)
