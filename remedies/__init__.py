"""Remedy catalogue: documented error signatures of vLLM, SGLang, Ray, NCCL, torch, CUDA, HF and Spark.

Pure library (no click): `load_catalogue()` validates the YAML data, `Matcher` finds entries in log lines
or whole files, `explain_sources()` aggregates matches into ranked findings.
"""

from remedies.errors import CatalogueError, LogReadError
from remedies.explain import Finding, explain_sources
from remedies.loader import Catalogue, load_catalogue
from remedies.matcher import Match, Matcher
from remedies.model import FixStep, Remedy

__all__ = [
    "Catalogue",
    "CatalogueError",
    "Finding",
    "FixStep",
    "LogReadError",
    "Match",
    "Matcher",
    "Remedy",
    "explain_sources",
    "load_catalogue",
]
