"""A model the hub does not have, and a model type transformers does not know, in every mined release's words.

The ModelScope hub client (modelscope, and the modelscope_hub package newer releases delegate to) and ten
transformers releases (4.30-5.25) are mined (scripts/mine_components.py, scripts/mine_signatures.py); each
wording their raise sites print for these two failures names its entry first, as does transformers 4.30-4.39's
bare KeyError from CONFIG_MAPPING under its configuration_auto.py frames.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remedies import explain_sources
from remedies.links import LINKS_FILE
from remedies.templates import SIGNATURES_DIR

MODELSCOPE = "QD-R-HF-MODELSCOPE-NOT-FOUND"
MODEL_TYPE = "QD-R-HF-UNKNOWN-MODEL-TYPE"


def _mined(package: str, *words: str) -> list[dict]:
    data = json.loads((SIGNATURES_DIR / f"{package}.json").read_text(encoding="utf-8"))
    return [t for t in data["templates"] if t["kind"].startswith("raise:") and any(w in t["template"] for w in words)]


def _first(tmp_path: Path, text: str) -> str | None:
    log = tmp_path / "server.log"
    log.write_text(text, encoding="utf-8")
    found = explain_sources([log])
    return found[0].remedy.id if found else None


MODELSCOPE_WORDINGS = [t["template"] for package in ("modelscope", "modelscope_hub")
                       for t in _mined(package, "The request model:", "does not exist or is not accessible",
                                       "The request resource(model or dataset)", "not found on either")]


def test_every_release_of_the_modelscope_client_has_a_not_found_wording():
    releases = {r for package in ("modelscope", "modelscope_hub")
                for t in _mined(package, "The request model:", "does not exist or is not accessible",
                                "The request resource(model or dataset)", "not found on either")
                for r in t["releases"]}
    assert {"1.20.1", "1.28.2", "1.35.3", "1.40.2", "0.5.1"} <= releases


@pytest.mark.parametrize("template", MODELSCOPE_WORDINGS)
def test_each_modelscope_wording_names_the_modelscope_entry(tmp_path, template):
    message = template.replace("{}", "Qwen/Qwen3.5-35B-A3b", 1).replace("{}", "https://www.modelscope.cn")
    assert _first(tmp_path, f"requests.exceptions.HTTPError: {message}\n") == MODELSCOPE


def test_the_fix_names_the_model_id_and_the_switch_back_to_hugging_face(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("requests.exceptions.HTTPError: The request model: Qwen/Qwen3.5-35B-A3b does not exist!\n",
                   encoding="utf-8")
    (finding,) = explain_sources([log])
    steps = " ".join(step.text for step in finding.steps)
    assert "Qwen/Qwen3.5-35B-A3b" in steps and "VLLM_USE_MODELSCOPE" in steps and "SGLANG_USE_MODELSCOPE" in steps


MODEL_TYPE_WORDINGS = sorted({i["template"] for i in json.loads(LINKS_FILE.read_text(encoding="utf-8"))[MODEL_TYPE]
                              if i["package"] == "transformers"})


def test_every_mined_transformers_release_has_a_linked_wording():
    data = json.loads((SIGNATURES_DIR / "transformers.json").read_text(encoding="utf-8"))
    linked = {r for t in data["templates"] if t["template"] in MODEL_TYPE_WORDINGS for r in t["releases"]}
    assert linked == set(data["releases"]) and len(linked) >= 10


@pytest.mark.parametrize("template", MODEL_TYPE_WORDINGS)
def test_each_transformers_wording_of_an_unknown_model_type_names_the_entry(tmp_path, template):
    message = (template.replace("`{}`", "`qwen3_5_moe`").replace("in {}.", "in /models/Qwen3.5-35B-A3B.", 1)
               .replace("its {}", "its config.json").replace("{}", "albert, bart, qwen3_moe"))
    assert _first(tmp_path, f"ValueError: {message}\n") == MODEL_TYPE


def test_the_keyerror_of_transformers_before_4_40_names_the_entry_only_under_its_config_mapping(tmp_path):
    frames = ('  File "/usr/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", line 1098, '
              'in from_pretrained\n    config_class = CONFIG_MAPPING[config_dict["model_type"]]\n'
              '  File "/usr/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", line 795, '
              'in __getitem__\n    raise KeyError(key)\n')
    assert _first(tmp_path, f"Traceback (most recent call last):\n{frames}KeyError: 'qwen3_5_moe'\n") == MODEL_TYPE
    other = ('Traceback (most recent call last):\n  File "/app/server.py", line 12, in handle\n'
             '    return sessions[key]\nKeyError: \'qwen3_5_moe\'\n')
    assert _first(tmp_path, other) != MODEL_TYPE


def test_a_message_assigned_in_each_branch_before_one_raise_is_mined_once_per_branch():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import mine_signatures

    source = '''
def handle_http_response(response, model_id):
    http_error_msg = ""
    if response.status_code == 404:
        http_error_msg = "The request model: %s does not exist!" % (model_id)
    elif response.status_code == 403:
        http_error_msg = "Authentication token does not exist or is invalid here."
    if http_error_msg:
        raise HTTPError(http_error_msg, response=response)
'''
    found = {(f.template, f.kind) for f in mine_signatures.templates({"modelscope/hub/errors.py": source})}
    assert {("The request model: {} does not exist!", "raise:HTTPError"),
            ("Authentication token does not exist or is invalid here.", "raise:HTTPError")} <= found


AUTO_WORDINGS = sorted({(e, t["template"]) for e, words in (
    ("QD-R-HF-AUTO-CLASS-UNRECOGNIZED", ("Unrecognized configuration class",)),
    ("QD-R-HF-PROCESSOR-FILES-MISSING", ("Unrecognized processing class",))) for t in _mined("transformers", *words)})


@pytest.mark.parametrize("entry,template", AUTO_WORDINGS)
def test_each_auto_class_wording_of_every_release_names_its_entry(tmp_path, entry, template):
    message = (template.replace("class {}", "class <class 'vllm.transformers_utils.configs.Qwen3_5MoeConfig'>", 1)
               .replace("AutoModel: {}", "AutoModel: AutoModelForCausalLM").replace("in {}", "in /models/ckpt-500")
               .replace("{}", "LlamaConfig, Qwen2Config"))
    assert _first(tmp_path, f"ValueError: {message}\n") == entry


API_WORDINGS = [(api, "QD-R-VLLM-POOLING-ON-CAUSAL-LM") for api in ("Embeddings", "Pooling", "Score",
                                                                     "Rerank (Score)", "Classification")]
API_WORDINGS += [(api, "QD-R-VLLM-API-RUNNER-MISMATCH") for api in ("Chat Completions", "Completions", "Responses",
                                                                    "Transcriptions", "Translations")]


@pytest.mark.parametrize("api,entry", API_WORDINGS)
@pytest.mark.parametrize("shape", [
    '{{"object":"error","message":"The model does not support {api} API","type":"BadRequestError","code":400}}',
    "NotImplementedError: The model does not support {api} API",
    "openai.BadRequestError: Error code: 400 - {{'object': 'error', 'message': 'The model does not support {api} "
    "API', 'type': 'BadRequestError'}}",
])
def test_an_api_the_running_model_does_not_serve_names_the_runner_entry(tmp_path, api, entry, shape):
    """vLLM's api_server.py (0.8-0.2x) and pooling/*/api_router.py refusals, as the server, the router and a
    client print them: a pooling API on a generation server is the pooling-on-causal-LM entry."""
    assert _first(tmp_path, shape.format(api=api) + "\n") == entry


@pytest.mark.parametrize("text", [
    "jinja2.exceptions.TemplateError: Conversation roles must alternate user/assistant/user/assistant/...\n",
    'ERROR 03-02 10:00:00 [serving_chat.py:200] Error in preprocessing prompt inputs: TemplateError("System '
    'message must be at the beginning.")\n',
    'Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/transformers/utils/'
    'chat_template_utils.py", line 485, in raise_exception\n    raise jinja2.exceptions.TemplateError(message)\n'
    "jinja2.exceptions.TemplateError: No user query found in messages.\n",
])
def test_a_chat_template_refusing_the_messages_names_the_template_entry(tmp_path, text):
    """transformers' raise_exception turns a template's rule into jinja2's TemplateError, in any template's words."""
    assert _first(tmp_path, text) == "QD-R-HF-CHAT-TEMPLATE-REFUSED"


@pytest.mark.parametrize("backend", ["TokenizersBackend", "PythonBackend", "SentencePieceBackend",
                                     "MistralCommonBackend", "Qwen2Tokenizer"])
def test_a_removed_tokenizer_attribute_names_the_dependency_entry_whatever_the_tokenizer_class(tmp_path, backend):
    """transformers 5's PreTrainedTokenizerBase.__getattr__ names the instance's class: the model's tokenizer, or
    one of the generic backends of tokenization_utils_tokenizers.py, tokenization_python.py,
    tokenization_utils_sentencepiece.py and tokenization_mistral_common.py."""
    line = f"AttributeError: {backend} has no attribute all_special_tokens_extended\n"
    assert _first(tmp_path, line) == "QD-R-VLLM-DEPENDENCY-VERSION"
