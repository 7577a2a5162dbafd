"""Facts from the environment dumps users paste into issues: vLLM's collect_env and SGLang's check_env.

Formats, read in the engines' source:
- vLLM `python collect_env.py` / `python -m vllm.collect_env` / `vllm collect-env` (vllm/collect_env.py, a copy
  of torch/utils/collect_env.py): up to v0.9 `Key: value` lines ("PyTorch version: 2.4.0+cu121", "Nvidia driver
  version: 535.104.05", "GPU models and configuration:" then `nvidia-smi -L` lines with MIG devices indented
  under their GPU, "[pip3] name==version", "vLLM Version: 0.5.4@<sha>", "GPU Topology:" then
  `nvidia-smi topo -m`); from v0.9 the same keys padded into sections ("PyTorch version              : 2.9.0")
  plus an "Environment Variables" section of K=V lines. Missing values print as "Could not collect" / "N/A";
  a machine without CUDA prints "No CUDA". PyTorch's own `python -m torch.utils.collect_env` is the same
  format without the vLLM part.
- SGLang `python -m sglang.check_env` (python/sglang/check_env.py): `Key: value` lines: "Python", "CUDA
  available", "GPU 0,1: NAME", "GPU 0,1 Compute Capability: 8.0", "CUDA_HOME", "NVCC", "CUDA Driver Version"
  (the driver, from nvidia-smi), "PyTorch", then one line per package ("sgl_kernel: 0.3.17", "vllm: Module Not
  Found"), "NVIDIA Topology:" and `nvidia-smi topo -m`, "ulimit soft". Pasted into an issue it is sometimes
  flattened into one line; the known keys are split apart again.
Torch's own warnings, often pasted above either dump, are read too: "X with CUDA capability sm_120 is not
compatible with the current PyTorch installation. The current PyTorch install supports CUDA capabilities sm_50
...", "Found GPU0 NAME which is of cuda capability 12.1", "The NVIDIA driver on your system is too old (found
version 11040)", "CUDA initialization: ...".

A dump holds far less than a bundle: what it does not hold is listed in `origin.unknown` (Facts.knows), so the
checks skip instead of taking an absent fact for a good one. Pastes are often cut off (an issue excerpt, a
<details> block): a collect_env paste cut down to its "[pip3] name==version" lines (vllm#21689) and a check_env
paste cut inside its "Python:" line after the `sglang.check_env` command (sglang#4248) are still read; one that
stops before its driver / GPU lines records "nvml" as unknown, so QD-DRV-001 skips rather than reporting no driver
(vllm#21310, #26349, #46179). Text in neither format is a one-line BadBundle.
"""

from __future__ import annotations

import re
from typing import Any

from packaging.utils import canonicalize_name

from doctor.errors import BadBundle
from doctor.facts.probes.inventory import as_locations
from doctor.facts.installed import DISTRIBUTIONS

VLLM = "vllm-collect-env"
SGLANG = "sglang-check-env"
FORMAT_NAMES = {VLLM: "vLLM collect_env", SGLANG: "SGLang check_env"}
BACKEND_OF = {VLLM: "vllm", SGLANG: "sglang"}
NOT_COLLECTED = {"", "could not collect", "n/a", "none", "no cuda", "not available", "module not found"}
MAX_LINES = 20000
DUMP_LOCATION = "(listed in the dump)"   # the inventory's location of what a dump lists: it names no path

# Facts no dump holds (a bundle records them through NVML and the host probes).
ALWAYS_UNKNOWN = ("gpu.memory", "gpu.processes", "gpu.ecc", "gpu.persistence_mode", "gpu.nvlink",
                  "topology.p2p", "host")

# Distribution name as the dumps print it (underscores read as dashes) -> the logical name of the package probe
# (doctor/facts/installed.py DISTRIBUTIONS), plus spellings only the dumps use.
PACKAGE_NAMES = {**{dist.lower().replace("_", "-"): name for name, dists in DISTRIBUTIONS.items() for dist in dists},
                 "nvidia-nccl-cu11": "nccl"}


