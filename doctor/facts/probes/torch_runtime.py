"""Deep probe: import torch in a subprocess (seconds) for the facts only torch itself knows."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from doctor.boundedrun import probe_env

SCRIPT = r"""
import json, torch
out = {"version": torch.__version__, "cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
if out["cuda_available"]:
    out["arch_list"] = torch.cuda.get_arch_list()
    out["device_count"] = torch.cuda.device_count()
    out["devices"] = [torch.cuda.get_device_name(i) for i in range(out["device_count"])]
    out["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
print(json.dumps(out))
"""


def probe(timeout_s: float = 60.0) -> dict[str, Any]:
    """What torch reports about CUDA; a failure to import or initialise is recorded, not raised."""
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=timeout_s,
                              env=probe_env())
    except subprocess.TimeoutExpired:
        return {"error": f"importing torch took longer than {timeout_s:g} s"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"torch probe failed: {tail}"}
    return json.loads(done.stdout)
