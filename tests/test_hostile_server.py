"""A server we probe or exercise may answer anything (issue 23): deep JSON, huge integers, NaN. Every reply
is read with the bounds of a user's file; `probe` ends with one line and exit 2, an exercise fails with it."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from doctor.safeio import JSON_MAX_DEPTH, BadReply, reply_json

DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize(("body", "words"), [
    (DEEP, f"nested deeper than {JSON_MAX_DEPTH} levels"),
    ('{"data": ' + DEEP + "}", "nested deeper"),
    ('{"data": [{"id": "m", "max_model_len": ' + "9" * 5000 + "}]}", "more than 100 digits"),
    ('{"usage": {"completion_tokens": NaN}}', "NaN is not a JSON number"),
    (b"\xff{}", "not UTF-8"),
])
def test_a_reply_beyond_the_bounds_is_a_value_error_naming_the_bound(body, words) -> None:
    with pytest.raises(BadReply, match=words) as caught:
        reply_json(body)
    assert isinstance(caught.value, ValueError)


def test_a_bounded_reply_decodes_as_json_does() -> None:
    assert reply_json(b'{"data": [{"id": "m", "max_model_len": 4096}]}') == {"data": [{"id": "m",
                                                                                        "max_model_len": 4096}]}


@pytest.fixture
def deep_server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = ('{"data": ' + DEEP + "}").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_probe_of_a_server_answering_deep_json_is_one_line_and_exit_2(deep_server: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "doctor", "probe", deep_server], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"qwen-doctor: error: {deep_server}/v1/models: server reply: nested deeper "
                                        f"than {JSON_MAX_DEPTH} levels"]
