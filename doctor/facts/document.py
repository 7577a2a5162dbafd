"""A facts document as data: its schema name and version, and validation of the whole tree (a fleet section's
nodes each validated on their own). Below both the Facts view (doctor/facts/model.py) and the producers of
documents (collect, envdump, the fleet runners), so none of them imports another to share it."""

from __future__ import annotations

from typing import Any

from doctor.errors import BadBundle
from doctor.facts import schema

SCHEMA_NAME = "qwen-doctor.facts"
SCHEMA_VERSION = 1


def validated(data: Any, source: str = "bundle", parsed: bool = False) -> dict[str, Any]:
    """The document, checked: schema name and version, the JSON Schema, and its fleet section (a node whose facts
    do not validate becomes that node's error). `parsed`: it comes from schema.parse_json (depth and numbers
    screened already)."""
    if not isinstance(data, dict):
        raise BadBundle(f"{source} is not a qwen-doctor facts bundle: top level is not an object")
    if data.get("schema") != SCHEMA_NAME:
        raise BadBundle(f"{source} is not a qwen-doctor facts bundle: 'schema' is not {SCHEMA_NAME!r}")
    version = data.get("schema_version")
    if not isinstance(version, int) or version < 1:
        raise BadBundle(f"{source}: 'schema_version' must be a positive integer")
    if version > SCHEMA_VERSION:
        raise BadBundle(
            f"{source} has facts schema {version}, newer than this qwen-doctor reads ({SCHEMA_VERSION}): upgrade qwen-doctor"
        )
    schema.validate(data, source, parsed=parsed)
    if "fleet" in data:
        data = {**data, "fleet": checked_fleet(data["fleet"], source, parsed=parsed)}
    return data


def checked_fleet(fleet: Any, source: str, parsed: bool = False) -> dict[str, Any]:
    """The fleet section with every node's facts validated on its own.

    A section the checks could not read at all is a one-line BadBundle; a node whose facts do not validate (garbage
    from the node, another qwen-doctor's schema) becomes that node's `error`, so the other nodes are still checked.
    """
    schema.validate(fleet, source, part="fleet", root=("fleet",), parsed=parsed)
    out = dict(fleet)
    out["nodes"] = [_checked_node(n, parsed) for n in fleet.get("nodes") or []]
    return out


def _checked_node(node: dict[str, Any], parsed: bool) -> dict[str, Any]:
    data = node.get("facts")
    if not data:
        return node
    try:
        validated(data, source="facts", parsed=parsed)
    except BadBundle as exc:
        return {**node, "status": "error", "facts": None,
                "error": f"the node returned facts that do not validate: {exc}"[:300]}
    return node
