"""Mine the messages of the components below and beside the engines (NCCL, Triton, FlashInfer, torch elastic,
uvicorn, asyncio, the NVIDIA container toolkit, the engines' prefill/decode disaggregation layers) into
remedies/signatures/<component>.json.

Same data shape as scripts/mine_signatures.py (package, extractor, releases, modules, templates: template, kind,
modules, releases) plus `source`: where each release was read from (git repository and commit, or the PyPI
wheel, or the local interpreter's standard library). Nothing is imported or run.

- Python sources (FlashInfer, uvicorn, Triton, torch elastic, asyncio) go through mine_signatures.templates:
  `raise X(msg)` -> raise:X, `logger.error / warning ...` -> log:<level>.
- C sources (NCCL): `WARN("fmt", ...)` -> log:error (NCCL's WARN level prints only when a call errors out:
  https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-debug), and the result strings of
  ncclGetErrorString (`return "..."` in src/init.cc) -> error-string.
- Go sources (NVIDIA container toolkit, the Docker daemon's device requests in moby): `errors.New /
  fmt.Errorf("...")` and an error type's `Error() string { return fmt.Sprintf("...") }` -> raise:error,
  `logger.Errorf / Warningf / Warnf` -> log:error / log:warning.
printf / Go verbs become `{}` as in mine_signatures.

Git sources are read from local clones laid out as MIRRORS/<owner>+<name>/repo (--mirrors, a bare clone or a
checkout of github.com/<owner>/<name> with its release tags). Wheels are read by HTTP range requests from PyPI
(scripts/extract_flag_schema._HttpFile), only the listed modules.

Usage:
    python scripts/mine_components.py --mirrors DIR                 # every component, the releases in COMPONENTS
    python scripts/mine_components.py --mirrors DIR nccl flashinfer  # some of them
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import mine_signatures as ms  # noqa: E402  (templates, merge, dump; the shared extractor)
from extract_flag_schema import _HttpFile  # noqa: E402

OUT_DIR = ROOT / "remedies" / "signatures"


@dataclass(frozen=True)
class Component:
    """One component: where its sources live, which files hold its messages, which releases to read."""

    name: str
    origin: str  # "git:<owner>/<name>", "pypi:<project>" or "stdlib"
    files: re.Pattern[str]
    releases: tuple[str, ...]
    language: str  # python, c or go


COMPONENTS: dict[str, Component] = {
    "nccl": Component(
        "nccl", "git:NVIDIA/nccl", re.compile(r"^src/.*\.(cc|h|cu)$"),
        ("v2.7.8-1", "v2.10.3-1", "v2.12.12-1", "v2.14.3-1", "v2.16.5-1", "v2.17.1-1", "v2.18.6-1", "v2.21.5-1", "v2.23.4-1", "v2.26.6-1", "v2.27.7-1", "v2.30.7-1"), "c"),
    "nvidia_container_toolkit": Component(
        "nvidia_container_toolkit", "git:NVIDIA/nvidia-container-toolkit",
        re.compile(r"^(cmd|internal|pkg)/.*(?<!_test)\.go$"), ("v1.14.6", "v1.17.8", "v1.20.0"), "go"),
    "moby": Component(
        "moby", "git:moby/moby", re.compile(r"^daemon/(errors|devices(_linux)?|nvidia_linux|cdi)\.go$"),
        ("v19.03.0", "v20.10.0", "v24.0.0", "v28.5.2"), "go"),
    "flashinfer": Component(
        "flashinfer", "git:flashinfer-ai/flashinfer",
        re.compile(r"^(python/)?flashinfer/(jit/[a-z_]+|compilation_context|utils|aot|__init__)\.py$"),
        ("v0.2.5", "v0.3.1", "v0.5.3", "v0.6.17"), "python"),
    "uvicorn": Component(
        "uvicorn", "git:encode/uvicorn", re.compile(r"^uvicorn/(server|config|main|_subprocess|supervisors/[a-z_]+)\.py$"),
        ("0.30.6", "0.34.3", "0.35.0"), "python"),
    "triton": Component(
        "triton", "pypi:triton",
        re.compile(r"^triton/(backends/nvidia/(compiler|driver)|runtime/(errors|jit|build|autotuner|cache|driver)"
                   r"|compiler/(compiler|errors|code_generator))\.py$"),
        ("3.1.0", "3.3.1", "3.5.0"), "python"),
    "torch_elastic": Component(
        "torch_elastic", "pypi:torch",
        re.compile(r"^torch/distributed/(run|launcher/api|elastic/(agent/server/(api|local_elastic_agent)"
                   r"|multiprocessing/(api|errors/__init__|errors/error_handler)"
                   r"|rendezvous/(c10d_rendezvous_backend|dynamic_rendezvous|static_tcp_rendezvous|utils)))\.py$"),
        ("2.4.0", "2.9.0"), "python"),
    "sglang_disaggregation": Component(
        "sglang_disaggregation", "pypi:sglang",
        re.compile(r"^sglang/srt/disaggregation/([a-z_]+|(common|base|mooncake|nixl|mori|fake)/[a-z_]+)\.py$"),
        ("0.4.9.post6", "0.5.5", "0.5.13", "0.5.23"), "python"),
    "vllm_kv_transfer": Component(
        "vllm_kv_transfer", "pypi:vllm",
        re.compile(r"^vllm/(distributed/kv_transfer/.*|config/kv_transfer)\.py$"),
        ("0.10.2", "0.17.1", "0.26.0", "0.34.0"), "python"),
    "vllm_lora": Component(
        "vllm_lora", "pypi:vllm",
        re.compile(r"^vllm/(lora/.*|config/lora|v1/worker/lora_model_runner_mixin|worker/lora_model_runner"
                   r"|entrypoints/openai/(serving_models|models/serving)|entrypoints/serve/lora/[a-z_]+)\.py$"),
        ("0.8.5.post1", "0.10.2", "0.14.1", "0.20.2", "0.26.0", "0.34.0"), "python"),
    "sglang_lora": Component(
        "sglang_lora", "pypi:sglang",
        re.compile(r"^sglang/srt/(lora/.*|arg_groups/(lora_hook|fields/lora))\.py$"),
        ("0.4.3.post2", "0.4.9.post6", "0.5.5", "0.5.13", "0.5.23"), "python"),
    "modelscope": Component(
        "modelscope", "pypi:modelscope",
        re.compile(r"^modelscope/hub/(errors|api|file_download|snapshot_download|utils/utils)\.py$"),
        ("1.11.1", "1.20.1", "1.28.2", "1.35.3", "1.40.2"), "python"),
    "modelscope_hub": Component(
        "modelscope_hub", "pypi:modelscope_hub",
        re.compile(r"^modelscope_hub/(errors|api|_api/[a-z_]+|file_download|snapshot_download|_download/[a-z_]+"
                   r"|utils/[a-z_]+)\.py$"),
        ("0.2.0", "0.5.1"), "python"),
    "litellm": Component(
        "litellm", "pypi:litellm",
        re.compile(r"^litellm/(exceptions|litellm_core_utils/exception_mapping_utils|llms/openai/common_utils"
                   r"|llms/openai/openai|llms/hosted_vllm/chat/transformation|router)\.py$"),
        ("1.55.10", "1.74.0", "1.80.0"), "python"),
    "openai": Component(
        "openai", "pypi:openai", re.compile(r"^openai/(_exceptions|_base_client)\.py$"), ("1.58.1", "2.8.0"), "python"),
    "verl": Component(
        "verl", "pypi:verl", re.compile(r"^verl/(third_party/vllm/__init__|utils/import_utils|workers/rollout/vllm_rollout/[a-z_]+)\.py$"),
        ("0.2.0.post2", "0.4.1", "0.6.1"), "python"),
    "trl": Component(
        "trl", "pypi:trl", re.compile(r"^trl/(import_utils|extras/vllm_client|scripts/vllm_serve)\.py$"),
        ("0.17.0", "0.25.0"), "python"),
    "asyncio": Component(
        "asyncio", "stdlib", re.compile(r"^asyncio/(base_events|selector_events|streams|unix_events|sslproto)\.py$"),
        (), "python"),
}


# ---------------------------------------------------------------- reading sources


def git_sources(repo: Path, tag: str, files: re.Pattern[str]) -> tuple[dict[str, str], str]:
    """{path: text} of the matching files at `tag`, and the commit it names."""
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", f"{tag}^{{commit}}"], check=True,
                            capture_output=True, text=True).stdout.strip()
    names = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", commit], check=True,
                           capture_output=True, text=True).stdout.split("\n")
    out = {}
    for name in names:
        if files.search(name):
            blob = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{name}"], check=True,
                                  capture_output=True).stdout
            out[name] = blob.decode("utf-8", errors="replace")
    return out, commit


def wheel_sources(project: str, version: str, files: re.Pattern[str]) -> tuple[dict[str, str], str]:
    """{path: text} of the matching modules of one release's wheel (x86_64 manylinux or pure), and its file name."""
    prefix = f"{project.replace('-', '_')}-{version}-"
    wheels = [f for f in ms._index(project) if str(f["filename"]).startswith(prefix)
              and str(f["filename"]).endswith(".whl")]
    wheels.sort(key=lambda f: ("x86_64" not in str(f["filename"]) and "none-any" not in str(f["filename"]),
                               "cp311" not in str(f["filename"])))
    if not wheels:
        raise SystemExit(f"no wheel for {project}=={version} on PyPI")
    wheel = wheels[0]
    archive = zipfile.ZipFile(io.BufferedReader(_HttpFile(str(wheel["url"]), int(wheel["size"])), buffer_size=1 << 16))
    names = sorted(n for n in archive.namelist() if files.search(n))
    return {n: archive.read(n).decode("utf-8", errors="replace") for n in names}, str(wheel["filename"])


