"""JSON Schemas (OpenAPI 3.1 dialect) of the Playground API's bodies and answers.

Written from the one wire declaration (`llamon_playground/common/wire/`), never by hand: a
field added there shows here, in the client's types and on the page alike. What every
answer is sure to hold is `required`; objects stay open (clients ignore unknown keys; the
API only ever adds keys) except the request bodies that refuse unknown fields.
"""

from __future__ import annotations

from typing import Any

from llamon_playground.common.wire import COMPONENTS
from llamon_playground.common.wire.json_schema import component_schemas, ref

__all__ = ["NONEMPTY", "SCHEMAS", "STR", "Schema", "ref"]

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
NONEMPTY: Schema = {"type": "string", "minLength": 1}

SCHEMAS: dict[str, Schema] = component_schemas(COMPONENTS)
