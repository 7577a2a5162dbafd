"""A validated candidate as profile YAML text: deterministic, so that re-importing the same files gives the
same bytes."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from doctor.recipes.candidate import Candidate
from doctor.safeio import parse_json

HEADER = ("# Imported by `qwen-doctor profiles import` from {repository} ({file}); regenerate with\n"
          "# scripts/refresh_recipes.py instead of editing by hand.\n")


def _value(text: str) -> Any:
    """A command-line value as a typed profile value: integers, decimals, JSON objects; else the text."""
    if re.fullmatch(r"-?\d{1,18}", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    if text.startswith("{"):
        try:
            parsed = parse_json(text, f"the recipe's value {text[:40]!r}")  # a value too deep: one line, exit 2
        except json.JSONDecodeError:
            return text
        if isinstance(parsed, dict):
            return parsed
    return text


def flags_of(args: tuple[str, ...]) -> dict[str, Any]:
    """`--flag value` / `--flag` pairs as a profile's flags mapping (a bare flag is true)."""
    flags: dict[str, Any] = {}
    i = 0
    while i < len(args):
        name = args[i].removeprefix("--")
        following = args[i + 1] if i + 1 < len(args) else None
        if following is not None and not following.startswith("--"):
            flags[name] = _value(following)
            i += 2
        else:
            flags[name] = True
            i += 1
    return flags


def profile_text(candidate: Candidate, version_range: str, range_source: str) -> str:
    """The profile file for `candidate` and its backend version range (with the range's source)."""
    origin = candidate.origin
    data: dict[str, Any] = {
        "name": candidate.name,
        "description": candidate.description,
        "backend": candidate.backend,
        "backend_version": version_range,
        "model": candidate.model,
        "provenance": {"repository": origin.repository, "file": origin.file, "commit": origin.commit,
                       "date": origin.date, "entry": candidate.entry},
        "sources": [*candidate.sources, range_source],
        "hardware": {"gpu": candidate.gpu, "gpu_count": candidate.gpu_count,
                     "min_gpu_memory_gib": candidate.min_gpu_memory_gib,
                     "min_compute_capability": candidate.min_compute_capability,
                     "nvlink": "no" if candidate.gpu_count == 1 else "wanted"},
    }
    if candidate.env:
        data["env"] = dict(candidate.env)
    data["flags"] = flags_of(candidate.args)
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=4096, default_flow_style=False)
    return HEADER.format(repository=origin.repository, file=origin.file) + body
