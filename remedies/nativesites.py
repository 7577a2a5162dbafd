"""Raise sites of messages printed by native components (C / C++ / CUDA), read from remedies/native_sites.yaml.

The mined templates (`remedies.source`) place Python raises; a CUDA runtime error that torch's C10_CUDA_CHECK
turns into a RuntimeError, a CUTLASS status, a kernel's architecture guard or the NVIDIA container library's
failed dlopen are built in C / C++ sources. `native_sites(text)` names the source function that builds the
message a line carries, as `path::function (repository) when `condition``, for a root printed without frames.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

SITES_FILE = Path(__file__).resolve().parent / "native_sites.yaml"
MAX_TEXT = 4096


@dataclass(frozen=True)
class NativeSite:
    """One native message family: the regex that finds it and the source function that raises it."""

    component: str
    match: re.Pattern[str]
    repository: str
    site: str
    condition: str
    source: str

    def cited(self) -> str:
        """The site as a finding cites it."""
        return f"{self.site} ({self.repository})" + (f" when `{self.condition}`" if self.condition else "")


def read_sites(path: Path) -> tuple[NativeSite, ...]:
    """The sites of a native_sites.yaml file, in file order."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return tuple(NativeSite(item["component"], re.compile(item["match"]), item["repository"], item["site"],
                            item.get("condition", ""), item["source"]) for item in doc.get("sites", []))


@lru_cache(maxsize=1)
def load_sites() -> tuple[NativeSite, ...]:
    return read_sites(SITES_FILE)


def native_sites(*texts: str) -> tuple[str, ...]:
    """The cited sites of the native messages the texts carry (first text first), without repeats."""
    found: list[str] = []
    for text in texts:
        for site in load_sites():
            if text and site.match.search(text[:MAX_TEXT]) and site.cited() not in found:
                found.append(site.cited())
    return tuple(found)
