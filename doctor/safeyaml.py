"""YAML from users without alias bombs: one loader for profiles, lint, and any other YAML a user supplies.

`yaml.SafeLoader` shares the object an alias points to, so a "billion laughs" document loads small but
explodes when anything walks it (rendering flags to JSON, printing, comparing). `BoundedLoader` (and
`FastBoundedLoader`, the same with libyaml's parser) composes the node graph first and refuses, before
constructing any object, a document with
- more than MAX_ALIASES alias uses,
- more than MAX_NODES nodes once every alias is expanded (the size a walk of the result would see),
- nesting deeper than MAX_DEPTH, or an alias that refers to a node containing itself,
- a scalar longer than MAX_SCALAR characters, or an integer with more than MAX_INT_DIGITS digits,
- a mapping that names one key twice (YAML 1.2.2, 3.2.1.1: "each of the keys is unique"; PyYAML keeps the last
  silently, so `port: 8000` then `port: 9000` would serve on a port the reader of the file may not expect).

    load_yaml(text, "p.yaml") -> Any        # raises YAMLLimitError / MalformedYAML, both DoctorError
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml
    CParser = None

from doctor.errors import DoctorError

MAX_ALIASES = 1_000
MAX_NODES = 20_000
MAX_DEPTH = 64
MAX_SCALAR = 64 * 1024
MAX_INT_DIGITS = 100


class YAMLLimitError(DoctorError):
    """A YAML document over one of the budgets above."""


class MalformedYAML(DoctorError):
    """A YAML document that does not parse."""


class _Budget(Composer):
    """Composition hooks that count aliases and nodes and limit depth, and a bounded integer constructor."""

    def _start_budget(self) -> None:
        self._aliases = 0
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YAMLLimitError(f"more than {MAX_ALIASES} aliases")
            return super().compose_node(parent, index)
        self._depth += 1
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise YAMLLimitError(f"more than {MAX_NODES} values")
        try:
            if self._depth > MAX_DEPTH:
                raise YAMLLimitError(f"nested deeper than {MAX_DEPTH} levels")
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, ScalarNode) and len(node.value) > MAX_SCALAR:
            raise YAMLLimitError(f"a value longer than {MAX_SCALAR} characters (line {node.start_mark.line + 1})")
        if isinstance(node, MappingNode):
            _unique_keys(node)
        return node

    def compose_document(self) -> Node | None:
        node = super().compose_document()
        if node is not None:
            expanded_size(node)
        return node

    def construct_yaml_int(self, node: ScalarNode) -> int:
        digits = sum(ch.isdigit() for ch in node.value)
        if digits > MAX_INT_DIGITS:
            raise YAMLLimitError(f"an integer with more than {MAX_INT_DIGITS} digits (line {node.start_mark.line + 1})")
        return super().construct_yaml_int(node)  # type: ignore[misc]


class BoundedLoader(_Budget, yaml.SafeLoader):
    """yaml.SafeLoader with the budgets; pure Python (used where libyaml is missing)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._start_budget()


BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_yaml_int)

if CParser is not None:

    class FastBoundedLoader(_Budget, CParser, SafeConstructor, Resolver):  # type: ignore[misc,valid-type]
        """The same budgets with libyaml's parser: events come from C, composition is the hooked Python one,
        so a 1 MiB document is refused about four times sooner than with the pure-Python scanner."""

        def __init__(self, stream: Any) -> None:
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            Composer.__init__(self)
            self._start_budget()

    FastBoundedLoader.add_constructor("tag:yaml.org,2002:int", FastBoundedLoader.construct_yaml_int)
    LOADER: type = FastBoundedLoader
else:
    LOADER = BoundedLoader


def _unique_keys(mapping: MappingNode) -> None:
    """ComposerError (a malformed document) at the second use of a scalar key in one mapping."""
    first_line: dict[tuple[str, str], int] = {}
    for key, _value in mapping.value:
        if isinstance(key, ScalarNode):
            name = (key.tag, key.value)
            if name in first_line:
                raise ComposerError(None, None, f"the key {key.value[:80]!r} appears twice in one mapping (first "
                                    f"on line {first_line[name]})", key.start_mark)
            first_line[name] = key.start_mark.line + 1


def expanded_size(root: Node) -> int:
    """Nodes in the document with every alias expanded; YAMLLimitError past MAX_NODES, past MAX_DEPTH levels
    (aliases included) or on a cycle."""
    seen: dict[int, tuple[int, int]] = {}
    active: set[int] = set()

    def measure(node: Node) -> tuple[int, int]:
        """(expanded node count, height) of `node`."""
        key = id(node)
        if key in seen:
            return seen[key]
        if key in active:
            raise YAMLLimitError("an alias refers to a node that contains it (recursive structure)")
        active.add(key)
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [item for pair in node.value for item in pair]
        total, height = 1, 1
        for child in children:
            child_total, child_height = measure(child)
            total += child_total
            height = max(height, child_height + 1)
            if total > MAX_NODES:
                raise YAMLLimitError(f"more than {MAX_NODES} values once aliases are expanded (an alias bomb?)")
            if height > MAX_DEPTH:
                raise YAMLLimitError(f"nested deeper than {MAX_DEPTH} levels once aliases are expanded")
        active.discard(key)
        seen[key] = (total, height)
        return total, height

    return measure(root)[0]


def load_yaml(text: str | bytes, origin: str) -> Any:
    """Parse one YAML document with `BoundedLoader`; errors are one line naming `origin`."""
    loader = LOADER(text)
    try:
        return loader.get_single_data()
    except YAMLLimitError as exc:
        raise YAMLLimitError(f"{origin}: YAML refused: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise MalformedYAML(f"{origin}: malformed YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise YAMLLimitError(f"{origin}: YAML refused: nested too deeply") from None
    except (ValueError, OverflowError) as exc:
        raise MalformedYAML(f"{origin}: malformed YAML: {type(exc).__name__}: {exc}") from None
    finally:
        loader.dispose()
