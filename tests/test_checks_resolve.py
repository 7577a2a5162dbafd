"""QD-VER-007: an engine release whose exact pins the package index does not serve cannot be installed; the fix is
the nearest release whose pins all resolve."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from doctor import pkgindex
from doctor.cli.main import cli
from doctor.facts.probes import index
from tests.conftest import facts_with, run

SERVED = {"torch": ["2.13.0", "2.14.0", "2.14.1", "2.15.0"], "transformers": ["5.19.0", "5.22.0"],
          "flashinfer-python": ["0.7.0.post1", "0.7.2", "0.7.2.post1", "0.7.4"], "sglang-kernel": ["0.4.9", "0.4.10"]}


def _index(projects: dict[str, list[str]] = SERVED, status: str = "ok", error: str | None = None) -> dict:
    return {"url": "https://pypi.org/simple", "status": status, "error": error, "projects": projects, "seconds": 0.1}


def test_vllm_0_34_0_pins_a_flashinfer_the_index_does_not_serve_and_the_fix_is_a_resolvable_release() -> None:
    facts = facts_with(packages={"vllm": {"version": "0.34.0", "distribution": "vllm",
                                          "requires": ["torch==2.14.0", "flashinfer-python==0.7.3"]}}, index=_index())
    result = run(facts, backend="vllm", only=("QD-VER-007",))["QD-VER-007"][0]
    assert result.status.value == "fail"
    assert "flashinfer-python==0.7.3 (not on https://pypi.org/simple; nearest: 0.7.2.post1, 0.7.4)" in result.summary
    assert result.fix[0].startswith("pip install 'vllm==0.33.0'"), result.fix


def test_every_pin_served_passes() -> None:
    facts = facts_with(packages={"vllm": {"version": "0.33.0", "distribution": "vllm",
                                          "requires": ["torch==2.14.0", "flashinfer-python==0.7.2.post1"]}},
                       index=_index())
    result = run(facts, backend="vllm", only=("QD-VER-007",))["QD-VER-007"][0]
    assert result.status.value == "ok" and "all 2 exact pins of vllm 0.33.0" in result.summary


def test_a_dumped_release_is_judged_by_its_matrix_row() -> None:
    facts = facts_with(packages={"sglang": "0.5.23"}, index=_index())
    result = run(facts, backend="sglang", only=("QD-VER-007",))["QD-VER-007"][0]
    assert result.status.value == "ok", result.summary


def test_offline_and_not_asked_skip_with_the_reason() -> None:
    offline = facts_with(packages={"vllm": "0.34.0"}, index=_index({}, "unreachable", "pypi.org did not answer (ConnectError)"))
    result = run(offline, backend="vllm", only=("QD-VER-007",))["QD-VER-007"][0]
    assert result.status.value == "skip" and "ConnectError" in result.summary
    result = run(facts_with(packages={"vllm": "0.34.0"}), backend="vllm", only=("QD-VER-007",))["QD-VER-007"][0]
    assert result.status.value == "skip" and "check --index" in result.summary


def test_the_index_probe_reads_a_local_index_and_find_links_directory(tmp_path: Path) -> None:
    simple = tmp_path / "simple" / "flashinfer-python"
    simple.mkdir(parents=True)
    (simple / "flashinfer_python-0.7.4-py3-none-any.whl").touch()
    links = tmp_path / "wheels"
    links.mkdir()
    (links / "flashinfer_python-0.7.2.post1-py3-none-any.whl").touch()
    (links / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").touch()
    config = pkgindex.IndexConfig(f"file://{tmp_path / 'simple'}", (), (str(links),))
    found = index.probe(["flashinfer-python", "torch", "nothing-here"], config=config)
    assert found["status"] == "ok"
    assert found["projects"] == {"flashinfer-python": ["0.7.2.post1", "0.7.4"], "nothing-here": [],
                                 "torch": ["2.13.0+cpu"]}


def test_an_unreachable_index_is_recorded_not_raised() -> None:
    config = pkgindex.IndexConfig("http://127.0.0.1:9/simple")
    found = index.probe(["torch"], timeout_s=2, config=config)
    assert found["status"] == "unreachable" and "did not answer" in found["error"]


def test_pip_configuration_names_the_index(tmp_path: Path, monkeypatch) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example/simple/\nfind-links = /opt/wheels\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    for var in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        monkeypatch.delenv(var, raising=False)
    config = pkgindex.configured()
    assert config.index_url == "https://mirror.example/simple" and "/opt/wheels" in config.find_links
    monkeypatch.setenv("PIP_INDEX_URL", "https://other.example/simple")
    assert pkgindex.configured().index_url == "https://other.example/simple"


def test_check_index_with_a_dump_asks_the_index_and_judges_qd_ver_007(tmp_path: Path, monkeypatch) -> None:
    served = tmp_path / "simple"
    for project, files in {"torch": ["torch-2.14.0-cp312-cp312-manylinux_2_28_x86_64.whl"],
                           "flashinfer-python": ["flashinfer_python-0.7.4-py3-none-any.whl"]}.items():
        (served / project).mkdir(parents=True)
        for name in files:
            (served / project / name).touch()
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", f"file://{served}")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    dump = tmp_path / "env.txt"
    dump.write_text("PyTorch version              : 2.14.0+cu130\nCUDA used to build PyTorch   : 13.0\n"
                    "vLLM Version                 : 0.34.0\n", encoding="utf-8")
    done = CliRunner().invoke(cli, ["check", "--from", str(dump), "--index", "--only", "QD-VER-007", "-v"])
    assert "QD-VER-007" in done.output and "flashinfer-python==0.7.3" in done.output, done.output
