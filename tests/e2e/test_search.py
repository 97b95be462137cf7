"""Search over history, end to end: the real daemon and example Host make the history, the
search route finds it (words in inputs, outputs, labels, notes and session titles), keeps
up with edits and deletes, filters and pages; a history written before the index existed
is indexed when the daemon opens it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.store.migrations import MIGRATIONS, split_sql
from tests.e2e.data_support import finished_run, serving, text
from tests.support.api import Api
from tests.support.door import cli
from tests.support.procs import Stack, copy_example


async def search(api: Api, q: str = "", **params: Any) -> dict[str, Any]:
    pairs = [("q", q)] + [(k, v) for k, vs in params.items()
                          for v in (vs if isinstance(vs, list) else [vs])]
    return await api.ok("GET", "search?" + urlencode(pairs))  # type: ignore[no-any-return]


async def found(api: Api, q: str = "", **params: Any) -> list[str]:
    """The ids of every hit, all pages, newest first."""
    return [hit["id"] for hit in (await search(api, q, limit="1000", **params))["hits"]]


async def refused(api: Api, query: str) -> dict[str, Any]:
    status, body = await api.call("GET", "search?" + query)
    assert status == 400, (query, status, body)
    return body["detail"]  # type: ignore[no-any-return]


def matched_words(hit: dict[str, Any]) -> list[str]:
    excerpt = hit["excerpt"]
    return [excerpt["text"][start:end].lower() for start, end in excerpt["matches"]]


async def test_words_of_inputs_outputs_labels_notes_and_titles_are_found(api: Api) -> None:
    session = (await api.ok("POST", "sessions", {"title": "Quarterly planning"}, 201))["id"]
    asked = await finished_run(api, session, [text("ask")])  # answers "What is your name?"
    echoed = await finished_run(api, session, [text("stream zebra crossing")])
    await api.ok("PATCH", f"runs/{asked['id']}", {"label": "lighthouse keeper",
                                                  "note": "check the periscope"})
    cases = [("ask", asked["id"], "input"), ("name", asked["id"], "output"),
             ("lighthouse", asked["id"], "label"), ("periscope", asked["id"], "note")]
    for word, run_id, field in cases:
        hits = (await search(api, word))["hits"]
        assert [h["id"] for h in hits] == [run_id], word
        assert hits[0]["excerpt"]["field"] == field and matched_words(hits[0]) == [word]
    # Input first: a word in both the input and the output is shown from the input.
    hit = (await search(api, "zebra"))["hits"][0]
    assert hit["id"] == echoed["id"] and hit["excerpt"]["field"] == "input"
    assert hit["status"] == "completed" and hit["session_title"] == "Quarterly planning"
    assert hit["score_summary"] == {"evaluators": 2, "failed": 1}  # no "hello" in it
    assert "output" not in hit and "input" not in hit  # a page of hits stays small
    # A session's title finds its runs, newest first; every word must match somewhere.
    assert await found(api, "quarterly") == [echoed["id"], asked["id"]]
    # A hit matched by its session's title still names its run: its input, time, status.
    by_title = (await search(api, "quarterly"))["hits"]
    assert [(h["input_excerpt"], h["excerpt"]["field"]) for h in by_title] == [
        ("stream zebra crossing", "title"), ("ask", "title")]
    assert [h["status"] for h in by_title] == ["completed", "input_required"]
    assert all(h["created_at"] for h in by_title)
    # Filters alone: no excerpt, the input still names the run.
    only = [h for h in (await search(api, status="completed", session=session))["hits"]
            if h["id"] == echoed["id"]]
    assert only[0]["excerpt"] is None and only[0]["input_excerpt"] == "stream zebra crossing"
    assert await found(api, "quarterly zebra") == [echoed["id"]]
    assert await found(api, "zebra periscope") == []
    assert await found(api, '"crossing zebra"') == [] and \
        await found(api, '"zebra crossing"') == [echoed["id"]]
    assert await found(api, "lightho*") == [asked["id"]]
    assert await found(api, "LIGHTHOUSE") == [asked["id"]]
    # Accents and case fold; offsets count code points (the parrot is one, not two).
    accented = await finished_run(api, session, [text("\U0001f99c Café Olé")])
    hit = (await search(api, "cafe"))["hits"][0]
    assert hit["id"] == accented["id"] and matched_words(hit) == ["café"]
    assert hit["excerpt"]["text"].startswith("\U0001f99c Café")


async def test_edits_and_deletes_keep_the_index_in_step(direct: Api, daemon: Stack) -> None:
    api = direct
    session = await api.session()
    run = await finished_run(api, session, [text("marmalade")])
    await api.ok("PATCH", f"runs/{run['id']}", {"label": "oldname"})
    assert await found(api, "oldname") == [run["id"]]
    await api.ok("PATCH", f"runs/{run['id']}", {"label": "newname"})
    assert await found(api, "newname") == [run["id"]]
    assert await found(api, "oldname") == []
    await api.ok("PATCH", f"sessions/{session}", {"title": "Tangerine"})
    assert await found(api, "tangerine") == [run["id"]]
    await api.ok("PATCH", f"sessions/{session}", {"title": "Clementine"})
    assert await found(api, "tangerine") == [] and await found(api, "clementine") == [run["id"]]
    # A bundle import is indexed with its rows: the same words, the new run.
    bundle = await api.ok("POST", "bundles/export", {"session_ids": [session]})
    mapping = await api.ok("POST", "bundles/import", {"bundle": bundle}, 201)
    copy = mapping["runs"][run["id"]]
    assert await found(api, "marmalade") == [copy, run["id"]]
    # Deleting a session takes its runs out of the index; deleting everything empties it.
    await api.ok("DELETE", f"sessions/{session}")
    assert await found(api, "marmalade") == [copy]
    await api.ok("DELETE", "sessions")
    assert await found(api, "marmalade") == [] and await found(api) == []
    assert index_matches_history(daemon)


def index_matches_history(stack: Stack) -> bool:
    """The index holds exactly one entry per run and each one's words as they stand."""
    conn = sqlite3.connect(f"{stack.settings.db_path.as_uri()}?mode=ro", uri=True)
    try:
        indexed = conn.execute("SELECT rowid, input, output, label, note, title, facts "
                               "FROM run_search ORDER BY rowid").fetchall()
        rebuilt = conn.execute("SELECT run_rowid, input, output, label, note, title, facts "
                               "FROM run_search_doc ORDER BY run_rowid").fetchall()
        return indexed == rebuilt
    finally:
        conn.close()


