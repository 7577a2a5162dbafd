"""The matcher: the same answers line by line (live streams) and over files, whatever the bytes look like."""

from __future__ import annotations

import gzip
import io
import random

import pytest

from remedies import LogReadError, Matcher, load_catalogue
from remedies import matcher as matcher_module
from remedies.model import CONTEXT_LINES
from remedies.normalise import normalise
from remedies.reader import open_log

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB"
WRAPPER = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
HEALTHY = "INFO 12-02 15:43:11 [loader.py:447] Loading weights took 12.31 seconds"


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    return Matcher()


def scan_bytes(matcher: Matcher, data: bytes) -> list[tuple[int, str]]:
    return [(m.lineno, m.remedy.id) for m in matcher.scan(io.BytesIO(data))]


def naive(data: bytes) -> list[tuple[int, str]]:
    """Reference answer: every regex on every line, no prefilter; an entry (or a variant wording of it) with
    a context only when its context is in the CONTEXT_LINES lines before, and then it names the line alone."""
    found = []
    lines = [raw.decode("utf-8", errors="replace") for raw in data.split(b"\n")]
    for lineno, line in enumerate(lines, start=1):
        before = "\n".join(normalise(text).text for text in lines[max(0, lineno - 1 - CONTEXT_LINES):lineno - 1])
        hits: dict[str, bool] = {}
        for remedy in load_catalogue():
            for form in remedy.forms():
                if form.literal in line and form.regex.search(line) and (
                        form.context_regex is None or form.context_regex.search(before)):
                    hits[remedy.id] = hits.get(remedy.id, False) or form.context_regex is not None
        specific = [remedy_id for remedy_id, with_context in hits.items() if with_context]
        found += [(lineno, remedy_id) for remedy_id in (specific or list(hits))]
    return found


def test_every_anchor_is_contained_in_each_literal_it_stands_for(matcher):
    for anchor in matcher._anchors:
        assert all(anchor.text in r.literal for r in anchor.remedies)
    planned = sorted((r.id, r.literal) for a in matcher._anchors for r in a.remedies)
    assert planned == sorted((f.id, f.literal) for r in load_catalogue() for f in r.forms())


def test_prefiltered_scan_agrees_with_running_every_regex_on_every_line(matcher):
    rng = random.Random(7)
    samples = [s for r in load_catalogue() for s in r.samples]
    lines = [rng.choice(samples) if rng.random() < 0.2 else HEALTHY for _ in range(2000)]
    data = "\n".join(lines).encode()
    assert scan_bytes(matcher, data) == naive(data)


def test_an_older_wording_is_found_by_its_own_literal_and_reported_as_the_entry(matcher):
    old = "ValueError: You set image=2 (or defaulted to 1) in `--limit-mm-per-prompt`, but passed 3 image items in the same prompt."
    new = "At most 1 image(s) may be provided in one request."
    data = "\n".join([HEALTHY, old, HEALTHY, new]).encode()
    found = list(matcher.scan(io.BytesIO(data)))
    assert [(m.lineno, m.remedy.id) for m in found] == [(2, "QD-R-VLLM-MM-LIMIT"), (4, "QD-R-VLLM-MM-LIMIT")]
    assert all(m.remedy is load_catalogue().get("QD-R-VLLM-MM-LIMIT") for m in found)
    assert [m.remedy.id for m in Matcher().feed(old, 1)] == ["QD-R-VLLM-MM-LIMIT"]


def test_feed_matches_a_live_stream_line_by_line_with_the_lines_before_as_context():
    live = Matcher(context=2)
    assert live.feed(HEALTHY, 1) == []
    assert live.feed("INFO starting engine\n", 2) == []
    (match,) = live.feed(OOM.encode() + b"\r\n", 3)
    assert (match.remedy.id, match.lineno, match.line) == ("QD-R-TORCH-CUDA-OOM", 3, OOM)
    assert match.before == (HEALTHY, "INFO starting engine")


def test_scan_reports_line_numbers_and_context_on_both_sides(matcher):
    data = "\n".join(["a", "b", OOM, "c", "d", "e"]).encode()
    (match,) = matcher.scan(io.BytesIO(data))
    assert match.lineno == 3 and match.before == ("a", "b") and match.after == ("c", "d")


