"""Regenerate the version tables in doctor/data from the package index, with the source of every row.

    python scripts/refresh_versions.py            # read the index, rewrite the tables, print what changed
    python scripts/refresh_versions.py --dry-run  # print what would change, write nothing

What it reads, through pip's configured index (doctor/pkgindex.py; pip itself for metadata):
- every release of vLLM and SGLang from a floor on: its wheel's METADATA Requires-Dist (pip install --dry-run
  --no-deps --report, which reads the metadata the index publishes or the wheel's own), for the pins of torch,
  transformers, flashinfer-python, the SGLang kernel (sgl-kernel up to 0.3.21, sglang-kernel from 0.4.0) and
  Ray; consecutive releases with the same pins become one row of version_matrix.yaml;
- every torch release from a floor on: the CUDA its default wheel is built for (the nvidia-cuda-runtime /
  cuda-toolkit pin), its NCCL and triton pins (torch_arch.yaml `builds`);
- the newest flashinfer-python, transformers and Ray the index serves (version_matrix.yaml `index_latest`).
What the index does not hold is curated below with its citation, and the row says so: the SASS architectures of
torch's CUDA builds (pytorch .ci/manywheel/build_cuda.sh) and NVIDIA's minimum drivers (CUDA release notes).
Pip reads the configured index URLs only (PIP_CONFIG_FILE=/dev/null, the URLs passed explicitly): a machine's
constraint files and local find-links wheels (a torch 2.13.0+cpu in a wheel directory) must not stand in for a
release's published wheel.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from doctor import pkgindex  # noqa: E402

DATA = ROOT / "doctor" / "data"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "qwen-doctor" / "requires-dist"
FLOORS = {"vllm": Version("0.15.1"), "sglang": Version("0.4.6.post4"), "torch": Version("2.6.0")}
KERNELS = ("sglang-kernel", "sgl-kernel")
LATEST = ("flashinfer-python", "transformers", "ray")

QWEN35_MINIMUM = {
    "vllm": {"version": "0.17.0", "source": "vLLM 0.17.0 wheel adds Qwen3_5MoeForConditionalGeneration to "
             "models/registry.py; vllm-project/recipes min_vllm_version; runpod-workers/worker-vllm#279"},
    "sglang": {"version": "0.5.9", "source": "SGLang 0.5.9 wheel adds srt/models/qwen3_5.py (EntryClass "
               "Qwen3_5MoeForConditionalGeneration)"},
    "transformers": {"version": "5.2.0", "source": "transformers 5.2.0 adds models/qwen3_5_moe (5.1.0 has none)"},
}

# TORCH_CUDA_ARCH_LIST of the x86_64 wheels per CUDA version, as pytorch's .ci/manywheel/build_cuda.sh sets it
# (pytorch/pytorch@799d09f2: 12.6 adds 5.0;6.0, 12.8 adds 10.0;12.0, 12.9 10.0;12.0+PTX, 13.0
# 7.5;8.0;8.6;9.0;10.0;12.0+PTX); the older lists from the same file's history. cu130 is also what torch
# 2.11.0+cu130 reported on the H200 (tests/fixtures/h200/).
BUILD_CUDA = "pytorch/pytorch .ci/manywheel/build_cuda.sh"
ARCH_LISTS: dict[str, tuple[list[str], str]] = {
    "11.8": (["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"], f"{BUILD_CUDA} (cu118 case)"),
    "12.1": (["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"], f"{BUILD_CUDA} (cu121 case)"),
    "12.4": (["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"], f"{BUILD_CUDA} (cu124 case)"),
    "12.6": (["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"], f"{BUILD_CUDA}@799d09f2 (12.6 case)"),
    "12.8": (["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], f"{BUILD_CUDA}@799d09f2 (12.8 case)"),
    "12.9": (["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], f"{BUILD_CUDA}@799d09f2 (12.9 case)"),
    "13.0": (["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
             f"{BUILD_CUDA}@799d09f2 (13.0 case); torch 2.11.0+cu130 get_arch_list() on the H200"),
}

# NVIDIA CUDA Toolkit release notes, Table 3 "CUDA Toolkit and Corresponding Driver Versions" (Linux x86_64),
# and the "CUDA minor version compatibility" section for the floors (via shared/reference/qwen35-facts.md).
RELEASE_NOTES = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html#cuda-driver"
DRIVERS: list[tuple[str, str, str]] = [
    ("12.1", "530.30.02", "12.1 GA"), ("12.4", "550.54.14", "12.4 GA"), ("12.6", "560.28.03", "12.6 GA"),
    ("12.8", "570.26", "12.8 GA"), ("12.9", "575.51.03", "12.9 GA"), ("13.0", "580.65.06", "13.0 GA"),
    ("13.1", "590.44.01", "13.1 GA"),
]
MAJOR_FLOORS = {"12": "525.60.13", "13": "580"}


def requires_dist(dist: str, version: Version) -> list[str]:
    """The Requires-Dist of `dist==version` as pip reads it from the index, cached on disk."""
    cached = CACHE / f"{canonicalize_name(dist)}-{version}.json"
    if cached.is_file():
        return json.loads(cached.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        config = remote_index()
        remote = [f"--extra-index-url={url}" for url in config.extra]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k == "PIP_CERT"}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                               "--quiet", f"--index-url={config.index_url}", *remote, "--report", str(report),
                               f"{dist}=={version}"],
                              env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or not report.is_file():
            tail = [l for l in done.stderr.splitlines() if l.startswith("ERROR")][-1:]
            raise RuntimeError(f"{dist}=={version}: pip could not read its metadata ({' '.join(tail) or done.returncode})")
        install = json.loads(report.read_text(encoding="utf-8"))["install"]
    requires = list(install[0]["metadata"].get("requires_dist") or [])
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(requires), encoding="utf-8")
    return requires


def remote_index() -> pkgindex.IndexConfig:
    """The configured index and extra indexes that are served over http(s): no local directories."""
    config = pkgindex.configured()
    return pkgindex.IndexConfig(config.index_url, tuple(u for u in config.extra if u.startswith("http")))


def releases(dist: str, floor: Version = Version("0")) -> list[Version]:
    """Final published releases of `dist` from `floor` on (no local builds such as 2.13.0+cpu)."""
    return [v for v in pkgindex.versions(dist, remote_index(), timeout_s=60)
            if v >= floor and not (v.is_prerelease or v.is_devrelease) and v.local is None]


def _requirements(lines: Iterable[str], extras: tuple[str, ...] = ()) -> dict[str, Requirement]:
    """name -> requirement for a Linux x86_64 CPython 3.12 install (markers evaluated), with `extras` on."""
    env = {"platform_system": "Linux", "platform_machine": "x86_64", "sys_platform": "linux",
           "python_version": "3.12", "python_full_version": "3.12.0", "implementation_name": "cpython"}
    out: dict[str, Requirement] = {}
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e}) for e in ("", *extras)):
            continue
        out.setdefault(canonicalize_name(req.name), req)
    return out


def _pins(backend: str, version: Version, requires: list[str]) -> dict[str, Any]:
    """The row fields of one engine release: torch, transformers, flashinfer, kernel, Ray."""
    reqs = _requirements(requires, extras=("srt", "runtime-common", "runtime_common", "ray") if backend == "sglang" else ("ray",))
    row: dict[str, Any] = {}
    torch = reqs.get("torch")
    if torch is not None:
        exact = [s.version for s in torch.specifier if s.operator == "=="]
        row["torch"] = exact[0] if exact else str(torch.specifier)
    if (tf := reqs.get("transformers")) is not None and str(tf.specifier):
        row["transformers"] = [str(tf.specifier)]
    if (fi := reqs.get("flashinfer-python")) is not None and str(fi.specifier):
        row["flashinfer"] = str(fi.specifier)
    for kernel in KERNELS:
        if (req := reqs.get(kernel)) is not None:
            exact = [s.version for s in req.specifier if s.operator == "=="]
            if exact:
                row["sgl_kernel"], row["kernel_dist"] = exact[0], kernel
    if (ray := reqs.get("ray")) is not None and str(ray.specifier):
        row["ray"] = str(ray.specifier)
    return row


def engine_rows(backend: str, versions: list[Version], requires: dict[Version, list[str]], today: str,
                index: str) -> list[dict[str, Any]]:
    """Consecutive releases with the same pins as one row: versions '==X' for one release, '>=first,<next'
    for a run (a later point release of the run's last minor is held by the next row's lower bound)."""
    groups: list[tuple[dict[str, Any], list[Version]]] = []
    for version in versions:
        pins = _pins(backend, version, requires[version])
        if "torch" not in pins:
            continue
        if groups and groups[-1][0] == pins:
            groups[-1][1].append(version)
        else:
            groups.append((pins, [version]))
    rows = []
    for i, (pins, members) in enumerate(groups):
        nxt = groups[i + 1][1][0] if i + 1 < len(groups) else None
        if len(members) == 1:
            spec = f"=={members[0]}"
        else:
            spec = f">={members[0]},<{nxt}" if nxt else f">={members[0]},<={members[-1]}"
        listed = ", ".join(str(v) for v in members)
        rows.append({"versions": spec, **pins, "latest": str(members[-1]),
                     "source": f"Requires-Dist of {backend} {listed} ({index}, read {today})"})
    return rows


def torch_builds(versions: list[Version], requires: dict[Version, list[str]], today: str, index: str) -> list[dict[str, Any]]:
    """The CUDA, NCCL and triton of each torch release's default wheel, from its pins."""
    rows = []
    for version in versions:
        reqs = _requirements(requires[version])
        cuda = None
        for name in ("cuda-toolkit", "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu13", "nvidia-cuda-runtime-cu12",
                     "nvidia-cuda-runtime-cu11"):
            if (req := reqs.get(name)) is not None:
                exact = [s.version for s in req.specifier if s.operator == "=="]
                if exact:
                    cuda = ".".join(exact[0].split(".")[:2])
                    break
        if cuda is None:
            continue
        nccl = next((s.version for n, r in reqs.items() if n.startswith("nvidia-nccl") for s in r.specifier
                     if s.operator == "=="), None)
        row: dict[str, Any] = {"torch": str(version), "cuda": cuda}
        if nccl:
            row["nccl"] = nccl
        if (triton := reqs.get("triton")) is not None:
            row["triton"] = str(triton.specifier)
        row["source"] = f"Requires-Dist of torch {version} ({index}, read {today})"
        rows.append(row)
    return rows


