"""Explain an engine error from its source: the mined template a crash's message was raised from.

`locate(messages)` looks each message (a crash's root exception first, then its final line) up in the
mined templates (`remedies.templates`) and returns a `Located`: the template, the catalogue entries that
cover it (`remedies.links`) and, for the finding when none does, where it was raised (module, function,
releases), the `if` test that raised it, and the engine flags / environment variables that test names,
with the fix they imply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable

from packaging.version import InvalidVersion, Version

from remedies import assertsite
from remedies.crash import Frame
from remedies.inferred import completed
from remedies.links import Links, load_links
from remedies.model import FixStep
from remedies.loader import load_catalogue
from remedies.normalise import normalise
from remedies.templates import Hit, Site, Template, TemplateIndex, _pieces, load_templates, skeleton

MAX_SITES = 3
COMPONENT = {"vllm": "vllm", "sglang": "sglang", "ray": "ray", "torch": "torch", "transformers": "hf",
             "huggingface_hub": "hf", "nccl": "nccl", "triton": "torch"}


def _span(releases: Iterable[str]) -> str:
    """'0.8.5.post1–0.34.0 (27 mined releases)' or the single release."""
    ordered = []
    for release in releases:
        try:
            ordered.append((Version(release), release))
        except InvalidVersion:
            continue
    ordered.sort()
    if not ordered:
        return "no mined release"
    if len(ordered) == 1:
        return ordered[0][1]
    return f"{ordered[0][1]}–{ordered[-1][1]} ({len(ordered)} mined releases)"


@dataclass(frozen=True)
class Located:
    """A message matched to the template (and sites) that printed it, and the entries covering it."""

    hit: Hit
    entries: tuple[str, ...]

    @property
    def sites(self) -> tuple[Site, ...]:
        return self.hit.template.sites

    @property
    def flags(self) -> tuple[str, ...]:
        """The flags and environment variables named by the sites' conditions and the message, in order."""
        found: list[str] = []
        for site in self.sites:
            found += [f for f in site.flags if f not in found]
        return tuple(found)

    def why(self) -> str:
        """Where it was raised and under which condition."""
        template = self.hit.template
        kind = template.kind.rpartition(":")[2]   # "raise:ValueError", "log:error"; NCCL's "error-string"
        where = "; ".join(
            f"{site.where}" + (f" when `{site.condition}`" if site.condition else "")
            for site in self.sites[:MAX_SITES])
        more = f" (and {len(self.sites) - MAX_SITES} more sites)" if len(self.sites) > MAX_SITES else ""
        cut = "" if self.hit.whole else " The log holds only the start of the message."
        printed = "the statement is in" if assertsite.is_statement(template) else "the message is printed by"
        return (f"{template.package} raises this {kind} in {where}{more}; {printed} "
                f"{template.package} {_span(template.releases)}.{cut}")

    def steps(self) -> tuple[FixStep, ...]:
        """What the condition implies: the user settings it names, then the message's own wording."""
        template = self.hit.template
        if assertsite.is_statement(template):
            whole = () if self.hit.whole else (FixStep(f"The whole statement as {template.package} has it (the "
                                                       f"traceback printed its first line): `{template.text}`"),)
            return (*whole, *assertsite.steps(template, self.sites, template.package))
        steps: list[FixStep] = []
        flags = [f for f in self.flags if f.startswith("--")]
        env = [f for f in self.flags if not f.startswith("--")]
        condition = next((s.condition for s in self.sites if s.condition), "")
        if flags:
            guard = f" so that `{condition}` no longer holds" if condition else ""
            steps.append(FixStep(f"The check reads {', '.join(flags)}: change {'it' if len(flags) == 1 else 'them'}"
                                 f"{guard} (the message below says which way)."))
        if env:
            steps.append(FixStep(f"The check reads the environment variable(s) {', '.join(env)}: see the "
                                 f"{template.package} documentation of {'it' if len(env) == 1 else 'them'} "
                                 "before setting one."))
        if not self.hit.whole:
            steps.insert(0, FixStep(f"The whole message as {template.package} prints it (the log cut it short): "
                                    f"“{template.text}”"))
        if not flags and not env:
            steps.append(FixStep(f"No user setting is named by the check: if the message does not name a fix, "
                                 f"this is likely a {template.package} bug at "
                                 f"{self.sites[0].where if self.sites else template.package}; search its issue "
                                 "tracker for the message, and try the nearest other release."))
        return tuple(steps)

    def facing(self, frame: Frame | None) -> Located:
        """The same location with the sites the crash's deepest frame is in (its module, then its function)
        first: a template raised at several sites is told at the one the traceback shows."""
        if frame is None:
            return self
        path, function = frame.path.replace("\\", "/"), frame.function.rsplit(".", 1)[-1]
        sites = tuple(sorted(self.sites, key=lambda s: (not path.endswith(s.module),
                                                          s.function.rsplit(".", 1)[-1] != function)))
        if sites == self.sites:
            return self
        return Located(replace(self.hit, template=self.hit.template._replace(sites=sites)), self.entries)

    @property
    def component(self) -> str:
        """The catalogue component of the package that raised it."""
        return COMPONENT.get(self.hit.template.package, self.hit.template.package)

    def to_dict(self) -> dict[str, object]:
        template = self.hit.template
        return {"package": template.package, "template": template.text, "kind": template.kind,
                "releases": list(template.releases), "whole": self.hit.whole,
                "sites": [site.to_dict() for site in self.sites], "entries": list(self.entries)}


