"""The docs stay true to the tree: links resolve, settings are documented, nothing cites
documents a maintainer does not have.

Reads files only (no processes), so it runs in well under a second.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
# Where the package's code lives (pyproject maps daemon/, api/, host_manager/ under the root),
# plus the systemd units, which set variables the daemon and the front read.
CODE_DIRS = ("llamon_playground", "daemon", "api", "host_manager", "systemd")
SKIP_DIRS = frozenset({".venv", "venv", ".git", "build", "dist", "__pycache__", "node_modules",
                       ".llamon", ".ruff_cache", ".mypy_cache", ".pytest_cache", ".tox"})
SCANNED_SUFFIXES = (".py", ".md", ".toml", ".service")

# A Markdown link or image target: [text](target) / ![alt](target), no nested parentheses.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
ENV_VAR = re.compile(r"\bLLAMON_PLAYGROUND_[A-Z0-9_]*[A-Z0-9]\b")
# A citation of a document outside this repository: a tracker entry (the word issue(s)
# followed by a number, with or without "#"), a design seed (seed followed by a zero-padded
# number, or a path into the seeds folder), or the design notes kept beside the checkout
# (an upper-case .md file under a shared folder). Spelled so that this file does not match
# itself; the forms it catches are in test_citation_pattern_catches_the_forms_it_must.
CITATION = re.compile(r"\bissues? ?#?[0-9]|\bseed ?0[0-9]|\bseeds[/]|\bshared[/][A-Z_0-9]+[.]md",
                      re.IGNORECASE)


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.glob("*.md"))]


def repo_files(suffixes: tuple[str, ...] = SCANNED_SUFFIXES) -> Iterator[Path]:
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                   and not d.startswith(".venv-")]  # the second venvs CI makes
        for name in files:
            if name.endswith(suffixes):
                yield Path(root, name)


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower-case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence or not line.startswith("#"):
            continue
        base = github_anchor(line.lstrip("#"))
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


def broken_links(path: Path, root: Path = REPO) -> list[str]:
    """Relative links of one Markdown file whose file (or heading) does not exist."""
    problems = []
    in_fence = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence:
            continue
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(root)}:{number}: {target}"
            if not linked.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors_of(linked):
                problems.append(f"{where} (no such heading)")
    return problems


def citations_in(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
            for number, line in enumerate(text.splitlines(), 1) if CITATION.search(line)]


# -- the checks -------------------------------------------------------------------------------

def test_docs_has_a_page_per_topic() -> None:
    expected = {"api", "cli", "client", "configuration", "project-format", "host", "storage",
                "security", "operations", "testing", "benchmarks", "page"}
    missing = sorted(name for name in expected if not (DOCS / f"{name}.md").is_file())
    assert not missing, f"docs/ lacks: {missing}"


def test_readme_and_docs_links_resolve() -> None:
    problems = [p for path in doc_files() for p in broken_links(path)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_readme_links_every_docs_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = {target.partition("#")[0] for target in LINK.findall(readme)}
    unlinked = sorted(f"docs/{p.name}" for p in DOCS.glob("*.md") if f"docs/{p.name}" not in linked)
    assert not unlinked, f"README.md does not link: {unlinked}"


def test_every_env_var_the_code_reads_is_documented() -> None:
    used: dict[str, str] = {}
    for path in repo_files((".py", ".service")):
        if path.relative_to(REPO).parts[0] in CODE_DIRS:
            for name in ENV_VAR.findall(path.read_text(encoding="utf-8")):
                used.setdefault(name, str(path.relative_to(REPO)))
    assert "LLAMON_PLAYGROUND_RUNTIME_DIR" in used  # the scan itself found the code
    documented = set(ENV_VAR.findall((DOCS / "configuration.md").read_text(encoding="utf-8")))
    missing = sorted(f"{name} (used in {where})" for name, where in used.items()
                     if name not in documented)
    assert not missing, "not in docs/configuration.md:\n" + "\n".join(missing)


def test_no_file_cites_documents_outside_the_repository() -> None:
    """Say the reason itself, or point at a docs/ page: a maintainer has no tracker or seeds."""
    problems = [p for path in repo_files() for p in citations_in(path)]
    assert not problems, "citations to replace:\n" + "\n".join(problems)


# -- the checkers themselves can fail ---------------------------------------------------------

def test_citation_pattern_catches_the_forms_it_must() -> None:
    word, seed = "iss" + "ue", "se" + "ed"
    for text in (f"({word} 6)", f"{word}s 4 and 5", f"{word} #12", f"{seed} 000",
                 f"{seed.title()} 001", f"{seed}s/000_api.txt", "see shared/" + "A2A_WIRE.md"):
        assert CITATION.search(text), text
    for text in ("the issue is the lock", "seeded examples", "LLAMON_DRILL_SEED=N",
                 "tiss" + "ue 3"):
        assert not CITATION.search(text), text


def test_link_checker_reports_a_missing_file_and_heading(tmp_path: Path) -> None:
    page = REPO / "docs" / "api.md"
    doc = tmp_path / "page.md"
    doc.write_text(f"# Title\n[ok](#title) [gone](nowhere.md) [bad]({page}#no-such-heading)\n"
                   "```\n[inside a fence](ignored.md)\n```\n", encoding="utf-8")
    problems = broken_links(doc, root=tmp_path)
    assert len(problems) == 2, problems
    assert "nowhere.md (no such file)" in problems[0]
    assert "no such heading" in problems[1]


def test_github_anchor_matches_githubs_ids() -> None:
    assert github_anchor(" `[tool.llamon]` in pyproject.toml") == "toolllamon-in-pyprojecttoml"
    assert github_anchor(" Capture: the trust boundary") == "capture-the-trust-boundary"
    assert github_anchor(" Events (SSE)") == "events-sse"


# -- paths named in comments and docs exist -----------------------------------------------------

# A path-like word: a file name with one of the repository's own suffixes, after its folders
# or alone (`cli/client.py`, `control.py`).
PATH_WORD = re.compile(r"(?<![\w./~<{$-])((?:[\w.-]+/)*[\w.-]+\.(?:py|js|css|html|md|toml|service))\b")
# Files named alone that are never ours: in a user's project, or in a vendored library.
FOREIGN_NAMES = frozenset({"script.py", "orchestrator.toml", "punycode.js"})
# Paths that name something outside the tree (a user's project, the runtime dir, a URL's
# path) rather than a file of ours.
FOREIGN_PREFIXES = (".llamon/", ".venv/", "app/", "okf/", "okf-contracts/", "node_modules/",
                    "site-packages/", "usr/", "run/", "tmp/", "proc/", "etc/", "../",
                    "a2a/server/", "d/")  # a2a-sdk's own tree; a shell example's folder


def repo_paths() -> set[str]:
    return {path.relative_to(REPO).as_posix() for path in repo_files(
        (".py", ".js", ".css", ".html", ".md", ".toml", ".service"))}


def comment_text(path: Path) -> Iterator[tuple[int, str]]:
    """The lines of a file a reader takes as prose: all of a Markdown page, a Python file's
    comments and docstrings (never its string literals: tests write paths that must not exist)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".md":
        yield from enumerate(text.splitlines(), 1)
        return
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                for offset, line in enumerate(body[0].value.value.splitlines()):
                    yield body[0].lineno + offset, line


