"""The remedy entry: one documented error signature. The same shape is the YAML schema and the JSON output."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from remedies.figures import derive

COMPONENTS = ("vllm", "sglang", "ray", "nccl", "torch", "cuda", "hf", "spark", "host")
SEVERITIES = ("error", "warning", "info")
ID_PATTERN = re.compile(r"^QD-R-(VLLM|SGLANG|RAY|NCCL|TORCH|CUDA|HF|SPARK|HOST)-[A-Z0-9]+(-[A-Z0-9]+)*$")
DEFAULT_RANK = 50
CONTEXT_LINES = 80
WRAPPER_RANK = 90


@dataclass(frozen=True)
class FixStep:
    """One ordered fix step; `applies` narrows it to a version range, e.g. ``sglang>=0.5.23``.

    A step with `otherwise` is a template: `text` names figures of the message as ``{group}`` (the pattern's
    named groups, or values derived from them by `remedies.figures`) and `otherwise` is the generic step
    used when one of them is missing.
    """

    text: str
    applies: str | None = None
    otherwise: str | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        """The figures the text names (only a step with a generic `otherwise` is a template)."""
        return template_fields(self.text) if self.otherwise else ()

    def with_values(self, values: Mapping[str, str]) -> FixStep:
        """This step with the message's figures filled in (the generic text when one is missing)."""
        if not self.fields:
            return self
        if all(values.get(name) for name in self.fields):
            return FixStep(self.text.format_map(values), self.applies)
        return FixStep(self.otherwise or self.text, self.applies)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "applies": self.applies}
        if self.otherwise:
            out["otherwise"] = self.otherwise
        return out

    def render(self) -> str:
        return f"{self.text} [{self.applies}]" if self.applies else self.text


SIGNATURE_PACKAGES = ("vllm", "sglang", "huggingface_hub", "transformers", "ray", "torch")


@dataclass(frozen=True)
class Variant:
    """A wording of the entry's message that names it only with evidence of its own: its prefilter literal,
    the pattern of that wording and the regex the lines before it must match (e.g. a shell's bare "Killed",
    the kernel OOM killer's doing only after a weight-loading line)."""

    literal: str
    pattern: str
    context: str
    regex: re.Pattern[str] = field(compare=False, repr=False, default=re.compile(""))
    context_regex: re.Pattern[str] = field(compare=False, repr=False, default=re.compile(""))

    def to_dict(self) -> dict[str, str]:
        return {"literal": self.literal, "pattern": self.pattern, "context": self.context}


@dataclass(frozen=True)
class Wording:
    """A source template this entry matches and the releases (PEP 440 specifier) that print it.

    Checked against the mined data in remedies/signatures/<package>.json by tests/test_remedies_signatures.py.
    """

    package: str
    releases: str
    template: str

    def to_dict(self) -> dict[str, str]:
        return {"package": self.package, "releases": self.releases, "template": self.template}


@dataclass(frozen=True)
class Remedy:
    """A documented error: how to recognise it in a log, why it happens and what to change.

    `context` (optional) is a regex the CONTEXT_LINES lines before the message (its traceback) must match
    too: it tells apart causes that print the same message (the frame of the layer that raised), its named
    groups fill the fix like the pattern's, and on that line it names the message alone (an entry matched
    without context evidence is dropped there, see `remedies.matcher`). `also` lists further prefilter
    literals, one per other wording of the message (an older release's, a wrapper's); each sample holds one.
    """

    id: str
    component: str
    severity: str
    title: str
    literal: str
    pattern: str
    why: str
    fix: tuple[FixStep, ...]
    source: tuple[str, ...]
    samples: tuple[str, ...]
    root_cause_rank: int = DEFAULT_RANK
    wrapper: bool = False
    article_claim: str | None = None
    versions: tuple[Wording, ...] = ()
    context: str | None = None
    stop: bool = False
    also: tuple[str, ...] = ()
    variants: tuple[Variant, ...] = ()
    regex: re.Pattern[str] = field(compare=False, repr=False, default=re.compile(""))
    context_regex: re.Pattern[str] | None = field(compare=False, repr=False, default=None)
    origin: str = field(compare=False, default="")

    def render_fix(self, values: Mapping[str, str]) -> tuple[FixStep, ...]:
        """The fix steps with the message's figures (named groups and what `remedies.figures` derives)."""
        if not any(step.fields for step in self.fix):
            return self.fix
        known = derive(values)
        return tuple(step.with_values(known) for step in self.fix)

    @property
    def free_samples(self) -> tuple[str, ...]:
        """The samples that name the entry alone: without those of its `variants`, which name it only with their
        context (read around a quoted or cut message, such a sample would name the entry without its evidence)."""
        return tuple(s for s in self.samples if not any(v.literal in s and v.regex.search(s) for v in self.variants))

    @property
    def rank(self) -> int:
        """Lower ranks are closer to the root cause; wrappers come last unless ranked explicitly."""
        return self.root_cause_rank

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (identical keys to the YAML entry)."""
        return {
            "id": self.id,
            "component": self.component,
            "severity": self.severity,
            "title": self.title,
            "literal": self.literal,
            "pattern": self.pattern,
            "why": self.why,
            "fix": [step.to_dict() for step in self.fix],
            "source": list(self.source),
            "samples": list(self.samples),
            "root_cause_rank": self.root_cause_rank,
            "wrapper": self.wrapper,
            "article_claim": self.article_claim,
            "versions": [w.to_dict() for w in self.versions],
            "context": self.context,
            "stop": self.stop,
            "also": list(self.also),
            "variants": [v.to_dict() for v in self.variants],
        }

    def forms(self) -> tuple[Remedy, ...]:
        """This entry once per prefilter literal: itself, then a copy keyed on each `also` literal (another
        wording of the same message, e.g. an older release's), and one per variant with that wording's own
        pattern and context, for the matcher; a match reports the entry."""
        return (self, *(replace(self, literal=literal, also=(), variants=()) for literal in self.also),
                *(replace(self, literal=v.literal, pattern=v.pattern, regex=v.regex, context=v.context,
                          context_regex=v.context_regex, also=(), variants=()) for v in self.variants))


def template_fields(text: str) -> tuple[str, ...]:
    """The ``{name}`` fields of a fix template, in order."""
    return tuple(name for _, name, _, _ in string.Formatter().parse(text) if name)


UNKNOWN_ID = "QD-R-UNKNOWN"
# The finding for a crash no entry names (see remedies.crash). It ranks after every named root cause and
# before the wrappers, whose "root cause above" it is.
UNKNOWN = Remedy(
    id=UNKNOWN_ID,
    component="unknown",
    severity="error",
    title="Unrecognised crash: the log ends in an error no catalogue entry names",
    literal="Traceback",
    pattern="",
    why="The process died or raised an exception that no catalogue entry recognises: a traceback (its root is "
        "the innermost cause of a chained exception), an exception line at error level, or a process that was "
        "killed, crashed natively or exited non-zero. explain reports it only when no entry named an error.",
    fix=(FixStep("Start from the root exception shown above (the innermost cause of the chain) and the frame "
                 "that raised it; search the backend's issue tracker for that exact message."),
         FixStep("Run `qwen-doctor check` on this machine: a failed check often explains an unknown crash.")),
    source=("qwen-doctor: traceback and process-death recognition (remedies/crash.py)",),
    samples=("KeyError: 'Qwen3_5MoeMTP' (the last line of a traceback)", "Segmentation fault (core dumped)",
             "vllm-1 exited with code 137"),
    root_cause_rank=85,
)