def logical_name(raw_name: str) -> str | None:
    """The package probe's name of a distribution or module name as a dump prints it ('sgl_kernel' -> 'sgl-kernel')."""
    return PACKAGE_NAMES.get(raw_name.lower().replace("_", "-"))


# `nvidia-smi topo -m` connection types -> the levels of NVML's nvmlDeviceGetTopologyCommonAncestor
# (doctor/facts/probes/nvml.py).
TOPO_LEVELS = {"PIX": "SINGLE", "PXB": "MULTIPLE", "PHB": "HOSTBRIDGE", "NODE": "NODE", "SYS": "SYSTEM"}

_VLLM_KEY = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 _()/.+-]*?)\s*:(?:\s(?P<value>.*))?$")
_SGLANG_KEY = re.compile(r"^(?P<key>[A-Za-z_][\w .,()+-]*?): ?(?P<value>.*)$")
_PIP = re.compile(r"^\[(?:pip3?|conda)\]\s+(?P<name>[A-Za-z0-9_.-]+)(?:==|\s+)(?P<version>[^\s]+)")
_GPU_LINE = re.compile(r"^GPU (?P<index>\d+): (?P<name>.+?)(?: \(UUID: [^)]*\))?$")
_MIG_LINE = re.compile(r"^\s+MIG (?P<profile>\S+)\s+Device\s+\d+:")
_SG_GPU = re.compile(r"^GPU (?P<ids>\d+(?:,\d+)*)(?P<cc> Compute Capability)?$")
_TOPO_HEADER = re.compile(r"^\s+GPU0(\s+(GPU|NIC|mlx)\S*)*")
_INCOMPATIBLE = re.compile(r"(?P<name>\S[^\n]*?) with CUDA capability sm_(?P<cc>\d+) is not compatible with the "
                           r"current PyTorch installation")
_SUPPORTS = re.compile(r"The current PyTorch install supports CUDA capabilities (?P<arch>(?:(?:sm|compute)_\w+ ?)+)")
_FOUND_GPU = re.compile(r"Found GPU(?P<index>\d+) (?P<name>.+?) which is of (?:cuda|compute) capability "
                        r"(?:\(CC\) )?(?P<cc>\d+\.\d+)")
_DRIVER_TOO_OLD = re.compile(r"The NVIDIA driver on your system is too old \(found version (?P<v>\d+)\)")
_CUDA_INIT = re.compile(r"CUDA initialization: (?P<msg>.+?)(?: \(Triggered internally|$)", re.M)
_CU_TAG = re.compile(r"\+cu(?P<major>\d{2})(?P<minor>\d)\b")
_DIST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_VERSION = re.compile(r"\d+(?:\.\d+)+\S*")

# Keys that start a new field of SGLang's check_env when a paste flattened it onto one line.
_SGLANG_FIXED_KEYS = ("Python", "CUDA available", "ROCM available", "CUDA_HOME", "ROCM_HOME", "NVCC", "HIPCC",
                      "CUDA Driver Version", "CUDA Driver Versions", "ROCM Driver Version", "PyTorch",
                      "NVIDIA Topology", "AMD Topology", "Hypervisor vendor", "ulimit soft")
_SGLANG_PACKAGES = ("sglang", "sgl_kernel", "flashinfer_python", "flashinfer_cubin", "flashinfer_jit_cache",
                    "flashinfer", "triton", "transformers", "torchao", "numpy", "aiohttp", "fastapi", "hf_transfer",
                    "huggingface_hub", "interegular", "modelscope", "orjson", "outlines", "packaging", "psutil",
                    "pydantic", "python-multipart", "multipart", "pyzmq", "zmq", "uvicorn", "uvloop", "vllm",
                    "xgrammar", "openai", "tiktoken", "anthropic", "litellm", "decord", "decord2", "requests",
                    "tqdm", "PIL")


