"""Reading recipe files: what kind each is, where it came from (repository, file, commit, date), and refusing
fields this importer does not understand with one line naming the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from doctor.errors import DoctorError

MANIFEST = "SNAPSHOT.yaml"
MAX_BYTES = 1 << 20


class RecipeError(DoctorError):
    """A recipe file that cannot be imported: unreadable, of an unknown kind, or with a field not understood."""


@dataclass(frozen=True)
class Origin:
    """Where a recipe file came from."""

    repository: str
    file: str
    commit: str
    date: str

    def cite(self, where: str) -> str:
        """`repository@commit file where` (the commit shortened to 12 characters)."""
        return f"{self.repository}@{self.commit[:12]} {self.file} {where}".rstrip()


@dataclass
class Sources:
    """Everything read: recipes model files, strategies by name, the taxonomy, and cookbook model files."""

    recipes: list[tuple[Origin, dict[str, Any]]] = field(default_factory=list)
    strategies: dict[str, tuple[Origin, dict[str, Any]]] = field(default_factory=dict)
    taxonomy: tuple[Origin, dict[str, Any]] | None = None
    cookbooks: list[tuple[Origin, dict[str, Any]]] = field(default_factory=list)


def kind_of(data: Any) -> str | None:
    """recipe | strategy | taxonomy | cookbook, by the fields a file carries; None for anything else."""
    if not isinstance(data, dict):
        return None
    if {"model", "variants"} <= set(data):
        return "recipe"
    if "hardware_profiles" in data:
        return "taxonomy"
    if {"name", "deploy_type"} <= set(data):
        return "strategy"
    if {"vendor", "families"} <= set(data):
        return "cookbook"
    return None


def _manifest(path: Path) -> tuple[Path, dict[str, Any]] | None:
    """The SNAPSHOT.yaml of the snapshot folder holding `path` (written by scripts/refresh_recipes.py)."""
    from doctor.safeio import read_text
    from doctor.safeyaml import load_yaml

    for folder in path.resolve().parents:
        candidate = folder / MANIFEST
        if candidate.is_file():
            data = load_yaml(read_text(candidate, "snapshot manifest", MAX_BYTES), str(candidate))
            if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
                raise RecipeError(f"{candidate}: field 'files': must map each file to its commit and date")
            return folder, data
    return None


def origin_of(path: Path, repository: str | None) -> Origin:
    """Repository, file and commit of `path`: from its snapshot manifest, else `repository` with the commit
    and date unrecorded."""
    found = _manifest(path)
    if found is None:
        return Origin(repository or "unrecorded", path.name, "unrecorded", "unrecorded")
    folder, manifest = found
    relative = path.resolve().relative_to(folder).as_posix()
    entry = manifest["files"].get(relative)
    if not isinstance(entry, dict):
        raise RecipeError(f"{folder / MANIFEST}: field 'files.{relative}': the file is not recorded")
    return Origin(str(manifest.get("repository", repository or "unrecorded")), relative,
                  str(entry.get("commit", "unrecorded")), str(entry.get("date", "unrecorded")))


def read_sources(paths: list[Path], repository: str | None = None) -> Sources:
    """Read every file, sorting them by kind; a file of no known kind is one clear error."""
    from doctor.safeio import read_text
    from doctor.safeyaml import load_yaml

    sources = Sources()
    for path in sorted(paths, key=str):
        data = load_yaml(read_text(path, "recipe file", MAX_BYTES), str(path))
        kind = kind_of(data)
        origin = origin_of(path, repository)
        if kind == "recipe":
            sources.recipes.append((origin, data))
        elif kind == "strategy":
            sources.strategies[str(data["name"])] = (origin, data)
        elif kind == "taxonomy":
            sources.taxonomy = (origin, data)
        elif kind == "cookbook":
            sources.cookbooks.append((origin, data))
        else:
            raise RecipeError(f"{path}: not a vllm-project/recipes model, strategy or taxonomy file, nor an "
                              "sgl-cookbook model file (expected model + variants, name + deploy_type, "
                              "hardware_profiles, or vendor + families)")
    return sources


def refuse_unknown(where: str, data: Any, known: set[str], ignored: set[str] = frozenset(), label: str = "") -> None:
    """Raise RecipeError naming the first field of mapping `data` that is neither `known` nor `ignored`."""
    if not isinstance(data, dict):
        raise RecipeError(f"{where}: field '{label}': must be a mapping")
    for key in data:
        if key not in known and key not in ignored:
            name = f"{label}.{key}" if label else str(key)
            raise RecipeError(f"{where}: field '{name}': not understood by this importer "
                              f"(understood: {', '.join(sorted(known))})")
