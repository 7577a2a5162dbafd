"""lint on what users paste: articles, Markdown, chat text, Dockerfiles, manifests, notebooks."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from doctor.cli.main import cli
from doctor.lint import LintError, lint_path
from doctor.lint.extract import is_prose, snippets_from_text

SEED = Path(__file__).resolve().parents[1] / "tests" / "data" / "lint" / "seed-article.txt"
ARTICLE_IDIOMS = {"QL001", "QL002", "QL003", "QL004", "QL005", "QL006", "QL007", "QL008", "QL009", "QL010", "QL011",
                  "QL012", "QL013", "QL014", "QL015", "QL016", "QL017", "QL018", "QL019", "QL020", "QL021", "QL022",
                  "QL023", "QL024"}


def _qd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, timeout=60)


def _ids(findings) -> set[str]:
    return {f.rule_id for f in findings}


@pytest.mark.parametrize("suffix", [".txt", ".md", ".py", ""])
def test_the_seed_article_as_pasted_names_every_idiom(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"article{suffix}"
    shutil.copy(SEED, path)
    assert _ids(lint_path(path)) == ARTICLE_IDIOMS


def test_every_article_finding_points_at_the_line_that_holds_it() -> None:
    lines = SEED.read_text(encoding="utf-8").splitlines()
    for finding in lint_path(SEED):
        original = lines[finding.line - 1]
        key = re.split(r"[=(]", finding.found.replace("from sglang import ", ""))[0].strip()
        assert key.split(".")[-1] in original, (finding.rule_id, finding.line, original)


def test_the_article_exits_1_and_names_the_real_counterparts(tmp_path: Path) -> None:
    article = tmp_path / "article.md"
    shutil.copy(SEED, article)
    result = CliRunner().invoke(cli, ["lint", str(article)])
    assert result.exit_code == 1
    for real in ("--mem-fraction-static", "--max-num-seqs", "--max-running-requests", "quantization=\"fp8\"",
                 "--kv-offloading-size", "--cpu-offload-gb", "--nnodes", "vllm:num_requests_waiting",
                 "KV cache pool is full", "Qwen3_5MoeForConditionalGeneration", "0.17.0"):
        assert real in result.output, real


def test_copy_button_residue_and_chinese_comments_stay_inside_the_block() -> None:
    text = "下面是配置：\n\npython复制LLMEngine(\n    dtype=\"fp8\",   # 启用FP8\n)\n\n这是正文。\n"
    (snippet,) = snippets_from_text(text)
    assert snippet.lang == "python" and snippet.first_line == 3
    assert snippet.text.splitlines() == ["LLMEngine(", '    dtype="fp8",   # 启用FP8', ")"]


def test_english_copy_code_residue_and_sentences_end_blocks() -> None:
    text = ("Run the server like this:\n\nbashCopy code\nvllm serve Qwen/Qwen3.5-35B-A3B --dtype fp8\n\n"
            "Then open the port in your firewall and check the logs.\n")
    (snippet,) = snippets_from_text(text)
    assert snippet.lang == "shell" and snippet.first_line == 4
    assert snippet.text == "vllm serve Qwen/Qwen3.5-35B-A3B --dtype fp8"


def test_markdown_fences_and_unfenced_commands(tmp_path: Path) -> None:
    post = tmp_path / "post.md"
    post.write_text("# Deploy\n\n```bash\nvllm serve Qwen/Qwen3.5-35B-A3B \\\n  --dtype fp8\n```\n\n"
                    "Or in Python, no fence:\n\nllm = LLM(model=\"Qwen/Qwen3.5-35B-A3B\", max_requests=10)\n\n"
                    "SGLang:\n\n    python -m sglang.launch_server --model-path Qwen/Qwen3.5-35B-A3B --radix-size 4096\n")
    found = {f.rule_id: f.line for f in lint_path(post)}
    assert found == {"QL001": 4, "QL012": 10, "QL002": 14}


def test_prose_is_told_from_code() -> None:
    assert is_prose("这是一个测试。")
    assert is_prose("The server starts in about five minutes on one GPU.")
    assert not is_prose('engine = LLM(model="Qwen")  # 中文注释')
    assert not is_prose('print("中文字符串")')
    assert not is_prose("vllm serve Qwen/Qwen3.5-35B-A3B --port 8000")


def test_a_correct_guide_raises_nothing(tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text("Qwen3.5 on H200. A100 has no FP8 tensor cores, so use BF16 there.\n\n```bash\n"
                     "pip install vllm==0.26.0\nvllm serve Qwen/Qwen3.5-35B-A3B --tensor-parallel-size 2 "
                     "--max-model-len 32768 --gpu-memory-utilization 0.9 --reasoning-parser qwen3\n```\n\n"
                     "```python\nfrom vllm import LLM\nllm = LLM(model=\"Qwen/Qwen3.5-35B-A3B\", max_num_seqs=64)\n```\n"
                     "Watch `vllm:num_requests_waiting` in Prometheus.\n")
    assert lint_path(guide) == []


def test_dockerfile_run_cmd_entrypoint_and_pins(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text('FROM nvidia/cuda:12.8.0-runtime-ubuntu22.04\nRUN pip install vllm==0.8.5 \\\n'
                          '    && pip install pyspark\nENTRYPOINT ["vllm", "serve"]\n'
                          'CMD ["Qwen/Qwen3.5-35B-A3B", "--dtype", "fp8"]\n')
    found = {f.rule_id: f.line for f in lint_path(dockerfile)}
    assert found == {"QL022": 2, "QL001": 5}


def test_compose_service_command(tmp_path: Path) -> None:
    compose = tmp_path / "compose.yaml"
    compose.write_text("services:\n  sglang:\n    image: lmsysorg/sglang:latest\n    command: >\n"
                       "      python3 -m sglang.launch_server --model-path Qwen/Qwen3.5-35B-A3B\n"
                       "      --mem-fraction 0.8\n    environment:\n      - HF_TOKEN=x\n")
    assert {f.rule_id: f.line for f in lint_path(compose)} == {"QL003": 4}


def test_kubernetes_args_of_the_vllm_image_are_vllm_flags(tmp_path: Path) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: x}\n---\napiVersion: apps/v1\n"
                        "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: vllm\n"
                        "          image: vllm/vllm-openai:v0.26.0\n          args:\n            - Qwen/Qwen3.5-35B-A3B\n"
                        "            - --enable-lm-cache\n")
    findings = lint_path(manifest)
    assert [(f.rule_id, f.line) for f in findings] == [("QL006", 14)]


def test_helm_values_with_an_image_mapping(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("image:\n  repository: vllm/vllm-openai\n  tag: v0.26.0\n"
                      "extraArgs: ['--max-requests', '1000']\n")
    assert _ids(lint_path(values)) == {"QL012"}


def test_notebook_cells_point_at_the_json_line(tmp_path: Path) -> None:
    notebook = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["If you see RadixAttention table full, raise radix_size."]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["!pip install sglang==0.4.6\n", "from vllm import LLM\n", "llm = LLM(model='m', dtype='fp8')\n"]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "deploy.ipynb"
    path.write_text(json.dumps(notebook, indent=1))
    lines = path.read_text().splitlines()
    found = {f.rule_id: f.line for f in lint_path(path)}
    assert set(found) == {"QL020", "QL022", "QL001"}
    assert "RadixAttention" in lines[found["QL020"] - 1]
    assert "sglang==0.4.6" in lines[found["QL022"] - 1]
    assert "dtype='fp8'" in lines[found["QL001"] - 1]


def test_a_python_file_that_is_not_python_and_not_prose_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    with pytest.raises(LintError, match="not valid Python"):
        lint_path(broken)


@pytest.mark.parametrize("fmt", ["json", "junit", "md", "html"])
def test_lint_writes_every_report_format_with_ids_severity_and_fix(tmp_path: Path, fmt: str) -> None:
    ext = {"json": "json", "junit": "xml", "md": "md", "html": "html"}[fmt]
    out = tmp_path / f"lint.{ext}"
    result = CliRunner().invoke(cli, ["lint", str(SEED), "-o", str(out)])
    assert result.exit_code == 1
    text = out.read_text()
    assert "QL001" in text and "--kv-cache-dtype fp8" in text
    if fmt == "json":
        report = json.loads(text)
        by_id = {r["check_id"]: r for r in report["results"]}
        assert by_id["QL001"]["severity"] == "high" and by_id["QL001"]["status"] == "fail"
        assert by_id["QL019"]["status"] == "warn"
        assert by_id["QL001"]["evidence"]["line"] == 53


def test_warnings_gate_only_with_fail_on_warn(tmp_path: Path) -> None:
    claim = tmp_path / "claim.md"
    claim.write_text("The A100's FP8 tensor cores make this fast.\n")
    assert CliRunner().invoke(cli, ["lint", str(claim)]).exit_code == 0
    assert CliRunner().invoke(cli, ["lint", str(claim), "--fail-on", "warn"]).exit_code == 1


def test_a_yaml_alias_bomb_in_a_manifest_is_refused_quickly(tmp_path: Path) -> None:
    import time

    bomb = tmp_path / "bomb.yaml"
    lines = ["a0: &a0 [vllm, serve, --dtype, fp8]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 12)]
    bomb.write_text("\n".join(lines) + "\ncommand: *a11\n")
    started = time.monotonic()
    done = _qd("lint", str(bomb))
    assert done.returncode == 2 and "alias" in done.stderr and time.monotonic() - started < 10


def test_lint_refuses_to_write_its_report_over_its_input(tmp_path: Path) -> None:
    post = tmp_path / "post.md"
    post.write_text("vllm serve m --dtype fp8\n")
    before = post.read_bytes()
    done = _qd("lint", str(post), "-o", str(post))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and post.read_bytes() == before
