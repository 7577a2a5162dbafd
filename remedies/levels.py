"""Warnings are not failures: an error entry matched on a record its program logged at WARNING level is context.

Engines log some messages both ways - vLLM 0.10 - 0.17 warns "NIXL is not available" when nixl does not import
and raises the same words only when a NIXL connector is configured; SGLang's sampler warns "Detected errors
during sampling! NaN in the logits." and raises it only under crash_on_warnings; Ray warns "Version mismatch"
where the driver carries on. The record's own level (`remedies.normalise`) tells the two apart: at WARNING the
program carried on, so the finding is reported at warning severity and never ranks as the cause ahead of an
error. A later match of the same entry at error level (or with no level) restores the entry's severity.
"""

from __future__ import annotations

from dataclasses import replace

from remedies.model import Remedy
from remedies.normalise import normalise

CARRIED_ON_LEVELS = ("WARNING", "WARN")


def logged_as_warning(line: str) -> bool:
    """Whether the record holding this (shown) line was printed at WARNING level."""
    return normalise(line).level in CARRIED_ON_LEVELS


def as_context(remedy: Remedy, line: str) -> Remedy:
    """The entry as this record reports it: an error entry on a WARNING record becomes a warning."""
    if remedy.severity == "error" and logged_as_warning(line):
        return replace(remedy, severity="warning")
    return remedy