async def test_filters_narrow_the_hits(direct: Api, daemon: Stack) -> None:
    api = direct
    first, second = await api.session(), await api.session()
    good = await finished_run(api, first, [text("stream hello pelican")])
    unsaid = await finished_run(api, first, [text("stream pelican only")])
    failed = await finished_run(api, second, [text("fail pelican")])
    await api.ok("PATCH", f"runs/{good['id']}", {"label": "keeper"})
    assert failed["status"] == "failed" and failed["reason"]
    everything = [failed["id"], unsaid["id"], good["id"]]
    assert await found(api, "pelican") == everything
    assert await found(api, "pelican", status="failed") == [failed["id"]]
    assert await found(api, "pelican", status=["failed", "completed"]) == everything
    assert await found(api, "pelican", reason=failed["reason"]) == [failed["id"]]
    assert await found(api, "pelican", labelled="1") == [good["id"]]
    assert await found(api, "pelican", labelled="0") == everything
    assert await found(api, "pelican", evaluator_failed="true") == [unsaid["id"]]
    assert await found(api, "pelican", session=first) == [unsaid["id"], good["id"]]
    assert await found(api, "pelican", session=first, status="failed") == []
    # Filters alone: no words, no excerpt.
    page = await search(api, status="failed")
    assert [h["id"] for h in page["hits"]] == [failed["id"]] and \
        page["hits"][0]["excerpt"] is None
    assert await found(api) == everything
    assert index_matches_history(daemon)


async def test_pages_run_newest_first_without_gaps_or_repeats(direct: Api) -> None:
    api = direct
    session = await api.session()
    ids = [(await finished_run(api, session, [text(f"walrus {n}")]))["id"] for n in range(5)]
    seen, after, pages = [], None, 0
    while True:
        page = await search(api, "walrus", limit="2", **({"after": after} if after else {}))
        seen += [hit["id"] for hit in page["hits"]]
        pages += 1
        after = page["next_after"]
        if after is None:
            break
    assert seen == ids[::-1] and pages == 3


