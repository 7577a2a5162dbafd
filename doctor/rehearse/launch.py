"""Turn a profile's launch command into its rehearsal: the same flags, served from the rehearsal folder with
random weights (`--load-format dummy`), under the model's usual name, nothing downloaded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doctor.deploy.spec import LaunchSpec
from doctor.deployment import Deployment, from_argv
from doctor.deployment.table import option
from doctor.results import Result, Status

LOAD_FORMAT = "dummy"
# With random weights any whitespace the JSON grammar allows can run on to max_tokens; a real model stops.
# vLLM: vllm/config/structured_outputs.py disable_any_whitespace (xgrammar, guidance); SGLang:
# python/sglang/srt/server_args.py --constrained-json-disable-any-whitespace (0.5.16).
NO_JSON_WHITESPACE = {"vllm": ("structured_outputs_config",
                                json.dumps({"backend": "xgrammar", "disable_any_whitespace": True})),
                      "sglang": ("json_disable_any_whitespace", True)}
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
NOTICE = (f"REHEARSAL: the weights were random ({option('load_format')} {LOAD_FORMAT}): answers are noise; memory, kernels, "
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


def rehearsal_deployment(deployment: Deployment, folder: str, served_name: str) -> Deployment:
    """The deployment served from `folder` with dummy weights, keeping every other setting (the replaced ones
    move to the end of the command line)."""
    out = deployment.with_model(folder).with_model_last()
    if out.setting("tokenizer") is not None:
        out = out.with_setting("tokenizer", folder)
    out = out.with_setting("load_format", LOAD_FORMAT)
    if out.setting("served_model_name") is None:
        out = out.with_setting("served_model_name", served_name)
    name, value = NO_JSON_WHITESPACE[deployment.backend]
    if out.setting(name) is None:
        out = out.with_setting(name, value)
    return out


def rehearsal_argv(argv: list[str], backend: str, folder: str, served_name: str) -> list[str]:
    """A foreign command line served from `folder` with dummy weights, keeping every other flag."""
    return rehearsal_deployment(from_argv(argv, backend), folder, served_name).argv()


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
    deployment = spec.deployment or from_argv(spec.argv, spec.backend, spec.env, profile_name=spec.profile_name)
    new = rehearsal_deployment(deployment, str(folder), served).with_env(**OFFLINE_ENV)
    return LaunchSpec.of(new), Rehearsal(folder, name, meta)
