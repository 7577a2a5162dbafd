"""What a flag validation finds: one issue per problem, and the report of one validation."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FlagIssue:
    """One problem: kind is unknown_flag, invalid_choice, bad_type, missing_value, deprecated or error."""

    kind: str
    flag: str
    message: str
    suggestion: str | None = None

    @property
    def is_error(self) -> bool:
        """Deprecations warn; everything else makes the backend refuse to start."""
        return self.kind != "deprecated"


@dataclass(frozen=True)
class ValidationReport:
    """Outcome of one validation: which method judged it and what it found."""

    backend: str
    version: str
    method: str
    issues: list[FlagIssue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no issue would stop the backend."""
        return not any(i.is_error for i in self.issues)
