"""SGLang's PD transfer failure is named from either side and from every transport's own wording.

prefill.py / decode.py print "{Prefill|Decode} transfer failed for request rank={} {req.rid=} {req.bootstrap_room=}"
and append " with exception {}" only when the sender's failure_exception() raises; Mooncake's TCP transport
(tcp_transport.cpp) logs "ClientSession::writeBody failed. ... Error: {message} (value: {errno})" (older releases:
"Session::writeBody failed."); NIXL (nixl/conn.py) has its own lines. The Ascend backend
subclasses Mooncake's KV manager and prints Mooncake's lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources

PD = "QD-R-SGLANG-PD-TRANSFER-FAILED"
GLOG = "E0302 14:20:11.481920 9121 tcp_transport.cpp:262] "


def first_id(tmp_path: Path, text: str) -> str | None:
    log = tmp_path / "prefill.log"
    log.write_text(text, encoding="utf-8")
    found = explain_sources([log])
    return found[0].remedy.id if found else None


def test_the_prefill_sides_line_without_an_exception_names_the_transfer_failure(tmp_path):
    line = "[2026-03-02 14:20:11 TP3] Prefill transfer failed for request rank=3 req.rid='9c01' req.bootstrap_room=4471\n"
    assert first_id(tmp_path, line) == PD


def test_the_decode_sides_line_without_an_exception_names_the_transfer_failure(tmp_path):
    line = ("[2026-03-02 14:20:11 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='9c01' "
            "decode_req.req.bootstrap_room=4471\n")
    assert first_id(tmp_path, line) == PD


@pytest.mark.parametrize("session", ["ClientSession::writeBody failed.", "Session::writeBody failed.",
                                     "ServerSession::writeBody failed.", "ClientSession::readBody failed."])
def test_mooncakes_tcp_session_error_with_an_errno_names_the_transfer_failure(tmp_path, session):
    line = f"{GLOG}{session} Attempt to write data 0x7f00aa000000 using buffer 0x7f00aa000000. Error: Bad address (value: 14)\n"
    assert first_id(tmp_path, line) == PD


def test_the_prefill_line_with_the_transports_error_beside_it_names_the_transfer_failure_once(tmp_path):
    text = (f"{GLOG}ClientSession::writeBody failed. Attempt to write data 0x7f00aa000000 using buffer "
            "0x7f00aa000000. Error: Connection reset by peer (value: 104)\n"
            "[2026-03-02 14:20:11 TP0] Prefill transfer failed for request rank=0 req.rid='9c01' req.bootstrap_room=4471 "
            "with exception KVTransferError(bootstrap_room=4471): Decode instance could be dead, remote mooncake "
            "session 10.0.0.7:15021 is not alive\n")
    log = tmp_path / "prefill.log"
    log.write_text(text, encoding="utf-8")
    found = explain_sources([log])
    assert [f.remedy.id for f in found] == [PD]


@pytest.mark.parametrize("line", [
    "RuntimeError: NIXL transfer encountered ERR room=8812",
    "[2026-03-02 14:20:11 TP0] NIXL transport error for room 8812: NIXL_ERR_REMOTE_DISCONNECT",
    "Exception: KVSender transfer encountered an error.",
])
def test_the_other_transports_failures_name_the_transfer_failure(tmp_path, line):
    assert first_id(tmp_path, line + "\n") == PD


def test_another_line_about_a_room_is_not_a_transfer_failure(tmp_path):
    line = ("[2026-03-02 14:20:11 TP0] Deferred KV release for room 8812 timed out after 30s without a full drain ack "
            "from prefill; releasing anyway.\n")
    assert first_id(tmp_path, line) != PD
