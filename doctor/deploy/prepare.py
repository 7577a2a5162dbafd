"""From a profile name and the user's overrides to a LaunchSpec, plus the flag-schema check of it."""

from __future__ import annotations

from typing import Any

from doctor.deploy.spec import LaunchSpec
from doctor.errors import DoctorError
from doctor.results import Result, Status

def load(profile_name: str) -> Any:
    """The profile (`auto`: the best fitting this machine), with profile errors turned into DoctorError."""
    from profiles import ProfileError, load_profile

    if profile_name == "auto":
        from doctor.suggest import auto_profile

        return auto_profile()
    try:
        return load_profile(profile_name)
    except ProfileError as exc:
        raise DoctorError(str(exc)) from None


def render(profile: Any, port: int | None = None, host: str | None = None, model: str | None = None,
           variables: dict[str, str] | None = None) -> LaunchSpec:
    """The profile's deployment under the user's overrides (see `overrides_of`), as a LaunchSpec."""
    from profiles import ProfileError

    try:
        return LaunchSpec.of(profile.deployment(overrides_of(profile, port, host, model, variables)))
    except ProfileError as exc:
        raise DoctorError(str(exc)) from None


def overrides_of(profile: Any, port: int | None = None, host: str | None = None, model: str | None = None,
                 variables: dict[str, str] | None = None) -> dict[str, Any]:
    """The render overrides from the command line. `model` also fills a `model_dir` variable when the profile has one."""
    overrides: dict[str, Any] = dict(variables or {})
    if port is not None:
        overrides["port"] = port
    if host is not None:
        overrides["host"] = host
    if model is not None:
        overrides["model"] = model
        if "model_dir" in profile.variables and "model_dir" not in overrides:
            overrides["model_dir"] = model
    return overrides


def with_interpreter(spec: LaunchSpec, python: str | None) -> LaunchSpec:
    """Point the launcher at the backend's interpreter: `python -m ...` runs with it, and `vllm serve`
    uses the `vllm` script installed next to it."""
    return spec.with_python(python)


def model_of(spec: LaunchSpec) -> str:
    """The model id or path the command serves."""
    return spec.deployment.model if spec.deployment is not None else ""


def backend_args(spec: LaunchSpec) -> list[str]:
    """The arguments the backend's own parser sees (after the launcher)."""
    return spec.deployment.engine_args() if spec.deployment is not None else list(spec.argv[1:])


def flag_check(spec: LaunchSpec, version: str | None) -> Result:
    """The rendered flags against the backend's flag schema for the installed (or nearest) version."""
    from doctor.flags import validate_command

    title = "Command line accepted by the backend's parser"
    try:
        report = validate_command(backend_args(spec), spec.backend, version)
    except Exception as exc:  # no schema for this backend/version: say so, do not block
        return Result("QD-DEPLOY-FLAGS", title, "deploy", "high", Status.SKIP, f"no flag schema: {exc}")
    errors = [i for i in report.issues if i.is_error]
    if errors:
        return Result("QD-DEPLOY-FLAGS", title, "deploy", "high", Status.FAIL,
                      f"{len(errors)} flag(s) the {report.method} rejects",
                      details=[i.message for i in errors],
                      fix=[f"{i.flag}: did you mean {i.suggestion}?" for i in errors if i.suggestion]
                      or ["Fix the profile's flags; see `qwen-doctor profiles show NAME --render`."])
    warned = [i.message for i in report.issues]
    return Result("QD-DEPLOY-FLAGS", title, "deploy", "high", Status.WARN if warned else Status.OK,
                  f"{len(backend_args(spec))} arguments valid for {report.method}", details=warned)
