"""LoRA failures are explained from vLLM's and SGLang's LoRA code, in every mined release's wording.

scripts/mine_components.py mines the LoRA modules of both engines (vllm_lora, sglang_lora: adapter loading,
PEFT config checks, target modules, max rank / max loras, the punica and fused-MoE LoRA layers). The entries
below cover the failures a user fixes; each wording any mined release prints for an entry's site is linked to
it (remedies/template_links.json) and, rendered as the engine prints it, names that entry first. A LoRA message
with no entry is still located at its raise site.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.links import LINKS_FILE
from remedies.templates import SIGNATURES_DIR

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import mine_signatures  # noqa: E402

LORA_ENTRIES = (
    "QD-R-VLLM-LORA-RANK", "QD-R-VLLM-LORA-NOT-FOUND", "QD-R-VLLM-LORA-WEIGHT-UNSUPPORTED",
    "QD-R-VLLM-LORA-TARGET-MODULES", "QD-R-VLLM-LORA-ADAPTER-CONFIG", "QD-R-VLLM-LORA-NOT-ENABLED",
    "QD-R-VLLM-LORA-ADAPTER-FEATURE", "QD-R-VLLM-LORA-MOE-BACKEND", "QD-R-VLLM-LORA-MAX-CPU-LORAS",
    "QD-R-SGLANG-LORA-TARGET-MODULES", "QD-R-SGLANG-LORA-RANK", "QD-R-SGLANG-LORA-NOT-ENABLED",
    "QD-R-SGLANG-LORA-ADAPTER-FEATURE",
)
NUMERIC = re.compile(r"(?:rank|\() ?$")


def _links() -> dict[str, list[dict[str, str]]]:
    return json.loads(LINKS_FILE.read_text(encoding="utf-8"))


def _rendered(template: str) -> str:
    """The template as the engine prints it: a count where the text asks for one, a name elsewhere."""
    parts = template.split("{}")
    out = parts[0]
    for part in parts[1:]:
        out += ("64" if NUMERIC.search(out) else "sql_adapter") + part
    return out


CASES = sorted({(entry, link["kind"], link["template"]) for entry, items in _links().items()
                if entry in LORA_ENTRIES for link in items})


def test_every_lora_entry_is_linked_to_the_lora_code_that_raises_it():
    linked = {entry for entry, _, _ in CASES}
    assert linked == set(LORA_ENTRIES)
    packages = {link["package"] for entry, items in _links().items() if entry in LORA_ENTRIES for link in items}
    assert {"vllm_lora", "sglang_lora"} <= packages


@pytest.mark.parametrize("entry,kind,template", CASES, ids=[f"{e}:{t[:50]}" for e, _, t in CASES])
def test_each_releases_wording_names_its_entry_first(tmp_path, entry, kind, template):
    log = tmp_path / "server.log"
    log.write_text(f"{kind.partition(':')[2]}: {_rendered(template)}\n", encoding="utf-8")
    findings = explain_sources([log])
    assert findings and findings[0].remedy.id == entry
    assert not any("{" in step.text and "}" in step.text for step in findings[0].steps)


@pytest.mark.parametrize("package", ["vllm_lora", "sglang_lora"])
def test_the_lora_code_of_every_mined_release_is_read(package):
    data = json.loads((SIGNATURES_DIR / f"{package}.json").read_text(encoding="utf-8"))
    assert len(data["releases"]) >= 5
    assert {r for t in data["templates"] for r in t["releases"]} == set(data["releases"])


def test_the_fix_uses_the_rank_and_modules_the_log_names(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("ValueError: LoRA adapter sql with rank 128 is incompatible with the current LoRA memory pool "
                   "configuration. Please ensure that the LoRA adapter's rank is within the configured "
                   "`--max-lora-rank` and that the target modules are included in `--lora-target-modules`.\n",
                   encoding="utf-8")
    (finding,) = explain_sources([log])
    assert "--max-lora-rank 128" in finding.steps[0].text


def test_a_lora_message_without_an_entry_is_located_at_its_raise_site(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("AssertionError: No supported LoRA modules found in Qwen3NextForCausalLM.\n", encoding="utf-8")
    (finding,) = explain_sources([log])
    assert finding.located is not None and finding.located.hit.template.package == "vllm_lora"
    assert "vllm/lora/model_manager.py" in finding.why


def test_messages_collected_in_a_list_and_raised_joined_are_mined():
    source = '''
class PEFTHelper:
    def _validate_features(self):
        error_msg = []
        if self.use_dora:
            error_msg.append("vLLM does not yet support DoRA adapters here.")
        return error_msg

    def validate_legal(self, lora_config):
        error_msg = self._validate_features()
        if self.r > lora_config.max_lora_rank:
            error_msg.append(f"LoRA rank {self.r} is greater than max_lora_rank {lora_config.max_lora_rank}.")
        if error_msg:
            raise ValueError(f"{' '.join(error_msg)}")
        notes = []
        notes.append("a list nobody raises is not a message at all")
'''
    found = {f.template: f for f in mine_signatures.templates({"vllm/lora/peft_helper.py": source})}
    assert found["vLLM does not yet support DoRA adapters here."].kind == "raise:ValueError"
    rank = found["LoRA rank {} is greater than max_lora_rank {}."]
    assert (rank.function, rank.condition) == ("PEFTHelper.validate_legal", "self.r > lora_config.max_lora_rank")
    assert "a list nobody raises is not a message at all" not in found
