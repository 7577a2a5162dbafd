"""A stand-in for doctor.fleet.ray_runner / spark_runner, for testing the runner's lifetime without an engine.

Behaviour by $QD_STUB_MODE: `hang` (start a grandchild, then sleep forever), `garbage` (write a fleet whose node
facts are not facts), `broken` (write a fleet the checks could not read). It records its pid and its grandchild's
pid, one per line, in $QD_STUB_PIDS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "a100-8x-nvlink.json"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--node-timeout", type=float)
    parser.add_argument("--probe-timeout", type=float)
    parser.add_argument("--address")
    parser.add_argument("--master")
    args = parser.parse_args()
    mode = os.environ.get("QD_STUB_MODE", "hang")
    pids = [os.getpid()]
    if mode == "hang":
        pids.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]).pid)
    Path(os.environ["QD_STUB_PIDS"]).write_text("".join(f"{p}\n" for p in pids))
    good = json.loads(FIXTURE.read_text())
    node = {"node_id": "n1", "hostname": "good", "ip": "10.0.0.1", "status": "ok", "error": None,
            "resources": {"GPU": 8.0}, "facts": good}
    if mode == "garbage":
        bad = json.loads(FIXTURE.read_text())
        bad["nvml"]["gpus"][2]["memory"]["total"] = "lots"
        fleet = {"engine": "ray", "target": "stub", "status": "ok", "error": None, "cluster": {},
                 "nodes": [node, {**node, "node_id": "n2", "hostname": "bad", "facts": bad},
                           {**node, "node_id": "n3", "hostname": "worse", "facts": {"schema": 7}}]}
        Path(args.out).write_text(json.dumps(fleet))
    elif mode == "broken":
        Path(args.out).write_text(json.dumps({"engine": "ray", "nodes": "everything"}))
    else:
        time.sleep(600)


if __name__ == "__main__":
    main()
