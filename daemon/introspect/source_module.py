"""One Python source file parsed with `ast` (never imported), with editor-style positions."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from llamon_playground.daemon.introspect.model import Diagnostic, Span

# The line breaks the tokenizer knows; str.splitlines() also splits on \f, \v, \u2028...,
# which would shift every line number after one of them.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class SourceModule:
    """One parsed file and its lines, so `ast` byte offsets can be turned into editor columns;
    a file that does not parse keeps its error instead of a tree."""

    tree: ast.Module | None  # None when the file does not parse
    lines: list[str]
    error: Diagnostic | None = None

    def column(self, line: int, byte_offset: int) -> int:
        """`ast` counts UTF-8 bytes from 0; editors count characters from 1."""
        if not 1 <= line <= len(self.lines):
            return byte_offset + 1
        prefix = self.lines[line - 1].encode("utf-8")[:byte_offset]
        return len(prefix.decode("utf-8", errors="ignore")) + 1

    def span(self, node: ast.expr | ast.stmt) -> Span:
        end_line = node.end_lineno if node.end_lineno is not None else node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return Span(node.lineno, self.column(node.lineno, node.col_offset),
                    end_line, self.column(end_line, end_col))


def parse_source(rel: str, text: str) -> SourceModule:
    lines = _LINE_BREAK.split(text)
    try:
        tree = ast.parse(text, filename=rel)
    except SyntaxError as exc:
        # For str input, SyntaxError.offset is already a 1-based character column.
        return SourceModule(None, lines, Diagnostic(
            "syntax_error", f"syntax error: {exc.msg}", rel, exc.lineno, exc.offset))
    except ValueError as exc:  # e.g. a NUL byte
        return SourceModule(None, lines, Diagnostic("syntax_error", f"cannot parse: {exc}", rel))
    return SourceModule(tree, lines)


def relative(project_dir: Path, path: Path) -> str:
    return path.relative_to(project_dir).as_posix()
