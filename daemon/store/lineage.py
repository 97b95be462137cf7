"""Where a run comes from: the chain of resumes it belongs to and the tree of reruns around it.

A resume chain is linear (a parent is resumed at most once: `parent_run_id` up, `resumed_by`
down); reruns form a tree (`rerun_of` points at the run that was repeated, which may have
been rerun many times). Both walks are bounded, so a huge history answers in bounded time.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from llamon_playground.daemon.store.database import Store

MAX_NODES = 1000
SUMMARY_COLUMNS = ("id", "session_id", "status", "reason", "created_at", "label", "generation",
                   "code_fingerprint", "parent_run_id", "rerun_of", "resumed_by")
_SELECT = f"SELECT {', '.join(SUMMARY_COLUMNS)}, edited_fields FROM runs"


def summary(row: sqlite3.Row) -> dict[str, Any]:
    doc = {c: row[c] for c in SUMMARY_COLUMNS}
    fields = orjson.loads(row["edited_fields"]) if row["edited_fields"] else []
    doc.update(edited=bool(fields), edited_fields=fields)
    return doc


async def _one(store: Store, run_id: str | None) -> sqlite3.Row | None:
    if not run_id:
        return None
    return await store.fetch_one(f"{_SELECT} WHERE id = ?", (run_id,))


async def _top(store: Store, row: sqlite3.Row, up: str) -> sqlite3.Row:
    """The farthest run reached from `row` by following column `up` (bounded, cycle-safe)."""
    top, seen = row, {row["id"]}
    while len(seen) < MAX_NODES:
        above = await _one(store, top[up])
        if above is None or above["id"] in seen:
            break
        seen.add(above["id"])
        top = above
    return top


async def resume_chain(store: Store, row: sqlite3.Row) -> list[dict[str, Any]]:
    """The conversation's turns this run belongs to, first turn first."""
    first = await _top(store, row, "parent_run_id")
    chain, seen = [first], {first["id"]}
    while len(chain) < MAX_NODES:
        child = await _one(store, chain[-1]["resumed_by"])
        if child is None or child["id"] in seen:
            break
        seen.add(child["id"])
        chain.append(child)
    return [summary(r) for r in chain]


async def rerun_tree(store: Store, row: sqlite3.Row) -> tuple[dict[str, Any], bool]:
    """The tree of reruns from the first run this one repeats (transitively):
    `{"run": summary, "reruns": [subtrees]}`, and whether it was cut at MAX_NODES."""
    root = await _top(store, row, "rerun_of")
    tree: dict[str, Any] = {"run": summary(root), "reruns": []}
    level, count = [tree], 1
    while level and count < MAX_NODES:
        nodes = {node["run"]["id"]: node for node in level}
        marks = ", ".join("?" for _ in nodes)
        rows = await store.fetch_all(
            f"{_SELECT} WHERE rerun_of IN ({marks}) ORDER BY rowid LIMIT ?",
            (*nodes, MAX_NODES - count + 1))
        level = []
        for child in rows[:MAX_NODES - count]:
            node: dict[str, Any] = {"run": summary(child), "reruns": []}
            nodes[child["rerun_of"]]["reruns"].append(node)
            level.append(node)
        count += len(level)
        if len(rows) > len(level):
            return tree, True
    return tree, False


async def lineage(store: Store, run_id: str) -> dict[str, Any] | None:
    row = await _one(store, run_id)
    if row is None:
        return None
    tree, truncated = await rerun_tree(store, row)
    return {"run_id": run_id, "resumes": await resume_chain(store, row), "reruns": tree,
            "truncated": truncated}
