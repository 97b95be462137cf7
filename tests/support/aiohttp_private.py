"""Finds uses of aiohttp's private parts in the product's source (docs/front-transport.md).

Private, for this check:
- a module of aiohttp other than the public ones (`aiohttp`, `aiohttp.web`, `aiohttp.abc`,
  `aiohttp.typedefs`): `aiohttp.web_protocol`, `aiohttp.http_writer`, ...;
- a name starting with one underscore imported from aiohttp;
- in a class derived from an aiohttp class, `self._x`, `cls._x` or `super()._x`, or an own
  `_x` defined in the class, when `_x` is one of the private names of its aiohttp bases
  (their class attributes, `__slots__` and `self._x` assignments): reading, writing or
  overriding aiohttp's private state;
- anywhere else, `obj._x` where `_x` is a private name of aiohttp's source and the module
  itself defines no such name;
- an assignment to `__class__`.
A class is checked by importing its module: the MRO says which bases are aiohttp's.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from functools import cache
from pathlib import Path

import aiohttp

PUBLIC_MODULES = frozenset({"aiohttp", "aiohttp.web", "aiohttp.abc", "aiohttp.typedefs"})


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _names_in(tree: ast.AST) -> set[str]:
    """Private names a source defines or uses: attributes, functions, assigned names."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)  # __slots__ entries
    return {name for name in found if _private(name)}


def _defined_in(tree: ast.AST) -> set[str]:
    """Private names a source defines itself: assigned attributes and names, functions."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
    return {name for name in found if _private(name)}


@cache
def aiohttp_private_names() -> frozenset[str]:
    """Every private name aiohttp's own source defines or uses."""
    root = Path(aiohttp.__file__).parent
    names: set[str] = set()
    for path in root.rglob("*.py"):
        names |= _names_in(ast.parse(path.read_text(encoding="utf-8")))
    return frozenset(names)


@cache
def _class_private_names(cls: type) -> frozenset[str]:
    """The private names of aiohttp's classes in `cls`'s MRO."""
    names: set[str] = set()
    for base in cls.__mro__:
        if not base.__module__.startswith("aiohttp"):
            continue
        names |= {name for name in vars(base) if _private(name)}
        names |= {name for name in getattr(base, "__slots__", ()) if _private(name)}
        try:
            names |= _names_in(ast.parse(inspect.getsource(base)))
        except (OSError, TypeError):
            pass  # compiled: its vars and slots above
    return frozenset(names)


def _module_name(path: Path, root: Path) -> str | None:
    """The import name of a product file (api/relay.py is llamon_playground.api.relay)."""
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts and parts[0] != "llamon_playground":
        parts = ("llamon_playground", *parts)
    return ".".join(parts) if parts else None


def _imported(module: str) -> object:
    try:
        return importlib.import_module(module)
    except Exception:  # noqa: BLE001 - a module that cannot be imported has no class to check
        return None


def _from_aiohttp(cls: object) -> bool:
    """Whether `cls` is a class derived from one of aiohttp's."""
    return isinstance(cls, type) and any(b.__module__.startswith("aiohttp")
                                         for b in cls.__mro__)


def _is_self(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "super")


def private_uses(source: str, where: str, module: str | None = None) -> list[str]:
    """`where:line: what` for each use of aiohttp's private parts in `source`."""
    tree = ast.parse(source)
    own = _defined_in(tree)
    found: list[str] = []

    def say(node: ast.AST, what: str) -> None:
        found.append(f"{where}:{getattr(node, 'lineno', 0)}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("aiohttp.") and alias.name not in PUBLIC_MODULES:
                    say(node, f"imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and (
                node.module == "aiohttp" or node.module.startswith("aiohttp.")):
            if node.module not in PUBLIC_MODULES:
                say(node, f"imports from {node.module}")
            for alias in node.names:
                if _private(alias.name):
                    say(node, f"imports {node.module}.{alias.name}")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "__class__":
                    say(node, "assigns __class__")

    def visit_class(node: ast.ClassDef, cls: object) -> None:
        private = _class_private_names(cls) if isinstance(cls, type) else frozenset()
        for item in node.body:
            defined: list[str] = []
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined = [item.name]
            elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                defined = [t.id for t in targets if isinstance(t, ast.Name)]
            for name in defined:
                if name in private:
                    say(item, f"{node.name} overrides aiohttp's {name}")
        for sub in ast.walk(node):
            if (isinstance(sub, ast.Attribute) and _is_self(sub.value)
                    and sub.attr in private):
                say(sub, f"{node.name} uses aiohttp's {sub.attr}")

    snippet: dict[str, object] = {}
    if module is None:  # a snippet (the checker's own tests): its classes made here
        exec(compile(tree, where, "exec"), snippet)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            made = (snippet.get(node.name) if module is None
                    else getattr(_imported(module), node.name, None))
            visit_class(node, made if _from_aiohttp(made) else None)
    aiohttp_names = aiohttp_private_names()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and not _is_self(node.value)
                and node.attr in aiohttp_names and node.attr not in own):
            say(node, f"uses {node.attr}, a private name of aiohttp")
    return found


def product_files(root: Path) -> list[Path]:
    """Every Python file of the product (the mapped top-level folders and the root)."""
    folders = ("llamon_playground", "api", "daemon", "host_manager", "examples")
    return sorted(p for folder in folders for p in (root / folder).rglob("*.py"))


def scan(root: Path, allowed: frozenset[str]) -> list[str]:
    """Every private use in the product, but in the files named in `allowed` (relative)."""
    found: list[str] = []
    for path in product_files(root):
        where = str(path.relative_to(root))
        if where not in allowed:
            found += private_uses(path.read_text(encoding="utf-8"), where,
                                  _module_name(path, root))
    return found
