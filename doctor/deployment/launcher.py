"""How each backend is started: the launcher's argv prefix and how it takes the model (one type for all)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path


@dataclass(frozen=True)
class Launcher:
    """A launcher: its name, the backend it starts, the argv prefix and the option that carries the model
    (empty: the model is positional, as `vllm serve` wants it: it rejects --model)."""

    name: str
    backend: str
    prefix: tuple[str, ...]
    model_option: tuple[str, ...]

    @property
    def runs_python(self) -> bool:
        """True for a `python -m ...` launcher, whose interpreter can be replaced."""
        return self.prefix[0] == "python"

    def with_python(self, python: str) -> "Launcher":
        """The launcher run by `python` (a python launcher) or by the console script next to it (`vllm serve`,
        when that script exists); unchanged otherwise."""
        if self.runs_python:
            return replace(self, prefix=(python, *self.prefix[1:]))
        if self.name != "vllm-serve" or self.prefix[0] != "vllm":
            return self
        script = Path(python).parent / self.prefix[0]
        return replace(self, prefix=(str(script), *self.prefix[1:])) if script.exists() else self


LAUNCHERS: dict[str, Launcher] = {
    "vllm-serve": Launcher("vllm-serve", "vllm", ("vllm", "serve"), ()),
    "vllm-api-server": Launcher("vllm-api-server", "vllm", ("python", "-m", "vllm.entrypoints.openai.api_server"),
                                ("--model",)),
    "sglang": Launcher("sglang", "sglang", ("python", "-m", "sglang.launch_server"), ("--model-path",)),
}
DEFAULT_LAUNCHER = {"vllm": "vllm-serve", "sglang": "sglang"}


def launcher_of_argv(argv: list[str] | tuple[str, ...], backend: str) -> Launcher:
    """The launcher a foreign command line starts with (its own interpreter or script path kept); a command
    that names no known launcher (a wrapper, a test server) is its own: every token before the first option."""
    for launcher in LAUNCHERS.values():
        n = len(launcher.prefix)
        head = tuple(argv[:n])
        if launcher.backend == backend and len(head) == n and head[1:] == launcher.prefix[1:] \
                and Path(head[0]).name.startswith(launcher.prefix[0]):
            return replace(launcher, prefix=head)
    n = next((i for i, token in enumerate(argv) if i > 0 and token.startswith("-")), len(argv))
    return Launcher("command", backend, tuple(argv[:n]), ())
