"""User YAML (profiles, lint) is loaded with an alias, size and depth budget: alias bombs are refused at once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from doctor import safeyaml
from doctor.safeyaml import MalformedYAML, YAMLLimitError, load_yaml
from tests.conftest import FIXTURES
from tests.test_cli_check import ROOT, qd
from tests.test_output_safety import assert_refused


LOADERS = [safeyaml.BoundedLoader, *([safeyaml.FastBoundedLoader] if safeyaml.CParser is not None else [])]


def billion_laughs(levels: int = 9) -> str:
    """The classic bomb: 9 ** levels strings once expanded, a few hundred bytes on disk."""
    lines = ['  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for n in range(1, levels):
        lines.append(f"  l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]")
    return "\n".join(lines)


def bomb_profile() -> str:
    """A valid profile whose one flag is a billion laughs (the campaign's 1.3 GB case)."""
    bomb = billion_laughs().replace("\n  ", "\n    ").replace("  l0", "    l0", 1)
    return (ROOT / "profiles" / "vllm-stable.yaml").read_text() + "  override-generation-config:\n" + bomb + "\n"


def test_a_billion_laughs_is_refused_well_under_a_second():
    started = time.monotonic()
    with pytest.raises(YAMLLimitError, match="once aliases are expanded"):
        load_yaml("bomb:\n" + billion_laughs(), "bomb.yaml")
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("command", [["check", "--from", str(FIXTURES / "h200.json"), "--profile"],
                                     ["deploy", "--dry-run", "--profile"], ["lint"], ["profiles", "show"]])
def test_a_bomb_profile_is_exit_2_with_one_line_and_left_as_it_was(tmp_path: Path, command: list[str]):
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb_profile())
    before = path.read_bytes()
    started = time.monotonic()
    done = qd(*command, str(path))
    assert_refused(done, "once aliases are expanded")
    assert time.monotonic() - started < 30
    assert path.read_bytes() == before


@pytest.mark.parametrize("text, why", [
    ("a: &a [*a]", "recursive structure"),
    ("x: " + "[" * 100 + "]" * 100, "nested deeper than 64 levels"),
    ("x:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 200)), "nested deeper than 64 levels"),
    ("x: [" + ", ".join(["1"] * (safeyaml.MAX_NODES + 1)) + "]", "more than 20000 values"),
    ("a: &a " + "[" * 40 + "1" + "]" * 40 + "\nb: " + "[" * 30 + "*a" + "]" * 30, "once aliases are expanded"),
    ("port: " + "9" * 5000, "more than 100 digits"),
    ("x: " + "y" * (safeyaml.MAX_SCALAR + 1), "longer than"),
    ("a: &a 1\nb: [" + ", ".join(["*a"] * (safeyaml.MAX_ALIASES + 1)) + "]", "more than 1000 aliases"),
])
@pytest.mark.parametrize("loader", LOADERS, ids=[c.__name__ for c in LOADERS])
def test_budgets(text: str, why: str, loader: type, monkeypatch):
    monkeypatch.setattr(safeyaml, "LOADER", loader)
    with pytest.raises(YAMLLimitError, match=why):
        load_yaml(text, "p.yaml")


def test_ordinary_anchors_still_work_and_errors_name_the_line():
    data = load_yaml("base: &b {x: 1, y: [1, 2]}\none: *b\ntwo: *b\nbig: 0x10\nf: 1.5\n", "p.yaml")
    assert data == {"base": {"x": 1, "y": [1, 2]}, "one": {"x": 1, "y": [1, 2]}, "two": {"x": 1, "y": [1, 2]},
                    "big": 16, "f": 1.5}
    with pytest.raises(MalformedYAML, match=r"p.yaml: malformed YAML \(line 3\): "):
        load_yaml("a: 1\nb: [\n", "p.yaml")
    with pytest.raises(MalformedYAML, match="found undefined alias"):
        load_yaml("a: *nothing", "p.yaml")
