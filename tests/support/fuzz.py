"""The fuzzers' shared harness: run the real CLI in-process under a per-case deadline and check its contract.

The contract (README, "Exit codes"): exit 0 or 1 with no crashed check, or exit 2 with exactly one line on stderr;
never a traceback, an "internal error", a hang, or a planted secret in any output.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from click.testing import CliRunner
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from doctor.cli.main import main

CASE_TIMEOUT_S = 20.0
# A case stuck in C code (a regex) never sees SIGALRM: past this, faulthandler dumps every stack and exits.
HARD_TIMEOUT_S = 120.0
FORMATS = ("text", "json", "md", "junit", "html")
# Planted in inputs; none may reach any output. Shapes the README promises to redact.
SECRETS = ("hf_FuzzPlantedToken0123456789abcd", "sk-fuzzPlantedKey0123456789abcdef")


def examples(default: int) -> int:
    """max_examples for one target: the default, or $QWEN_DOCTOR_FUZZ_EXAMPLES to run longer locally."""
    return int(os.environ.get("QWEN_DOCTOR_FUZZ_EXAMPLES") or default)


def fuzz_settings(default_examples: int) -> settings:
    """Deterministic (derandomize), bounded, no example database on disk."""
    return settings(max_examples=examples(default_examples), derandomize=True, database=None, deadline=None,
                    print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                            HealthCheck.filter_too_much])


@dataclass
class Outcome:
    argv: list[str]
    code: int
    stdout: str
    stderr: str


class Hang(Exception):
    """A case ran past CASE_TIMEOUT_S."""


@contextmanager
def _deadline(seconds: float, argv: list[str]) -> Iterator[None]:
    def expire(_signum: int, _frame: Any) -> None:
        raise Hang(f"no answer within {seconds:g} s: {argv}")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(HARD_TIMEOUT_S, exit=True, file=sys.__stderr__)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        faulthandler.cancel_dump_traceback_later()


def invoke(argv: list[str], stdin: bytes | None = None, env: dict[str, str] | None = None) -> Outcome:
    """`qwen-doctor ARGV` in this process, through the real entry point (its error handling included)."""
    code = 0
    with CliRunner().isolation(input=stdin, env=env) as (out, err, _):
        try:
            with _deadline(CASE_TIMEOUT_S, argv):
                main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        stdout, stderr = out.getvalue(), err.getvalue()
    return Outcome(argv, code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))


def assert_contract(outcome: Outcome, secrets: tuple[str, ...] = SECRETS, echoed: str = "") -> None:
    """Exit 0/1 with no crashed check, or exit 2 with one line; no traceback, internal error or secret.

    `echoed`: input text the report quotes (log lines), whose own tracebacks may appear on stdout.
    """
    both = outcome.stdout + outcome.stderr
    where = f"qwen-doctor {' '.join(outcome.argv)} -> exit {outcome.code}\n{outcome.stderr[-2000:]}"
    for marker in ("Traceback (most recent call last)", "internal error"):
        assert marker not in outcome.stderr, where
        assert marker not in outcome.stdout or marker in echoed, where
    for secret in secrets:
        assert secret not in both, f"planted secret leaked: {where}"
    assert outcome.code in (0, 1, 2), where
    if outcome.code == 2:
        lines = outcome.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("qwen-doctor: error: "), where
    else:
        assert "check crashed" not in both, where
        if outcome.stdout.lstrip().startswith("{"):
            report = json.loads(outcome.stdout)
            crashed = [r for r in report.get("results", []) if r.get("status") == "error"]
            assert not crashed, f"{where}\n{crashed}"


# Values a mutated field may take: every JSON type, edges of every range, text that looks like something else.
WEIRD_SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 2**64 - 1, 2**64, 10**400, -(10**30), 1e308, -1e308, 1e-308, 0.5,
                     float("nan"), float("inf"), float("-inf")]),
    st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "abc", "8.0", "-1", "1e999", "NaN", "null", "9" * 50, "\x00\x1b[31m", "é漢字🙂",
                     "‮rtl", "a" * 5000, "GPU-", "0,1,2", "active", "ok", *SECRETS]),
    st.text(max_size=40),
)


def weird_values(depth: int = 2) -> st.SearchStrategy[Any]:
    """Scalars, small containers of them, and pathological nesting."""
    containers = st.recursive(WEIRD_SCALARS, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=6)
    nested = st.integers(min_value=60, max_value=300).map(lambda n: json.loads("[" * n + "]" * n))
    return st.one_of(WEIRD_SCALARS, containers, nested)


def same_type(value: Any) -> st.SearchStrategy[Any]:
    """A different value of the same JSON type: what passes a schema and still surprises a check."""
    if isinstance(value, bool) or value is None:
        return st.sampled_from([True, False, None])
    if isinstance(value, int):
        return st.sampled_from([0, 1, -1, 2, 7, 2**32, 2**63 - 1, 2**64 - 1, value + 1, value // 2])
    if isinstance(value, float):
        return st.sampled_from([0.0, -0.0, 1e-9, 0.5, 1.0, 1e9, 1e15, 1e308])
    if isinstance(value, str):
        return st.one_of(st.sampled_from(["", " ", "0", "0.0", "99.99", "8.0a", "x.y", "GPU-", "MIG-", "-1", "0,,1",
                                          "None", "SYSTEM", "active", "inactive", "timeout", "error", "ok", "dead",
                                          "auto", "local", "ray", "spark", "é漢字🙂", "\x1b[2J", *SECRETS]),
                         st.text(max_size=20))
    if isinstance(value, list):
        return st.sampled_from([[], value[:1], value[::-1], value * 3])
    return st.sampled_from([{}, value])


def paths_of(doc: Any, prefix: tuple[Any, ...] = (), limit: int = 4000) -> list[tuple[Any, ...]]:
    """Every path into a JSON document (breadth-first, bounded), the root excluded."""
    out: list[tuple[Any, ...]] = []
    queue = [(doc, prefix)]
    while queue and len(out) < limit:
        node, path = queue.pop(0)
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            out.append(path + (key,))
            queue.append((child, path + (key,)))
    return out


def mutate(doc: Any, data: st.DataObject, operations: int) -> Any:
    """Apply `operations` random edits (replace with a weird value, delete, duplicate a list item, plant a
    secret in a string) at random paths of `doc`, in place."""
    for _ in range(operations):
        paths = paths_of(doc)
        if not paths:
            return doc
        path = data.draw(st.sampled_from(paths), label="path")
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        op = data.draw(st.sampled_from(["tweak", "tweak", "tweak", "replace", "delete", "duplicate", "plant"]),
                       label="op")
        if op == "delete":
            if isinstance(parent, dict):
                del parent[key]
            else:
                parent.pop(key)
        elif op == "duplicate" and isinstance(parent[key], list) and parent[key]:
            parent[key].extend(parent[key][: data.draw(st.integers(1, 3))] * data.draw(st.integers(1, 50)))
        elif op == "tweak":
            parent[key] = data.draw(same_type(parent[key]), label="value")
        elif op == "plant" and isinstance(parent[key], str):
            parent[key] = parent[key] + " " + data.draw(st.sampled_from(SECRETS))
        else:
            parent[key] = data.draw(weird_values(), label="value")
    return doc


def dumps(doc: Any) -> str:
    """JSON as a careless tool would write it: NaN / Infinity allowed, non-ASCII as is."""
    return json.dumps(doc, allow_nan=True, ensure_ascii=False)