def detect(text: str) -> str | None:
    """The dump format of `text` (VLLM or SGLANG), or None when it is neither."""
    head = text[:200000]
    if re.search(r"^PyTorch version\s*:", head, re.M) and re.search(
            r"^(CUDA used to build PyTorch|Is CUDA available|Nvidia driver version|vLLM Version)\s*:", head, re.M):
        return VLLM
    python = re.search(r"(^|\s)Python: \S", head)
    if python and (re.search(r"(^|\s)(CUDA available|ROCM available|PyTorch|sglang): ", head)
                   or "sglang.check_env" in head):
        return SGLANG
    # A paste cut down to collect_env's package list (vllm#21689): "[pip3] torch==2.7.0" is its own format.
    if re.search(r"^\s*\[pip3?\] [A-Za-z0-9_.-]+==\S", head, re.M):
        return VLLM
    return None


def parse(text: str, source: str = "dump") -> dict[str, Any]:
    """A facts document (schema qwen-doctor.facts) built from a vLLM or SGLang environment dump."""
    from doctor import __version__
    from doctor.facts.document import SCHEMA_NAME, SCHEMA_VERSION

    text = _unquote(text.replace("\r\n", "\n").replace("\r", "\n"))  # CR-only lines too (classic Mac, some pastes)
    fmt = detect(text)
    if fmt is None:
        raise BadBundle(f"{source} is neither a qwen-doctor facts bundle (JSON) nor a vLLM collect_env / SGLang "
                        f"check_env dump: no 'PyTorch version:' / 'Python: ... CUDA available:' lines found")
    lines = text.split("\n")[:MAX_LINES]
    dump = _Dump(fmt)
    if fmt == VLLM:
        _read_vllm(lines, dump)
    else:
        _read_sglang(_unflatten(lines), dump)
    _read_torch_warnings(text, dump)
    data: dict[str, Any] = {
        "schema": SCHEMA_NAME, "schema_version": SCHEMA_VERSION, "tool_version": __version__,
        "probes": {}, "nvml": dump.nvml(), "packages": dump.packages, "host": dump.host, "env": dump.env,
        "inventory": {"source": "dump", "complete": False, "locations": as_locations(
            [(d["name"], d["version"], DUMP_LOCATION) for d in dump.inventory.values()])},
        "torch_runtime": dump.torch_runtime,
        "origin": {"format": fmt, "backend": BACKEND_OF[fmt], "source": source, "unknown": dump.unknown()},
    }
    if dump.engine_version:
        data["origin"]["engine_version"] = dump.engine_version
    return data


class _Dump:
    """What one dump says, gathered line by line; None means 'not in the dump'."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.packages: dict[str, Any] = {}
        self.inventory: dict[str, dict[str, str]] = {}   # every distribution the dump lists, by canonical name
        self.host: dict[str, Any] = {}
        self.env: dict[str, str] = {}
        self.env_known = False
        self.torch_runtime: dict[str, Any] = {}
        self.gpus: dict[int, dict[str, Any]] = {}
        self.gpus_listed = False        # the dump has a GPU list (possibly "No CUDA": none)
        self.driver_seen = False        # the dump reaches its CUDA / driver / GPU lines (a paste is often cut before)
        self.no_cuda = False
        self.mig_known = False
        self.driver: str | None = None
        self.cuda_driver: str | None = None
        self.topology: list[dict[str, Any]] = []
        self.engine_version: str | None = None

    def gpu(self, index: int) -> dict[str, Any]:
        return self.gpus.setdefault(index, {"index": index, "name": None, "compute_capability": None,
                                            "memory": None, "processes": [], "nvlink": []})

    def set_package(self, raw_name: str, version: str | None, **extra: Any) -> None:
        if version is not None and version[:1].isdigit() and _DIST_NAME.fullmatch(raw_name):
            listed = canonicalize_name(raw_name)
            self.inventory.setdefault(listed, {"name": listed, "version": version})
        name = logical_name(raw_name)
        if name is None:
            return
        if version is None:
            self.packages.setdefault(name, None)
            return
        entry = self.packages.get(name) or {"distribution": raw_name}
        entry.update({"version": version, **{k: v for k, v in extra.items() if v is not None}})
        self.packages[name] = entry

    def nvml(self) -> dict[str, Any]:
        gpus = [self._finished(g) for _, g in sorted(self.gpus.items())]
        available = bool(gpus or self.driver or self.cuda_driver) and not self.no_cuda
        error = "the dump reports No CUDA (no NVIDIA driver or GPU visible)" if self.no_cuda else None
        if not available and error is None:
            error = "the dump records neither a driver nor a GPU"
        return {"available": available, "error": error, "driver_version": self.driver,
                "cuda_driver_version": self.cuda_driver, "gpus": gpus, "topology": self.topology}

    def _finished(self, gpu: dict[str, Any]) -> dict[str, Any]:
        from doctor.knowledge import capability_of

        if gpu.get("compute_capability") is None:
            gpu["compute_capability"] = capability_of(gpu.get("name"))
        if self.mig_known and gpu.get("mig") is None:
            gpu["mig"] = {"current": False, "pending": False}
        return gpu

    def unknown(self) -> list[str]:
        out = list(ALWAYS_UNKNOWN)
        if not (self.driver_seen or self.gpus or self.driver or self.cuda_driver or self.no_cuda):
            out.append("nvml")
        if not self.gpus_listed and not self.gpus:
            out.append("gpus")
        if not self.mig_known:
            out.append("gpu.mig")
        if not self.env_known:
            out.append("env")
        if not self.topology:
            out.append("topology")
        torch = self.packages.get("torch")
        if torch and "cuda" not in torch:
            out.append("torch.cuda")
        return out


_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.M)


def _unquote(text: str) -> str:
    """A dump quoted in a reply ("> PyTorch version: ..." on GitHub) without its quote markers, when most of its
    non-blank lines carry them."""
    lines = [line for line in text[:200000].splitlines() if line.strip()]
    quoted = sum(1 for line in lines if line.lstrip().startswith(">"))
    return _QUOTE.sub("", text) if lines and quoted * 2 > len(lines) else text


def _clean(value: str | None) -> str | None:
    """A dump's value, or None for its 'not collected' spellings."""
    if value is None:
        return None
    value = value.strip()
    return None if value.lower() in NOT_COLLECTED else value


