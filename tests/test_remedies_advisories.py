"""Engine bugs named as such: a crash raised in engine code names the known regressions of the log's release."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.advisories import engine_bug, engine_release, load_advisories, nearest_clean
from remedies.crash import Crash, Frame
from remedies.errors import CatalogueError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import derive_advisories  # noqa: E402


def crash(exception: str, path: str) -> Crash:
    return Crash(7, exception, exception, Frame(path, 30, "load"), "vllm", "traceback")


VLLM_FRAME = "/usr/local/lib/python3.12/dist-packages/vllm/multimodal/media.py"
VLLM_0250 = ["INFO 08-11 10:45:20 [api_server.py:1755] vLLM API server version 0.25.0"]


def test_every_advisory_is_sourced_and_its_fix_lies_outside_the_affected_releases():
    advisories = load_advisories()
    assert len(advisories) >= 5 and {a.engine for a in advisories} == {"vllm", "sglang"}
    for advisory in advisories:
        assert advisory.sources and all(s.startswith("https://github.com/") for s in advisory.sources)
        assert advisory.fixed_in is None or advisory.fixed_in not in advisory.releases


def test_the_release_a_log_prints_is_read_for_each_engine():
    assert engine_release(VLLM_0250, "vllm") == "0.25.0"
    assert engine_release(["(EngineCore pid=1) INFO 01-01 [core.py:75] Initializing a V1 LLM engine (v0.32.0) with "
                           "config: model='Qwen/Qwen3.5-35B-A3B'"], "vllm") == "0.32.0"
    assert engine_release(["image: lmsysorg/sglang:v0.5.13.post1-cu129"], "sglang") == "0.5.13.post1"
    assert engine_release(["INFO 02-26 11:14:53 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.3) with "
                           "config: model='google/gemma-2-27b-it'"], "vllm") == "0.7.3"
    assert engine_release(["docker run --gpus all vllm/vllm-openai:v0.26.0 --model Qwen/Qwen3.5-35B-A3B"], "vllm") == "0.26.0"
    assert engine_release(["vLLM Version                 : 0.11.2"], "vllm") == "0.11.2"
    assert engine_release(["no release here"], "vllm") is None


def test_a_crash_in_engine_code_names_the_regression_of_its_release_and_the_release_without_it():
    bug = engine_bug(crash("RuntimeError: Could not load libtorchcodec (FFmpeg)", VLLM_FRAME), VLLM_0250)
    assert bug is not None and bug.engine == "vllm" and bug.release == "0.25.0"
    assert [a.id for a in bug.advisories] == ["VLLM-0.25.0-TORCHCODEC-IMPORT"]
    assert bug.nearest_clean == "0.25.1" and "vllm==0.25.1" in bug.steps()[0].text
    assert "engine bug" in bug.why and "media.py" in bug.why


def test_an_advisory_with_a_symptom_stays_out_of_other_crashes_of_that_release():
    bug = engine_bug(crash("AssertionError: block table out of range", VLLM_FRAME), VLLM_0250)
    assert bug is not None and bug.advisories == () and "No known regression" in bug.why
    assert "newest vllm patch release" in bug.steps()[0].text


def test_an_exception_that_refuses_a_setting_is_not_called_an_engine_bug():
    assert engine_bug(crash("ValueError: --max-model-len 300000 exceeds the model's 262144", VLLM_FRAME), VLLM_0250) is None
    assert engine_bug(crash("RuntimeError: pass --enforce-eager to skip graphs", VLLM_FRAME), VLLM_0250) is None


def test_a_crash_outside_engine_code_is_not_an_engine_bug():
    frame = "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py"
    assert engine_bug(crash("RuntimeError: CUDA driver initialization failed", frame), VLLM_0250) is None


def test_nearest_clean_release_needs_every_matched_fix_else_goes_back_before_them():
    by_id = {a.id: a for a in load_advisories()}
    fixed, unfixed = by_id["VLLM-0.25.0-TORCHCODEC-IMPORT"], by_id["VLLM-0.26.0-PY310-MINIMAX-TRITON-IMPORT"]
    assert nearest_clean("vllm", "0.25.0", [fixed]) == "0.25.1"
    assert unfixed.fixed_in is None and unfixed.last_good == "0.25.1"
    assert nearest_clean("vllm", "0.26.0", [unfixed]) == "0.25.1"
    assert nearest_clean("vllm", "0.25.0", [fixed, unfixed]) is None


SCHEDULER = "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/sched/scheduler.py"
VLLM_0221 = ["(APIServer pid=1) INFO 06-12 10:00:00 [api_server.py:1880] vLLM API server version 0.22.1"]


def test_the_derived_facts_of_every_advisory_are_up_to_date_with_the_mined_templates():
    assert derive_advisories.main(["--check"]) == 0


def test_an_advisory_site_is_the_mined_raise_of_its_symptom_and_its_fix_the_first_release_without_it():
    (advisory,) = [a for a in load_advisories() if a.id == "VLLM-0.22.1-HYBRID-EXTERNAL-KV-ASSERT"]
    assert advisory.site == "vllm/v1/core/sched/scheduler.py:Scheduler._mamba_block_aligned_split"
    assert advisory.fixed_in == "0.23.0" and advisory.last_good == "0.21.0"


def test_candidates_are_engine_internal_raises_gone_in_the_next_release_while_their_module_stays():
    found = derive_advisories.candidates("vllm")
    kv = [c for c in found if c[3] == "External KV connector is not verified yet"]
    assert kv == [("0.22.1", "0.23.0", "vllm/v1/core/sched/scheduler.py:Scheduler._mamba_block_aligned_split",
                   "External KV connector is not verified yet")]
    releases, _ = derive_advisories.mined("vllm")
    assert all(releases.index(after) == releases.index(last) + 1 for last, after, _, _ in found)


def test_a_crash_raised_at_an_advisory_site_names_it_even_when_its_message_is_not_the_symptom():
    at_site = Crash(7, "AssertionError", "AssertionError", Frame(SCHEDULER, 1321, "_mamba_block_aligned_split"),
                    "vllm", "traceback")
    bug = engine_bug(at_site, VLLM_0221)
    assert bug is not None and [a.id for a in bug.advisories] == ["VLLM-0.22.1-HYBRID-EXTERNAL-KV-ASSERT"]
    assert "raised at vllm/v1/core/sched/scheduler.py:Scheduler._mamba_block_aligned_split" in bug.why
    assert bug.nearest_clean == "0.23.0" and bug.steps()[0].text.startswith("Move to vllm 0.23.0")


def test_a_crash_elsewhere_in_the_advisory_module_is_named_near_its_site():
    near = Crash(7, "AssertionError", "AssertionError", Frame(SCHEDULER, 640, "schedule"), "vllm", "traceback")
    bug = engine_bug(near, VLLM_0221)
    assert bug is not None and "raised near vllm/v1/core/sched/scheduler.py" in bug.why


def test_a_crash_in_another_module_of_that_release_is_not_tied_to_a_sited_advisory():
    bug = engine_bug(crash("AssertionError", VLLM_FRAME), VLLM_0221)
    assert bug is not None and bug.advisories == ()


def test_with_no_fixed_release_the_step_goes_back_to_the_newest_release_before_the_broken_ones():
    log = ["image: lmsysorg/sglang:v0.5.16-cu129"]
    frame = "/sgl-workspace/sglang/python/sglang/srt/mem_cache/hiradix_cache.py"
    bug = engine_bug(crash("AssertionError: hicache host pool out of sync", frame), log)
    assert bug is not None and bug.release == "0.5.16"
    assert [a.id for a in bug.advisories] == ["SGLANG-0.5.16-HICACHE-CHUNKED-PREFILL"]
    assert bug.nearest_clean == "0.5.15.post1" and bug.going_back
    assert bug.steps()[0].text.startswith("Go back to sglang 0.5.15.post1")


def test_an_advisory_with_neither_symptom_nor_site_names_no_crash_of_its_release():
    log = ["image: lmsysorg/sglang:v0.5.13-cu129"]
    frame = "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py"
    blind = [a for a in load_advisories() if a.engine == "sglang" and a.symptom is None and a.site is None
             and a.covers("sglang", "0.5.13", "", None) is False and "0.5.13" in a.releases]
    assert blind, "the catalogue keeps advisories of 0.5.13 reported without a message or a frame"
    bug = engine_bug(crash("RuntimeError: mamba slot double free", frame), log)
    assert bug is not None and bug.release == "0.5.13" and bug.advisories == ()


@pytest.mark.parametrize("field, value, message", [
    ("site", "'not/a/site'", "site must be"),
    ("last_good", "0.25.0", "last_good 0.25.0 is inside the affected releases"),
])
def test_a_malformed_site_or_last_good_is_a_one_line_error(tmp_path: Path, field: str, value: str, message: str):
    bad = tmp_path / "advisories.yaml"
    bad.write_text("advisories:\n- {id: X, engine: vllm, releases: '==0.25.0', title: t, affects: generic, "
                   f"symptom: null, fixed_in: null, {field}: {value}, "
                   "sources: ['https://github.com/a/b/issues/1']}\n", encoding="utf-8")
    with pytest.raises(CatalogueError, match=message):
        load_advisories(bad)


def test_a_malformed_advisory_file_is_a_one_line_error(tmp_path: Path):
    bad = tmp_path / "advisories.yaml"
    bad.write_text("advisories:\n- {id: X, engine: vllm, releases: '==0.25.0', title: t, affects: generic, "
                   "symptom: null, fixed_in: 0.25.0, sources: ['https://github.com/a/b/issues/1']}\n", encoding="utf-8")
    with pytest.raises(CatalogueError, match="fixed_in 0.25.0 is inside the affected releases"):
        load_advisories(bad)


def test_explain_names_the_engine_bug_instead_of_generic_steps(tmp_path: Path):
    log = tmp_path / "vllm.log"
    log.write_text("\n".join([*VLLM_0250, "Traceback (most recent call last):",
                              f'  File "{VLLM_FRAME}", line 30, in load',
                              '    raise RuntimeError("Could not load libtorchcodec")',
                              "RuntimeError: Could not load libtorchcodec. FFmpeg is not properly installed"]) + "\n",
                   encoding="utf-8")
    (finding,) = explain_sources([log])
    out = finding.to_dict()
    assert out["remedy"]["id"] == "QD-R-UNKNOWN" and "engine bug" in out["remedy"]["why"]
    assert out["engine_bug"]["advisories"][0]["id"] == "VLLM-0.25.0-TORCHCODEC-IMPORT"
    assert out["remedy"]["fix"][0]["text"].startswith("Move to vllm 0.25.1")


def test_a_native_abort_its_component_calls_its_own_bug_is_named_an_engine_bug():
    """Ray's fatal records and LLVM's fatal errors say themselves that no setting of the user's caused them:
    explain names the component and the C++ site instead of generic advice."""
    from remedies.advisories import native_bug

    assert native_bug("object_provider.cc:153:  An unexpected system state has occurred. You have likely "
                      "discovered a bug in Ray. Check failed: ok") == ("ray", "object_provider.cc:153")
    assert native_bug("LLVM ERROR: Failed to compute parent layout for slice layout.") == (
        "triton", "Triton's LLVM back end")
    assert native_bug("RuntimeError: CUDA error: out of memory") is None


def test_explain_names_a_ray_fatal_record_as_a_ray_bug(tmp_path):
    from remedies import explain_sources

    log = tmp_path / "ray.log"
    log.write_text("(raylet, ip=10.0.0.2) [2025-12-12 15:10:48,697 C 42791 42791] (raylet) provider.cc:153:  An "
                   "unexpected system state has occurred. You have likely discovered a bug in Ray. Please report "
                   "this issue at https://github.com/ray-project/ray/issues.\n")
    (finding,) = explain_sources([log])
    assert finding.engine_bug is not None and finding.engine_bug.engine == "ray"
    assert finding.engine_bug.raised_at == "provider.cc:153"
    assert "ray" in finding.steps[0].text


def test_an_entry_for_a_native_abort_keeps_its_steps_and_is_named_its_component_s_bug(tmp_path):
    from remedies import explain_sources

    log = tmp_path / "llvm.log"
    log.write_text("INFO 05-31 09:09:41 [engine.py:310] Added request cmpl-1.\n"
                   "LLVM ERROR: Failed to compute parent layout for slice layout.\n")
    first = explain_sources([log])[0]
    assert first.crash is None and first.engine_bug is not None and first.engine_bug.engine == "triton"
    assert first.steps == first.fix and "looks like an engine bug" in first.why


def test_an_ordinary_entry_finding_does_not_read_the_log_head_for_a_native_bug(tmp_path, monkeypatch):
    """The engine release is read from the log's head only for a line that names itself a component's bug; a pasted
    excerpt's head is read once more, for what its prose claims of an engine bug (remedies/bugclaims.py), and a
    full log's not at all."""
    import remedies.explain as explain
    from remedies.matcher import WRAP_SCAN_BYTES

    reads: list[str] = []
    monkeypatch.setattr(explain, "read_head", lambda source: reads.append(str(source)) or [])
    line = ("ERROR 05-31 09:09:48 [core.py:305] RuntimeError: NCCL error: unhandled system error "
            "(run with NCCL_DEBUG=INFO for details)\n")
    paste, log = tmp_path / "paste.log", tmp_path / "oom.log"
    paste.write_text(line)
    log.write_text("INFO 05-31 09:09:00 [core.py:1] serving\n" * (WRAP_SCAN_BYTES // 38 + 1) + line)
    (pasted,) = explain.explain_sources([paste])
    assert pasted.engine_bug is None and reads == [str(paste)]
    reads.clear()
    (found,) = explain.explain_sources([log])
    assert found.engine_bug is None and reads == []
