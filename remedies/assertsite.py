"""A message-less assert located in the engines' mined sources: the test it asserts, the user settings that
test reads, and the fix they imply.

`scripts/mine_signatures.py` mines each bare `assert test` of the engines' modules as the statement itself
(`assert block_size % hash_block_size == 0`), since that statement is all a traceback prints for it
(`remedies.bareassert`). A site's flags are the settings its guard and its test name (`named_settings`):
those the asserted test reads are the user's settings it checks (change them so that the test holds);
those only the enclosing `if` tests read switched the code path on (turning them off avoids it).
"""

from __future__ import annotations

import re
from typing import Iterable

from remedies.model import FixStep
from remedies.templates import Site, Template

_STATEMENT = "assert "


def is_statement(template: Template) -> bool:
    """Whether a template is a bare assert statement (no message), not a message."""
    return template.kind == "raise:AssertionError" and template.text.startswith(_STATEMENT)


def asserted_test(template: Template) -> str:
    """The test a bare assert statement asserts (its source text)."""
    test = template.text[len(_STATEMENT):].strip()
    inner = test[1:-1].strip() if test.startswith("(") and test.endswith(")") else ""
    return inner if inner and inner.count("(") == inner.count(")") and inner.find(")") >= inner.find("(") else test


def _named_in(setting: str, text: str) -> bool:
    """Whether the test names a setting: a flag as its attribute / variable (`--max-lora-rank` as
    `max_lora_rank`) or an environment variable by its name."""
    word = setting[2:].replace("-", "_") if setting.startswith("--") else setting
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", text) is not None


def asserted_settings(template: Template, sites: Iterable[Site]) -> tuple[str, ...]:
    """The flags and environment variables of the sites that the asserted test itself reads, in order."""
    test = asserted_test(template)
    found: list[str] = []
    for site in sites:
        found += [f for f in site.flags if f not in found and _named_in(f, test)]
    return tuple(found)


def steps(template: Template, sites: tuple[Site, ...], package: str) -> tuple[FixStep, ...]:
    """What a bare assert implies: change the settings its test reads so that it holds; else, when only the
    guard names settings, those switched the failing path on; else it is the package's own invariant."""
    test = asserted_test(template)
    asserted = asserted_settings(template, sites)
    guarded = [f for site in sites for f in site.flags if f not in asserted]
    guarded = list(dict.fromkeys(guarded))
    if asserted:
        one = len(asserted) == 1
        return (FixStep(f"{package} asserts `{test}`, which reads your setting{'' if one else 's'} "
                        f"{', '.join(asserted)}: change {'it' if one else 'them'} so that the test holds (the "
                        "assert has no message; the other side of the test is what the engine derived from the "
                        "model and the other flags)."),)
    if guarded:
        one = len(guarded) == 1
        return (FixStep(f"{package} asserts `{test}` only on the path {', '.join(guarded)} switched on: the "
                        f"test checks the engine's own state, so without {'that setting' if one else 'those settings'}"
                        " (or at its default) the path is avoided until a release fixes it."),)
    return (FixStep(f"{package} asserts `{test}` on its own state, which no user setting names: this is likely a "
                    f"{package} bug at {sites[0].where if sites else package}; search its issue tracker for the "
                    "statement, and try the nearest other release."),)
