"""The suite file format on its own: the same suite gives the same bytes, reading them back
gives the suite again, and what cannot be read is named with its line."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from llamon_playground.daemon.suites.suite_file import SuiteFileError, dump, parse


def case(text: str, answer: str, **baseline: Any) -> dict[str, Any]:
    return {"kind": "run",
            "turns": [{"input": {"parts": [{"kind": "text", "text": text}], "metadata": {}},
                       "resume": False}],
            "baseline": {"status": "completed", "reason": None, "run_id": "run_1",
                         "run_ids": ["run_1"], "duration_ms": 12.5,
                         "output": [{"kind": "text", "text": answer, "artifact_id": "a1"}],
                         "scores": [{"evaluator": "n", "score": 2, "passStatus": "pass",
                                     "at": "2026-12-04T10:00:00Z"}], **baseline}}


def test_the_same_suite_gives_the_same_bytes_and_reads_back() -> None:
    data = dump("smoke", False, 2, [case("first\nsecond", "hi"), case("b", "there")])
    again = parse(data, 1000, 200)
    assert (again.name, again.repeat, again.run_on_save) == ("smoke", 2, False)
    assert dump(again.name, again.run_on_save, again.repeat, again.cases) == data
    text = data.decode()
    assert '"first",\n' in text and "run_1" not in text and "12.5" not in text
    assert "artifact_id" not in text and "2026-12-04" not in text
    assert again.cases[0]["turns"][0]["input"]["parts"][0]["text"] == "first\nsecond"


def test_a_baseline_of_repetitions_round_trips() -> None:
    reps = [case("a", "x")["baseline"], case("a", "y")["baseline"]]
    data = dump("r", False, 2, [case("a", "x", repetitions=reps)])
    parsed = parse(data, 1000, 200)
    assert [r["output"][0]["text"] for r in parsed.cases[0]["baseline"]["repetitions"]] == \
        ["x", "y"]
    assert dump("r", False, 2, parsed.cases) == data


def lines_of(data: bytes, needle: str) -> int:
    return data.decode().splitlines().index(needle) + 1


@pytest.mark.parametrize(("edit", "line", "words"), [
    (lambda d: d.replace(b'"kind": "run"', b'"kind": "run",,', 1), None, "not JSON"),
    (lambda d: d.replace(b'"kind": "run"', b'"kind": "walk"', 1), "case", "`kind`"),
    (lambda d: d.replace(b'"repeat": 1', b'"repeat": 0'), "repeat", "`repeat`"),
    (lambda d: d.replace(b'"resume": false', b'"resume": false, "extra": 1', 1), "case",
     "unknown key"),
])
def test_what_cannot_be_read_names_its_line(edit: Any, line: str | None, words: str) -> None:
    data = dump("smoke", False, 1, [case("a", "b"), case("c", "d")])
    broken = edit(data)
    with pytest.raises(SuiteFileError) as caught:
        parse(broken, 1000, 200)
    assert words in caught.value.message
    text = broken.decode().splitlines()
    if line == "case":
        assert caught.value.line == text.index("    {") + 1
    elif line == "repeat":
        assert text[caught.value.line - 1].strip().startswith('"repeat"')
    else:
        assert '"run",,' in text[caught.value.line - 1]


def test_the_second_case_is_named_by_its_own_line() -> None:
    doc = orjson.loads(dump("smoke", False, 1, [case("a", "b"), case("c", "d")]))
    doc["cases"][1]["kind"] = "walk"
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    with pytest.raises(SuiteFileError) as caught:
        parse(data, 1000, 200)
    text = data.decode().splitlines()
    second = [i for i, t in enumerate(text) if t == "    {"][1] + 1
    assert caught.value.line == second and "cases[1]" in caught.value.message