def test_lines_split_across_read_chunks_are_matched_with_correct_numbers(monkeypatch, matcher):
    data = ("\n".join([HEALTHY] * 7 + [OOM] + [HEALTHY] * 3 + [WRAPPER])).encode()
    expected = scan_bytes(matcher, data)
    monkeypatch.setattr(matcher_module, "CHUNK", 50)
    assert scan_bytes(matcher, data) == expected == [(8, "QD-R-TORCH-CUDA-OOM"), (12, "QD-R-VLLM-ENGINE-CORE-INIT-FAILED")]


def test_binary_garbage_and_invalid_utf8_do_not_stop_matching(matcher):
    junk = bytes(b for b in range(256) if b != 10) * 40
    data = junk + b"\n\xff\xfe\x00 " + OOM.encode() + b" \xc3\x28\n" + junk + b"\x00\n" + WRAPPER.encode()
    assert scan_bytes(matcher, data) == [(2, "QD-R-TORCH-CUDA-OOM"), (4, "QD-R-VLLM-ENGINE-CORE-INIT-FAILED")]


def test_a_huge_line_is_capped_and_the_following_lines_keep_their_numbers(monkeypatch, matcher):
    monkeypatch.setattr(matcher_module, "CHUNK", 1 << 16)
    huge = b"x" * (3 * matcher_module.MAX_LINE)
    data = huge + b"\n" + OOM.encode() + b"\n" + huge + OOM.encode() + b"\n"
    found = list(matcher.scan(io.BytesIO(data)))
    assert [(m.lineno, m.remedy.id) for m in found] == [(2, "QD-R-TORCH-CUDA-OOM"), (3, "QD-R-TORCH-CUDA-OOM")]
    assert all(len(m.line) <= matcher_module.MAX_SHOWN + 2 for m in found)
    assert all(len(c) <= matcher_module.MAX_SHOWN + 2 for m in found for c in m.before + m.after)


def test_a_message_deep_inside_a_huge_line_is_still_found(matcher):
    data = b"y" * (5 * matcher_module.MAX_LINE) + OOM.encode() + b"\n" + WRAPPER.encode() + b"\n"
    assert scan_bytes(matcher, data) == [(1, "QD-R-TORCH-CUDA-OOM"), (2, "QD-R-VLLM-ENGINE-CORE-INIT-FAILED")]


def test_healthy_lines_that_mention_memory_cache_and_graphs_match_nothing(matcher):
    lines = [
        "INFO 12-02 15:43:12 [gpu_worker.py:298] Available KV cache memory: 20.51 GiB",
        "[2026-12-02 15:43:12 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=13.95 GB",
        "[2026-12-02 15:43:12 TP0] KV Cache is allocated. #tokens: 834615, K size: 54.12 GB, V size: 54.12 GB",
        "node-1:77:77 [0] NCCL INFO Channel 00/24 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "Setting attention block size to 1072 tokens to ensure that attention page size is >= mamba page size.",
    ]
    assert scan_bytes(matcher, "\n".join(lines).encode()) == []


def test_gzip_is_detected_by_its_magic_bytes_not_the_extension(tmp_path, matcher):
    path = tmp_path / "server.log"
    path.write_bytes(gzip.compress(f"{HEALTHY}\n{OOM}\n".encode()))
    with open_log(path) as stream:
        assert [(m.lineno, m.remedy.id) for m in matcher.scan(stream)] == [(2, "QD-R-TORCH-CUDA-OOM")]


def test_a_plain_file_named_gz_is_read_as_plain_text(tmp_path, matcher):
    path = tmp_path / "server.log.gz"
    path.write_text(f"{OOM}\n")
    with open_log(path) as stream:
        assert len(list(matcher.scan(stream))) == 1


def test_corrupt_gzip_is_a_read_error_naming_the_file(tmp_path, matcher):
    path = tmp_path / "broken.gz"
    path.write_bytes(gzip.compress(f"{OOM}\n".encode() * 1000)[:200])
    with pytest.raises(LogReadError, match="broken.gz: corrupt gzip data"):
        with open_log(path) as stream:
            list(matcher.scan(stream))


@pytest.mark.parametrize("make", [lambda p: p / "missing.log", lambda p: p])
def test_missing_files_and_directories_are_read_errors(tmp_path, make):
    with pytest.raises(LogReadError, match="cannot open|is a directory"):
        with open_log(make(tmp_path)):
            pass


def test_dash_reads_standard_input(monkeypatch, matcher):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(OOM.encode())))))
    with open_log("-") as stream:
        assert [m.remedy.id for m in matcher.scan(stream)] == ["QD-R-TORCH-CUDA-OOM"]
