"""`profiles import`: recipe files -> candidates -> validated profiles (flag schemas of every covered release in
range, a loadable profile, a plan that fits its GPUs), each written once; what is not imported says why."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from doctor.recipes.candidate import Candidate, Skipped
from doctor.recipes.sources import RecipeError, Sources, read_sources

SCHEMA_SOURCE = "doctor/flags/schemas (the releases' own argument parsers, extracted from their wheels)"


@dataclass
class ImportResult:
    """Profile texts by name, and the entries left out with the reason."""

    profiles: dict[str, str] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)


def parse_target(text: str) -> tuple[str, int | None]:
    """`h100` or `h100:2` (a taxonomy hardware profile with another GPU count)."""
    name, _, count = text.partition(":")
    if count and not (count.isdigit() and 1 <= int(count) <= 64):
        raise RecipeError(f"--hardware {text!r}: the GPU count after ':' must be 1-64")
    return name, int(count) if count else None


def candidates(sources: Sources, hardware: list[str], features: list[str]) -> list[Candidate | Skipped]:
    """Every recipe variant on every target (the recipe's own hardware and `hardware`), with its default
    features and once more with each opt-in feature of `features`; every cookbook entry."""
    from doctor.recipes.cookbook import check_cookbook, resolve_all
    from doctor.recipes.vllm_recipes import check_recipe, default_features, resolve, targets

    out: list[Candidate | Skipped] = []
    known_hardware = (sources.taxonomy[1].get("hardware_profiles") or {}) if sources.taxonomy else {}
    for origin, recipe in sources.recipes:
        check_recipe(origin.file, recipe)
        wanted = [(hw, None) for hw in targets(recipe) if hw in known_hardware] + [parse_target(t) for t in hardware]
        for variant in recipe["variants"]:
            for hw, count in dict.fromkeys(wanted):
                base = default_features(recipe, hw, variant)
                sets = [base] + [base + [f] for f in features if f in (recipe.get("features") or {}) and f not in base]
                for chosen in sets:
                    out.append(resolve(sources, origin, recipe, variant, hw, count, "single_node_tp", chosen))
    for origin, data in sources.cookbooks:
        check_cookbook(origin.file, data)
        out += resolve_all(origin, data)
    return out


def canonical_args(args: tuple[str, ...], backend: str) -> tuple[tuple[str, ...], list[str]]:
    """Flags as the newest flag schema names them: argparse abbreviations (`--speculative-algo`) spelled out."""
    from doctor.flags import load_schema

    schema = load_schema(backend, None)
    names = [n for n in schema.option_strings() if n.startswith("--")]
    out, notes = [], []
    for token in args:
        if token.startswith("--") and schema.lookup(token.split("=")[0]) is None:
            matches = [n for n in names if n.startswith(token)]
            if len(matches) == 1:
                notes.append(f"{token} is argparse's abbreviation of {matches[0]} ({backend} {schema.version} parser)")
                token = matches[0]
        out.append(token)
    return tuple(out), notes


def version_range(candidate: Candidate) -> tuple[str, str] | str:
    """(`>=A[,<B]`, its source): the covered releases from the recipe's minimum whose flag schema accepts every
    flag, up to the first later one that rejects one; or why none does."""
    from packaging.version import Version

    from doctor.flags.schema import available_versions
    from doctor.flags.validate import validate_command

    floor = Version(candidate.min_version)
    verdicts = [(v, validate_command(list(candidate.args), candidate.backend, str(v)))
                for v in available_versions(candidate.backend) if v >= floor]
    first = next((i for i, (_, report) in enumerate(verdicts) if report.ok), None)
    if first is None:
        issues = verdicts[-1][1].issues if verdicts else []
        return (f"no covered {candidate.backend} release from {floor} accepts its flags"
                + (f": {issues[0].message}" if issues else ""))
    lower = verdicts[first][0] if first else floor
    after = next((v for v, report in verdicts[first:] if not report.ok), None)
    spec = f">={lower}" + (f",<{after}" if after else "")
    why = (f"backend_version {spec}: the recipe's minimum {candidate.backend} {floor}; every covered release in "
           f"range accepts the flags ({SCHEMA_SOURCE})")
    return spec, why


def import_profiles(paths: list[Path], hardware: list[str] = (), features: list[str] = (),
                    repository: str | None = None) -> ImportResult:
    """Read, resolve and validate; profile texts keyed by name (identical duplicates folded)."""
    from dataclasses import replace

    from doctor.errors import DoctorError
    from doctor.recipes.emit import profile_text
    from doctor.safeyaml import load_yaml
    from profiles.model import parse_profile

    result = ImportResult()
    seen: dict[str, tuple] = {}
    sources = read_sources(paths, repository)
    for found in candidates(sources, list(hardware), list(features)):
        if isinstance(found, Skipped):
            if found not in result.skipped:
                result.skipped.append(found)
            continue
        args, notes = canonical_args(found.args, found.backend)
        found = replace(found, args=args, sources=found.sources + tuple(notes))
        ranged = version_range(found)
        if isinstance(ranged, str):
            result.skipped.append(Skipped(found.entry, ranged))
            continue
        text = profile_text(found, *ranged)
        try:
            profile = parse_profile(load_yaml(text, found.name), found.name)
            fit = _plan_verdict(profile)
            if not found.min_gpu_memory_gib:  # a cookbook entry names no memory: its planned weights per GPU
                found = replace(found, min_gpu_memory_gib=_weights_gib(profile), sources=found.sources + (
                    "hardware.min_gpu_memory_gib: the weights of one rank by qwen-doctor's plan",))
                text = profile_text(found, *ranged)
        except DoctorError as exc:
            result.skipped.append(Skipped(f"{found.origin.file} {found.entry}", str(exc)))
            continue
        if fit:
            result.skipped.append(Skipped(f"{found.origin.file} {found.entry}", fit))
            continue
        same = (profile.model, profile.backend_version, profile.hardware, dict(profile.env), dict(profile.flags))
        if found.name in result.profiles:
            if seen[found.name] != same:
                raise RecipeError(f"two entries resolve to profile {found.name} with different commands "
                                  f"({found.origin.file} {found.entry}); import them separately")
            continue
        seen[found.name] = same
        result.profiles[found.name] = text
    return result


def _weights_gib(profile) -> float:
    """The weights one GPU of the profile holds, by its plan, in GiB rounded up to a tenth."""
    import math

    from doctor.profile_plan import plan_profile

    planned = plan_profile(profile)
    return math.ceil(max(r.weights.get("total", 0) for r in planned.ranks) / (1 << 30) * 10) / 10


def _plan_verdict(profile) -> str | None:
    """None when the profile's plan fits its GPUs, else the first problem."""
    from doctor.profile_plan import plan_profile, profile_gpus

    planned = plan_profile(profile)
    if planned.fits:
        return None
    return f"does not fit {profile_gpus(profile)} by qwen-doctor's plan: {planned.problems[0]}"


def write_profiles(result: ImportResult, folder: Path) -> list[Path]:
    """Write every imported profile as FOLDER/NAME.yaml (atomically); the paths written."""
    from doctor.outfile import write_file

    written = []
    for name, text in sorted(result.profiles.items()):
        path = folder / f"{name}.yaml"
        write_file(path, text, what="profile")
        written.append(path)
    return written
