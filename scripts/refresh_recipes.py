#!/usr/bin/env python3
"""Refresh the vendored recipes snapshot (profiles/sources/) and the profiles imported from it.

    python scripts/refresh_recipes.py --recipes PATH/TO/recipes/.git --cookbook PATH/TO/sgl-cookbook/.git

Copies the Qwen3.5 / Qwen3.6 35B-A3B entries of vllm-project/recipes (model files, strategies, taxonomy) and
sgl-project/sgl-cookbook (model source files) at each repository's HEAD into profiles/sources/<owner>-<name>/,
records each file's last commit and date in SNAPSHOT.yaml, removes the previously imported profiles and imports
again with the options in profiles/sources/import.yaml (the same as `qwen-doctor profiles import`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = ROOT / "profiles" / "sources"
FILES = {
    "vllm-project/recipes": ["models/Qwen/Qwen3.5-35B-A3B.yaml", "models/Qwen/Qwen3.6-35B-A3B.yaml",
                             "strategies/*.yaml", "taxonomy.yaml"],
    "sgl-project/sgl-cookbook": ["data/models/src/v*/qwen36.yaml"],
}
IMPORTED = ("recipe-*.yaml", "cookbook-*.yaml")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo}", *args], check=True, capture_output=True, text=True).stdout


def snapshot(repository: str, repo: Path) -> None:
    """Copy the wanted files at HEAD and write their manifest."""
    folder = SNAPSHOT / repository.replace("/", "-")
    head = git(repo, "rev-parse", "HEAD").strip()
    listed = git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    files = {}
    for pattern in FILES[repository]:
        for name in sorted(n for n in listed if Path(n).match(pattern)):
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(subprocess.run(["git", f"--git-dir={repo}", "show", f"HEAD:{name}"], check=True,
                                              capture_output=True).stdout)
            commit, date = git(repo, "log", "-1", "--format=%H %cs", "HEAD", "--", name).split()
            files[name] = {"commit": commit, "date": date}
    manifest = {"repository": repository, "head": head, "files": files}
    (folder / "SNAPSHOT.yaml").write_text("# Written by scripts/refresh_recipes.py: each file's last commit.\n"
                                          + yaml.safe_dump(manifest, sort_keys=True), encoding="utf-8")


def snapshot_files() -> list[Path]:
    """Every vendored recipe file (the manifests excluded)."""
    return sorted(p for p in SNAPSHOT.rglob("*.yaml") if p.name not in ("SNAPSHOT.yaml", "import.yaml"))


def reimport() -> int:
    sys.path.insert(0, str(ROOT))
    from doctor.recipes.importer import import_profiles, write_profiles

    options = yaml.safe_load((SNAPSHOT / "import.yaml").read_text(encoding="utf-8"))
    result = import_profiles(snapshot_files(), options.get("hardware", []), options.get("features", []))
    for pattern in IMPORTED:
        for old in (ROOT / "profiles").glob(pattern):
            old.unlink()
    for path in write_profiles(result, ROOT / "profiles"):
        print(f"wrote {path.relative_to(ROOT)}")
    for skipped in result.skipped:
        print(f"skipped {skipped.entry}: {skipped.why}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipes", type=Path, help="git directory of vllm-project/recipes")
    parser.add_argument("--cookbook", type=Path, help="git directory of sgl-project/sgl-cookbook")
    args = parser.parse_args()
    if args.recipes:
        snapshot("vllm-project/recipes", args.recipes)
    if args.cookbook:
        snapshot("sgl-project/sgl-cookbook", args.cookbook)
    return reimport()


if __name__ == "__main__":
    sys.exit(main())
