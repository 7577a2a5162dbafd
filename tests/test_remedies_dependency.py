"""A library's API changed under the engine: explain names the package, the log's release's requirement, the fix.

The exception lines are CPython's own wordings (Python/ceval.c too_many_positional / missing_arguments /
initialize_locals / import_from, Objects/moduleobject.c, Lib/importlib/_bootstrap.py); the frames are the
engines' and libraries' real call sites. Who raised or made the call decides: a library boundary names the
library, the user's own code or engine code calling engine code names nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from remedies import explain_sources
from remedies.crash import Frame
from remedies.dependency import (
    PINS_PATH,
    distribution,
    first_cap,
    mismatch,
    owner,
    requirement,
)

SITE = "/usr/local/lib/python3.12/dist-packages"
VLLM_TOKENIZER = (f'  File "{SITE}/vllm/transformers_utils/tokenizer.py", line 217, in get_tokenizer\n'
                  "    tokenizer = AutoTokenizer.from_pretrained(\n")
TRANSFORMERS_INIT = (f'  File "{SITE}/transformers/models/auto/tokenization_auto.py", line 1069, in from_pretrained\n'
                     "    return tokenizer_class.from_pretrained(pretrained_model_name_or_path, *inputs, **kwargs)\n"
                     f'  File "{SITE}/transformers/tokenization_utils_base.py", line 2014, in _from_pretrained\n'
                     "    tokenizer = cls(*init_inputs, **init_kwargs)\n")
HEADER = "Traceback (most recent call last):\n"


def explain_text(tmp_path: Path, text: str):
    log = tmp_path / "server.log"
    log.write_text(text, encoding="utf-8")
    return explain_sources([log])


def first(tmp_path: Path, text: str) -> dict:
    found = explain_text(tmp_path, text)
    assert found, "explain named nothing"
    return found[0].to_dict()


def test_a_keyword_a_library_rejects_inside_its_own_frames_names_that_library_and_the_release_requirement(tmp_path):
    log = ("INFO 06-01 10:00:00 [api_server.py:1000] vLLM API server version 0.32.0\n" + HEADER + VLLM_TOKENIZER
           + TRANSFORMERS_INIT + "TypeError: Qwen2TokenizerFast.__init__() takes 1 positional argument but 2 were given\n")
    found = first(tmp_path, log)
    assert found["remedy"]["id"] == "QD-R-VLLM-DEPENDENCY-VERSION"
    dep = found["dependency"]
    assert (dep["package"], dep["engine"], dep["release"]) == ("transformers", "vllm", "0.32.0")
    assert dep["required"] == "<5.20.0,>=5.16.1"  # vllm 0.32.0's wheel: Requires-Dist transformers<5.20.0,>=5.16.1
    steps = [step["text"] for step in found["remedy"]["fix"]]
    assert "pip install 'transformers<5.20.0,>=5.16.1'" in steps[0]
    assert "transformers" in found["remedy"]["why"] and "vllm 0.32.0 requires transformers" in found["remedy"]["why"]


def test_the_engines_call_into_a_library_by_its_module_name_names_that_library(tmp_path):
    log = (HEADER + f'  File "{SITE}/vllm/entrypoints/launcher.py", line 40, in serve_http\n'
           "    config = uvicorn.Config(app, **uvicorn_kwargs)\n"
           "TypeError: Config.__init__() missing 1 required positional argument: 'app'\n")
    dep = first(tmp_path, log)["dependency"]
    assert dep["package"] == "uvicorn" and dep["caller"] == "vllm"


def test_a_name_the_engine_imports_from_a_library_that_no_longer_has_it_names_the_library(tmp_path):
    log = ("sglang==0.5.23\n" + HEADER
           + f'  File "{SITE}/sglang/srt/utils/hf_transformers_utils.py", line 30, in <module>\n'
           "    from huggingface_hub import snapshot_download_x\n"
           "ImportError: cannot import name 'snapshot_download_x' from 'huggingface_hub' "
           f"({SITE}/huggingface_hub/__init__.py)\n")
    dep = first(tmp_path, log)["dependency"]
    assert (dep["package"], dep["engine"], dep["release"]) == ("huggingface-hub", "sglang", "0.5.23")


def test_a_release_that_left_the_package_open_points_at_the_first_later_release_that_capped_it(tmp_path):
    log = ("INFO 06-01 10:00:00 [api_server.py:1000] vLLM API server version 0.10.1\n" + HEADER + VLLM_TOKENIZER
           + TRANSFORMERS_INIT + "TypeError: Qwen2TokenizerFast.__init__() takes 1 positional argument but 2 were given\n")
    found = first(tmp_path, log)
    cap = first_cap("vllm", "0.10.1", "transformers")
    assert cap is not None and cap.bound.startswith("<")
    assert f"transformers>=4.55.0,{cap.bound}" in found["remedy"]["fix"][0]["text"]


def test_a_signature_error_in_the_users_own_code_is_not_a_dependency(tmp_path):
    log = (HEADER + '  File "/opt/app/train.py", line 8, in main\n    build(cfg, 3)\n'
           "TypeError: build() takes 1 positional argument but 2 were given\n")
    found = first(tmp_path, log)
    assert found["remedy"]["id"] == "QD-R-UNKNOWN" and "dependency" not in found


def test_the_engine_calling_its_own_code_wrongly_is_not_a_dependency(tmp_path):
    log = (HEADER + f'  File "{SITE}/vllm/v1/engine/core.py", line 100, in run\n    self.step(a, b)\n'
           "TypeError: EngineCore.step() takes 2 positional arguments but 3 were given\n")
    found = first(tmp_path, log)
    assert found["remedy"]["id"] == "QD-R-UNKNOWN" and "dependency" not in found


@pytest.mark.parametrize(("exception", "frames", "package", "caller"), [
    ("AttributeError: module 'transformers.utils' has no attribute 'is_torch_fx_proxy'",
     [(f"{SITE}/vllm/model_executor/models/utils.py", "vllm", "x = transformers.utils.is_torch_fx_proxy(y)")],
     "transformers", "vllm"),
    ("ModuleNotFoundError: No module named 'vllm.model_executor.layers.fused_moe.layer'",
     [(f"{SITE}/lmcache/integration/vllm/utils.py", "<module>",
       "from vllm.model_executor.layers.fused_moe.layer import FusedMoE")], "vllm", "lmcache"),
    ("ImportError: cannot import name 'top_k_renorm_prob' from 'flashinfer.sampling'", [], "flashinfer-python",
     "the engine"),
    ("TypeError: hf_hub_download() got an unexpected keyword argument 'local_dir_use_symlinks'", [],
     "huggingface-hub", "the engine"),
    ("TypeError: Qwen2TokenizerFast.apply_chat_template() got an unexpected keyword argument 'enable_thinking'",
     [(f"{SITE}/sglang/srt/entrypoints/openai/serving_chat.py", "_apply_chat_template",
       "prompt_ids = self.tokenizer_manager.tokenizer.apply_chat_template(")], "transformers", "sglang"),
])
def test_each_form_names_the_package_whose_api_changed(exception, frames, package, caller):
    stack = [(Frame(path, 10, function), statement) for path, function, statement in frames]
    found = mismatch(exception, stack)
    assert found is not None and (found.package, found.caller) == (package, caller)


@pytest.mark.parametrize(("exception", "frames"), [
    ("AttributeError: module 'transformers.utils' has no attribute 'is_torch_fx_proxy'",
     [("/opt/app/app/model.py", "load", "transformers.utils.is_torch_fx_proxy(y)")]),
    ("ModuleNotFoundError: No module named 'vllm._C'", [(f"{SITE}/vllm/_custom_ops.py", "<module>", "import vllm._C")]),
    ("TypeError: ModelConfig.__init__() got an unexpected keyword argument 'foo'",
     [(f"{SITE}/vllm/engine/arg_utils.py", "create_model_config", "return ModelConfig(")]),
    ("ImportError: cannot import name 'helper' from 'mycompany.tools'", []),
    ("ValueError: takes 1 positional argument but 2 were given", []),
])
def test_no_library_boundary_names_nothing(exception, frames):
    stack = [(Frame(path, 10, function), statement) for path, function, statement in frames]
    assert mismatch(exception, stack) is None


def test_frames_are_owned_by_the_package_directory_under_site_packages():
    assert owner(Frame(f"{SITE}/vllm/worker/worker.py", 1, "f")) == "vllm"
    assert owner(Frame(f"{SITE}/transformers/modeling_utils.py", 1, "f")) == "transformers"
    assert owner(Frame("/opt/venv/lib/python3.11/site-packages/flashinfer/jit/core.py", 1, "f")) == "flashinfer-python"
    assert owner(Frame("/opt/app/vllm/vllm/engine/llm_engine.py", 1, "f")) == "vllm"  # a source checkout
    assert owner(Frame("/opt/app/train.py", 1, "f")) == ""


def test_modules_map_to_the_distributions_that_install_them():
    assert [distribution(m) for m in ("huggingface_hub", "flashinfer.sampling", "compressed_tensors.utils", "PIL")] \
        == ["huggingface-hub", "flashinfer-python", "compressed-tensors", "pillow"]


def test_the_mined_requirements_agree_with_the_version_matrix_for_transformers_and_torch():
    matrix = yaml.safe_load((Path(__file__).parents[1] / "doctor" / "data" / "version_matrix.yaml").read_text())
    pins = json.loads(PINS_PATH.read_text())["engines"]
    for engine, rows in matrix["backends"].items():
        for row in rows:
            release = row["latest"]
            assert release in pins[engine], f"{engine} {release} is not mined"
            mined = requirement(engine, release, "transformers")
            assert mined is not None and mined.specifier == row["transformers"][0], (engine, release)
            torch = pins[engine][release].get("torch", "")
            assert torch.lstrip("=") == row["torch"] or torch == row["torch"], (engine, release)


def test_a_release_older_than_every_mined_one_has_no_requirement():
    assert requirement("vllm", "0.1.0", "transformers") is None
    assert requirement("vllm", "not-a-version", "transformers") is None


def test_the_json_report_carries_the_dependency_and_validates(tmp_path):
    import subprocess
    import sys
    from importlib import resources

    import jsonschema

    log = tmp_path / "server.log"
    log.write_text("sglang==0.5.23\n" + HEADER
                   + f'  File "{SITE}/sglang/srt/utils/hf_transformers_utils.py", line 30, in <module>\n'
                   "    from huggingface_hub import snapshot_download_x\n"
                   "ImportError: cannot import name 'snapshot_download_x' from 'huggingface_hub'\n", encoding="utf-8")
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "doctor", "explain", str(log), "-o", str(out)],
                          capture_output=True, check=False)
    assert done.returncode == 1, done.stderr
    report = json.loads(out.read_text())
    schema = json.loads(resources.files("doctor.report").joinpath("report.schema.json").read_text())
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(report)) == []
    (remedy,) = report["sections"]["remedies"]
    assert remedy["dependency"]["package"] == "huggingface-hub" and remedy["dependency"]["release"] == "0.5.23"


def test_the_interpreters_own_frames_pass_the_import_on():
    stack = [(Frame(f"{SITE}/vllm/transformers_utils/config.py", 90, "get_config"), "importlib.import_module(name)"),
             (Frame("/usr/lib/python3.12/importlib/__init__.py", 90, "import_module"), ""),
             (Frame("<frozen importlib._bootstrap>", 1204, "_gcd_import"), "")]
    found = mismatch("ModuleNotFoundError: No module named 'transformers.models.qwen3_5_moe_x'", stack)
    assert found is not None and (found.package, found.caller) == ("transformers", "vllm")
    user = [(Frame("<stdin>", 1, "<module>"), "")]
    assert mismatch("TypeError: helper() got an unexpected keyword argument 'x'", user) is None


def test_any_installed_package_counts_as_a_library_but_a_users_module_does_not():
    installed = f"({SITE}/liger_kernel/ops/__init__.py)"
    assert mismatch(f"ImportError: cannot import name 'fused' from 'liger_kernel.ops' {installed}", []) is not None
    assert mismatch("ImportError: cannot import name 'fused' from 'myproj.ops' (/opt/app/myproj/ops.py)", []) is None


def test_an_attribute_missing_on_a_builtin_value_is_not_an_api_change():
    stack = [(Frame(f"{SITE}/vllm/worker/model_runner.py", 10, "execute"), "out = torch.ops.x(y)"),
             (Frame(f"{SITE}/torch/_ops.py", 10, "__call__"), "return self._op(*args)")]
    assert mismatch("AttributeError: 'NoneType' object has no attribute 'shape'", stack) is None
    found = mismatch("AttributeError: 'Tensor' object has no attribute 'untyped_storage_x'", stack)
    assert found is not None and found.package == "torch"


def test_a_package_the_release_does_not_require_itself_points_at_whoever_brought_it_in(tmp_path):
    assert requirement("vllm", "0.32.0", "uvicorn").specifier is None, "vLLM 0.32.0 gets uvicorn through fastapi"
    log = ("INFO 06-01 10:00:00 [api_server.py:1000] vLLM API server version 0.32.0\n" + HEADER
           + f'  File "{SITE}/vllm/entrypoints/launcher.py", line 40, in serve_http\n'
           "    config = uvicorn.Config(app, h11_max_incomplete_event_size=size)\n"
           "TypeError: Config.__init__() got an unexpected keyword argument 'h11_max_incomplete_event_size'\n")
    found = first(tmp_path, log)
    assert found["dependency"]["package"] == "uvicorn" and found["dependency"]["required"] is None
    assert "vllm 0.32.0 does not require uvicorn itself" in found["remedy"]["fix"][0]["text"]


@pytest.mark.parametrize(("exception", "path", "statement", "caller"), [
    # msgspec.Struct's __init__ wording (jcrist/msgspec msgspec/_core.c): vLLM's SamplingParams is a Struct
    ("TypeError: Unexpected keyword argument 'guided_decoding'", "trl/trainer/grpo_trainer.py",
     "sampling_params = SamplingParams(**generation_kwargs)", "trl"),
    ("TypeError: LLM.__init__() got an unexpected keyword argument 'device'", "verl/workers/rollout/vllm_rollout.py",
     "self.inference_engine = LLM(", "verl"),
    ("TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_extension_cls'",
     "lmcache/integration/vllm/utils.py", "args = vllm.EngineArgs(**kwargs)", "lmcache"),
])
def test_a_plugin_calling_the_engines_api_names_the_engine_and_the_plugin(exception, path, statement, caller):
    found = mismatch(exception, [(Frame(f"{SITE}/{path}", 10, "f"), statement)])
    assert found is not None and (found.package, found.caller) == ("vllm", caller)


def test_the_users_own_call_of_the_engines_api_is_a_usage_error_not_a_dependency():
    stack = [(Frame("/opt/app/run.py", 10, "main"), "sp = SamplingParams(guided_decoding=g)")]
    assert mismatch("TypeError: Unexpected keyword argument 'guided_decoding'", stack) is None
