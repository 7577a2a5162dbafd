"""Every fix that is a pip command can be pasted: it splits like a shell line, each package spec parses with
`packaging`, and each name is a distribution qwen-doctor knows (or one the facts list as installed)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Iterator

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from doctor.facts.model import Facts
from doctor.facts.probes.inventory import as_locations
from doctor.facts.installed import DISTRIBUTIONS
from doctor.knowledge import version_matrix
from tests.conftest import facts_with, run

FIXTURES = Path(__file__).parent / "fixtures"
VALUE_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint", "-r",
                 "--requirement", "--torch-backend"}


def known_distributions() -> set[str]:
    names = {canonicalize_name(d) for dists in DISTRIBUTIONS.values() for d in dists}
    for rows in version_matrix().backends.values():
        names |= {canonicalize_name(Requirement(p).name) for row in rows for p in row.exact_pins()}
    return names | {"flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache"}


def published_pins() -> dict[str, set[str]]:
    """name -> the versions engine releases pin exactly (each one published under that name)."""
    out: dict[str, set[str]] = {}
    for rows in version_matrix().backends.values():
        for row in rows:
            for pin in row.exact_pins():
                req = Requirement(pin)
                out.setdefault(canonicalize_name(req.name), set()).update(s.version for s in req.specifier)
    return out


def pip_commands(fix: str) -> list[str]:
    """The commands in one fix line: the line itself when it is one, else the `backticked` commands of its prose."""
    if fix.startswith("pip ") or fix.startswith("flashinfer "):
        return [fix]
    return [part for part in re.findall(r"`([^`]+)`", fix) if part.startswith("pip ")]


def pip_specs(command: str) -> Iterator[tuple[str, str]]:
    """(verb, spec) for every package argument of every `pip install|uninstall` in a fix line."""
    tokens = shlex.split(command, comments=True)
    for start, token in enumerate(tokens):
        if token != "pip" or start + 1 >= len(tokens) or tokens[start + 1] not in ("install", "uninstall"):
            continue
        verb = tokens[start + 1]
        args = iter(tokens[start + 2:])
        for arg in args:
            if arg in ("&&", ";", "||"):
                break
            if arg in VALUE_OPTIONS:
                next(args, None)
            elif not arg.startswith("-"):
                yield verb, arg


def scenarios() -> Iterator[tuple[str, Facts, str | None]]:
    """Facts that make the version and package checks fail in every way they can: each matrix row's release with
    a wrong torch, transformers, flashinfer and kernel; the fixtures; mixed CUDA wheels and stale companions."""
    for backend, rows in version_matrix().backends.items():
        for row in rows:
            if row.latest is None:
                continue
            packages = {backend: str(row.latest), "torch": {"version": "1.0.0", "cuda": None},
                        "transformers": "1.0.0", "flashinfer": "0.0.1",
                        "sgl-kernel": {"version": "0.0.1", "distribution": "sgl-kernel"}}
            yield f"{backend}-{row.latest}-mismatched", facts_with(packages=packages), backend
            yield f"{backend}-{row.latest}-missing", facts_with(packages={backend: str(row.latest), "torch": None,
                                                                         "transformers": None, "sgl-kernel": None}), backend
    for path in sorted(FIXTURES.glob("*.json")):
        yield path.name, Facts.load(path), None
    inventory = {"source": "metadata", "complete": True, "locations": as_locations([
        (n, v, loc) for n, v, loc in (
            ("nvidia-cublas-cu12", "12.8.4.1", "/s"), ("nvidia-cublas-cu13", "13.2.1.1", "/s"),
            ("flashinfer-python", "0.7.4", "/s"), ("flashinfer-cubin", "0.7.2.post1", "/s"),
            ("flashinfer-jit-cache", "0.7.2+cu130", "/s"), ("torch", "2.14.0", "/s"), ("torch", "2.13.0", "/s"))])}
    yield "inventory-problems", facts_with(inventory=inventory, packages={"vllm": "0.16.0"}), None


CASES = list(scenarios())
PUBLISHED = published_pins()


@pytest.mark.parametrize("name,facts,backend", CASES, ids=[c[0] for c in CASES])
def test_every_pip_fix_parses_and_names_a_known_distribution(name: str, facts: Facts, backend: str | None) -> None:
    known = known_distributions() | {canonicalize_name(d["name"]) for d in facts.inventory}
    results = run(facts, backend=backend, only=("QD-VER", "QD-PKG", "QD-DRV", "QD-GPU"))
    commands = [c for rs in results.values() for r in rs for f in r.fix for c in pip_commands(f)]
    for command in commands:
        for verb, spec in pip_specs(command):
            req = Requirement(spec)          # raises InvalidRequirement on a spec pip would refuse
            assert canonicalize_name(req.name) in known, f"{name}: {command!r} names unknown {req.name!r}"
            if verb == "uninstall":
                assert not req.specifier, f"{name}: pip uninstall takes names only: {command!r}"
            exact = [spec.version for spec in req.specifier if spec.operator == "=="]
            published = PUBLISHED.get(canonicalize_name(req.name))
            if exact and published is not None:
                assert exact[0] in published, f"{name}: {command!r}: no release pins {req.name}=={exact[0]}"


def test_the_scenarios_reach_the_kernel_and_companion_fixes() -> None:
    fixes = []
    for _, facts, backend in CASES:
        results = run(facts, backend=backend, only=("QD-VER-006", "QD-PKG"))
        fixes += [f for rs in results.values() for r in rs for f in r.fix]
    assert any("'sglang-kernel==0.4.10'" in f for f in fixes)
    assert any(f == "pip uninstall -y flashinfer-cubin" for f in fixes)