def stale_paths(files: list[Path], known: set[str], root: Path = REPO) -> list[str]:
    """Path words that name no file: neither from the root, nor beside the file that names
    them, nor as the tail of a file of the tree (`store/blobs.py` for daemon/store/blobs.py)."""
    tails = {"/".join(p.split("/")[i:]) for p in known for i in range(p.count("/") + 1)}
    problems = []
    for path in files:
        here = path.parent.relative_to(root).as_posix()
        for number, text in comment_text(path):
            for word in PATH_WORD.findall(text):
                if (word.startswith(FOREIGN_PREFIXES) or word in FOREIGN_NAMES
                        or "/" + word in text.replace(" /", " ")):
                    continue
                beside = f"{here}/{word}" if here != "." else word
                if word not in tails and beside not in known:
                    problems.append(f"{path.relative_to(root)}:{number}: {word}")
    return problems


def test_paths_named_in_comments_and_docs_exist() -> None:
    files = [p for p in repo_files((".py", ".md"))
             if p.relative_to(REPO).parts[0] != "examples"]
    problems = stale_paths(files, repo_paths())
    assert not problems, "paths that name no file:\n" + "\n".join(problems)


def test_stale_path_checker_finds_a_stale_name(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    module = tmp_path / "pkg" / "mod.py"
    module.write_text('"""Beside pkg/mod.py."""\n# see pkg/gone.py and pkg/mod.py\n'
                      "x = 'lib/code.py'  # a literal is not prose\n"
                      "# moved to split.py, beside mod.py\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("`mod.py` lives in pkg/mod.py; old/name.py does not\n", encoding="utf-8")
    problems = stale_paths([module, page], {"pkg/mod.py", "page.md"}, root=tmp_path)
    assert problems == ["pkg/mod.py:2: pkg/gone.py", "pkg/mod.py:4: split.py",
                        "page.md:1: old/name.py"]


def test_readme_is_a_front_door() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the reference belongs in docs/"
