"""What a person typed, and the filters, as one FTS5 MATCH expression.

Every word is quoted as an FTS5 string (a `"` doubled), so no input is FTS5 syntax: `AND`,
`NEAR(`, `col:` or a stray quote are words like any other. What a person may use: words
(all must match, in any column), "a quoted phrase" (its words in that order), and `word*`
(a prefix). The filters match words of the `facts` column, which the words typed never
reach (they are held to the text columns).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llamon_playground.common.contract import RunStatus
from llamon_playground.daemon.errors import BadRequest

MAX_QUERY_CHARS = 500
MAX_FILTER_CHARS = 200
MIN_PREFIX_CHARS = 3  # `ab*` would expand to much of the vocabulary (the index keeps 3)
TEXT_COLUMNS = ("input", "output", "label", "note", "title")  # the excerpt's `field` names
STATUSES = frozenset(s.value for s in RunStatus)
# One word in the index for all three (a run's start does not re-index it): the query then
# checks the row's own status, which costs nothing, since only one run is ever active.
ACTIVE = ("queued", "preparing", "running")

# A quoted phrase (its closing quote optional), or a run of anything but spaces and quotes.
_TERM = re.compile(r'"([^"]*)"?|([^\s"]+)')
# What the unicode61 tokenizer keeps as tokens: letters, digits, private-use characters.
_TOKENS = re.compile(r"(?:[^\W_]|[\ue000-\uf8ff])+")


def invalid(message: str) -> BadRequest:
    """The BadRequest for a query that cannot be searched (`invalid_query`)."""
    return BadRequest(message, code="invalid_query")


@dataclass(frozen=True)
class Term:
    """One word or phrase a person typed; `fts` quotes it, so nothing typed is FTS5 syntax."""

    text: str
    prefix: bool = False

    def fts(self) -> str:
        quoted = '"' + self.text.replace('"', '""') + '"'
        return quoted + " *" if self.prefix else quoted


@dataclass(frozen=True)
class SearchQuery:
    """Parsed words and filters; `match()` is the MATCH expression (None: no condition)."""

    terms: tuple[Term, ...] = ()
    nothing: bool = False  # `q` held no word (`!!!`): no run can match
    statuses: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    labelled: bool = False
    evaluator_failed: bool = False
    session_id: str | None = None

    def match(self) -> str | None:
        """The FTS5 MATCH expression for the query's terms and filters, or None when it has none."""
        clauses = []
        if self.terms:
            typed = " AND ".join(term.fts() for term in self.terms)
            clauses.append("{" + " ".join(TEXT_COLUMNS) + "} : (" + typed + ")")
        if self.statuses:
            status_words = dict.fromkeys("sactive" if s in ACTIVE else fact("s", s)
                                         for s in self.statuses)
            clauses.append(_facts(list(status_words)))
        if self.reasons:
            clauses.append(_facts([fact("r", r) for r in self.reasons]))
        if self.labelled:
            clauses.append(_facts(["labelled"]))
        if self.evaluator_failed:
            clauses.append(_facts(["evalfailed"]))
        if self.session_id is not None:
            clauses.append(_facts([fact("x", self.session_id)]))
        return " AND ".join(clauses) or None


def fact(tag: str, value: str) -> str:
    """A filter value as the one word the index holds for it (as the migration's view
    writes it: the tag, then the value's UTF-8 bytes in hex)."""
    return tag + value.encode().hex()


def _facts(words: list[str]) -> str:
    return "facts : (" + " OR ".join(f'"{w}"' for w in words) + ")"


def parse_terms(q: str) -> tuple[Term, ...] | None:
    """The words of `q` (None: it holds no word at all, so nothing can match); 400
    invalid_query when it is too long."""
    if len(q) > MAX_QUERY_CHARS:
        raise invalid(f"`q` is longer than {MAX_QUERY_CHARS} characters")
    terms = []
    # FTS5 reads a string only up to a NUL (then says "unterminated string").
    for match in _TERM.finditer(q.replace("\x00", " ")):
        phrase, word = match.group(1), match.group(2)
        text = phrase if phrase is not None else word
        prefix = phrase is None and text.endswith("*")
        text = text.rstrip("*") if prefix else text
        tokens = _TOKENS.findall(text)
        if not tokens:
            continue  # punctuation only: no token to look for
        # FTS5 expands only the phrase's last token (`re-ad*`: `re` then `ad...`).
        terms.append(Term(text, prefix and len(tokens[-1]) >= MIN_PREFIX_CHARS))
    if q.strip() and not terms:
        return None
    return tuple(terms)


def parse_query(q: str, *, statuses: list[str], reasons: list[str], labelled: bool,
                evaluator_failed: bool, session_id: str | None) -> SearchQuery:
    """Words and filters, each checked; anything wrong is 400 invalid_query."""
    for status in statuses:
        if status not in STATUSES:
            raise invalid(f"`status` must be one of {', '.join(sorted(STATUSES))}")
    sessions = [] if session_id is None else [session_id]
    for name, values in (("reason", reasons), ("session", sessions)):
        for value in values:
            if not value or len(value) > MAX_FILTER_CHARS:
                raise invalid(f"`{name}` must be 1 to {MAX_FILTER_CHARS} characters")
    terms = parse_terms(q)
    return SearchQuery(terms or (), terms is None, tuple(dict.fromkeys(statuses)),
                       tuple(dict.fromkeys(reasons)), labelled, evaluator_failed, session_id)
