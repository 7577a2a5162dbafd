"""Fixes carry the log's own figures: named groups fill the templates, derived values come only from them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from remedies import CatalogueError, Matcher, explain_sources, load_catalogue
from remedies.figures import derive

TEMPLATED = {
    "id": "QD-R-VLLM-EXAMPLE",
    "severity": "error",
    "title": "Example",
    "literal": "needs",
    "pattern": r"(?P<max_len>\d+) tokens needs (?P<needed_gib>[\d.]+) GiB, (?P<available_gib>[\d.]+) GiB free",
    "why": "Because.",
    "fix": [{"text": "Set --max-model-len {fit_len} ({available_gib} GiB free).",
             "otherwise": "Lower --max-model-len."}],
    "source": ["vllm-project/vllm vllm/example.py"],
    "samples": ["262144 tokens needs 5.00 GiB, 2.31 GiB free"],
}


def load(tmp_path: Path, entry: dict):
    (tmp_path / "vllm.yaml").write_text(yaml.safe_dump({"component": "vllm", "entries": [entry]}))
    return load_catalogue(tmp_path)


def test_a_template_is_rendered_with_groups_and_values_derived_from_them(tmp_path):
    (remedy,) = load(tmp_path, TEMPLATED)
    (match,) = Matcher(load(tmp_path, TEMPLATED)).feed(TEMPLATED["samples"][0], 1)
    assert [s.text for s in match.fix] == ["Set --max-model-len 121104 (2.31 GiB free)."]  # 262144 * 2.31 / 5, per block
    assert [s.text for s in remedy.render_fix({})] == ["Lower --max-model-len."]


@pytest.mark.parametrize("text, message", [
    ("Set --max-model-len {nope}.", "nope are not named groups"),
    ("Set --max-model-len {fit_util}.", "fit_util are not named groups"),
    ("Set --max-model-len.", "must name figures"),
])
def test_a_template_naming_a_figure_the_pattern_does_not_capture_is_refused(tmp_path, text, message):
    entry = {**TEMPLATED, "fix": [{"text": text, "otherwise": "Lower it."}]}
    with pytest.raises(CatalogueError, match=message):
        load(tmp_path, entry)


def test_derivations_need_every_input_and_never_exceed_the_logged_length():
    assert derive({"max_len": "1000", "needed_gib": "1.0", "available_gib": "5.0"})["fit_len"] == "1000"
    assert "fit_len" not in derive({"max_len": "1000", "needed_gib": "0", "available_gib": "5.0"})
    assert derive({"free_gib": "7.34", "total_gib": "15.49"})["fit_util"] == "0.45"
    assert derive({"heads": "16"})["tp_choices"] == "1, 2, 4, 8, 16"
    assert derive({"fit_len": "121088", "max_len": "262144", "needed_gib": "5", "available_gib": "2.31"})["fit_len"] \
        == "121088"


@pytest.mark.parametrize("line, expected", [
    ("ValueError: To serve at least one request with the models's max seq len (262144), (5.00 GiB KV cache is "
     "needed, which is larger than the available KV cache memory (2.31 GiB). Based on the available memory, "
     "the estimated maximum model length is 121088.",
     "Set --max-model-len 121088 (the largest that fits the 2.31 GiB available; 262144 tokens need 5.00 GiB)."),
    ("ValueError: To serve at least one request with the models's max seq len (262144), (5.00 GiB KV cache is "
     "needed, which is larger than the available KV cache memory (2.31 GiB). Try increasing",
     "Set --max-model-len 121104 (the largest that fits the 2.31 GiB available; 262144 tokens need 5.00 GiB)."),
    ("Value error, User-specified max_model_len (262144) is greater than the derived max_model_len "
     "(max_position_embeddings=256 or model_max_length=None in model's config.json).",
     "max_position_embeddings is 256 in this checkpoint, not 262144: set --max-model-len 256 or less."),
    ("ValueError: Free memory on device (3.27/15.98 GiB) on startup is less than desired GPU memory utilization "
     "(0.9, 14.39 GiB)",
     "Or set --gpu-memory-utilization 0.18 or lower (only 3.27 of 15.98 GiB were free at start-up)."),
    ("ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).",
     "Pick --tensor-parallel-size from 1, 2, 4, 5, 8, 10 (the sizes that divide 40 attention heads; 3 does not); "
     "use data parallel (-dp) or --enable-expert-parallel for other GPU counts."),
    ("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8123): address already in use",
     "Find what holds port 8123 (ss -ltnp 'sport = :8123') and stop it, or pick another --port."),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity of "
     "79.19 GiB of which 512.00 MiB is free.",
     "GPU 3 had 512.00 MiB free of 79.19 GiB when 1.50 GiB more was asked for: stop other processes on it "
     "(nvidia-smi) or shrink what the engine holds, as below."),
])
def test_explain_renders_each_fix_with_the_numbers_of_this_log(tmp_path, line, expected):
    log = tmp_path / "server.log"
    log.write_text(line + "\n")
    texts = [step.text for finding in explain_sources([log]) for step in finding.steps]
    assert expected in texts


def test_every_number_in_a_rendered_fix_of_the_samples_is_in_the_log_or_derived_from_it():
    import re

    for remedy in load_catalogue():
        for sample in remedy.samples:
            hit = next(m for form in remedy.forms() if (m := form.regex.search(sample)))  # a variant's own pattern
            values = {k: v for k, v in hit.groupdict().items() if v}
            derived = set(derive(values).values()) - set(values.values())
            for step in remedy.render_fix(values):
                if not any(s.otherwise for s in remedy.fix if s.fields):
                    continue
                for number in re.findall(r"\d+(?:\.\d+)?", step.text):
                    generic = any(number in s.text or number in (s.otherwise or "") for s in remedy.fix)
                    assert number in sample or generic or any(number in d for d in derived), (remedy.id, number)
