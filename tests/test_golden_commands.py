"""Golden record of the commands deploy and `profiles show --render` start, for every shipped profile and every
kind of command-line override (--flag, --set, --model, --port, --host, --python, --rehearse's argv).

The record (tests/data/golden/commands.json) was written by the code before the typed Deployment existed; the
rendered argv, env and the fields read from them must stay byte-identical. Regenerate only when a behaviour is
meant to change: QWEN_DOCTOR_GOLDEN_WRITE=1 pytest tests/test_golden_commands.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).resolve().parent / "data" / "golden" / "commands.json"
MODEL_DIR = "/models/tiny model"

# One entry per override kind: (name, --flag items, --set items, --model, --port, --host, --python)
OVERRIDES: list[tuple[str, tuple[str, ...], dict[str, str], str | None, int | None, str | None, str | None]] = [
    ("plain", (), {}, None, None, None, None),
    ("port", (), {}, None, 8123, None, None),
    ("host", (), {}, None, None, "0.0.0.0", None),
    ("model", (), {}, "/ckpt/Qwen3.5-35B-A3B", None, None, None),
    ("set", (), {"head_address": "10.0.0.7", "ifname": "eth9"}, None, None, None, None),
    ("flag-new", ("max-num-seqs=64", "enable-prefix-caching"), {}, None, None, None, None),
    ("flag-override", ("max-model-len=8192", "context-length=8192"), {}, None, None, None, None),
    ("flag-json", ("speculative-config={\"method\": \"mtp\", \"num_speculative_tokens\": 2}",), {}, None, None, None,
     None),
    ("flag-float", ("gpu-memory-utilization=0.85", "kv-cache-dtype=fp8"), {}, None, None, None, None),
    ("python", (), {}, None, None, None, "/opt/venv/bin/python"),
    ("all", ("max-num-seqs=32",), {"head_address": "10.0.0.9"}, "/ckpt/m", 9000, "::1", None),
]


def _profile_names() -> list[str]:
    from profiles import profile_names

    return profile_names()


def _variables(profile: Any, given: dict[str, str]) -> dict[str, str]:
    out = {k: v for k, v in given.items() if k in profile.variables}
    if "model_dir" in profile.variables:
        out.setdefault("model_dir", MODEL_DIR)
    return out


def record(name: str, kind: str) -> dict[str, Any]:
    """What deploy and `profiles show --render` produce for profile `name` under override `kind`."""
    from doctor.deploy import kv, overrides, prepare
    from doctor.errors import DoctorError
    from doctor.planner.flags import config_kwargs
    from profiles import ProfileError, load_profile
    from profiles.multinode import render_nodes, render_text

    _, flags, sets, model, port, host, python = next(o for o in OVERRIDES if o[0] == kind)
    profile = overrides.apply(load_profile(name), overrides.parse(flags))
    variables = _variables(profile, sets)
    out: dict[str, Any] = {}
    try:
        spec = prepare.render(profile, port=port, host=host, model=model, variables=variables)
        spec = prepare.with_interpreter(spec, python)
        out["launch"] = {"argv": spec.argv, "env": spec.env, "backend": spec.backend, "host": spec.host,
                         "port": spec.port, "served_model_name": spec.served_model_name,
                         "reasoning_parser": spec.reasoning_parser, "api_key": spec.api_key,
                         "model": prepare.model_of(spec), "backend_args": prepare.backend_args(spec),
                         "shell": spec.shell()}
        out["check_options"] = kv.check_options(spec)
        out["planner"] = config_kwargs(prepare.backend_args(spec))
    except (DoctorError, ProfileError) as exc:
        out["launch_error"] = str(exc)
    try:
        overrides_map = prepare.overrides_of(profile, port, host, model, variables)
        out["nodes"] = render_text(render_nodes(profile, overrides_map, start_ray=True))
    except (DoctorError, ProfileError) as exc:
        out["nodes_error"] = str(exc)
    return out


def record_rehearsal(name: str, tmp_root: Path) -> dict[str, Any]:
    """The argv `--rehearse --dry-run` would serve (the folder name replaced by a marker)."""
    from doctor.deploy import prepare
    from doctor.rehearse import rehearse_spec
    from profiles import load_profile

    profile = load_profile(name)
    spec = prepare.render(profile, variables=_variables(profile, {}))
    model = "Qwen/Qwen3.5-35B-A3B"
    new, rehearsal = rehearse_spec(spec, model, build=False, root=tmp_root)
    folder = str(rehearsal.folder)
    return {"argv": [t.replace(folder, "<FOLDER>") for t in new.argv], "env": new.env,
            "served_model_name": new.served_model_name}


def _all(tmp_root: Path) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name in _profile_names():
        data[name] = {kind: record(name, kind) for kind, *_ in OVERRIDES}
        data[name]["rehearse"] = record_rehearsal(name, tmp_root)
    return data


def _normalise(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True))


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> dict[str, Any]:
    if os.environ.get("QWEN_DOCTOR_GOLDEN_WRITE") == "1":
        GOLDEN.write_text(json.dumps(_normalise(_all(tmp_path_factory.mktemp("rehearse"))), indent=1,
                                     sort_keys=True) + "\n", encoding="utf-8")
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_the_record_exists_and_covers_every_override_kind(golden) -> None:
    assert len(golden) >= 11
    for name, kinds in golden.items():
        assert set(kinds) == {k for k, *_ in OVERRIDES} | {"rehearse"}, name


@pytest.mark.parametrize("name", sorted(json.loads(GOLDEN.read_text(encoding="utf-8"))) if GOLDEN.exists() else [])
def test_profile_renders_byte_identical_commands(name: str, golden, tmp_path) -> None:
    """Every override kind of profile `name` renders the recorded argv, env, fields and node text."""
    for kind, *_ in OVERRIDES:
        assert _normalise(record(name, kind)) == golden[name][kind], f"{name} / {kind}"
    assert _normalise(record_rehearsal(name, tmp_path)) == golden[name]["rehearse"], f"{name} / rehearse"
