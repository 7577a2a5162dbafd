"""A cause printed before the message that reports it is named first; Mooncake's TCP port exhaustion is the cause
of the PD transfer failures that follow it, and a transport bug.

The relations (remedies/consequences.yaml) say which component reports which other's failure, from the engines'
source. The Mooncake wordings are every release's LOG(ERROR) around a failed connect in
mooncake-transfer-engine/src/transport/tcp_transport/ (tcp_transport.cpp, tcp_transport_lane_impl.h), with the
asio error text for EADDRNOTAVAIL, in the shapes a PD deployment's log is pasted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain
from remedies.consequences import Relation, causes_first, load_relations
from remedies.loader import load_catalogue

PORTS = "QD-R-SGLANG-PD-MOONCAKE-TCP-PORTS"
TRANSFER = "QD-R-SGLANG-PD-TRANSFER-FAILED"

MOONCAKE_WORDINGS = [
    # 2025-05 - 2026-02: the one-shot connect inside startTransfer's try block
    "E1205 10:11:12.345678  1234 tcp_transport.cpp:545] TcpTransport::startTransfer encountered an ASIO exception. "
    "Slice details - source_addr: 0x7f3a40000000, length: 65536, opcode: 1, target_id: 2. Exception: connect: "
    "Cannot assign requested address",
    # from 2026-02 (connection pool release): the same catch, renamed
    "E0301 01:02:03.000004  88 tcp_transport.cpp:713] TcpTransport::startTransfer encountered an exception. Slice "
    "details - source_addr: 0x7f00, length: 4096, opcode: 1, target_id: 0. Exception: connect: Cannot assign "
    "requested address",
    # before 2025-05 (boost::asio)
    "E0412 08:00:01.000001   771 tcp_transport.cpp:394] TcpTransport: ASIO exception: connect: Cannot assign "
    "requested address [system:99]",
    # the pool-disabled getConnection helper and the pooled lanes
    "E0901 03:22:10.554100  9012 tcp_transport.cpp:618] TcpTransport::getConnection failed to create connection to "
    "10.0.0.6:15432. Error: connect: Cannot assign requested address",
    "E0901 03:22:10.554100  9012 tcp_transport_lane_impl.h:938] TCP lane connection to 10.0.0.6:15432 failed: "
    "connect: Cannot assign requested address (attempt failure 3)",
    # the metadata handshake's own connect (transfer_metadata_plugin.cpp, glog PLOG appends strerror [errno])
    "E1205 10:11:12.000100  1234 transfer_metadata_plugin.cpp:984] SocketHandShakePlugin: connect()10.0.0.6:12001: "
    "Cannot assign requested address [99]",
]
CONSEQUENCE = ("[2025-12-05 10:11:13 TP0] Prefill transfer failed for request rank=0 req.rid='4d1f0e' "
               "req.bootstrap_room=881726354 with exception KVTransferError(bootstrap_room=881726354): Failed to "
               "send kv chunk of 881726354 to 10.0.0.6:17012")
SHAPES = {
    "bare": "{line}\n{after}\n",
    "compose": "sglang-prefill-1  | {line}\nsglang-prefill-1  | {after}\n",
    "bold_in_backticks": "The prefill logs `sglang-prefill-1  | **{line}**` and then\n`sglang-prefill-1  | {after}`\n",
    "fenced": "### Logs\n\n```\n{line}\n{after}\n```\n",
    "cut": "{line}\n{cut}\n",
}


def findings(tmp_path: Path, text: str) -> list[explain.Finding]:
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return explain.explain_sources([log])


CASES = [(line, shape) for line in MOONCAKE_WORDINGS for shape in SHAPES]


@pytest.mark.parametrize(("line", "shape"), CASES, ids=[f"{i // len(SHAPES)}-{s}" for i, (_, s) in enumerate(CASES)])
def test_port_exhaustion_is_named_before_the_transfer_failure_it_causes(tmp_path, line, shape):
    text = SHAPES[shape].format(line=line, after=CONSEQUENCE, cut=CONSEQUENCE[:-9])
    found = findings(tmp_path, text)
    assert [f.remedy.id for f in found][:2] == [PORTS, TRANSFER]
    bug = found[0].engine_bug
    assert bug is not None and bug.engine == "mooncake-transfer-engine"
    assert "MC_TCP_ENABLE_CONNECTION_POOL=1" in found[0].fix[0].text


@pytest.mark.parametrize("line", [
    "ERROR:    [Errno 99] error while attempting to bind on address ('::1', 8000, 0, 0): cannot assign requested address",
    "E1203 08:14:51.102938 40213 tcp_transport.cpp:262] ClientSession::writeBody failed. Attempt to write data "
    "0x7f3a40000000 using buffer 0x7f3a40000000. Error: Connection reset by peer (value: 104)",
    "curl: (7) Failed to connect to ::1 port 8000: Cannot assign requested address",
])
def test_other_sockets_and_other_errnos_are_not_port_exhaustion(tmp_path, line):
    """A server's bind on an address the host lacks, a peer that went away, a client's own connect: not this."""
    assert PORTS not in [f.remedy.id for f in findings(tmp_path, line + "\n")]


def test_every_relation_names_catalogue_entries():
    catalogue = load_catalogue()
    ids = {entry.id for entry in catalogue}
    for relation in load_relations():
        assert relation.consequence in ids, relation.consequence
        for pattern in relation.causes:
            assert any(Relation("", "", (pattern,), ()).caused_by(i) for i in ids), pattern
        assert relation.sources and relation.reported_by


def sample(remedy_id: str) -> str:
    entry = load_catalogue().get(remedy_id)
    assert entry is not None
    return entry.samples[0]


@pytest.mark.parametrize(("cause", "effect"), [
    ("QD-R-TORCH-STORE-EADDRINUSE", "QD-R-TORCH-STORE-CONNECT"),
    ("QD-R-SGLANG-PREFILL-OOM", "QD-R-SGLANG-PD-BOOTSTRAP"),
    ("QD-R-SGLANG-PREFILL-OOM", TRANSFER),
])
def test_a_cause_printed_first_outranks_the_entry_that_reports_it(tmp_path, cause, effect):
    """The cause's own rank is not closer to the root than the consequence's: the order of the log decides."""
    catalogue = load_catalogue()
    assert catalogue.get(cause).rank >= catalogue.get(effect).rank
    ids = [f.remedy.id for f in findings(tmp_path, f"{sample(cause)}\n{sample(effect)}\n")]
    assert ids.index(cause) < ids.index(effect)


def test_a_cause_printed_after_the_consequence_keeps_the_ranked_order(tmp_path):
    ids = [f.remedy.id for f in findings(tmp_path, f"{sample('QD-R-TORCH-STORE-CONNECT')}\n"
                                                   f"{sample('QD-R-TORCH-STORE-EADDRINUSE')}\n")]
    assert ids.index("QD-R-TORCH-STORE-CONNECT") < ids.index("QD-R-TORCH-STORE-EADDRINUSE")


def test_a_cause_in_another_file_does_not_move(tmp_path):
    store, connect = tmp_path / "master.log", tmp_path / "worker.log"
    store.write_text(sample("QD-R-TORCH-STORE-EADDRINUSE") + "\n", encoding="utf-8")
    connect.write_text(sample("QD-R-TORCH-STORE-CONNECT") + "\n", encoding="utf-8")
    ids = [f.remedy.id for f in explain.explain_sources([connect, store])]
    assert ids.index("QD-R-TORCH-STORE-CONNECT") < ids.index("QD-R-TORCH-STORE-EADDRINUSE")


def test_causes_first_leaves_findings_without_a_relation_alone():
    assert causes_first([], ()) == []