def stdlib_sources(files: re.Pattern[str]) -> tuple[dict[str, str], str]:
    """The running interpreter's standard-library modules that match, and its version."""
    base = Path(sysconfig.get_paths()["stdlib"])
    out = {str(p.relative_to(base)): p.read_text(encoding="utf-8") for p in sorted(base.rglob("*.py"))
           if files.search(str(p.relative_to(base)))}
    return out, ".".join(map(str, sys.version_info[:3]))


# ---------------------------------------------------------------- C and Go messages

C_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
C_WARN = re.compile(r'\bWARN\(\s*((?:"(?:[^"\\\n]|\\.)*"\s*(?:PRI[a-z0-9]+\s*|NCCL_[A-Z_]+\s*)?)+)')
C_ERROR_STRING = re.compile(r'case\s+nccl\w+\s*:\s*return\s+"((?:[^"\\\n]|\\.)*)"')
GO_ERROR = re.compile(r'\b(?:errors\.New|fmt\.Errorf)\(\s*"((?:[^"\\\n]|\\.)*)"')
GO_ERROR_TYPE = re.compile(r'\)\s*Error\(\)\s*string\s*\{\s*return\s+fmt\.Sprintf\(\s*"((?:[^"\\\n]|\\.)*)"')
GO_LOG = re.compile(r'\.(Errorf|Error|Warningf|Warnf|Warning|Warn)\(\s*"((?:[^"\\\n]|\\.)*)"')
GO_VERB = re.compile(r"%[-+# 0]*\d*(?:\.\d+)?[vwqsdxXtTfegp]")


