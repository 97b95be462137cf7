"""Search's SQL and query words, on an in-memory database migrated like the daemon's: the
view's evaluator rule agrees with `score_summary`, the index equals a rebuild after any
mix of writes, and no typed query is FTS5 syntax."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llamon_playground.daemon.store.history import score_summary
from llamon_playground.daemon.store.migrations import migrate
from llamon_playground.daemon.store.search.excerpt import SNIPPET_TOKENS, cut_excerpt, read_marked
from llamon_playground.daemon.store.search.query import parse_query, parse_terms
from llamon_playground.daemon.store.search.service import hit, statement

COLUMNS = "input, output, label, note, title, facts"


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(":memory:", isolation_level=None)
    migrate(db)
    db.execute("INSERT INTO sessions (id, title, context_id, created_at) "
               "VALUES ('s1', 'first', 'c1', 'now'), ('s2', 'second', 'c2', 'now')")
    yield db
    db.close()


def add_run(conn: sqlite3.Connection, run_id: str, words: str, **columns: Any) -> None:
    row = {"id": run_id, "session_id": "s1", "status": "completed", "created_at": "now",
           "context_id": "c1", "input": orjson.dumps({"parts": [
               {"kind": "text", "text": words}]}).decode(), **columns}
    conn.execute(f"INSERT INTO runs ({', '.join(row)}) VALUES "
                 f"({', '.join(':' + k for k in row)})", row)


def index_is_rebuilt(conn: sqlite3.Connection) -> bool:
    indexed = conn.execute(f"SELECT rowid, {COLUMNS} FROM run_search ORDER BY rowid").fetchall()
    rebuilt = conn.execute(f"SELECT run_rowid, {COLUMNS} FROM run_search_doc "
                           "ORDER BY run_rowid").fetchall()
    return indexed == rebuilt


SCORES = [
    [], [{"evaluator": "a", "passStatus": "fail"}],
    [{"evaluator": "a", "passStatus": "fail"}, {"evaluator": "a", "passStatus": "pass"}],
    [{"evaluator": "a", "passStatus": "pass"}, {"evaluator": "a", "passStatus": "FAILED"}],
    [{"name": "a", "passStatus": "fail"}, {"evaluator": "a", "passStatus": "pass"}],
    [{"evaluator": None, "name": "a", "passStatus": "fail"},
     {"name": "a", "passStatus": "pass"}],
    [{"evaluator": "a", "node": "n1", "passStatus": "fail"},
     {"evaluator": "a", "node": "n2", "passStatus": "pass"}],
    [{"evaluator": "a", "scope": "node", "passStatus": "fail"},
     {"evaluator": "a", "scope": "node", "passStatus": "pass"}],
    [{"evaluator": "a", "passStatus": 0}, "not an object", {"evaluator": "b"}],
    [{"evaluator": "a", "passStatus": "Fail"}, {"evaluator": "b", "passStatus": "pass"}],
]


@pytest.mark.parametrize("scores", SCORES)
def test_the_views_evaluator_rule_is_score_summarys(conn: sqlite3.Connection,
                                                    scores: list[Any]) -> None:
    add_run(conn, "r1", "x", scores=orjson.dumps(scores).decode())
    facts = conn.execute("SELECT facts FROM run_search").fetchone()[0]
    assert ("evalfailed" in facts.split()) == (score_summary(scores)["failed"] > 0)


def test_the_index_equals_a_rebuild_after_any_mix_of_writes(conn: sqlite3.Connection) -> None:
    rng = random.Random(5)
    words = ["apple", "pear", "plum", "fig", "kiwi", "lime"]
    live: list[str] = []
    for n in range(300):
        action = rng.choice(["add", "add", "update", "status", "label", "scores", "delete",
                             "title"])
        if action == "add" or not live:
            live.append(f"r{n}")
            add_run(conn, f"r{n}", " ".join(rng.sample(words, 2)),
                    session_id=rng.choice(["s1", "s2"]))
        elif action == "update":
            conn.execute("UPDATE runs SET status = 'failed', reason = 'host_error', output = ? "
                         "WHERE id = ?", (orjson.dumps([{"kind": "text", "text": rng.choice(
                             words)}]).decode(), rng.choice(live)))
        elif action == "status":  # at most one run active, as the unique index holds
            target = rng.choice(live)
            conn.execute("UPDATE runs SET status = 'completed' WHERE id != ? AND status IN "
                         "('queued', 'preparing', 'running')", (target,))
            conn.execute("UPDATE runs SET status = ? WHERE id = ?", (rng.choice(
                ["queued", "preparing", "running", "completed", "input_required"]), target))
        elif action == "label":
            conn.execute("UPDATE runs SET label = ?, note = ? WHERE id = ?",
                         (rng.choice([None, "", "lbl"]), rng.choice(words), rng.choice(live)))
        elif action == "scores":
            conn.execute("UPDATE runs SET scores = json_insert(scores, '$[#]', json(?)) "
                         "WHERE id = ?", (orjson.dumps(rng.choice(SCORES[1:4])[0]).decode(),
                                          rng.choice(live)))
        elif action == "delete":
            conn.execute("DELETE FROM runs WHERE id = ?", (live.pop(rng.randrange(len(live))),))
        else:
            conn.execute("UPDATE sessions SET title = ? WHERE id = ?",
                         (rng.choice(words), rng.choice(["s1", "s2"])))
    assert live and index_is_rebuilt(conn)
    conn.execute("DELETE FROM runs")
    assert conn.execute("SELECT COUNT(*) FROM run_search").fetchone()[0] == 0


def test_an_active_status_is_found_as_the_run_moves_through_its_start(
        conn: sqlite3.Connection) -> None:
    def found(*statuses: str) -> list[str]:
        query = parse_query("hello", statuses=list(statuses), reasons=[], labelled=False,
                            evaluator_failed=False, session_id=None)
        return [row[0] for row in conn.execute(*statement(query, 0, 10)).fetchall()]

    add_run(conn, "r1", "hello", status="queued")
    assert found("queued") == ["r1"] and found("running") == [] and found("completed") == []
    for status in ("preparing", "running"):
        conn.execute("UPDATE runs SET status = ? WHERE id = 'r1'", (status,))
    assert found("running") == ["r1"] and found("queued") == [] and \
        found("queued", "running") == ["r1"]
    conn.execute("UPDATE runs SET status = 'completed' WHERE id = 'r1'")
    assert found("running") == [] and found("completed") == ["r1"] and \
        found("running", "completed") == ["r1"]
    assert index_is_rebuilt(conn)


def test_a_rolled_back_write_leaves_the_index_as_it_was(conn: sqlite3.Connection) -> None:
    add_run(conn, "r1", "kept")
    conn.execute("BEGIN")
    add_run(conn, "r2", "gone")
    conn.execute("UPDATE runs SET label = 'gone' WHERE id = 'r1'")
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT rowid FROM run_search WHERE run_search MATCH 'gone'"
                        ).fetchall() == []
    assert index_is_rebuilt(conn)


@pytest.fixture(scope="module")
def schema_only() -> Iterator[sqlite3.Connection]:
    """A migrated, empty history the queries below only read (one migration for all the
    generated examples, not one each)."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    migrate(db)
    yield db
    db.close()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_no_typed_query_is_fts5_syntax(schema_only: sqlite3.Connection, q: str) -> None:
    query = parse_query(q, statuses=["failed"], reasons=['a"b'], labelled=True,
                        evaluator_failed=False, session_id="x) OR (y")
    assert query.match() is not None
    schema_only.execute(*statement(query, 0, 10)).fetchall()  # raises on a syntax error


