"""A message-less AssertionError is explained from the engines' own `assert` statements.

A bare `assert test` prints no message: the traceback shows the statement under the raising frame (all of it
on Python 3.13, its first line before), then `AssertionError`. scripts/mine_signatures.py mines every bare
assert of the vLLM and SGLang modules as its statement, with its module, function, guarding `if` tests and
the flags they name, so such a traceback names the site, the releases that have it, the asserted test and the
user settings it reads. The variants below are generated from the mined statements themselves.
"""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.assertsite import asserted_settings, asserted_test, is_statement, steps
from remedies.bareassert import statement_of
from remedies.model import UNKNOWN_ID
from remedies.templates import SIGNATURES_DIR, Site, Template, _pieces, skeleton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import mine_signatures  # noqa: E402

ENGINES = ("vllm", "sglang")
STARTUP = re.compile(r"(server_args|arg_utils|config/[a-z_]+|config|model_config)\.py$")


@lru_cache(maxsize=None)
def _data(package: str) -> dict:
    return json.loads((SIGNATURES_DIR / f"{package}.json").read_text(encoding="utf-8"))


def _statements(package: str) -> list[dict]:
    return [t for t in _data(package)["templates"]
            if t["kind"] == "raise:AssertionError" and t["template"].startswith("assert ")]


def _found(source: str) -> dict[str, mine_signatures.Found]:
    return {f.template: f for f in mine_signatures.templates({"vllm/config/scheduler.py": source})}


# ------------------------------------------------------------------ mining


def test_a_bare_assert_is_mined_as_its_statement_guarded_by_its_negated_test():
    found = _found('''
class SchedulerConfig:
    def verify(self):
        if self.enable_chunked_prefill:
            assert (
                self.max_num_batched_tokens
                >= self.max_num_seqs
            )
        assert self.max_num_seqs > 0, "max_num_seqs must be positive, got a non-positive value here"
        assert self.x
''')
    statement = found["assert ( self.max_num_batched_tokens >= self.max_num_seqs )"]
    assert (statement.kind, statement.function) == ("raise:AssertionError", "SchedulerConfig.verify")
    assert statement.condition == ("self.enable_chunked_prefill and "
                                   "not (self.max_num_batched_tokens >= self.max_num_seqs)")
    assert "max_num_seqs must be positive, got a non-positive value here" in found  # a message stays the template
    assert "assert self.x" not in found  # too little text to tell one assert from another


@pytest.mark.parametrize("package", ENGINES)
def test_every_mined_release_of_each_engine_has_its_bare_asserts(package):
    releases = {r for t in _statements(package) for r in t["releases"]}
    assert releases == set(_data(package)["releases"])


@pytest.mark.parametrize("package", ENGINES)
def test_a_statement_that_reads_an_engine_setting_records_the_flag(package):
    flagged = [t for t in _statements(package) if any(s.get("flags") for s in t["sites"])]
    assert len(flagged) >= 20
    named = {f for t in flagged for s in t["sites"] for f in s.get("flags", ())}
    assert {"--max-num-batched-tokens" if package == "vllm" else "--tp-size"} <= named


# ------------------------------------------------------------------ reading a traceback


def test_a_multiline_statement_is_joined_while_its_brackets_are_open():
    assert statement_of(["assert (", "self.a", ">= self.b", ")", "~~~^^^"]) == "assert ( self.a >= self.b )"
    assert statement_of(["assert x > 0", "other"]) == "assert x > 0"
    assert statement_of(["raise ValueError(", "msg)"]) == "raise ValueError("


def _lines(text: str, width: int = 36) -> list[str]:
    """The statement as a formatter would print it: broken only where a bracket is open."""
    lines, current, depth = [], "", 0
    for char in text:
        if char == " " and depth > 0 and len(current) >= width:
            lines.append(current)
            current = ""
            continue
        current += char
        depth += (char in "([{") - (char in ")]}")
    return [*lines, current]


def _traceback(module: str, function: str, printed: list[str], prefix: str = "") -> str:
    body = [f'  File "/usr/local/lib/python3.12/dist-packages/{module}", line 812, in {function}',
            *(f"    {line}" for line in printed)]
    return "\n".join(prefix + line for line in ["Traceback (most recent call last):",
                                                '  File "/usr/local/bin/serve", line 8, in <module>',
                                                "    sys.exit(main())", *body, "AssertionError"]) + "\n"


