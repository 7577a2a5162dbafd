"""The checks that run before a deployment, judged against what the deployment actually is.

Facts about packages come from the backend's own interpreter (vLLM usually lives in another venv than
qwen-doctor). Checks that cannot apply are reported as skipped with the reason: GPU, driver, memory and
topology checks for a CPU profile, the CUDA-build check of torch on CPU, and the download-space check for
a checkpoint that is already a local directory.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from doctor.context import CheckContext
from doctor.errors import DoctorError
from doctor.facts.model import Facts
from doctor.results import Result, Status
from doctor.safeio import reply_json

CPU_ONLY_SKIPS = ("driver", "gpu", "memory", "topology")
CPU_SKIP_IDS = ("QD-VER-005",)
LOCAL_MODEL_SKIP_IDS = ("QD-HOST-003",)
_PROBE = ("import json, runpy, sys, time; m = runpy.run_path(sys.argv[1]); t = time.monotonic(); "
          "found, complete = m['scan'](None, m['DEADLINE_S']); "
          "print(json.dumps({'packages': m['probe'](m['first_of'](found)), 'complete': complete, "
          "'seconds': time.monotonic() - t, "
          "'found': [[f.name, f.version, f.location] for f in found]}))")


def backend_packages(python: str, timeout: float = 60.0) -> dict[str, Any]:
    """The package facts and the whole inventory as the backend's interpreter sees them (the same stdlib-only
    probe, run there): {"packages": ..., "inventory": ...}."""
    import doctor.facts.probes.packages as probe_module
    from doctor.boundedrun import run_bounded
    from doctor.facts.probes.inventory import as_locations

    try:
        out = run_bounded([python, "-c", _PROBE, probe_module.__file__], timeout)
        if out.returncode != 0:
            tail = (out.stderr.strip().splitlines() or ["no output"])[-1][:300]
            raise DoctorError(f"cannot read the packages of the backend interpreter {python}: it exited with code "
                              f"{out.returncode}: {tail}")
        seen = reply_json(out.stdout, "its answer")  # bounded: a deep or huge answer is a ValueError
        inventory = {"source": "metadata", "complete": bool(seen["complete"]),
                     "locations": as_locations([tuple(row) for row in seen["found"]]),
                     "seconds": round(float(seen["seconds"]), 4)}
        return {"packages": seen["packages"], "inventory": inventory}
    except OSError as exc:
        raise DoctorError(f"cannot run the backend interpreter {python}: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise DoctorError(f"cannot read the packages of the backend interpreter {python}: no answer within "
                          f"{timeout:g} s") from None
    except (subprocess.SubprocessError, ValueError, TypeError) as exc:
        raise DoctorError(f"cannot read the packages of the backend interpreter {python}: {exc}") from None
    except KeyError as exc:
        raise DoctorError(f"cannot read the packages of the backend interpreter {python}: its answer has no "
                          f"{exc}") from None


def with_packages(facts: Facts, seen: dict[str, Any]) -> Facts:
    """A copy of the facts whose package and inventory sections are the backend interpreter's (`seen` from
    backend_packages): the package checks judge the environment the engine runs in."""
    return Facts({**facts.data, **seen})


def _skipped(r: Result, why: str) -> Result:
    return Result(r.check_id, r.title, r.category, r.severity, Status.SKIP, why, subject=r.subject)


def preflight(facts: Facts, backend: str, profile: Any, model: str, device: str = "cuda",
              options: dict[str, Any] | None = None, deployment: Any = None) -> list[Result]:
    """Run the built-in checks for this deployment (the command's own serving options win over the
    profile's); inapplicable ones become skips with the reason."""
    from doctor import registry, runner

    reg = registry.load(plugins=True)
    specs = runner.select(reg, backend)
    ctx = CheckContext(facts=facts, backend=backend, profile=profile, options={**(options or {}), "model": model},
                       deployment=deployment)
    results = runner.plugin_errors(reg) + runner.run_checks(specs, ctx)
    local = os.path.isdir(model)
    out = []
    for r in results:
        if device == "cpu" and r.status != Status.OK and (r.category in CPU_ONLY_SKIPS or r.check_id in CPU_SKIP_IDS):
            out.append(_skipped(r, "not applicable: the profile runs on CPU"))
        elif local and r.check_id in LOCAL_MODEL_SKIP_IDS:
            out.append(_skipped(r, f"not applicable: the checkpoint is the local directory {model}"))
        else:
            out.append(r)
    return out


def blocking(results: list[Result]) -> list[Result]:
    """Results that stop a deployment unless --force: failures and crashed checks."""
    return [r for r in results if r.status in (Status.FAIL, Status.ERROR)]
