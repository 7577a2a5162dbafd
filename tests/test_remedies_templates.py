"""The mined templates as explain's ground truth: tolerant lookup, template identity and drift, and the
finding for an engine error that no entry names (explained from its raise site)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from remedies import explain_sources, load_catalogue
from remedies.links import LINKS_FILE, Link, Links, load_links
from remedies.model import UNKNOWN_ID
from remedies.templates import MIN_PREFIX, SIGNATURES_DIR, Site, Template, TemplateIndex, load_templates, skeleton

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import mine_signatures  # noqa: E402

KV = "The model's max seq len ({}) is larger than the maximum number of tokens that can be stored in KV cache ({})."
DTYPE = "Invalid value `{}` for the `dtype` flag: the GPU at {} has {} GiB and compute capability {}."


def _template(text: str, package: str = "vllm", function: str = "check", condition: str = "") -> Template:
    site = Site(package, f"{package}/config.py", function, condition)
    return Template(package, text, "raise:ValueError", ("0.1.0",), (site,), tuple(skeleton(p) for p in text.split("{}")))


INDEX = TemplateIndex([_template(KV), _template(DTYPE), _template("Worker failed {}")])


@pytest.mark.parametrize("message", [
    "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored "
    "in KV cache (3664).",
    'ValueError: The model"s max seq len (4096) is larger than the maximum number of tokens that can be stored '
    "in KV cache (3664).",  # another quote
    "valueerror: the model's max seq len (4096) is larger than the maximum number of tokens that can be stored "
    "in kv cache (3664).",  # retyped in lower case
    "The model's max seq len (4096) is larger than the maximum number of tok\nens that can be stored in KV cache "
    "(3664).",  # cut by a terminal at the column limit
    '{"object": "error", "message": "The model\\\'s max seq len (4096) is larger than the maximum number of '
    'tokens that can be stored\\nin KV cache (3664)."}',  # inside a JSON payload, escaped
    "RuntimeError: Worker failed with error 'The model's max seq len (4096) is larger than the maximum number of "
    "tokens that can be stored in KV cache (3664).'",  # quoted inside another exception
])
def test_a_message_is_found_whatever_its_quotes_case_wrapping_or_envelope(message):
    hit = INDEX.lookup(message)
    assert hit is not None and hit.template.text == KV and hit.whole


@pytest.mark.parametrize("value", ["half", "/opt/models/Qwen3.5-35B-A3B", "0x7f3a2c001000", "79.19", "NVIDIA H200 NVL"])
def test_any_value_fills_a_hole(value):
    hit = INDEX.lookup(f"ValueError: Invalid value '{value}' for the 'dtype' flag: the GPU at {value} has {value} GiB "
                       f"and compute capability {value}.")
    assert hit is not None and hit.template.text == DTYPE and hit.whole


def test_a_message_cut_short_matches_when_enough_of_it_is_left():
    cut = "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be st"
    hit = INDEX.lookup(cut)
    assert hit is not None and hit.template.text == KV and not hit.whole
    assert INDEX.lookup("The model's max seq len (4096) is lar") is None  # too little of it to tell alone
    assert len(skeleton("The model's max seq len ( ) is lar")) < MIN_PREFIX
    assert INDEX.lookup("ValueError: The model's max") is None  # under MIN_PREFIX / 2 even with its class


def test_a_short_cut_is_read_with_its_exception_class_when_one_raise_site_starts_so():
    hit = INDEX.lookup("ValueError: The model's max seq len (4096) is lar")
    assert hit is not None and hit.template.text == KV and not hit.whole
    assert INDEX.lookup("RuntimeError: The model's max seq len (4096) is lar") is None  # raised as ValueError


def test_unrelated_text_matches_nothing():
    assert INDEX.lookup("ValueError: the tokenizer's chat template has no generation prompt for this role") is None


def test_the_template_with_most_fixed_text_wins():
    hit = INDEX.lookup("RuntimeError: Worker failed with error 'The model's max seq len (1) is larger than the "
                       "maximum number of tokens that can be stored in KV cache (2).'")
    assert hit is not None and hit.template.text == KV


def test_every_signature_file_is_read(tmp_path):
    for package in ("vllm", "nccl"):
        (tmp_path / f"{package}.json").write_text(json.dumps({"package": package, "templates": [
            {"template": f"{package} failed because the shared segment is gone: {{}}", "kind": "raise:RuntimeError",
             "releases": ["1.0"], "modules": [f"{package}/x.py"]}]}))
    index = load_templates(tmp_path)
    assert {t.package for t in index.templates} == {"vllm", "nccl"}


# ------------------------------------------------------------------ template identity


def test_a_rewording_at_a_linked_site_joins_the_entry_but_another_message_there_does_not():
    links = Links([Link("QD-R-VLLM-KV-V0-MAX-SEQ", "vllm", "raise:ValueError", "vllm/config.py", "check", "x > y", KV)])
    reworded = _template(KV.replace("Try", "Please try") + " Try increasing `gpu_memory_utilization`.",
                         condition="x > y")
    other = _template("The tokenizer has no chat template; pass --chat-template to the server", condition="x > y")
    elsewhere = _template(reworded.text, function="other", condition="x > y")
    assert links.entries(_template(KV)) == ("QD-R-VLLM-KV-V0-MAX-SEQ",)
    assert links.entries(reworded) == ("QD-R-VLLM-KV-V0-MAX-SEQ",)
    assert links.entries(other) == ()
    assert links.entries(elsewhere) == ()


def _stored() -> dict[str, list[dict[str, str]]]:
    return json.loads(LINKS_FILE.read_text(encoding="utf-8"))


def test_every_template_an_entry_pattern_matches_is_linked_to_it():
    derived = mine_signatures.links(load_catalogue(), SIGNATURES_DIR)
    stored = _stored()
    missing = {k: [i["template"] for i in v if i not in stored.get(k, [])] for k, v in derived.items()}
    assert {k: v for k, v in missing.items() if v} == {}, "run scripts/mine_signatures.py --write-links and review"


def test_every_linked_template_is_still_mined():
    mined = {(t.package, t.text) for t in load_templates().templates}
    stale = [(k, i["template"]) for k, v in _stored().items() for i in v if (i["package"], i["template"]) not in mined]
    assert stale == []


def test_drift_a_wording_joined_at_a_linked_site_is_matched_by_the_entry_or_reviewed():
    """A release that rewords a linked raise joins its entry by site; the entry's pattern must match the new
    wording too, or a reviewer records it in remedies/template_links.json."""
    catalogue = {r.id: r for r in load_catalogue()}
    reviewed = {(k, i["package"], i["template"]) for k, v in _stored().items() for i in v}
    links = load_links()
    uncovered = [(remedy_id, t.package, t.text) for t in load_templates().templates for remedy_id in links.entries(t)
                 if remedy_id not in mine_signatures.covering(t.text, [catalogue[remedy_id]])
                 and (remedy_id, t.package, t.text) not in reviewed]
    assert uncovered == []


# ------------------------------------------------------------------ explained from the source


def _explain(tmp_path: Path, text: str):
    log = tmp_path / "server.log"
    log.write_text(text, encoding="utf-8")
    return explain_sources([log])


def test_an_engine_error_without_an_entry_names_its_raise_site_condition_and_flags(tmp_path):
    (finding,) = _explain(tmp_path, "INFO 12-03 10:00:00 [api_server.py:1] vLLM API server version 0.30.0\n"
                                    "ValueError: --mamba-block-size can only be set with --enable-prefix-caching\n")
    assert finding.remedy.id == UNKNOWN_ID and finding.located is not None
    raised = finding.to_dict()["raised_by"]
    assert raised["package"] == "vllm" and raised["whole"]
    site = raised["sites"][0]
    assert site["function"] == "VllmConfig.validate_mamba_block_size"
    assert "enable_prefix_caching" in site["condition"]
    assert "--enable-prefix-caching" in site["flags"]
    assert "VllmConfig.validate_mamba_block_size" in finding.why
    assert "--enable-prefix-caching" in finding.steps[0].text


def test_a_message_an_entry_covers_names_the_entry_even_when_its_pattern_misses_the_wording(tmp_path):
    message = ("ValueError: Quantization method specified in the model config (fp8) does not match the quantization "
               "method specified in the 'quantization' argument (awq).")  # quotes where the pattern has backticks
    (remedy,) = [r for r in load_catalogue() if r.id == "QD-R-VLLM-QUANT-METHOD-MISMATCH"]
    assert not remedy.regex.search(message)
    (finding,) = _explain(tmp_path, message + "\n")
    assert finding.remedy.id == "QD-R-VLLM-QUANT-METHOD-MISMATCH"
    assert not any("{" in step.text for step in finding.steps)


@pytest.mark.parametrize("line", [
    '{"detail": "Traceback (most recent call last):\\n  File \\"config.py\\", line 1, in validate\\nValueError: '
    '--mamba-block-size can only be set with --enable-prefix-caching\\n"}',  # a JSON error payload
    "litellm.BadRequestError: OpenAIException - Error code: 400 - {'object': 'error', 'message': 'ValueError: "
    "--mamba-block-size can only be set with --enable-prefix-caching', 'type': 'BadRequestError'}",  # a client's repr
])
def test_an_engine_raise_quoted_inside_a_payload_or_another_error_is_located(tmp_path, line):
    (finding,) = _explain(tmp_path, "INFO 12-03 10:00:00 [api_server.py:1] vLLM API server version 0.30.0\n" + line + "\n")
    assert finding.located is not None
    assert finding.located.sites[0].function == "VllmConfig.validate_mamba_block_size"


@pytest.mark.parametrize("line", [
    '{"detail": "ValueError: the upload form needs a title before it is published"}',  # no engine raises that
    "INFO 12-03 10:00:00 [serving.py:1] client sent {'error': 'ValueError: --mamba-block-size can only be set with "
    "--enable-prefix-caching'}",  # logged at INFO: handled, not a failure
])
def test_a_quoted_exception_that_is_no_engine_raise_or_is_logged_as_info_is_not_a_crash(tmp_path, line):
    assert _explain(tmp_path, line + "\n") == []


def test_the_json_report_carries_the_raise_site_of_a_crash_explained_from_its_source(tmp_path):
    from click.testing import CliRunner

    from doctor.cli.main import cli

    log = tmp_path / "server.log"
    log.write_text("INFO 12-03 10:00:00 [api_server.py:1] vLLM API server version 0.30.0\n"
                   "ValueError: --mamba-block-size can only be set with --enable-prefix-caching\n", encoding="utf-8")
    out = CliRunner().invoke(cli, ["explain", str(log), "--format", "json"])
    (remedy,) = json.loads(out.output)["sections"]["remedies"]
    assert remedy["raised_by"]["sites"][0]["function"] == "VllmConfig.validate_mamba_block_size"


def test_a_message_is_matched_after_its_exception_class_so_a_template_that_reads_like_the_class_claims_nothing():
    """sglang_disaggregation prints "Not implemented error: {}", which reads like every `NotImplementedError: ...`
    line once spaces and case are gone: the message after the class is matched first, short ones only whole."""
    index = load_templates()
    assert index.lookup("NotImplementedError: Unknown load_format=42").template.text == "Unknown load_format={}"
    hit = index.lookup("NotImplementedError: Invalid image: 42")
    assert (hit.template.package, hit.template.kind) == ("sglang", "raise:NotImplementedError")


def test_a_short_cut_under_an_engine_class_of_its_own_is_read_when_one_raise_site_starts_so():
    # releases rename and subclass their exceptions; a builtin class the template is not raised as stays a miss
    hit = INDEX.lookup("EngineValidationError: The model's max seq len (4096) is lar")
    assert hit is not None and hit.template.text == KV
    assert INDEX.lookup("RuntimeError: The model's max seq len (4096) is lar") is None