def _torch(dump: _Dump, version: str | None, cuda: str | None = None, cuda_known: bool = False) -> None:
    if version is None:
        return
    tag = _CU_TAG.search(version)
    if cuda is None and tag:
        cuda = f"{int(tag['major'])}.{tag['minor']}"
    entry: dict[str, Any] = {"version": version, "distribution": "torch", "build": version}
    dump.inventory.setdefault("torch", {"name": "torch", "version": version})
    if cuda is not None or cuda_known or "+cpu" in version:
        entry["cuda"] = cuda
    dump.packages["torch"] = {**(dump.packages.get("torch") or {}), **entry}


def _read_vllm(lines: list[str], dump: _Dump) -> None:
    keys: dict[str, str | None] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        pip = _PIP.match(line.strip())
        if pip:
            if line.strip().startswith("[conda]") and dump.packages.get(logical_name(pip["name"]) or ""):
                i += 1
                continue
            dump.set_package(pip["name"], pip["version"])
            i += 1
            continue
        m = _VLLM_KEY.match(line)
        if not m:
            i += 1
            continue
        key, value = m["key"].strip(), (m["value"] or "").strip()
        if key in ("Nvidia driver version", "GPU models and configuration"):
            dump.driver_seen = True
        if key == "GPU models and configuration":
            i = _read_gpu_list(lines, i + 1, value, dump)
            continue
        if key == "GPU Topology":
            i = _read_topology(lines, i + 1, dump, first=value)
            continue
        if key == "vLLM Build Flags":
            i += 1
            continue
        keys.setdefault(key, value)
        i += 1
    _read_env_section(lines, dump)
    cuda_text = keys.get("CUDA used to build PyTorch")
    hip = _clean(keys.get("ROCM used to build PyTorch"))
    cuda_known = cuda_text is not None and cuda_text.strip().lower() == "none" or hip is not None
    _torch(dump, _clean(keys.get("PyTorch version")), _clean(cuda_text), cuda_known)
    if hip is not None and dump.packages.get("torch"):
        dump.packages["torch"]["hip"] = hip
    available = _clean(keys.get("Is CUDA available"))
    if available is not None:
        dump.torch_runtime["cuda_available"] = available.lower() in ("true", "yes")
    driver = keys.get("Nvidia driver version")
    if driver is not None and driver.strip().lower() == "no cuda":
        dump.no_cuda = True
    dump.driver = _clean(driver)
    vllm = _clean(keys.get("vLLM Version"))
    if vllm and (found := _VERSION.search(vllm.split("@")[0].split(" (")[0])):
        dump.set_package("vllm", found.group(0))
        dump.engine_version = found.group(0)
    if (python := _clean(keys.get("Python version"))) and (found := _VERSION.match(python)):
        dump.host["python"] = found.group(0)
    if os_name := _clean(keys.get("OS")):
        dump.host["os"] = os_name


