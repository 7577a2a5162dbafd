"""Turn a profile's launch command into its rehearsal: the same flags, served from the rehearsal folder with
random weights (`--load-format dummy`), under the model's usual name, nothing downloaded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doctor.deploy.spec import LaunchSpec, flag_value, from_argv
from doctor.results import Result, Status

LOAD_FORMAT = "dummy"
# With random weights any whitespace the JSON grammar allows can run on to max_tokens; a real model stops.
# vLLM: vllm/config/structured_outputs.py disable_any_whitespace (xgrammar, guidance); SGLang:
# python/sglang/srt/server_args.py --constrained-json-disable-any-whitespace (0.5.16).
NO_JSON_WHITESPACE = {"vllm": ("--structured-outputs-config",
                                json.dumps({"backend": "xgrammar", "disable_any_whitespace": True})),
                      "sglang": ("--constrained-json-disable-any-whitespace", None)}
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
NOTICE = ("REHEARSAL: the weights were random (--load-format dummy): answers are noise; memory, kernels, "
          "CUDA graphs, KV capacity and the API are real")


@dataclass(frozen=True)
class Rehearsal:
    """What `--rehearse` changed: the folder served and the model it stands for."""

    folder: Path
    model: str
    checkpoint: dict[str, Any]

    def result(self) -> Result:
        """The report line that says plainly that the weights were random."""
        return Result("QD-DEPLOY-REHEARSAL", "Rehearsal with random weights", "deploy", "info", Status.OK, NOTICE,
                      details=[f"model: {self.model}", f"checkpoint folder: {self.folder}",
                               f"tokenizer: {self.checkpoint.get('tokenizer', 'not built (dry run)')}"],
                      evidence=self.checkpoint)

    def section(self) -> dict[str, Any]:
        return {"model": self.model, "folder": str(self.folder), "load_format": LOAD_FORMAT,
                "weights": "random", "notice": NOTICE, **self.checkpoint}


def _set(argv: list[str], name: str, value: str | None) -> list[str]:
    """argv with `name` (and its value) replacing every existing `name`/`name=...`, appended at the end."""
    out: list[str] = []
    skip = False
    for i, token in enumerate(argv):
        if skip:
            skip = False
            continue
        if token == name:
            skip = value is not None and i + 1 < len(argv) and not argv[i + 1].startswith("--")
            continue
        if token.startswith(name + "="):
            continue
        out.append(token)
    return out + ([name] if value is None else [name, value])


def rehearsal_argv(argv: list[str], backend: str, folder: str, served_name: str) -> list[str]:
    """The command line served from `folder` with dummy weights, keeping every other flag."""
    out = list(argv)
    if len(out) > 2 and out[1] == "serve" and not out[2].startswith("-"):
        out[2] = folder
    for name in ("--model", "--model-path"):
        if flag_value(out, name) is not None:
            out = _set(out, name, folder)
    for name in ("--tokenizer", "--tokenizer-path"):
        if flag_value(out, name) is not None:
            out = _set(out, name, folder)
    out = _set(out, "--load-format", LOAD_FORMAT)
    if flag_value(out, "--served-model-name") is None:
        out = _set(out, "--served-model-name", served_name)
    flag, value = NO_JSON_WHITESPACE[backend]
    if flag not in out and not any(t.startswith(flag + "=") for t in out):
        out = out + ([flag] if value is None else [flag, value])
    return out


def rehearse_spec(spec: LaunchSpec, model: str, build: bool = True, root: Path | None = None
                  ) -> tuple[LaunchSpec, Rehearsal]:
    """The rehearsal of `spec` for `model` (registry name or local folder). With build=False (dry run) the
    folder is only located, not written."""
    from doctor.rehearse import checkpoint

    if build:
        ckpt = checkpoint.build(model, root)
        folder, name, meta = ckpt.path, ckpt.model, ckpt.to_dict()
    else:
        folder, digest, _, _, name = checkpoint.plan(model, root)
        meta = {"path": str(folder), "model": name, "config_hash": digest,
                "cached": (folder / checkpoint.MARKER).is_file()}
    served = spec.served_model_name if spec.served_model_name and spec.served_model_name != model else name
    argv = rehearsal_argv(spec.argv, spec.backend, str(folder), served)
    new = from_argv(argv, {**spec.env, **OFFLINE_ENV}, spec.backend, spec.profile_name, spec.flags)
    return new, Rehearsal(folder, name, meta)
