"""HF reachability verdicts against a local mirror look-alike on 127.0.0.1: every scenario, within its timeout."""

from __future__ import annotations

import copy
import json
import socket
import time
from typing import Any

import pytest

from doctor.facts.model import Facts
from doctor.net import hf, probes
from tests.conftest import fixture_data, run
from tests.fake_hf import fake_hf, free_port

TIMEOUT_S = 1.0


def hf_facts(section: dict[str, Any]) -> Facts:
    data = copy.deepcopy(fixture_data("h200"))
    data["hf"] = section
    return Facts(data)


def verdicts(section: dict[str, Any]) -> dict[str, Any]:
    results = run(hf_facts(section), only=("QD-HF",))
    return {cid: rs if len(rs) > 1 else rs[0] for cid, rs in results.items()}


def probe_mirror(endpoint: str, model: str, token: str | None = None) -> tuple[dict[str, Any], float]:
    env = {"HF_ENDPOINT": endpoint, "HF_HOME": "/nonexistent-qd-test", **({"HF_TOKEN": token} if token else {})}
    t0 = time.monotonic()
    section = hf.probe(model, env=env, timeout_s=TIMEOUT_S, include_default=False)
    return section, time.monotonic() - t0


@pytest.fixture(scope="module")
def mirror() -> str:
    with fake_hf() as url:
        yield url


def test_a_mirror_serving_the_model_passes_metadata_and_data_plane(mirror: str):
    section, took = probe_mirror(mirror, "acme/ok")
    v = verdicts(section)
    assert v["QD-HF-001"].status.value == "ok" and v["QD-HF-001"].subject == "mirror"
    assert v["QD-HF-002"].status.value == "ok" and "metadata 200, download URL 200" in v["QD-HF-002"].summary
    assert took < 2 * TIMEOUT_S


@pytest.mark.parametrize("model,token,words", [
    ("acme/gated", None, "is gated"),
    ("acme/gated", "hf_abcdefghijklmnopqrstuvwxyz0123", "with your token"),
    ("acme/private", None, "requires authentication (401)"),
    ("acme/missing", None, "repository not found"),
])
def test_gated_token_and_not_found_get_distinct_verdicts(mirror: str, model: str, token: str | None, words: str):
    section, took = probe_mirror(mirror, model, token)
    v = verdicts(section)
    assert v["QD-HF-001"].status.value == "ok"
    assert v["QD-HF-002"].status.value == "fail" and words in v["QD-HF-002"].summary
    assert took < 2 * TIMEOUT_S


def test_gated_fix_says_to_accept_conditions_and_set_a_token(mirror: str):
    section, _ = probe_mirror(mirror, "acme/gated")
    assert "HF_TOKEN" in verdicts(section)["QD-HF-002"].fix[0]


def test_a_slow_mirror_is_cut_at_the_timeout(mirror: str):
    section, took = probe_mirror(mirror, "acme/slow")
    v = verdicts(section)
    assert v["QD-HF-001"].status.value == "fail" and "timeout" in v["QD-HF-001"].summary.lower()
    assert v["QD-HF-002"].status.value == "skip"
    assert took < 2 * TIMEOUT_S + 1.0


def test_a_refused_port_fails_fast_at_the_tcp_layer():
    section, took = probe_mirror(f"http://127.0.0.1:{free_port()}", "acme/ok")
    v = verdicts(section)
    assert v["QD-HF-001"].status.value == "fail" and "refused" in v["QD-HF-001"].summary
    assert took < TIMEOUT_S


def test_a_data_plane_redirect_to_a_blocked_host_fails_although_metadata_works(mirror: str):
    section, _ = probe_mirror(mirror, "acme/cdn-blocked")
    r = verdicts(section)["QD-HF-002"]
    assert r.status.value == "fail" and "redirect to 127.0.0.1" in r.summary and "unreachable" in r.summary


