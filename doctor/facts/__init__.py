"""Facts: one plain, JSON-serialisable snapshot of a machine, read once by probes."""

from doctor.facts.model import SCHEMA_VERSION, Facts

__all__ = ["Facts", "SCHEMA_VERSION"]
