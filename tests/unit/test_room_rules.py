"""The room-rule checker itself, on small trees written for each test: a tree that keeps
its statements passes, and each kind of breach is reported."""

from __future__ import annotations

from pathlib import Path

from tests.support.rooms import check, read_statement

ROOT = "pkg"


def write(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def tree(tmp_path: Path, **extra: str) -> dict[str, Path]:
    """`low` at the bottom; `high` above it with two sub-rooms, `base` below `top`."""
    files = {
        "low/__init__.py": '"""Leaves.\n\nMay import: nothing\n"""\n',
        "low/words.py": "WORD = 'w'\n",
        "high/__init__.py": '"""Above low.\n\nMay import: low, high.base, high.top\n"""\n',
        "high/errors.py": "class Oops(Exception):\n    pass\n",
        "high/app.py": "from pkg.high.top import serve\nfrom pkg.high import errors\n",
        "high/base/__init__.py": '"""Bottom of high.\n\nMay import: low, high.errors\n"""\n',
        "high/base/rows.py": "from pkg.low.words import WORD\nfrom pkg.high.errors import Oops\n",
        "high/top/__init__.py": ('"""Top of high.\n\nMay import: low, high.errors,\n'
                                 '    high.base\n"""\n'),
        "high/top/serve.py": "from pkg.high.base import rows\n",
        **extra,
    }
    write(tmp_path, files)
    return {"low": tmp_path / "low", "high": tmp_path / "high"}


def test_a_tree_that_keeps_its_statements_passes(tmp_path: Path) -> None:
    assert check(ROOT, tree(tmp_path)) == []


def test_a_statement_goes_on_after_a_trailing_comma(tmp_path: Path) -> None:
    tree(tmp_path)
    assert read_statement(tmp_path / "high/top/__init__.py") == {
        "low", "high.errors", "high.base"}
    assert read_statement(tmp_path / "low/__init__.py") == frozenset()


def test_an_import_the_statement_does_not_name_fails(tmp_path: Path) -> None:
    # The deliberate bad import: the bottom sub-room reaches up into the top one.
    top = tree(tmp_path, **{"high/base/late.py": "import pkg.high.top.serve\n"})
    problems = check(ROOT, top)
    assert any("late.py:1: high.base may not import high.top.serve" in p for p in problems)


def test_an_import_inside_a_function_is_read_too(tmp_path: Path) -> None:
    top = tree(tmp_path, **{"low/lazy.py": "def f():\n    from pkg.high import errors\n"})
    assert any("lazy.py:2: low may not import high.errors" in p for p in check(ROOT, top))


def test_a_ring_between_rooms_is_reported_even_when_each_import_is_stated(
        tmp_path: Path) -> None:
    top = tree(tmp_path, **{
        "high/base/__init__.py": '"""Bottom.\n\nMay import: low, high.errors, high.top\n"""\n',
        "high/base/up.py": "from pkg.high.top.serve import rows\n"})
    assert check(ROOT, top) == ["cycle between rooms: high.base, high.top"]


def test_a_room_without_a_statement_and_a_name_that_does_not_exist_fail(
        tmp_path: Path) -> None:
    top = tree(tmp_path, **{
        "low/__init__.py": '"""Leaves, saying nothing of imports."""\n',
        "high/top/__init__.py": '"""Top.\n\nMay import: low, high.errors, high.bsae\n"""\n'})
    problems = check(ROOT, top)
    assert any(p.startswith("low: its __init__ docstring states no") for p in problems)
    assert any("names high.bsae, which does not exist" in p for p in problems)


def test_a_sub_room_may_not_allow_itself_more_than_its_parent(tmp_path: Path) -> None:
    top = tree(tmp_path, **{
        "other/__init__.py": '"""Beside.\n\nMay import: nothing\n"""\n',
        "high/base/__init__.py": '"""Bottom.\n\nMay import: low, high.errors, other\n"""\n'})
    top["other"] = tmp_path / "other"
    problems = check(ROOT, top)
    assert problems == ["high.base: may import other, which its parent high may not"]