def test_a_failing_mirror_is_a_server_error(mirror: str):
    section, _ = probe_mirror(mirror, "acme/broken")
    assert "HTTP 503" in verdicts(section)["QD-HF-001"].summary


def test_default_endpoint_down_with_a_working_mirror_only_warns(mirror: str):
    section, _ = probe_mirror(mirror, "acme/ok")
    section["endpoints"].append({"role": "default", "url": hf.DEFAULT_ENDPOINT, "host": "huggingface.co", "port": 443,
                                 "dns": {"ok": False, "addresses": [], "error": "DNS failure: no name", "seconds": 0.01},
                                 "tcp": None, "api": None, "file": None, "redirect": None, "seconds": 0.01})
    by_subject = {r.subject: r.status.value for r in verdicts(section)["QD-HF-001"]}
    assert by_subject == {"mirror": "ok", "default": "warn"}


def test_offline_mode_probes_no_endpoint(mirror: str):
    section = hf.probe("acme/ok", env={"HF_ENDPOINT": mirror, "HF_HUB_OFFLINE": "1", "HF_HOME": "/nonexistent"})
    assert section["endpoints"] == []
    assert verdicts(section)["QD-HF-001"].status.value == "skip"


def test_without_hf_facts_the_checks_say_how_to_probe():
    data = copy.deepcopy(fixture_data("h200"))
    results = run(Facts(data), only=("QD-HF",))
    assert all(r.status.value == "skip" and "--hf" in r.summary for rs in results.values() for r in rs)


def test_endpoint_order_mirror_first_and_default_always_listed():
    assert hf.endpoints({"HF_ENDPOINT": "https://hf-mirror.example/"}) == [
        ("mirror", "https://hf-mirror.example"), ("default", hf.DEFAULT_ENDPOINT)]
    assert hf.endpoints({}) == [("default", hf.DEFAULT_ENDPOINT)]
    assert hf.offline({"TRANSFORMERS_OFFLINE": "1"}) and not hf.offline({"HF_HUB_OFFLINE": "0"})


def test_dns_failure_and_dns_hang_are_both_bounded(monkeypatch: pytest.MonkeyPatch):
    def no_such_host(*args: Any, **kw: Any) -> Any:
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    failed = probes.dns("huggingface.co", timeout_s=1.0)
    assert not failed["ok"] and "Name or service not known" in failed["error"]

    def hang(*args: Any, **kw: Any) -> Any:
        time.sleep(3)

    monkeypatch.setattr(socket, "getaddrinfo", hang)
    t0 = time.monotonic()
    stuck = probes.dns("huggingface.co", timeout_s=0.3)
    assert not stuck["ok"] and "DNS timeout" in stuck["error"] and time.monotonic() - t0 < 1.0


def test_proxy_settings_decide_what_must_answer():
    env = {"HTTPS_PROXY": "http://user:secret@proxy.corp:3128", "NO_PROXY": "internal.corp,localhost"}
    assert hf.proxy_for("https", "huggingface.co", env) == "http://user:secret@proxy.corp:3128"
    assert hf.proxy_for("https", "mirror.internal.corp", env) is None
    assert hf.proxy_for("http", "huggingface.co", {"https_proxy": "http://p:1"}) is None


def test_behind_a_dead_proxy_the_verdict_names_the_proxy_not_dns(monkeypatch: pytest.MonkeyPatch):
    port = free_port()
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:secret@127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    ep = hf.probe_endpoint("https://hf-mirror.example", "acme/ok", "main", None, TIMEOUT_S)
    assert ep["proxy"] == f"http://127.0.0.1:{port}" and not ep["tcp"]["ok"]
    section = {"model": "acme/ok", "revision": "main", "offline": False, "token_set": False,
               "endpoint_env": "https://hf-mirror.example", "endpoints": [{"role": "mirror", **ep}], "cache": {}}
    r = verdicts(section)["QD-HF-001"]
    assert r.status.value == "fail" and f"through proxy http://127.0.0.1:{port}" in r.summary
    assert "secret" not in json.dumps(section)
