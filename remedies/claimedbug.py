"""The engine bug a report's claim makes (`remedies.bugclaims`): its workarounds, the phase a hang stopped in and
the knobs read there, the release that worked and the known regressions of the log's release."""

from __future__ import annotations

from dataclasses import dataclass

from remedies.advisories import engine_release, load_advisories, nearest_clean
from remedies.bugclaims import COMPONENT, Claim, claim_of
from remedies.bugfeatures import MAX_FEATURE_LINES, features
from remedies.enginebug import NamedBug, Verdict, engine_in
from remedies.hangphase import HangPhase, hang_phase
from remedies.matcher import MAX_LINE
from remedies.model import FixStep, Remedy

MAX_PAGE = 1 << 16  # characters of the page an advisory's symptom is looked for in


@dataclass(frozen=True)
class ClaimedBug(NamedBug):
    """An engine bug the report's words name: the claim, the phase a hang stopped in, the workarounds."""

    claim: Claim | None = None
    phase: HangPhase | None = None

    @property
    def why(self) -> str:
        claim = self.claim
        assert claim is not None
        said = {"regression": "a regression: it worked with one release, runner or engine and fails with another",
                "upstream": "an engine bug with an upstream pull request",
                "hang": "a hang or deadlock with no error of the user's",
                "internal": "an internal invariant of the engine failing (an assertion, an index, a weight key its "
                            "loader looked up)"}[claim.kind]
        text = (f"The report describes {said} (\"{claim.said}\"). No catalogue entry ties it to a setting of yours: "
                f"this looks like a {self.engine} bug, not a sizing or configuration problem.")
        if self.phase is not None:
            text += f" The log stops while {self.phase.name}."
        if self.release is not None and self.advisories:
            text += " Known regressions of {} {}: {}.".format(self.engine, self.release, "; ".join(
                f"{a.title} ({a.sources[0].split(' ')[0]})" for a in self.advisories))
        if self.features:
            text += f" The report names {', '.join(self.features)}: report the bug with that combination."
        return text

    def steps(self) -> tuple[FixStep, ...]:
        """The workarounds the report or the phase's source names first, then the release that worked, then the
        report to the engine's tracker."""
        claim = self.claim
        assert claim is not None
        first = [FixStep(f"Workaround the report names or implies: {named}.") for named in claim.workarounds]
        if self.phase is not None:
            first += [FixStep(f"Where it waits ({self.phase.name}): {knob}.") for knob in self.phase.knobs]
        if claim.kind == "hang":
            first.append(FixStep("Dump every process's stack while it hangs (py-spy dump --pid <pid>, for each "
                                 "engine worker) to see which call waits; attach it to the report."))
        if claim.working:
            first.append(FixStep(f"Run what the report says works ({claim.working}) until the engine fixes it"
                                 + (f"; {claim.failing} is where it breaks." if claim.failing else ".")))
        elif self.nearest_clean:
            first.append(FixStep(f"Move to {self.engine} {self.nearest_clean}, the nearest release the sources say "
                                 "is free of the regressions above."))
        return (*first, FixStep(f"Search the {self.engine} issue tracker for this {_NOUN[claim.kind]} and report it with "
                                "the launch command, the release and the full log if it is new."))


def claimed_bug(exception: str, lines: list[str]) -> ClaimedBug | None:
    """The engine bug a report's claim makes of a finding (its exception or title text `exception`), or None."""
    claim = claim_of(lines)
    if claim is None:
        return None
    named = COMPONENT.search("\n".join(line[:MAX_LINE] for line in lines[:MAX_FEATURE_LINES]))
    engine = engine_in(None, lines) or (named.group().lower() if named else "the engine")
    release = engine_release(lines, engine) if engine in ("vllm", "sglang") else None
    page = "\n".join([exception, *(line[:MAX_LINE] for line in lines[:MAX_FEATURE_LINES])])[:MAX_PAGE]
    matched = tuple(a for a in load_advisories() if a.covers(engine, release, page)) if release else ()
    clean = nearest_clean(engine, release, matched) if release and matched else None
    phase = hang_phase(lines) if claim.kind == "hang" else None
    raised = (f"{engine} ({claim.kind}" + (f", {phase.name}" if phase else "") + "; no raise site printed)")
    return ClaimedBug(engine, raised, release, matched, clean, None, reason="", features=features(lines),
                      claim=claim, phase=phase)


def claim_verdict(remedy: Remedy, lines: list[str]) -> Verdict | None:
    """An engine bug beside a matched entry: a wrapper's entry (its cause not printed) on a report that claims
    a bug, or any error entry on a report that says it regressed (the entry's steps stay first)."""
    if remedy.severity != "error":
        return None
    bug = claimed_bug(remedy.title, lines)
    if bug is None or bug.claim is None:
        return None
    if remedy.wrapper or bug.claim.kind == "regression":
        return Verdict(bug, "beside")
    return None


_NOUN = {"regression": "regression", "upstream": "bug", "hang": "hang", "internal": "failed check"}
