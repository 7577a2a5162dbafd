"""Run checks over a context, isolating every check so one crash never hides the others."""

from __future__ import annotations

import time
import traceback
from typing import Iterable

from doctor.context import CheckContext
from doctor.errors import DoctorError
from doctor.registry import CheckSpec, Registry
from doctor.results import Outcome, Result, Status


def select(registry: Registry, backend: str | None, only: Iterable[str] = (), skip: Iterable[str] = ()) -> list[CheckSpec]:
    """Checks to run, by backend and by id or id prefix (`--only QD-GPU` selects a whole family)."""
    only, skip = list(only), list(skip)
    known = registry.checks
    for wanted in [*only, *skip]:
        if not any(cid == wanted or cid.startswith(wanted + "-") for cid in known):
            raise DoctorError(f"no check matches {wanted!r}; see `qwen-doctor check --list`")

    def matches(cid: str, patterns: list[str]) -> bool:
        return any(cid == p or cid.startswith(p + "-") for p in patterns)

    return [
        spec for spec in registry.ordered()
        if spec.applies_to(backend) and (not only or matches(spec.id, only)) and not matches(spec.id, skip)
    ]


def run_checks(specs: list[CheckSpec], ctx: CheckContext, verbose: bool = False) -> list[Result]:
    """Run each check; an exception becomes an `error` result carrying the reason."""
    results: list[Result] = []
    for spec in specs:
        t0 = time.perf_counter()
        try:
            produced = spec.fn(ctx)
            outcomes = [produced] if isinstance(produced, Outcome) else list(produced)
            if not outcomes or not all(isinstance(o, Outcome) for o in outcomes):
                raise TypeError(f"check {spec.id} returned {type(produced).__name__}, not Outcome(s)")
        except Exception as exc:
            details = traceback.format_exc().splitlines() if verbose else []
            outcomes = [Outcome(Status.ERROR, f"check crashed: {type(exc).__name__}: {exc}", details=details,
                                fix=["This is a bug in the check; please report it with `qwen-doctor collect` output."])]
        seconds = (time.perf_counter() - t0) / len(outcomes)
        for o in outcomes:
            results.append(Result(spec.id, spec.title, spec.category, spec.severity, o.status, o.summary,
                                  o.details, o.fix, o.remedy_ids, o.evidence, o.subject, round(seconds, 6)))
    return results


def plugin_errors(registry: Registry) -> list[Result]:
    """A plugin that failed to import shows up as an error result rather than aborting the run."""
    return [
        Result(f"QD-PLUGIN-{i + 1:03d}", f"plugin {name}", "plugins", "medium", Status.ERROR,
               f"plugin failed to load: {err}",
               fix=["Fix or uninstall the plugin, or set QWEN_DOCTOR_DISABLE_PLUGIN_AUTOLOAD=1"])
        for i, (name, err) in enumerate(registry.load_errors)
    ]