def arch_rows(builds: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The curated arch lists, plus one row per CUDA version a torch wheel is built for and no list names:
    the list of the newest curated version of the same major, marked as carried over."""
    rows = {cuda: {"arch": arch, "source": source} for cuda, (arch, source) in ARCH_LISTS.items()}
    for cuda in sorted({b["cuda"] for b in builds} - set(rows), key=Version):
        same = [c for c in ARCH_LISTS if c.split(".")[0] == cuda.split(".")[0] and Version(c) < Version(cuda)]
        if not same:
            continue
        base = max(same, key=Version)
        torches = ", ".join(b["torch"] for b in builds if b["cuda"] == cuda)
        rows[cuda] = {"arch": ARCH_LISTS[base][0],
                      "source": f"carried over from the CUDA {base} list ({ARCH_LISTS[base][1]}): torch {torches} "
                                f"wheels are built for CUDA {cuda}, for which no build_cuda.sh case was read"}
    return dict(sorted(rows.items(), key=lambda kv: Version(kv[0])))


def _yaml_row(row: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in row.items()) + "}"


def render_matrix(rows: dict[str, list[dict[str, Any]]], latest: dict[str, dict[str, str]], header: str) -> str:
    out = [header,
           "# Every backend row: the pins its releases' wheels declare (Requires-Dist). `transformers` is a list of",
           "# alternatives (any one satisfied is fine); `sgl_kernel` is SGLang's exact kernel pin and `kernel_dist`",
           "# the distribution it names (sgl-kernel up to 0.3.21, sglang-kernel from 0.4.0); SGLang refuses to start",
           "# with an older kernel (srt/entrypoints/engine.py assert_pkg_version). Releases without a row have no",
           "# verified pins: checks say so instead of guessing.",
           "qwen35_minimum:"]
    out += [f"  {name}: {_yaml_row(v)}" for name, v in QWEN35_MINIMUM.items()]
    out.append("index_latest:")
    out += [f"  {name}: {_yaml_row(v)}" for name, v in latest.items()]
    out.append("backends:")
    for backend, backend_rows in rows.items():
        out.append(f"  {backend}:")
        out += [f"    - {_yaml_row(r)}" for r in backend_rows]
    return "\n".join(out) + "\n"


def render_arch(arch: dict[str, dict[str, Any]], builds: list[dict[str, Any]], header: str) -> str:
    out = [header,
           "# by_cuda: SASS architectures compiled into the default x86_64 PyTorch wheels of each CUDA version.",
           "# A collect run with --deep records the exact list from torch itself and wins over this table.",
           "# builds: the CUDA, NCCL and triton of each torch release's default wheel on the index.",
           "by_cuda:"]
    out += [f"  {json.dumps(cuda)}: {_yaml_row(row)}" for cuda, row in arch.items()]
    out.append("builds:")
    out += [f"  - {_yaml_row(b)}" for b in builds]
    return "\n".join(out) + "\n"


def render_drivers(header: str) -> str:
    out = [header,
           "# Minimum Linux driver of each CUDA toolkit release, and the minor-version-compatibility floor of each",
           "# CUDA major (a newer runtime of the same major runs on an older driver down to it, except for PTX JIT",
           "# of newer PTX). CUDA versions without a row are judged by the newest row of their major below them.",
           f"source: {RELEASE_NOTES}",
           "toolkits:"]
    out += [f"  - {_yaml_row({'cuda': c, 'driver': d, 'source': f'NVIDIA CUDA {what} release notes, Table 3 (cited; not on the package index)'})}"
            for c, d, what in DRIVERS]
    out.append("major_floor:")
    out += [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in MAJOR_FLOORS.items()]
    return "\n".join(out) + "\n"


def _rows_by_key(text: str) -> dict[str, str]:
    """The table's rows keyed by their first field, for the change report."""
    out = {}
    for line in text.splitlines():
        stripped = line.strip().lstrip("- ")
        if stripped.startswith("{") or (":" in stripped and stripped.split(":", 1)[1].strip().startswith("{")):
            out[stripped.split(",")[0]] = stripped
    return out


def report_changes(name: str, old: str, new: str) -> list[str]:
    before, after = _rows_by_key(old), _rows_by_key(new)
    lines = [f"  + {k}" for k in after if k not in before]
    lines += [f"  - {k}" for k in before if k not in after]
    lines += [f"  ~ {k}" for k in after if k in before and _without_source(before[k]) != _without_source(after[k])]
    return [f"{name}: {len(lines)} row(s) changed", *lines] if lines else [f"{name}: unchanged"]


def _without_source(row: str) -> str:
    return row.split(', source: ')[0].rstrip("}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    parser.add_argument("--jobs", type=int, default=3, help="metadata reads in parallel")
    args = parser.parse_args(argv)
    index = pkgindex.configured().index_url
    today = dt.date.today().isoformat()
    wanted = {name: releases(name, floor) for name, floor in FLOORS.items()}
    jobs = [(name, v) for name, versions in wanted.items() for v in versions]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        metadata = dict(zip(jobs, pool.map(lambda job: requires_dist(*job), jobs)))
    by_name = {name: {v: metadata[(name, v)] for v in versions} for name, versions in wanted.items()}
    engines = {b: engine_rows(b, wanted[b], by_name[b], today, index) for b in ("vllm", "sglang")}
    builds = torch_builds(wanted["torch"], by_name["torch"], today, index)
    latest = {}
    for name in LATEST:
        latest[name] = {"version": str(releases(name)[-1]), "source": f"{index}/{name}/ (read {today})"}
    header = (f"# Generated by scripts/refresh_versions.py on {today} from {index}: edit the script's curated tables, "
              "not this file.")
    outputs = {"version_matrix.yaml": render_matrix(engines, latest, header),
               "torch_arch.yaml": render_arch(arch_rows(builds), builds, header),
               "cuda_drivers.yaml": render_drivers(header)}
    for name, text in outputs.items():
        path = DATA / name
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        print("\n".join(report_changes(name, old, text)))
        if not args.dry_run:
            path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
