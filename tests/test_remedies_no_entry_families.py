"""Two families no entry named before, read from their sources.

A driver outside the Ray cluster: ray's Node._wait_and_get_for_node_address (python/ray/_private/node.py) logs
"Can't find a `node_ip_address.json` file from <session>. Have you started Ray instance using `ray start` or
`ray.init`?" every 10 s while it waits for a local session. Repeated, it names the entry; printed once (a node
still starting), it is no failure. A Go gateway's JSON decode error on a backend's non-JSON answer."""

from __future__ import annotations

from pathlib import Path

from remedies import explain

WAIT = ("2025-03-01 10:00:{s:02d},123\tINFO node.py:1126 -- Can't find a `node_ip_address.json` file from "
        "/tmp/ray/session_2025-03-01_10-00-00_000000_1. Have you started Ray instance using `ray start` or `ray.init`?\n")


def explained(tmp_path: Path, text: str) -> list[str]:
    log = tmp_path / "serve.log"
    log.write_text(text)
    return [f.remedy.id for f in explain.explain_sources([log])]


def test_the_repeating_wait_names_the_driver_outside_the_cluster(tmp_path):
    text = WAIT.format(s=0) + WAIT.format(s=10) + WAIT.format(s=20)[:90]
    assert explained(tmp_path, text) == ["QD-R-RAY-DRIVER-NOT-A-NODE"]


def test_one_wait_while_a_node_starts_is_no_failure(tmp_path):
    text = WAIT.format(s=0) + "2025-03-01 10:00:01,000\tINFO worker.py:1 -- Connected to Ray cluster.\n"
    assert explained(tmp_path, text) == []


def test_a_gateways_json_decode_error_on_a_non_json_upstream_names_the_backend(tmp_path):
    """Go's encoding/json (src/encoding/json/scanner.go stateBeginValue) "invalid character 'u' looking for
    beginning of value": the backend answered text (Envoy's "upstream connect error ..."), not JSON; a body cut
    before its last word still counts, an object-key error (malformed JSON, not a non-JSON answer) does not."""
    cut = '< HTTP/1.1 500 Internal Server Error\n{"error":{"code":500,"message":"invalid character \'u\' looking for beginning of va\n'
    assert explained(tmp_path, cut) == ["QD-R-HOST-GATEWAY-UPSTREAM-NOT-JSON"]
    key = "Error: invalid character 'x' looking for beginning of object key string\n"
    assert "QD-R-HOST-GATEWAY-UPSTREAM-NOT-JSON" not in explained(tmp_path, key)
