"""A paste that ends in a failing record with no exception (a C library's source-position report, an ERROR record)
names it, unless the server carried on after it (remedies/lastrecord.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources

INFO = "INFO 05-01 10:00:00 [api_server.py:1052] vLLM API server version 0.10.1"
REPORTS = [
    "/build/nvshmem/src/host/transport/transport.cpp:153: non-zero status: 7 transport init failed",
    "node1:111:222 [0] transport/net_ib.cc:1200 NCCL WARN NET/IB : ibv_reg_mr_iova2 failed with error Bad address",
    "(VllmWorker TP0 pid=333) ERROR 05-01 10:00:05 [nixl_connector.py:700] Handshake with remote agent failed: "
    "{'remote_tp_size': 2, 'local_tp_size': 4, 'engine_id': 'ab",
    "[2025-05-01 10:00:05 TP0] ERROR mooncake_connector.py:88: transfer session to 10.0.0.2:17001 failed",
]


def explain(tmp_path: Path, lines: list[str]):
    path = tmp_path / "paste.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return explain_sources([path])


@pytest.mark.parametrize("report", REPORTS)
def test_a_paste_that_ends_in_a_failing_record_names_it(tmp_path, report):
    found = explain(tmp_path, [INFO, report])
    assert found and found[0].first.line == 2 and found[0].crash is not None


def test_the_first_report_of_the_group_a_paste_ends_with_is_the_root(tmp_path):
    found = explain(tmp_path, [INFO, REPORTS[0], "/build/nvshmem/src/host/init/init.cu:1007: non-zero status: 7 nvs"])
    assert found[0].first.line == 2


@pytest.mark.parametrize("after", [
    ['INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 404 Not Found'],
    [INFO, INFO, INFO],
])
def test_a_failing_record_the_server_carried_on_after_is_no_crash(tmp_path, after):
    assert explain(tmp_path, [INFO, REPORTS[2], *after]) == []


def test_a_library_report_at_info_level_is_no_failure(tmp_path):
    quiet = "node1:111:222 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol."
    assert explain(tmp_path, [INFO, quiet]) == []
