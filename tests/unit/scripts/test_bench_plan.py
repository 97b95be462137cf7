"""The bench's section plan: what `--only` offers."""

from scripts.benchmarks.plan import AFTER_LIVE, BEFORE_LIVE, LIVE, all_names


def test_each_only_name_is_offered_once_and_picks_a_section() -> None:
    names = all_names()
    assert len(names) == len(set(names))
    picked = {n for s in (*BEFORE_LIVE, *AFTER_LIVE) for n in s.picks} | {n for n, _ in LIVE}
    assert set(names) == picked
    # hostile_inputs picks its own section and the door's: still one choice.
    assert names.count("hostile_inputs") == 1