def locate(messages: Iterable[str], index: TemplateIndex | None = None, links: Links | None = None,
           package: str | None = None) -> Located | None:
    """The first message (in order) that matches a mined template, with the entries covering it; `package` is
    the package the crash's frames name, if any (`TemplateIndex.lookup`)."""
    index = index if index is not None else load_templates()
    links = links if links is not None else load_links()
    for message in messages:
        if not message:
            continue
        hit = index.lookup(message, package=package if package != "unknown" else None)
        if hit is not None:
            return Located(hit, links.entries(hit.template))
    return None


def locate_at(frame: Frame, statement: str, exception: str, links: Links | None = None) -> Located | None:
    """An exception line cut short, located by the raise statement its frame printed (`remedies.inferred`):
    the template of that site whose message the line starts."""
    template = completed(frame, statement, exception)
    if template is None:
        return None
    hit = Hit(template, len(skeleton(exception.partition(":")[2])), False)
    return Located(hit, (links if links is not None else load_links()).entries(template))


_FIGURE = re.compile(r"\d+(?:\.\d+)*")
SAMPLED = "catalogue"


@lru_cache(maxsize=1)
def sample_index() -> TemplateIndex:
    """Each catalogue entry's samples (the messages its sources print) as templates, figures made holes: where
    no mined release prints a wording (an engine module the miner does not read, a release before the mined
    ones), an exception cut short or raised under another class still finds its entry by its words."""
    templates = []
    for remedy in load_catalogue():
        if remedy.stop or remedy.context_regex is not None:
            continue
        for sample in remedy.free_samples:
            text = _FIGURE.sub("{}", normalise(sample).text.strip())
            named = re.match(r"\s*(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)\s*:\s*", text)
            text = text[named.end():] if named else text
            if len(text.replace("{}", "")) >= 16:
                templates.append(Template(SAMPLED, text, f"entry:{remedy.id}", (), (), _pieces(text)))
    return TemplateIndex(templates)


def sampled_entry(messages: Iterable[str]) -> str | None:
    """The id of the entry one of whose samples the first message that matches one was printed from, or None."""
    index = sample_index()
    for message in messages:
        hit = index.lookup(message) if message else None
        if hit is not None:
            return hit.template.kind.rpartition(":")[2]
    return None