def _cases(package: str, count: int = 12) -> list[tuple[str, dict]]:
    chosen = [t for t in _statements(package) if STARTUP.search(t["sites"][0]["module"])]
    step = max(1, len(chosen) // count)
    return [(package, t) for t in chosen[::step][:count]]


def _explained(tmp_path: Path, text: str):
    log = tmp_path / "server.log"
    log.write_text(text, encoding="utf-8")
    return explain_sources([log])


CASES = [case for package in ENGINES for case in _cases(package)]


@pytest.mark.parametrize("package,template", CASES, ids=[t["template"][:60] for _, t in CASES])
@pytest.mark.parametrize("shape", ["whole", "rank-prefixed", "carets"])
def test_a_bare_assert_from_any_release_names_its_site_releases_and_test(tmp_path, package, template, shape):
    site = template["sites"][0]
    printed = _lines(template["template"])
    if shape == "carets":
        printed = [*printed, "^" * 20]
    text = _traceback(site["module"], site["function"].rsplit(".", 1)[-1], printed,
                      "[rank0]: " if shape == "rank-prefixed" else "")
    (finding,) = _explained(tmp_path, text)
    assert finding.located is not None, text
    assert skeleton(finding.located.hit.template.text) == skeleton(template["template"])
    assert finding.located.hit.whole
    assert site["function"] in finding.why and template["releases"][0] in finding.why
    assert any(asserted_test(finding.located.hit.template) in step.text for step in finding.steps)


def _first_line_cases() -> list[tuple[str, dict]]:
    """Multi-line statements whose first line ("assert (") only one statement of its function starts."""
    out = []
    for package in ENGINES:
        statements = _statements(package)
        for template in statements:
            site = template["sites"][0]
            first = _lines(template["template"])[0]
            if first == template["template"] or len(template["sites"]) > 1:
                continue
            same = {skeleton(t["template"]) for t in statements for s in t["sites"]
                    if s["module"] == site["module"] and s["function"].rsplit(".", 1)[-1] ==
                    site["function"].rsplit(".", 1)[-1] and skeleton(t["template"]).startswith(skeleton(first))}
            if len(same) == 1:
                out.append((package, template))
    return out[::max(1, len(out) // 10)][:10]


FIRST_LINE = _first_line_cases()


@pytest.mark.parametrize("package,template", FIRST_LINE, ids=[t["template"][:60] for _, t in FIRST_LINE])
def test_a_statement_printed_by_its_first_line_only_is_found_at_its_frame(tmp_path, package, template):
    site = template["sites"][0]
    first = _lines(template["template"])[0]
    (finding,) = _explained(tmp_path, _traceback(site["module"], site["function"].rsplit(".", 1)[-1], [first]))
    assert finding.located is not None
    located = finding.located.hit.template
    assert skeleton(located.text) == skeleton(template["template"])
    assert located.text in finding.steps[0].text  # the whole statement, since the log has its first line


def test_a_statement_of_no_engine_stays_unlocated(tmp_path):
    text = _traceback("verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", "__init__",
                      ["assert self.config.tensor_model_parallel_size <= torch.distributed.get_world_size()"])
    (finding,) = _explained(tmp_path, text)
    assert finding.remedy.id != UNKNOWN_ID or finding.located is None


# ------------------------------------------------------------------ what the fix says


def _statement(text: str, *flags_by_site: tuple[str, ...]) -> tuple[Template, tuple[Site, ...]]:
    sites = tuple(Site("vllm", "vllm/config/cache.py", "CacheConfig.verify", "", flags) for flags in flags_by_site)
    return Template("vllm", text, "raise:AssertionError", ("0.30.0",), sites, _pieces(text)), sites


def test_a_test_that_reads_a_setting_asks_to_change_that_setting():
    template, sites = _statement("assert block_size % hash_block_size == 0", ("--block-size", "--enable-eplb"))
    assert is_statement(template)
    assert asserted_settings(template, sites) == ("--block-size",)
    (step,) = steps(template, sites, "vllm")
    assert "`block_size % hash_block_size == 0`" in step.text and "--block-size" in step.text
    assert "--enable-eplb" not in step.text


def test_a_test_guarded_by_a_setting_names_the_setting_that_switched_the_path_on():
    template, sites = _statement("assert self.drafter is not None", ("--speculative-config",))
    (step,) = steps(template, sites, "vllm")
    assert "--speculative-config" in step.text and "switched on" in step.text


def test_a_test_on_the_engines_own_state_is_named_a_likely_bug_at_its_site():
    template, sites = _statement("assert kv_cache_groups_are_consistent(groups)", ())
    (step,) = steps(template, sites, "vllm")
    assert "likely a vllm bug at vllm/config/cache.py::CacheConfig.verify" in step.text


def _multi_site() -> list[tuple[str, dict]]:
    """Statements mined at two or more functions (a helper's invariant repeated in its callers)."""
    out = []
    for package in ENGINES:
        for template in _statements(package):
            functions = {s["function"].rsplit(".", 1)[-1] for s in template["sites"]}
            if len(functions) >= 2:
                out.append((package, template))
    return out[::max(1, len(out) // 6)][:6]


MULTI = _multi_site()


@pytest.mark.parametrize("package,template", MULTI, ids=[t["template"][:60] for _, t in MULTI])
def test_a_statement_raised_at_several_sites_is_told_at_the_frame_the_traceback_shows(tmp_path, package, template):
    site = template["sites"][-1]
    text = _traceback(site["module"], site["function"].rsplit(".", 1)[-1], _lines(template["template"]))
    (finding,) = _explained(tmp_path, text)
    assert finding.located is not None
    first = finding.located.sites[0]
    assert (first.module, first.function.rsplit(".", 1)[-1]) == (site["module"], site["function"].rsplit(".", 1)[-1])