def _read_gpu_list(lines: list[str], i: int, value: str, dump: _Dump) -> int:
    """`GPU models and configuration`: its value or the `nvidia-smi -L` lines below it; the next index to read."""
    if value.strip().lower() == "no cuda":
        dump.no_cuda = dump.gpus_listed = True
        return i
    if _clean(value) is None and value.strip():
        return i   # Could not collect
    entries = [value] if value.strip() else []
    while i < len(lines) and (lines[i].strip() == "" or _GPU_LINE.match(lines[i].strip()) or _MIG_LINE.match(lines[i])):
        if lines[i].strip() == "" and entries:
            break
        entries.append(lines[i])
        i += 1
    last: dict[str, Any] | None = None
    for entry in entries:
        if _MIG_LINE.match(entry) and last is not None:
            last["mig"] = {"current": True, "pending": True}
            last.setdefault("mig_devices", []).append({"uuid": None, "memory_total": None})
            continue
        if found := _GPU_LINE.match(entry.strip()):
            last = dump.gpu(int(found["index"]))
            last["name"] = found["name"].strip()
            dump.gpus_listed = dump.mig_known = True
    return i


def _read_topology(lines: list[str], i: int, dump: _Dump, first: str = "") -> int:
    """`nvidia-smi topo -m` under its key: NV# pairs are NVLink, the others PCIe at the level named."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not _TOPO_HEADER.match(lines[i].replace("\t", "    ")):
        return i
    header = lines[i].split()
    columns = [c for c in header if re.fullmatch(r"(GPU|NIC)\d+", c)]
    gpu_cols = [int(c[3:]) for c in columns if c.startswith("GPU")]
    i += 1
    pairs: dict[tuple[int, int], dict[str, Any]] = {}
    while i < len(lines):
        cells = lines[i].split()
        if not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            break
        a = int(cells[0][3:])
        for col, cell in zip(columns, cells[1:1 + len(columns)]):
            if not col.startswith("GPU") or int(col[3:]) == a or cell == "X":
                continue
            b = int(col[3:])
            key = (min(a, b), max(a, b))
            nvlink = re.fullmatch(r"NV\d+", cell) is not None
            if cell not in TOPO_LEVELS and not nvlink:
                continue
            pairs[key] = {"a": key[0], "b": key[1], "common_ancestor": None if nvlink else TOPO_LEVELS[cell],
                          "p2p": {"read": None, "nvlink": "ok" if nvlink else "not_supported"}, "errors": {}}
        dump.gpu(a)
        i += 1
    for index in gpu_cols:
        if pairs or index in dump.gpus:
            dump.gpu(index)
    dump.topology = [pairs[k] for k in sorted(pairs)]
    return i


def _read_env_section(lines: list[str], dump: _Dump) -> None:
    """The K=V lines under vLLM's 'Environment Variables' section header (v0.9 and later)."""
    from doctor.redact import redact_env

    for start, line in enumerate(lines):
        if line.strip() == "Environment Variables" and start > 0 and lines[start - 1].startswith("====="):
            env: dict[str, str] = {}
            for row in lines[start + 2:]:
                if "=" not in row or row.startswith("="):
                    break
                key, _, value = row.partition("=")
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key.strip()):
                    env[key.strip()] = value.strip()
            dump.env, dump.env_known = redact_env(env), True
            return


