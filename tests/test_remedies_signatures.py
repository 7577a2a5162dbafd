"""Catalogue wordings stay true to the engines' source, and the miner turns source into templates.

Each catalogue entry may list, under `versions:`, the source templates it matches with the releases that
print them. scripts/mine_signatures.py extracts those templates from the published wheels into
remedies/signatures/<package>.json. The checks here fail when a claimed template is missing from a release
in its range (it disappeared or was reworded in a newly mined release) or when the entry's pattern no
longer matches it.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from remedies import load_catalogue
from remedies.model import SIGNATURE_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
SIGNATURES = ROOT / "remedies" / "signatures"
sys.path.insert(0, str(ROOT / "scripts"))

import mine_signatures  # noqa: E402

CLAIMS = [(remedy, wording) for remedy in load_catalogue() for wording in remedy.versions]


@lru_cache(maxsize=None)
def mined(package: str) -> dict:
    return json.loads((SIGNATURES / f"{package}.json").read_text(encoding="utf-8"))


def releases_printing(package: str, template: str) -> set[str]:
    return {r for t in mined(package)["templates"] if t["template"] == template for r in t["releases"]}


def test_mined_data_spans_old_and_new_releases_of_each_package():
    expected_oldest = {"vllm": "0.9", "sglang": "0.5", "huggingface_hub": "1.0", "transformers": "5.0",
                       "ray": "2.10", "torch": "2.5"}
    for package in SIGNATURE_PACKAGES:
        releases = [Version(r) for r in mined(package)["releases"]]
        assert len(releases) >= 2, package
        assert min(releases) < Version(expected_oldest[package]) <= max(releases), package


def test_enough_entries_record_the_source_wordings_they_match():
    assert len({remedy.id for remedy, _ in CLAIMS}) >= 20
    assert {wording.package for _, wording in CLAIMS} >= {"vllm", "sglang", "huggingface_hub"}


@pytest.mark.parametrize("remedy,wording", CLAIMS,
                         ids=[f"{r.id}:{w.package}{w.releases}" for r, w in CLAIMS])
def test_every_release_in_the_claimed_range_still_prints_the_template(remedy, wording):
    in_range = [r for r in mined(wording.package)["releases"] if Version(r) in SpecifierSet(wording.releases)]
    assert in_range, f"{remedy.id}: no mined {wording.package} release in {wording.releases}"
    missing = sorted(set(in_range) - releases_printing(wording.package, wording.template), key=Version)
    assert missing == [], f"{remedy.id}: template gone or reworded in {wording.package} {missing}"


@pytest.mark.parametrize("remedy,wording", CLAIMS,
                         ids=[f"{r.id}:{w.package}{w.releases}" for r, w in CLAIMS])
def test_the_entry_matches_its_template_rendered_with_sample_values(remedy, wording):
    assert remedy.id in mine_signatures.covering(wording.template, [remedy])


def _templates_of(source: str) -> set[tuple[str, str]]:
    return {(f.template, f.kind) for f in mine_signatures.templates({"pkg/mod.py": source})}


def test_f_strings_printf_and_format_fields_become_placeholders():
    source = '''
import logging
logger = logging.getLogger(__name__)

def check(n, limit, name):
    if n > limit:
        raise ValueError(f"max_num_seqs ({n}) exceeds available Mamba cache blocks ({limit}).")
    logger.warning("Free memory on device (%.2f/%.2f GiB) on startup is low", n, limit)
    logger.error("Model {} is not supported by this release of the engine".format(name))
'''
    assert _templates_of(source) == {
        ("max_num_seqs ({}) exceeds available Mamba cache blocks ({}).", "raise:ValueError"),
        ("Free memory on device ({}/{} GiB) on startup is low", "log:warning"),
        ("Model {} is not supported by this release of the engine", "log:error"),
    }


def test_a_message_built_in_a_variable_and_concatenated_is_resolved():
    source = '''
def verify(total, tp):
    msg = ("Total number of attention heads "
           f"({total}) must be divisible by tensor parallel size ")
    msg += f"({tp})."
    raise ValueError(msg)
'''
    assert _templates_of(source) == {
        ("Total number of attention heads ({}) must be divisible by tensor parallel size ({}).", "raise:ValueError"),
    }


def test_short_or_placeholder_only_messages_and_non_messages_are_dropped():
    source = '''
def f(e, x):
    raise RuntimeError(e)
    raise ValueError(f"{x}")
    raise KeyError("bad key")
    print("not a log call, an ordinary print of something long enough")
'''
    assert _templates_of(source) == set()


def test_merge_records_every_release_that_prints_a_template():
    found = {"0.8.5": [mine_signatures.Found("a message long enough {}", "raise:ValueError", "m.py")],
             "0.9.2": [mine_signatures.Found("a message long enough {}", "raise:ValueError", "n.py")]}
    (sig,) = mine_signatures.merge(found)
    assert sig.to_json() == {"template": "a message long enough {}", "kind": "raise:ValueError",
                             "modules": ["m.py", "n.py"], "releases": ["0.8.5", "0.9.2"],
                             "sites": [{"module": "m.py", "function": ""}, {"module": "n.py", "function": ""}]}


def _found_of(source: str) -> dict[str, mine_signatures.Found]:
    return {f.template: f for f in mine_signatures.templates({"vllm/config/cache.py": source})}


def test_each_template_records_its_function_and_the_if_test_that_guards_it():
    source = '''
class CacheConfig:
    def verify(self, n):
        if self.gpu_memory_utilization > 1.0:
            raise ValueError(f"GPU memory utilization must be less than 1.0. Got {n}.")
        elif n > 8:
            pass
        else:
            raise ValueError("the else branch of the utilisation check, long enough")
'''
    found = _found_of(source)
    first = found["GPU memory utilization must be less than 1.0. Got {}."]
    assert (first.function, first.condition) == ("CacheConfig.verify", "self.gpu_memory_utilization > 1.0")
    other = found["the else branch of the utilisation check, long enough"]
    assert other.condition == "not (self.gpu_memory_utilization > 1.0) and not (n > 8)"


def test_nested_tests_are_joined_outermost_first():
    source = '''
def verify(spec, strategy):
    if spec is not None:
        if strategy == "no_buffer" or strategy is None:
            raise ValueError("speculative decoding needs the extra_buffer strategy here")
'''
    (found,) = _found_of(source).values()
    assert found.condition == 'spec is not None and (strategy == \'no_buffer\' or strategy is None)'


def test_an_assert_with_a_message_is_a_raise_site_guarded_by_its_negated_test():
    source = '''
def check(max_model_len):
    assert max_model_len > 0, f"max_model_len must be positive, got {max_model_len} instead"
    assert max_model_len < 10
'''
    found = _found_of(source)
    message = found["max_model_len must be positive, got {} instead"]
    assert (message.kind, message.condition) == ("raise:AssertionError", "not (max_model_len > 0)")
    bare = found["assert max_model_len < 10"]  # no message: the statement is what the traceback prints
    assert (bare.kind, bare.condition) == ("raise:AssertionError", "not (max_model_len < 10)")


def test_the_flags_and_environment_variables_a_condition_names_are_recorded():
    flags = frozenset({"--max-model-len", "--max-num-batched-tokens", "--dtype"})
    named = mine_signatures.named_settings(
        "self.max_num_batched_tokens < self.max_model_len and not envs.VLLM_ALLOW_LONG_MAX_MODEL_LEN", flags)
    assert named == ("--max-num-batched-tokens", "--max-model-len", "VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    assert mine_signatures.named_settings("dtype == torch.float16 and n > 1", flags) == ("--dtype",)
    assert mine_signatures.named_settings("mode == CompilationMode.VLLM_COMPILE", flags) == ()


def test_newest_patch_of_each_minor_is_chosen_from_the_oldest_wanted_minor():
    versions = [Version(v) for v in ("0.7.3", "0.8.4", "0.8.5", "0.8.5.post1", "0.9.0", "0.10.2", "0.10.1")]
    assert mine_signatures.newest_patch_per_minor(versions, Version("0.8")) == ["0.8.5.post1", "0.9.0", "0.10.2"]


def test_coverage_counts_user_fixable_templates_that_a_remedy_matches():
    data = {"templates": [
        {"template": "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                     "initializing the engine.", "kind": "raise:ValueError"},
        {"template": "Unexpected token {} in the chat template", "kind": "log:info"},
        {"template": "Tensor parallel size ({}) exceeds available GPUs ({}). Consider reducing it.",
         "kind": "log:warning"},
        {"template": "Requested {} GiB but the pool has a different layout entirely", "kind": "raise:ValueError"},
    ]}
    assert mine_signatures.coverage("vllm", data) == mine_signatures.Coverage(
        templates=4, fixable=3, covered=2, actionable=2, actionable_covered=2)


def test_the_miner_only_reads_python_it_can_parse():
    assert list(mine_signatures.templates({"pkg/broken.py": "def f(:\n"})) == []


def test_release_ranges_follow_unbroken_runs_and_stay_open_at_the_newest():
    mined_releases = ["0.8.5", "0.9.2", "0.10.2", "0.11.0", "0.12.0"]
    assert mine_signatures.release_runs(["0.9.2", "0.10.2", "0.12.0"], mined_releases) == [
        ">=0.9.2,<0.11.0", ">=0.12.0"]


def test_a_message_variable_inside_an_f_string_or_a_lazy_log_argument_is_inlined():
    source = '''
import logging
logger = logging.getLogger(__name__)

def verify(user, key, derived, allow):
    msg = f"User-specified max_model_len ({user}) is greater than the derived max_model_len ({key}={derived})."
    if allow:
        logger.warning("%s Make sure the value is correct and within the model context size.", msg)
    else:
        raise ValueError(f"{msg} To allow overriding this maximum, set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
'''
    derived = "User-specified max_model_len ({}) is greater than the derived max_model_len ({}={})."
    assert _templates_of(source) == {
        (derived + " Make sure the value is correct and within the model context size.", "log:warning"),
        (derived + " To allow overriding this maximum, set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "raise:ValueError"),
    }


@pytest.mark.parametrize("needle", ["User-specified max_model_len", "Support for Transformers v4 is deprecated"])
def test_warnings_of_a_deliberate_override_or_a_deprecation_are_not_reported_as_errors(needle):
    warnings = [t["template"] for t in mined("vllm")["templates"]
                if t["kind"] == "log:warning" and t["template"].startswith(needle)]
    assert warnings
    errors = [r for r in load_catalogue() if r.severity == "error"]
    assert {w: mine_signatures.covering(w, errors) for w in warnings} == {w: [] for w in warnings}


def test_writing_versions_replaces_only_the_versions_blocks(tmp_path):
    text = ("component: vllm\nentries:\n  - id: QD-R-VLLM-A\n    title: A\n    versions:\n      - package: vllm\n"
            "        releases: '>=0.1'\n        template: \"old {}\"\n\n  - id: QD-R-VLLM-B\n    title: B\n")
    (tmp_path / "vllm.yaml").write_text(text)
    found = {"QD-R-VLLM-B": [{"package": "vllm", "releases": ">=0.9.2", "template": "new \"quoted\" {}"}]}
    assert mine_signatures.write_versions(tmp_path, found) == 1
    assert (tmp_path / "vllm.yaml").read_text() == (
        "component: vllm\nentries:\n  - id: QD-R-VLLM-A\n    title: A\n\n  - id: QD-R-VLLM-B\n    title: B\n"
        "    versions:\n      - package: vllm\n        releases: '>=0.9.2'\n"
        "        template: \"new \\\"quoted\\\" {}\"\n")