def test_words_phrases_and_prefixes() -> None:
    terms = parse_terms('zebra "a phrase" pre* ab* re-ad* read-a* "open')
    assert terms is not None
    assert [(t.text, t.prefix) for t in terms] == [
        ("zebra", False), ("a phrase", False), ("pre", True), ("ab", False),
        ("re-ad", False), ("read-a", False), ("open", False)]
    assert parse_terms("!!! ...") is None and parse_terms("") == ()


def test_marked_snippets_become_text_and_offsets() -> None:
    assert read_marked("…a \x02bc\x03 d \x02é\x03") == ("…a bc d é", [[3, 5], [8, 9]])
    assert read_marked("plain") == ("plain", [])


def test_a_long_answer_is_marked_whole_and_cut_around_its_first_match() -> None:
    words = " ".join(f"w{n}" for n in range(3000))
    marked = words.replace("w1500 ", "\x02w1500\x03 ").replace("w1502 ", "\x02w1502\x03 ")
    assert cut_excerpt(marked) == (
        "…w1496 w1497 w1498 w1499 \x02w1500\x03 w1501 \x02w1502\x03 w1503 w1504 w1505 "
        "w1506 w1507…")
    assert cut_excerpt("\x02start\x03 of it") == "\x02start\x03 of it"
    assert cut_excerpt("a b c-\x02d\x03e f") == "a b c-\x02d\x03e f"  # the word kept whole
    assert cut_excerpt("no match here") == ""
    cut = cut_excerpt(" ".join(["\x02x\x03"] * 40))
    assert cut.count("\x02") == cut.count("\x03") == SNIPPET_TOKENS


def test_a_search_hit_in_a_long_output_has_a_short_excerpt(conn: sqlite3.Connection) -> None:
    # A common word thousands of times in a long answer: snippet() would score every
    # match against every other; the hit's excerpt is cut from the marked text instead.
    answer = " ".join(["common"] * 2000 + ["needle"] + ["common"] * 2000)
    add_run(conn, "r1", "the question", output=orjson.dumps(
        [{"kind": "text", "text": answer}]).decode())
    add_run(conn, "r2", "short question", output=orjson.dumps(
        [{"kind": "text", "text": "a needle here"}]).decode())
    for q, want in (("needle", {"r1": "…common common common common \x02needle\x03 common "
                                      "common common common common common common…",
                                "r2": "a \x02needle\x03 here"}),):
        sql, args = statement(parse_query(q, statuses=[], reasons=[], labelled=False,
                                          evaluator_failed=False, session_id=None), 0, 10)
        conn.row_factory = sqlite3.Row
        hits = {row["id"]: hit(row) for row in conn.execute(sql, args)}
        conn.row_factory = None
        assert {k: h["excerpt"]["field"] for k, h in hits.items()} == {"r1": "output",
                                                                      "r2": "output"}
        assert {k: h["excerpt"]["text"] for k, h in hits.items()} == {
            k: read_marked(v)[0] for k, v in want.items()}
