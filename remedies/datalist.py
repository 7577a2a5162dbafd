"""Reading the remedies library's list-shaped data files (advisories.yaml, consequences.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from remedies.errors import CatalogueError


def read_list(path: Path, key: str) -> list[Any]:
    """The list under `key` in the YAML mapping at `path`; CatalogueError names the file when it cannot be read
    or has another shape."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogueError(f"{path}: cannot read {key}: {' '.join(str(exc).split())}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        raise CatalogueError(f"{path}: expected a mapping with a '{key}' list")
    return doc[key]
