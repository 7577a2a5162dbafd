"""A message is recognised however it was carried: prefixes, escapes, quoting and wrapping do not hide it."""

from __future__ import annotations

import io

import pytest

from remedies import Matcher, explain_sources
from remedies.normalise import normalise

KV = ("ValueError: To serve at least one request with the models's max seq len (262144), (5.00 GiB KV cache is "
      "needed, which is larger than the available KV cache memory (2.31 GiB). Based on the available memory, "
      "the estimated maximum model length is 121088. Try increasing `gpu_memory_utilization` or decreasing "
      "`max_model_len` when initializing the engine.")
KV_ID = "QD-R-VLLM-KV-MAX-LEN-TOO-LARGE"


@pytest.mark.parametrize("raw, text, level", [
    ("vllm-1  | ERROR 12-03 10:00:00 [core.py:12] boom", "boom", "ERROR"),
    ("2026-12-03T10:00:00.123456789Z INFO 12-03 10:00:00 [a.py:1] up", "up", "INFO"),
    ("(RayWorkerWrapper pid=123, ip=10.0.0.1) WARNING 12-03 10:00:00 [a.py:1] w", "w", "WARNING"),
    ("(EngineCore_DP0 pid=4242) ERROR 12-03 10:00:00 [core.py:1] e", "e", "ERROR"),
    ("(pid=77, ip=10.0.0.2) RuntimeError: x", "RuntimeError: x", None),
    ("[rank3]: RuntimeError: x", "RuntimeError: x", None),
    ("[1,0]<stderr>: RuntimeError: x", "RuntimeError: x", None),
    ("[2026-12-02 10:00:00 TP0] Decode batch", "Decode batch", None),
    ("2026-12-03 10:00:00,123\tINFO worker.py:1841 -- Connected to Ray cluster.", "Connected to Ray cluster.", "INFO"),
    ("[2026-12-03 10:00:00,123 E 123 456] gcs_server.cc:12: Failed", "Failed", "ERROR"),
    ("E1203 10:00:00.123456  1234 file.cc:12] glog", "glog", "ERROR"),
    ("Dec  3 10:00:00 host vllm[123]: INFO 12-03 10:00:00 [a.py:2] s", "s", "INFO"),
    ("24/12/03 10:00:00 ERROR Executor: lost", "lost", "ERROR"),
    ("2026-12-03T10:00:00+0000 gpu1 vllm[123]: ERROR 12-03 10:00:00 [core.py:1] iso", "iso", "ERROR"),
    ("Dec 03 10:00:00.123456 gpu1 vllm-serve@a.service[12]: RuntimeError: x", "RuntimeError: x", None),
    ("[pod/vllm-0/vllm] RuntimeError: x", "RuntimeError: x", None),
    ("2026-12-03T10:00:00.1234567Z ##[error]Process completed with exit code 1.",
     "Process completed with exit code 1.", None),
    ("INFO:     127.0.0.1:5000 - \"GET /health HTTP/1.1\" 200 OK", "127.0.0.1:5000 - \"GET /health HTTP/1.1\" 200 OK", "INFO"),
    ("> > RuntimeError: quoted\r", "RuntimeError: quoted", None),
    ("\x1b[1;31mERROR\x1b[0m 12-03 10:00:00 [a.py:1] red", "red", "ERROR"),
    ('  File "C:\\envs\\py\\Lib\\site-packages\\vllm\\engine.py", line 3, in run',
     '  File "C:/envs/py/Lib/site-packages/vllm/engine.py", line 3, in run', None),
    ("progress 10%\rprogress 100%\r\n", "progress 100%", None),
    ('{"message":"The input (61709 tokens) is longer than the model' + "\\'" + 's context length"}',
     '{"message":"The input (61709 tokens) is longer than the model' + "'" + 's context length"}', None),
])
def test_prefixes_escapes_and_quotes_are_removed_and_the_level_kept(raw, text, level):
    line = normalise(raw)
    assert (line.text, line.level) == (text, level)


def test_a_line_without_a_record_prefix_continues_the_record_before_it():
    assert normalise("INFO 12-03 10:00:00 [a.py:1] started").record
    assert normalise("Traceback (most recent call last):").record
    assert normalise("ValueError: bad").record
    assert normalise('  File "x.py", line 1, in f').record
    assert not normalise("needed, which is larger than the available KV cache memory").record


def scan(text: str) -> list[tuple[int, str]]:
    return [(m.lineno, m.remedy.id) for m in Matcher().scan(io.BytesIO(text.encode()))]


@pytest.mark.parametrize("prefix", [
    "", "vllm-1  | ", "2026-12-03T10:00:00.000Z ", "(EngineCore_DP0 pid=9) ERROR 12-03 10:00:00 [core.py:7] ",
    "(RayWorkerWrapper pid=5, ip=10.0.0.3) [rank1]: ", "> ", "\x1b[31m", "[1,0]<stderr>: ",
])
def test_a_message_under_any_prefix_is_matched(prefix):
    assert scan(f"INFO 12-03 10:00:00 [a.py:1] starting\n{prefix}{KV}\n") == [(2, KV_ID)]


def wrap(text: str, width: int, at_spaces: bool) -> list[str]:
    if not at_spaces:
        return [text[i:i + width] for i in range(0, len(text), width)]
    lines, current = [], ""
    for word in text.split(" "):
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return lines + [current]


@pytest.mark.parametrize("at_spaces", [True, False], ids=["web-page", "terminal"])
@pytest.mark.parametrize("width", [60, 80, 100])
def test_a_message_wrapped_over_several_lines_is_matched_once_on_its_first_line(width, at_spaces):
    lines = wrap(f"ERROR 12-03 10:00:00 [core.py:7] {KV}", width, at_spaces)
    log = "INFO 12-03 10:00:00 [a.py:1] starting\n" + "\n".join(lines) + "\nINFO 12-03 10:00:01 [a.py:1] next\n"
    found = scan(log)
    assert [rid for _, rid in found] == [KV_ID]
    assert 2 <= found[0][0] <= 1 + len(lines)


def test_the_live_feed_joins_wrapped_lines_too():
    matcher = Matcher()
    lines = wrap(KV, 80, at_spaces=True)
    hits = [m.remedy.id for n, line in enumerate(lines, start=1) for m in matcher.feed(line, n)]
    assert hits == [KV_ID]


def test_wrapped_figures_still_fill_the_fix(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("\n".join(wrap(KV, 80, at_spaces=False)) + "\n")
    (finding,) = explain_sources([log])
    assert finding.steps[0].text.startswith("Set --max-model-len 121088 (the largest that fits the 2.31 GiB")
