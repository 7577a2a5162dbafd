"""What a check sees: the facts snapshot plus what the user asked for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from doctor.facts.model import Facts


@dataclass(frozen=True)
class CheckContext:
    """Input of every check. `options` holds user choices such as `tp` (tensor-parallel size) or `quantization`;
    `deployment` the typed doctor.deployment.Deployment under deploy (the profile's with the user's overrides)."""

    facts: Facts
    backend: str | None = None
    profile: Any = None
    options: dict[str, Any] = field(default_factory=dict)
    deployment: Any = None

    def option(self, name: str, default: Any = None) -> Any:
        """A user choice: the explicit option first, then the profile's attribute of that name."""
        if self.options.get(name) is not None:
            return self.options[name]
        if self.profile is not None:
            value = getattr(self.profile, name, None)
            if value is not None:
                return value
        return default
