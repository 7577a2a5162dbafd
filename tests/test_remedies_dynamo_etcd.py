"""Dynamo's etcd unreachable is named in every form its runtime prints it.

lib/runtime/src/transports/etcd.rs wraps the connect error in "Unable to connect to etcd server at {urls}. Check etcd
server status" (the URLs of ETCD_ENDPOINTS joined with ", "), and the lease in "Unable to create lease. Check etcd
server status at {urls}". The Python bindings raise the error's outermost context (one per Dynamo process: frontend,
router, workers), and a Rust binary that unwraps it panics with "called `Result::unwrap()` on an `Err` value: ..."
after its JSON log records.
"""

from __future__ import annotations

from pathlib import Path

from remedies import explain_sources

ETCD = "QD-R-HOST-DYNAMO-ETCD-UNREACHABLE"
MESSAGE = "Exception: Unable to connect to etcd server at http://localhost:2379. Check etcd server status"


def ids(tmp_path: Path, text: str) -> list[str]:
    log = tmp_path / "dynamo.log"
    log.write_text(text, encoding="utf-8")
    return [f.remedy.id for f in explain_sources([log])]


def traceback(process: str, message: str = MESSAGE) -> list[str]:
    return ["Traceback (most recent call last):",
            f'  File "/opt/dynamo/lib/python3.12/site-packages/dynamo/sdk/cli/{process}.py", line 61, in main',
            "    runtime = DistributedRuntime(loop, False)",
            message]


def test_three_processes_tracebacks_interleaved_line_by_line_name_etcd(tmp_path):
    blocks = [traceback("frontend"), traceback("processor"), traceback("worker")]
    lines = [block[i] for i in range(4) for block in blocks]
    assert ids(tmp_path, "\n".join(lines) + "\n")[0] == ETCD


def test_three_compose_services_tracebacks_interleaved_name_etcd(tmp_path):
    services = ("frontend-1", "router-1", "worker-1")
    blocks = [[f"{name}  | {line}" for line in traceback(name)] for name in services]
    lines = [block[i] for i in range(4) for block in blocks]
    assert ids(tmp_path, "\n".join(lines) + "\n")[0] == ETCD


def test_several_etcd_endpoints_joined_by_commas_name_etcd(tmp_path):
    message = "Exception: Unable to connect to etcd server at http://10.0.0.2:2379, http://10.0.0.3:2379. Check etcd server status"
    assert ids(tmp_path, message + "\n") == [ETCD]


def test_a_rust_unwrap_panic_after_json_records_names_etcd(tmp_path):
    text = ('{"time":"2025-09-02T10:11:12.000Z","level":"INFO","target":"dynamo_runtime::distributed",'
            '"message":"Initializing distributed runtime"}\n'
            "thread 'main' panicked at lib/llm/src/entrypoint/input/common.rs:88:14:\n"
            "called `Result::unwrap()` on an `Err` value: Unable to create lease. Check etcd server status at "
            "http://etcd:2379\n\nCaused by:\n    0: grpc request error: status: Unavailable\n")
    assert ids(tmp_path, text)[0] == ETCD