C_TOKEN = re.compile(r'"((?:[^"\\\n]|\\.)*)"|([A-Za-z_]\w*)')
C_PRINTF = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcsp]")


def _c_literal(joined: str) -> str:
    """The text of adjacent C string literals; a macro between them (`PRIu64`) is part of a printf field."""
    parts = []
    for literal, macro in C_TOKEN.findall(joined):
        parts.append(literal if not macro else "d")
    return "".join(parts).replace('\\"', '"').replace("\\n", " ")


def c_templates(sources: dict[str, str]) -> Iterator[ms.Found]:
    """NCCL's WARN messages (log:error) and error strings (error-string)."""
    for path, text in sorted(sources.items()):
        for hit in C_WARN.finditer(text):
            yield from _found(C_PRINTF.sub(ms.HOLE, _c_literal(hit.group(1))), "log:error", path)
        for hit in C_ERROR_STRING.finditer(text):
            yield from _found(hit.group(1), "error-string", path)


def go_templates(sources: dict[str, str]) -> Iterator[ms.Found]:
    """Go errors (raise:error: errors.New / fmt.Errorf, and the fmt.Sprintf an error type's Error() method
    returns) and logger calls (log:error / log:warning)."""
    for path, text in sorted(sources.items()):
        for hit in (*GO_ERROR.finditer(text), *GO_ERROR_TYPE.finditer(text)):
            yield from _found(GO_VERB.sub(ms.HOLE, hit.group(1)), "raise:error", path)
        for hit in GO_LOG.finditer(text):
            level = "log:error" if hit.group(1).startswith("Error") else "log:warning"
            yield from _found(GO_VERB.sub(ms.HOLE, hit.group(2)), level, path)