def _unflatten(lines: list[str]) -> list[str]:
    """Split a check_env paste that lost its line breaks back into one `key: value` per line."""
    keys = [re.escape(k) for k in (*_SGLANG_FIXED_KEYS, *_SGLANG_PACKAGES)]
    splitter = re.compile(r"\s(?=(?:" + "|".join(keys) + r"|GPU \d+(?:,\d+)*(?: Compute Capability)?): )")
    out: list[str] = []
    for line in lines:
        out.extend(splitter.split(line) if len(line) > 200 and len(splitter.findall(line)) >= 3 else [line])
    return out


def _read_sglang(lines: list[str], dump: _Dump) -> None:
    i = 0
    torch_version: str | None = None
    while i < len(lines):
        line = lines[i].strip()
        m = _SGLANG_KEY.match(line)
        if not m:
            i += 1
            continue
        key, value = m["key"].strip(), m["value"].strip()
        if key in ("NVIDIA Topology", "AMD Topology"):
            i = _read_topology(lines, i + 1, dump)
            continue
        i += 1
        if _SG_GPU.match(key) or key in ("CUDA Driver Version", "CUDA Driver Versions") or (
                key in ("CUDA available", "ROCM available") and value.lower() != "true"):
            dump.driver_seen = True     # with CUDA available check_env goes on to list the GPUs and the driver
        if gpu := _SG_GPU.match(key):
            for index in (int(x) for x in gpu["ids"].split(",")):
                if gpu["cc"]:
                    dump.gpu(index)["compute_capability"] = value
                else:
                    dump.gpu(index)["name"] = value
            dump.gpus_listed = True
            continue
        if key == "Python":
            if found := _VERSION.match(value):
                dump.host["python"] = found.group(0)
        elif key in ("CUDA available", "ROCM available"):
            dump.torch_runtime["cuda_available"] = value.lower() == "true"
            dump.torch_runtime.setdefault("build", "cuda" if key.startswith("CUDA") else "rocm")
            if value.lower() != "true":
                dump.gpus_listed = True
        elif key in ("CUDA Driver Version", "CUDA Driver Versions"):
            versions = sorted(v.strip() for v in value.split(",") if _clean(v))
            dump.driver = versions[0] if versions else None
        elif key == "PyTorch":
            torch_version = _clean(value)
        elif value.lower() == "module not found":
            dump.set_package(key, None)
        elif found := _VERSION.match(value):
            dump.set_package(key, found.group(0))
            if key == "sglang":
                dump.engine_version = found.group(0)
    if torch_version:
        cuda_build = dump.torch_runtime.get("build") == "cuda"
        _torch(dump, torch_version)
        if dump.torch_runtime.pop("build", None) == "rocm":
            dump.packages["torch"].update(cuda=None, hip="unknown")
        elif cuda_build and "cuda" not in dump.packages["torch"]:
            dump.packages["torch"]["cuda_build"] = True
    dump.torch_runtime.pop("build", None)


def _read_torch_warnings(text: str, dump: _Dump) -> None:
    """GPU names, capabilities, arch list and CUDA-init errors from torch's warnings pasted with the dump."""
    for found in _FOUND_GPU.finditer(text):
        gpu = dump.gpu(int(found["index"]))
        gpu["name"] = gpu.get("name") or found["name"].strip()
        gpu["compute_capability"] = gpu.get("compute_capability") or found["cc"]
    for found in _INCOMPATIBLE.finditer(text):
        cc = found["cc"]
        name = found["name"].strip().splitlines()[-1].strip()
        same = [g for g in dump.gpus.values() if g.get("name") in (name, None)] or [dump.gpu(len(dump.gpus))]
        for gpu in same:
            gpu["name"] = gpu.get("name") or name
            gpu["compute_capability"] = f"{cc[:-1]}.{cc[-1]}"
    if found := _SUPPORTS.search(text):
        dump.torch_runtime["arch_list"] = found["arch"].split()
    if found := _DRIVER_TOO_OLD.search(text):
        v = int(found["v"])
        dump.cuda_driver = f"{v // 1000}.{(v % 1000) // 10}"
    if found := _CUDA_INIT.search(text):
        dump.torch_runtime["error"] = f"CUDA initialization: {found['msg'].strip()}"
