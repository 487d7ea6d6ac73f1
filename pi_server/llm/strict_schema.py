"""pi-ai 1.6.0's strict JSON-schema tools (api/constrained-sampling): which tools are sent
with `strict: true`, and the schema they are sent with."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

_UNSUPPORTED = (
    "$ref", "$defs", "definitions", "allOf", "oneOf", "patternProperties", "dependentSchemas", "dependencies",
    "unevaluatedProperties", "propertyNames", "contains", "prefixItems", "not", "if", "then", "else",
)  # fmt: skip
# keywords Anthropic's strict tool use rejects for the whole request
_ANTHROPIC_REJECTS = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "maxItems", "uniqueItems",
    "minContains", "maxContains", "minProperties", "maxProperties",
}  # fmt: skip
_ANTHROPIC_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}

Check = Callable[[str, Any], bool]


class Unsupported(Exception):
    """The schema has no strict form (the message says why, in pi's words)."""


class StrictRequired(ValueError):
    """A tool requires strict sampling it cannot have: pi-ai refuses the whole request."""


def anthropic_rejects(key: str, value: Any) -> bool:
    if key in _ANTHROPIC_REJECTS:
        return True
    if key == "minItems":
        return not (type(value) in (int, float) and value in (0, 1))
    if key == "format":
        return not isinstance(value, str) or value not in _ANTHROPIC_FORMATS
    return False


def _types(s: dict[str, Any]) -> list[Any]:
    t = s.get("type")
    return [t] if isinstance(t, str) else t if isinstance(t, list) else []


def _structured(s: Any) -> bool:
    if not isinstance(s, dict):
        return False
    t = _types(s)
    return "object" in t or "array" in t or s.get("properties", ...) is not ... or s.get("items", ...) is not ...


def _allows_null(s: Any) -> bool:
    if not isinstance(s, dict):
        return False
    t = s.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if ("const" in s and s["const"] is None) or (isinstance(s.get("enum"), list) and None in s["enum"]):
        return True
    return isinstance(s.get("anyOf"), list) and any(_allows_null(v) for v in s["anyOf"])


def _strict_node(s: Any, check: Check | None) -> None:
    if not isinstance(s, dict):
        raise Unsupported("boolean schemas are unsupported")
    for k in _UNSUPPORTED:
        if k in s:
            raise Unsupported(f"{k} schemas are unsupported")
    for k, v in s.items() if check is not None else ():
        if check(k, v):
            raise Unsupported(f"{k}: {json.dumps(v, separators=(',', ':'), ensure_ascii=False)} is unsupported")
    if "type" not in s and "anyOf" not in s and "enum" not in s:
        raise Unsupported("schemas without a type are unsupported")
    if "anyOf" in s:
        if not isinstance(s["anyOf"], list) or not s["anyOf"]:
            raise Unsupported("anyOf must contain at least one schema")
        for v in s["anyOf"]:
            if _structured(v):
                raise Unsupported("object and array unions are unsupported")
            _strict_node(v, check)
    if "items" in s:
        if isinstance(s["items"], list):
            raise Unsupported("tuple schemas are unsupported")
        _strict_node(s["items"], check)
    is_object = s.get("type") == "object"
    if "properties" in s and not is_object:
        raise Unsupported("properties require type object")
    if not is_object:
        return
    _strict_object(s, check)


def _strict_object(s: dict[str, Any], check: Check | None) -> None:
    if "additionalProperties" in s and s["additionalProperties"] is not False:
        raise Unsupported("schema-valued or true additionalProperties is unsupported")
    if "properties" in s and not isinstance(s["properties"], dict):
        raise Unsupported("object properties must be a schema map")
    req = s.get("required")
    if "required" in s and (not isinstance(req, list) or any(not isinstance(k, str) for k in req)):
        raise Unsupported("object required must be a string array")
    props = s["properties"] if "properties" in s else {}
    required = set(req) if isinstance(req, list) else set()
    if any(k not in props for k in required):
        raise Unsupported("required contains an unknown property")
    for key in list(props):
        _strict_node(props[key], check)
        if key not in required and not _allows_null(props[key]):
            props[key] = {"anyOf": [props[key], {"type": "null"}]}
    s["required"] = list(props)
    s["additionalProperties"] = False


def strict_schema(schema: Any, check: Check | None = None) -> dict[str, Any]:
    """makeStrictJsonSchema: optional properties made nullable, every property required."""
    out = copy.deepcopy(schema)
    if not isinstance(out, dict):
        raise Unsupported("root schema must have type object")
    _strict_node(out, check)
    if out.get("type") != "object":
        raise Unsupported("root schema must have type object")
    return out


def is_strict(tool: dict[str, Any], supported: bool, check: Check | None) -> bool:
    """resolveJsonSchemaStrictSampling: whether the tool goes out strict. A tool that requires it
    (`strict: "require"`) and cannot have it raises StrictRequired, with pi's message."""
    config = tool.get("constrainedSampling")
    if not isinstance(config, dict) or config.get("type") != "json_schema":
        return False
    why = "strict tools are unsupported"
    if supported:
        try:
            strict_schema(tool.get("parameters"), check)
            return True
        except Unsupported as e:
            why = str(e)
    if config.get("strict") == "require":
        raise StrictRequired(f'Tool "{tool.get("name")}" requires JSON-schema constrained sampling, but {why}.')
    return False
