"""`DataContract(name=..., schema=..., fields={...})` calls read as literals from the AST.

A field is `"name": "<type>"` (optional) or `"name": {"type": "<type>", "required": bool,
"description": str}`. Anything the AST cannot give as a literal is a diagnostic, never a
guess: the composer only offers what the source states.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from llamon_playground.daemon.introspect.model import (
    FIELD_TYPES,
    Contract,
    ContractField,
    Diagnostic,
)
from llamon_playground.daemon.introspect.source_module import SourceModule

CONTRACT_KEYWORDS = ("name", "schema", "fields")

Resolve = Callable[[ast.expr], ast.expr]


def is_contract_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return ((isinstance(func, ast.Name) and func.id == "DataContract")
            or (isinstance(func, ast.Attribute) and func.attr == "DataContract"))


def literal_str(expr: ast.expr | None, resolve: Resolve) -> str | None:
    """The string a literal (or a name assigned once to one) holds; None for anything else."""
    value = resolve(expr) if expr is not None else None
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    return None


class ContractReader:
    """Reads contract calls of one graph module; collects diagnostics as it goes."""

    def __init__(self, source: SourceModule, rel: str, resolve: Resolve) -> None:
        self._source = source
        self._rel = rel
        self._resolve = resolve
        self.diagnostics: list[Diagnostic] = []

    def _warn(self, node: ast.expr, code: str, message: str) -> None:
        span = self._source.span(node)
        self.diagnostics.append(Diagnostic(code, message, self._rel, span.line, span.column,
                                           "warning"))

    def read_list(self, expr: ast.expr, node_id: str) -> list[Contract]:
        """`input_contracts=[...]` → the contracts that are literals, in order."""
        value = self._resolve(expr)
        if not isinstance(value, ast.List | ast.Tuple):
            self._warn(expr, "contract_not_literal",
                       f"node {node_id!r}: input_contracts must be a list literal of "
                       "DataContract(...) calls")
            return []
        contracts = []
        for element in value.elts:
            contract = self.read(element, node_id)
            if contract is not None:
                contracts.append(contract)
        return contracts

    def read(self, expr: ast.expr, node_id: str) -> Contract | None:
        call = self._resolve(expr)
        if not (isinstance(call, ast.Call) and is_contract_call(call)):
            self._warn(expr, "contract_not_literal",
                       f"node {node_id!r}: an input contract is not a DataContract(...) "
                       f"literal ({ast.unparse(expr)[:80]}); the composer cannot read it")
            return None
        args: dict[str, ast.expr] = dict(zip(CONTRACT_KEYWORDS, call.args, strict=False))
        args.update({k.arg: k.value for k in call.keywords if k.arg})
        name = self._literal_str(args.get("name"))
        if not name:
            self._warn(call, "invalid_contract",
                       f"node {node_id!r}: DataContract needs name=\"...\" as a string literal")
            return None
        schema = self._literal_str(args.get("schema"))
        if "schema" in args and schema is None and not _is_none(self._resolve(args["schema"])):
            self._warn(args["schema"], "invalid_contract",
                       f"contract {name!r}: schema must be a string literal")
        fields = self._fields(args.get("fields"), name)
        return Contract(name, schema, tuple(fields), self._source.span(call))

    def _literal_str(self, expr: ast.expr | None) -> str | None:
        return literal_str(expr, self._resolve)

    def _fields(self, expr: ast.expr | None, contract: str) -> list[ContractField]:
        if expr is None:
            return []
        try:
            raw = ast.literal_eval(self._resolve(expr))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raw = None
        if not isinstance(raw, dict):
            self._warn(expr, "contract_not_literal",
                       f"contract {contract!r}: fields must be a dict literal")
            return []
        fields = []
        for key, spec in raw.items():
            field = self._field(key, spec, contract, expr)
            if field is not None:
                fields.append(field)
        return fields

    def _field(self, key: Any, spec: Any, contract: str, at: ast.expr) -> ContractField | None:
        if not isinstance(key, str):
            self._warn(at, "invalid_contract", f"contract {contract!r}: field names are strings")
            return None
        if isinstance(spec, str):
            spec = {"type": spec}
        if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
            self._warn(at, "invalid_contract",
                       f"contract {contract!r}: field {key!r} needs a type "
                       f"(one of {', '.join(FIELD_TYPES)})")
            return None
        ftype = spec["type"]
        if ftype not in FIELD_TYPES:
            self._warn(at, "unknown_field_type",
                       f"contract {contract!r}: field {key!r} has unknown type {ftype!r} "
                       f"(known: {', '.join(FIELD_TYPES)})")
        required = spec.get("required", False)
        if not isinstance(required, bool):
            self._warn(at, "invalid_contract",
                       f"contract {contract!r}: field {key!r}: required must be True or False")
            required = False
        description = spec.get("description")
        return ContractField(key, ftype, required,
                             description if isinstance(description, str) else None)


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None
