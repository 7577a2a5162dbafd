"""A catalogue entry's finding carries the known regression of the log's release whose symptom or raise site the
log shows: the entry's own steps first, then "known regression in X, fixed in Y"."""

from __future__ import annotations

from pathlib import Path

from remedies import explain_sources
from remedies.advisories import beside_entry, load_advisories
from remedies.crash import Frame

IMA = "ERROR 06-01 10:00:01 [core.py:700] RuntimeError: CUDA error: an illegal memory access was encountered\n"


def vllm_log(tmp_path: Path, release: str, text: str) -> Path:
    log = tmp_path / "server.log"
    log.write_text(f"INFO 06-01 10:00:00 [api_server.py:1000] vLLM API server version {release}\n{text}",
                   encoding="utf-8")
    return log


def test_an_entry_in_a_release_with_a_known_regression_of_its_symptom_names_it_beside_its_steps(tmp_path):
    first = explain_sources([vllm_log(tmp_path, "0.19.1", IMA)])[0]
    assert first.remedy.id == "QD-R-CUDA-ILLEGAL-MEMORY-ACCESS"
    bug = first.engine_bug
    assert bug is not None and bug.beside and [a.id for a in bug.advisories] == ["VLLM-0.19.1-QWEN36-MTP-LONG-SEQ-IMA"]
    assert "known regression of vllm 0.19.1" in first.why and "fixed in vllm 0.20.0" in first.why
    own = first.remedy.render_fix({})
    assert first.steps[:len(own)] == own, "the entry's own steps come first"
    assert "move to vllm 0.20.0" in first.steps[-1].text
    assert first.to_dict()["engine_bug"]["release"] == "0.19.1"


def test_the_same_entry_in_a_release_outside_the_regression_names_no_advisory(tmp_path):
    first = explain_sources([vllm_log(tmp_path, "0.20.0", IMA)])[0]
    assert first.remedy.id == "QD-R-CUDA-ILLEGAL-MEMORY-ACCESS" and first.engine_bug is None


def test_a_log_that_prints_no_release_names_no_advisory(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(IMA, encoding="utf-8")
    assert explain_sources([log])[0].engine_bug is None


def test_an_advisory_about_every_crash_of_its_release_is_not_put_beside_an_entry(tmp_path):
    blanket = [a for a in load_advisories() if a.symptom is None and a.site is None and a.engine == "vllm"]
    assert blanket, "the advisory list has release-wide advisories"
    release = next(a for a in blanket if a.id == "VLLM-0.17.0-QWEN35-FP8-RUNTIME-CRASH")
    assert beside_entry("RuntimeError: CUDA error: an illegal memory access was encountered", None,
                        lambda: ["vLLM API server version 0.17.0"], [release]) is None


def test_an_entry_raised_at_an_advisorys_site_names_it_even_without_its_words():
    site = next(a for a in load_advisories() if a.site and ":" in a.site and a.fixed_in)
    frame = Frame(f"/usr/lib/python3.12/site-packages/{site.module}", 10, site.function)
    release = str(site.releases).split(",")[0].lstrip("=<>!~")
    bug = beside_entry("AssertionError", frame, lambda: [f"vLLM API server version {release}"], [site])
    assert bug is not None and bug.advisories == (site,) and bug.nearest_clean == site.fixed_in


def test_the_log_head_is_read_only_when_some_advisory_fits_the_entry():
    reads: list[int] = []

    def head() -> list[str]:
        reads.append(1)
        return ["vLLM API server version 0.19.1"]

    assert beside_entry("RuntimeError: NCCL error: unhandled system error", None, head) is None
    assert reads == []


def test_an_engine_bug_without_an_advisory_names_the_nearest_release_whose_source_no_longer_raises_it(tmp_path):
    from remedies.advisories import mined_releases
    from remedies.templates import load_templates

    template = next(t for t in load_templates().templates if t.package == "vllm"
                    and t.text.startswith("Unexpected blocked waiting status in promotion"))
    mined = mined_releases("vllm")
    last = max(template.releases, key=mined.index)
    after = mined[mined.index(last) + 1]
    site = template.sites[0]
    function = site.function.rsplit(".", 1)[-1]
    log = tmp_path / "server.log"
    log.write_text(
        f"(APIServer pid=1) INFO 09-01 10:00:00 [api_server.py:1000] vLLM API server version {last}\n"
        "Traceback (most recent call last):\n"
        f'  File "/usr/local/lib/python3.12/dist-packages/{site.module}", line 700, in {function}\n'
        "    raise RuntimeError(\n"
        "RuntimeError: Unexpected blocked waiting status in promotion: RequestStatus.WAITING for request cmpl-1\n",
        encoding="utf-8")
    first = explain_sources([log])[0]
    assert first.engine_bug is not None and first.engine_bug.without == after
    assert any(f"Move to vllm {after}, the nearest release whose source no longer raises" in s.text for s in first.steps)


def test_no_release_without_the_raise_is_named_when_the_logs_release_does_not_raise_it():
    from remedies.advisories import release_without

    assert release_without("vllm", ["0.17.1"], "0.20.2") is None
    assert release_without("vllm", ["0.34.0"], "0.34.0") is None  # no newer mined release
    assert release_without("vllm", ["0.20.2"], "not-a-release") is None


def test_a_known_regression_raised_in_engine_code_comes_before_an_entrys_unrelated_advice(tmp_path):
    advisory = next(a for a in load_advisories() if a.id == "VLLM-KVBLOCKZEROER-NON-UNIFORM-PAGES")
    site = "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/utils.py"
    log = vllm_log(tmp_path, "0.20.2", (
        "Traceback (most recent call last):\n"
        f'  File "{site}", line 155, in __init__\n'
        "    assert page_size_el == cur_page_el, (\n"
        "AssertionError: Non-uniform page sizes: 2112 vs 10496\n"
        '  Warning  Unhealthy  3s (x3 over 13s)  kubelet  Startup probe failed: Get "http://10.0.0.13:8000/health": '
        "dial tcp 10.0.0.13:8000: connect: connection refused\n"))
    found = explain_sources([log])
    first = found[0]
    assert first.engine_bug is not None and first.engine_bug.advisories == (advisory,)
    assert "known regression of vllm 0.20.2" in first.remedy.title
    assert any(f"Move to vllm {advisory.fixed_in}" in step.text for step in first.steps)
    assert "QD-R-VLLM-STARTUP-PROBE" in [f.remedy.id for f in found[1:]], "the entry is still named, after it"


def test_an_entry_whose_own_message_is_the_root_keeps_its_place(tmp_path):
    first = explain_sources([vllm_log(tmp_path, "0.19.1", IMA)])[0]
    assert first.remedy.id == "QD-R-CUDA-ILLEGAL-MEMORY-ACCESS"


def test_a_crash_outside_engine_frames_that_carries_a_regressions_words_leads_with_its_release(tmp_path):
    advisory = next(a for a in load_advisories() if a.id == "VLLM-0.25.0-TORCHCODEC-IMPORT")
    log = vllm_log(tmp_path, "0.25.0", "ERROR 06-01 10:00:01 [core.py:700] RuntimeError: Could not load libtorchcodec. "
                                       "Likely causes: FFmpeg is not properly installed\n")
    first = explain_sources([log])[0]
    assert first.crash is not None and first.engine_bug is not None and first.engine_bug.advisories == (advisory,)
    assert first.steps[0].text.startswith("This crash matches the known regression of vllm 0.25.0")
    assert f"move to vllm {advisory.fixed_in}" in first.steps[0].text