@pytest.mark.parametrize("query", [
    "limit=0", "limit=1001", "limit=x", "after=-1", "status=done", "labelled=yes",
    "q=" + "a" * 501, "reason=", "session=", "q=a&q=b"])
async def test_bad_queries_are_400_invalid_query(module_direct: Api, query: str) -> None:
    assert (await refused(module_direct, query))["error"] == "invalid_query"


async def test_a_query_without_words_finds_nothing(direct: Api) -> None:
    session = await direct.session()
    await finished_run(direct, session, [text("punctuation ! here")])
    assert await found(direct, "!!! ?") == [] and len(await found(direct)) == 1


@pytest.mark.parametrize("q", ['"unbalanced', "NEAR(a b", "a AND OR", "col:x", "{input}:x",
                               "*", "a* *b", '""', "^start", "a -b", "x\u0000y"])
async def test_fts_syntax_typed_by_a_person_is_only_words(module_direct: Api, q: str) -> None:
    status, body = await module_direct.call("GET", "search?" + urlencode({"q": q}))
    assert status in (200, 400), body
    if status == 400:
        assert body["detail"]["error"] == "invalid_query"


def test_the_cli_prints_hits_and_json(daemon: Stack) -> None:
    project = str(daemon.project)
    session = cli(daemon, "new-session", project).stdout.strip()
    sent = cli(daemon, "send", session, "stream quokka smiles", project, "--follow")
    assert sent.returncode == 0, sent.stderr
    result = cli(daemon, "search", "quokka", "--project", project)
    assert result.returncode == 0, result.stderr
    assert "completed" in result.stdout and "input: stream [quokka] smiles" in result.stdout
    # Found by a filter alone, a hit is named by its input (not by its id alone).
    filtered = cli(daemon, "search", "--status", "completed", "--session", session,
                   "--project", project)
    assert filtered.returncode == 0, filtered.stderr
    assert "completed  input: stream quokka smiles" in filtered.stdout, filtered.stdout
    page = orjson.loads(cli(daemon, "search", "quokka", "--status", "failed", "--project",
                            project, "--json").stdout)
    assert page == {"hits": [], "next_after": None}
    bad = cli(daemon, "search", "q", "--limit", "0", "--project", project, "--json")
    assert bad.returncode == 1 and orjson.loads(bad.stdout)["detail"]["error"] == \
        "invalid_query"


def search_migration() -> int:
    """The index of the migration that adds search (wherever it sits in the list)."""
    return next(i for i, sql in enumerate(MIGRATIONS) if "CREATE VIRTUAL TABLE run_search" in sql)


def write_old_history(db: Path) -> None:
    """History as a daemon from before search wrote it: the schema up to the migration
    before search, a session and two runs."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        upto = search_migration()
        for sql in MIGRATIONS[:upto]:
            for statement in split_sql(sql):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {upto}")
        conn.execute("INSERT INTO sessions (id, title, context_id, created_at) "
                     "VALUES ('ses_old', 'Archive', 'ctx_old', '2026-01-01T00:00:00Z')")
        for n, (words, output, label, note) in enumerate([
                ("flamingo", "pink bird", "tall", None),
                ("penguin", "cold bird", None, "waddles")]):
            conn.execute(
                "INSERT INTO runs (id, session_id, status, created_at, context_id, input, "
                "output, label, note) VALUES (?, 'ses_old', 'completed', ?, 'ctx_old', ?, ?, "
                "?, ?)", (f"run_old{n}", f"2026-01-01T00:00:0{n}Z",
                          orjson.dumps({"parts": [text(words)]}).decode(),
                          orjson.dumps([text(output)]).decode(), label, note))
    finally:
        conn.close()


async def test_history_from_before_search_is_indexed_when_opened(tmp_path: Path) -> None:
    project = copy_example(tmp_path / "old")
    write_old_history(build_settings(project).db_path)
    async with serving(project) as (stack, api):
        assert await found(api, "flamingo") == ["run_old0"]
        assert await found(api, "bird") == ["run_old1", "run_old0"]
        assert await found(api, "waddles") == ["run_old1"]
        assert await found(api, "archive", labelled="1") == ["run_old0"]
        assert index_matches_history(stack)
