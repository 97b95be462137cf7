"""The excerpts list answers carry, as the SQL that cuts them (docs/api.md, "Excerpts"): a
list never carries a whole output.

A run's `input` and `output` and a session's `metadata` can each be megabytes; a page of a
thousand of them would be gigabytes, decoded and encoded with the GIL held. So the list
queries cut them in SQL (SQLite's JSON functions run in the reader's thread, which releases
the GIL): a text part past TEXT_CHARS characters keeps its first TEXT_CHARS, any other part
whose JSON is over PART_BYTES keeps only its `kind`, and metadata over METADATA_BYTES is an
empty object. What was cut says so: `"truncated": true` and `"size"` (the full length: of
the text in characters, else of the JSON in bytes); a run's input and a session also carry
`metadata_truncated`. `GET /runs/{id}` and `GET /sessions/{id}` answer whole.
"""

from __future__ import annotations

from llamon_playground.common.limits import TEXT_EXCERPT_CHARS

TEXT_CHARS = 2000
PART_BYTES = 4096
METADATA_BYTES = 4096
# `GET /runs/{id}` cuts too, less: a text past TEXT_EXCERPT_CHARS (a long one is a blob
# already, stored as that excerpt), any other part whose JSON is over DETAIL_PART_BYTES.
DETAIL_PART_BYTES = 256 * 1024


def parts_excerpt(column: str, text_chars: int = TEXT_CHARS,
                  part_bytes: int = PART_BYTES) -> str:
    """SQL for the excerpt of a JSON array of stored parts held in `column` (NULL stays): a
    text past `text_chars` keeps its first ones, any other part whose JSON is over
    `part_bytes` only its kind. `size` is the whole part's bytes as stored (a long text's
    blob, else the text's UTF-8 or the part's JSON)."""
    text = "json_extract(p.value, '$.text')"
    kind = "json_extract(p.value, '$.kind')"
    return (
        f"CASE WHEN {column} IS NULL THEN NULL ELSE (SELECT json_group_array(CASE "
        f"WHEN {kind} = 'text' AND length({text}) > {text_chars} THEN json_object("
        f"'kind', 'text', 'text', substr({text}, 1, {text_chars}), "
        f"'truncated', json('true'), 'size', coalesce(json_extract(p.value, '$.size'), "
        f"length(CAST({text} AS BLOB)))) "
        f"WHEN {kind} IS NOT 'text' AND length(p.value) > {part_bytes} THEN json_object("
        f"'kind', {kind}, 'truncated', json('true'), 'size', length(CAST(p.value AS BLOB))) "
        f"ELSE json(p.value) END) FROM json_each({column}) AS p) END")


def metadata_excerpt(column: str) -> str:
    """SQL for a metadata object held in `column`: itself, or `{}` when over METADATA_BYTES."""
    return (f"CASE WHEN length(CAST({column} AS BLOB)) > {METADATA_BYTES} THEN '{{}}' "
            f"ELSE {column} END")


def metadata_cut(column: str) -> str:
    """SQL: 1 when metadata_excerpt cuts `column`, else 0."""
    return f"length(CAST({column} AS BLOB)) > {METADATA_BYTES}"


# A run's columns for a list: input's parts and metadata cut, output cut, the rest whole.
_PARTS = "json_extract(input, '$.parts')"
_META = "json_extract(input, '$.metadata')"
RUN_INPUT = (
    "CASE WHEN input IS NULL THEN NULL ELSE json_set(input, "
    f"'$.parts', json(coalesce({parts_excerpt(_PARTS)}, '[]')), "
    f"'$.metadata', json(coalesce({metadata_excerpt(_META)}, '{{}}')), "
    f"'$.metadata_truncated', json(CASE WHEN {metadata_cut(_META)} "
    "THEN 'true' ELSE 'false' END)) END")
RUN_EXCERPTS = {"input": RUN_INPUT, "output": parts_excerpt("output")}
_DETAIL_PARTS = parts_excerpt(_PARTS, TEXT_EXCERPT_CHARS, DETAIL_PART_BYTES)
RUN_DETAIL = {
    "input": "CASE WHEN input IS NULL THEN NULL ELSE json_set(input, "
             f"'$.parts', json(coalesce({_DETAIL_PARTS}, '[]'))) END",
    "output": parts_excerpt("output", TEXT_EXCERPT_CHARS, DETAIL_PART_BYTES)}


def run_list_columns(columns: list[str], excerpts: dict[str, str] = RUN_EXCERPTS) -> str:
    """The select list of a run list query, given the table's columns: every column as it
    is but input and output, which come as excerpts (the whole values never leave SQLite)."""
    chosen = [f"({excerpts[name]}) AS {name}" if name in excerpts else name
              for name in columns]
    return ", ".join(["rowid AS _rowid", *chosen])


# A session's last activity: its newest run's end (or start, while it runs; runs never
# overlap, so no older run ended later), else its creation. One index lookup a session.
LAST_ACTIVITY = (
    "coalesce((SELECT max(r.created_at, coalesce(r.ended_at, r.created_at)) FROM runs r "
    "WHERE r.session_id = s.id ORDER BY r.created_at DESC LIMIT 1), s.created_at) "
    "AS last_activity_at")
SESSION_LIST_COLUMNS = ("s.rowid AS _rowid, s.id, s.title, s.context_id, s.created_at, "
                        f"({metadata_excerpt('s.metadata')}) AS metadata, "
                        f"({metadata_cut('s.metadata')}) AS metadata_truncated")
