"""Benchmark: `qwen-doctor check` wall time against `python -m torch.utils.collect_env`, and CLI import time;
and `check` on a machine with an engine installed: the same run with a fixture site-packages of vLLM's size on
PYTHONPATH (metadata directories of ~300 distributions, vLLM's METADATA with its pins, torch's version.py),
against `check` without it.

All commands run on the same machine in the same run, alternating, and the medians are compared. Sources are
byte-compiled first, as an installed package is (this machine sets PYTHONDONTWRITEBYTECODE).
Usage: python bench/check_speed.py [--repeat 5] [--site-packages /path/to/a/vllm/venv/site-packages] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = 300      # a vLLM CUDA environment: vllm, torch, the nvidia-* wheels, flashinfer, ray, ...


def fixture_site_packages(dest: Path, source: Path | None) -> int:
    """Metadata directories (METADATA only) of every distribution in `source`, or of DISTRIBUTIONS synthetic ones
    shaped like a vLLM environment's; torch/version.py beside them. Returns how many it made."""
    made = 0
    if source is not None:
        for meta in sorted(source.glob("*.dist-info")):
            target = dest / meta.name
            target.mkdir()
            if (meta / "METADATA").is_file():
                shutil.copyfile(meta / "METADATA", target / "METADATA")
            made += 1
        version_py = source / "torch" / "version.py"
    else:
        pins = "".join(f"Requires-Dist: dep{i}=={i}.0\n" for i in range(120))
        names = ["vllm-0.34.0", "torch-2.14.0", "flashinfer_python-0.7.3", "transformers-5.22.0", "ray-2.60.0",
                 *(f"nvidia_lib{i}_cu13-13.0.{i}" for i in range(20)), *(f"package{i}-1.{i}.0" for i in range(277))]
        for name in names[:DISTRIBUTIONS]:
            target = dest / f"{name}.dist-info"
            target.mkdir()
            dist, version = name.rsplit("-", 1)
            body = pins + "\n" + "description " * 4000 if dist == "vllm" else "\n"
            (target / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n{body}")
            made += 1
        version_py = None
    torch = dest / "torch"
    torch.mkdir(exist_ok=True)
    (torch / "__init__.py").write_text("")
    (torch / "version.py").write_text(version_py.read_text() if version_py and version_py.is_file() else
                                      "__version__ = '2.14.0+cu130'\ncuda = '13.0'\nhip = None\n")
    return made


def wall(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env)
        times.append(time.perf_counter() - t0)
    return times


def import_times(module: str, repeat: int) -> list[float]:
    """Seconds `module` takes to import in fresh interpreters, measured inside each by `-X importtime`
    (the cumulative time of the module's own line): no interpreter start-up in it, nothing subtracted."""
    times = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                              capture_output=True, text=True, check=True)
        for line in done.stderr.splitlines():
            parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
            if len(parts) == 3 and parts[2] == module:
                times.append(int(parts[1]) / 1e6)
    if not times:
        raise SystemExit(f"-X importtime printed no line for {module}")
    return times


def median_interval(values: list[float]) -> tuple[float, float, float]:
    """Median with a distribution-free ~95% confidence interval from order statistics."""
    ordered = sorted(values)
    n = len(ordered)
    half = 0.98 * n ** 0.5
    low, high = max(0, int(n / 2 - half)), min(n - 1, int(n / 2 + half))
    return statistics.median(ordered), ordered[low], ordered[high]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--import-repeat", type=int, default=30, help="Fresh interpreters for the import time.")
    parser.add_argument("--site-packages", type=Path, default=None,
                        help="Copy the metadata of this site-packages (e.g. a vLLM venv's) instead of synthesising it.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    compile_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(ROOT / d) for d in
                    ("doctor", "checks", "profiles", "remedies"))], env=compile_env, stdout=subprocess.DEVNULL,
                   check=False)

    doctor = [sys.executable, "-m", "doctor", "check", "--format", "json"]
    baseline = [sys.executable, "-m", "torch.utils.collect_env"]
    has_torch = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0
    imports = median_interval(import_times("doctor.cli.main", args.import_repeat))
    d, b, e = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        made = fixture_site_packages(Path(tmp), args.site_packages)
        engine_env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [tmp, os.environ.get("PYTHONPATH")]))}
        for _ in range(args.repeat):
            d += wall(doctor, 1)
            e += wall(doctor, 1, env=engine_env)
            if has_torch:
                b += wall(baseline, 1)
    result = {
        "check_median_s": round(statistics.median(d), 3),
        "check_with_engine_median_s": round(statistics.median(e), 3),
        "ratio_engine_over_plain": round(statistics.median(e) / statistics.median(d), 3),
        "fixture_distributions": made,
        "collect_env_median_s": round(statistics.median(b), 3) if b else None,
        "ratio_check_over_collect_env": round(statistics.median(d) / statistics.median(b), 3) if b else None,
        "cli_import_s": round(imports[0], 4),
        "cli_import_ci95_s": [round(imports[1], 4), round(imports[2], 4)],
        "cli_help_s": round(statistics.median(wall([sys.executable, "-m", "doctor", "--help"], args.repeat)), 3),
        "repeat": args.repeat,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"qwen-doctor check       median {result['check_median_s']:.3f} s")
    print(f"  with an engine        median {result['check_with_engine_median_s']:.3f} s "
          f"({made} distributions on PYTHONPATH; ratio {result['ratio_engine_over_plain']:.3f}; goal < 0.25 s)")
    if b:
        print(f"torch collect_env       median {result['collect_env_median_s']:.3f} s (baseline)")
        print(f"ratio check/collect_env {result['ratio_check_over_collect_env']:.3f}  (goal < 0.2)")
    else:
        print("torch is not installed: no baseline (pip install torch==2.13.0 for the comparison)")
    low, high = result["cli_import_ci95_s"]
    print(f"CLI module import       {result['cli_import_s'] * 1000:.1f} ms, 95% CI {low * 1000:.1f}-{high * 1000:.1f} ms "
          f"over {args.import_repeat} interpreters (-X importtime; goal < 150 ms)")
    print(f"qwen-doctor --help      median {result['cli_help_s']:.3f} s")


if __name__ == "__main__":
    main()