def _found(raw: str, kind: str, path: str) -> Iterator[ms.Found]:
    template = ms._template(raw.replace('\\"', '"').replace("\\n", " ").replace("\\t", " "), printf=False)
    if ms._useful(template):
        yield ms.Found(template, kind, path)


EXTRACTORS: dict[str, Callable[[dict[str, str]], Iterator[ms.Found]]] = {
    "python": ms.templates, "c": c_templates, "go": go_templates,
}


# ---------------------------------------------------------------- main


def release_name(component: Component, tag: str) -> str:
    """A PEP 440 release from a tag: v2.21.5-1 -> 2.21.5, v1.17.8 -> 1.17.8."""
    return re.sub(r"-\d+$", "", tag.lstrip("v"))


def mine(component: Component, mirrors: Path) -> dict[str, object]:
    per_release: dict[str, list[ms.Found]] = {}
    read_from: dict[str, str] = {}
    tags = component.releases or ("",)
    for tag in tags:
        kind, _, where = component.origin.partition(":")
        if kind == "git":
            repo = mirrors / where.replace("/", "+") / "repo"
            if not repo.is_dir():
                raise SystemExit(f"{component.name}: no snapshot at {repo} (fetch github:{where} first)")
            sources, commit = git_sources(repo, tag, component.files)
            release, origin = release_name(component, tag), f"https://github.com/{where} {tag} ({commit})"
        elif kind == "pypi":
            sources, wheel = wheel_sources(where, tag, component.files)
            release, origin = tag, f"https://pypi.org/project/{where}/{tag}/ {wheel}"
        else:
            sources, release = stdlib_sources(component.files)
            origin = f"CPython {release} standard library (Lib/)"
        found = list(EXTRACTORS[component.language](sources))
        per_release[release] = found
        read_from[release] = origin
        print(f"{component.name} {release}: {len(sources)} files, {len(found)} messages", flush=True)
    project = component.origin.partition(":")[2]
    settings = ms.settings_of(project) if component.origin.startswith("pypi:") else frozenset()
    return {
        "package": component.name,
        "extractor": f"static-{component.language}/1 (scripts/mine_components.py)",
        "releases": sorted(per_release, key=ms.Version),
        "modules": component.files.pattern,
        "source": read_from,
        "templates": [s.to_json(settings) for s in ms.merge(per_release)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("components", nargs="*", metavar="COMPONENT", help=f"any of {', '.join(COMPONENTS)}")
    parser.add_argument("--mirrors", type=Path, required=True,
                        help="directory of git clones named <owner>+<name>/repo (NVIDIA/nccl, ...)")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    unknown = sorted(set(args.components) - set(COMPONENTS))
    if unknown:
        parser.error(f"unknown component(s): {', '.join(unknown)}")
    for name in args.components or COMPONENTS:
        data = mine(COMPONENTS[name], args.mirrors)
        (args.out / f"{name}.json").write_text(ms.dump(data), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
