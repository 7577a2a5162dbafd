"""The one place deploy's knowledge of its server becomes the exercise configuration (the runner is shared
with probe, which builds its configuration from the command line and the server's answers instead)."""

from __future__ import annotations

from pathlib import Path

from doctor.deploy.exercise import ExerciseConfig
from doctor.deploy.checkpoint import read_config
from doctor.deploy.prepare import model_of
from doctor.deploy.server_traits import from_deployment, with_checkpoint
from doctor.deploy.spec import LaunchSpec
from doctor.deployment import from_argv


def exercise_config(spec: LaunchSpec, burst: int, burst_tokens: int, sweep: tuple[int, ...] = (),
                    bench: bool = False) -> ExerciseConfig:
    """What deploy exercises: the served name, the load sizes, and the traits its command line (and the local
    checkpoint's config.json, when there is one) give the server;
    `vllm bench serve` (with --bench) runs with the backend's interpreter and the checkpoint as tokenizer."""
    checkpoint = model_of(spec)
    deployment = spec.deployment or from_argv(spec.argv, spec.backend, spec.env)
    traits = with_checkpoint(from_deployment(deployment), read_config(checkpoint))
    python = spec.argv[0] if spec.argv and "python" in Path(spec.argv[0]).name else None
    return ExerciseConfig(model=spec.served_model_name, reasoning=bool(traits.reasoning_parser), burst=burst,
                          burst_tokens=burst_tokens, headers=tuple(spec.headers.items()), traits=traits,
                          sweep=tuple(sweep), bench=bench, bench_python=python,
                          tokenizer=deployment.settings.tokenizer or checkpoint or None)
