"""A report with every section filled and secrets planted everywhere a user's secret can hide."""

from __future__ import annotations

from typing import Any

from doctor.report.model import Report, summarize
from doctor.results import Result, Status
from tests.conftest import fixture_data
from doctor.facts.model import Facts

# Alphanumeric on purpose: no escaping (HTML, XML, JSON, Markdown) can change their bytes, so a byte search finds
# any leak in any format.
HF = "hf_PlantedHfToken0123456789abcdefABCD"
API_KEY = "PlantedApiKey7f3e9d2c1b"
HF_FLAG = "PlantedHfFlagValue4242xyz"
BEARER = "PlantedBearerQ9w8e7r6t5y4"
AWS = "PlantedAwsSecret55aa66bb77"
SERVICE_KEY = "PlantedServiceKey0909zz"
PASSWORD = "PlantedPassw0rdInUrl31"
PLANTED = (HF, API_KEY, HF_FLAG, BEARER, AWS, SERVICE_KEY, PASSWORD)
HOSTNAME = "gpu-node-17"
HOST_IP = "10.20.30.40"
SCRIPT = "<script>document.title='PWNED'</script>"


def planted_facts() -> dict[str, Any]:
    data = fixture_data("h200")
    data["hostname"] = data["host"]["hostname"] = HOSTNAME
    data["env"] = {**data["env"], "HF_TOKEN": HF, "MY_SERVICE_API_KEY": SERVICE_KEY,
                   "AWS_SECRET_ACCESS_KEY": AWS, "TOKENIZERS_PARALLELISM": "false"}
    return data


def result(check_id: str, status: Status, summary: str, **kw: Any) -> Result:
    return Result(check_id=check_id, title=kw.pop("title", f"title of {check_id}"), category=kw.pop("category", "host"),
                  severity=kw.pop("severity", "high"), status=status, summary=summary, **kw)


def full_report() -> Report:
    facts = planted_facts()
    argv = ["vllm", "serve", "Qwen/Qwen3.5-35B-A3B", "--api-key", API_KEY, f"--hf-token={HF_FLAG}", "--port", "8000"]
    results = [
        result("QD-HOST-001", Status.FAIL, "/dev/shm is 64 MiB", details=[f"log said {SCRIPT}"],
               fix=["docker run --ipc=host ...", "or --shm-size=16g"], remedy_ids=["QD-R-NCCL-SHM"]),
        result("QD-VER-001", Status.WARN, "neither vLLM nor SGLang is installed", category="versions",
               severity="critical", fix=["pip install -U 'vllm>=0.17.0'"]),
        result("QD-ENV-001", Status.ERROR, "check crashed: KeyError", category="env",
               details=[f"env had HF_TOKEN={HF}"]),
        result("QD-DRV-001", Status.OK, "driver 580.159.04 loaded", category="driver"),
        result("QD-GPU-002", Status.SKIP, "no NVLink on this GPU", category="gpu", subject="GPU0"),
    ]
    sections = {
        "plan": {"schema": 1, "model": "Qwen/Qwen3.5-35B-A3B", "fits": False, "kv_tokens": 0, "max_model_len": 262144,
                 "gpus": {"name": "A100-80G", "count": 1, "memory_bytes": 85899345920},
                 "config": {"backend": "vllm", "tp": 1, "pp": 1}, "ranks": [{"pp_rank": 0, "kv_tokens": 0}],
                 "rules": [{"rule": "weights", "ok": False, "severity": "fail", "message": "weights do not fit",
                            "fix": "use TP 2"}],
                 "problems": ["weights need 67.1 GiB, budget 72.0 GiB leaves no KV cache"],
                 "suggestions": ["--tensor-parallel-size 2"]},
        "deployment": {"profile": "vllm-stable", "backend": "vllm", "command": " ".join(argv), "argv": argv,
                       "url": f"http://{HOST_IP}:8000", "pid": 4242, "started_at": "2026-12-02T15:00:00+00:00",
                       "ready_seconds": 81.5, "stopped": True, "exit_code": 0, "log_path": "/tmp/server.log",
                       "log_excerpt": ["INFO Starting vLLM API server on http://0.0.0.0:8000",
                                       f"DEBUG request headers: {{'Authorization': 'Bearer {BEARER}'}}",
                                       SCRIPT, "colour \x1b[31mred\x1b[0m and a NUL \x00 byte"]},
        "exercises": [
            {"name": "models", "status": "ok", "seconds": 0.02, "summary": "1 model served"},
            {"name": "chat", "status": "ok", "seconds": 1.3, "summary": "answered 'Paris'"},
            {"name": "json-schema", "status": "fail", "seconds": 2.1, "summary": "output is not valid JSON",
             "details": [f"curl -H 'Authorization: Bearer {BEARER}' ..."],
             "fix": ["start vLLM with --structured-outputs-config '{\"backend\": \"xgrammar\"}'"]},
        ],
        "metrics": {"requests": 64, "concurrency": 8, "duration_s": 41.2, "errors": 0,
                    "throughput": {"requests_per_s": 1.55, "output_tokens_per_s": 402.7},
                    "percentiles": {"ttft_ms": {"p50": 180.2, "p90": 420.0, "p99": 910.5},
                                    "tpot_ms": {"p50": 18.1, "p90": 22.4, "p99": 35.0},
                                    "itl_ms": {"p50": 17.9, "p90": 24.0, "p99": 61.3},
                                    "e2el_ms": {"p50": 4700.0, "p90": 6100.0, "p99": 8800.0}},
                    "kv_cache": {"predicted_tokens": 1234567, "reported_tokens": 1200000}},
        "remedies": [{
            "id": "QD-R-NCCL-SHM", "title": "NCCL cannot create its shared memory segment", "severity": "error",
            "component": "nccl", "count": 3, "first_line": {"source": "server.log", "line": 120},
            "last_line": {"source": "server.log", "line": 190},
            "line": f"{HOSTNAME}:123:456 [0] NCCL WARN Error while creating shared memory segment {SCRIPT}",
            "context": {"before": [f"export HF_TOKEN={HF}", f"login to https://admin:{PASSWORD}@{HOSTNAME}/"],
                        "after": [f"worker at {HOST_IP}:29500 exited"]},
            "why": "Docker's default /dev/shm is 64 MB.",
            "fix": [{"text": "docker run --ipc=host", "applies": None}, "or --shm-size=16g"],
            "source": ["https://github.com/NVIDIA/nccl/issues/525", "javascript:alert(1)"],
        }],
        "logs": [{"source": "server.log", "lines": [f"Using token {HF} for the hub", SCRIPT,
                                                     f"curl -H 'Authorization: Bearer {BEARER}' http://{HOST_IP}/v1"]}],
    }
    return Report(command=f"deploy --profile vllm-stable --api-key {API_KEY}", results=results,
                  facts_summary=summarize(Facts(facts), "live"), sections=sections, facts=facts,
                  argv=["deploy", "--profile", "vllm-stable", "--api-key", API_KEY, "--hf-token", HF_FLAG])
