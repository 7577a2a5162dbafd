"""Signs that a failure is the engine's own bug, readable without a traceback.

Engine bugs are mostly reported as prose around a single line. These lines say "bug" in the words of the code
that printed them, whatever the rest of the paste looks like:

- a kernel's own architecture guard: vLLM's CUTLASS wrappers (csrc/cutlass_extensions/common.hpp,
  `enable_sm90_only` / `enable_sm100_only` / `enable_sm120_only`) print "This kernel only supports smXXX." from
  device code and trap, so the launch fails ("unspecified launch failure"): the engine dispatched a kernel built
  for another GPU generation than the one it runs on;
- an assertion of a kernel library the engine vendors, naming its C++ source file and line: DeepGEMM's
  DG_HOST_ASSERT (deep_gemm/include/deep_gemm/common/exception.hpp: "Assertion error (<file>:<line>): <cond>",
  older "Failed: Assertion error <file>:<line> '<cond>'" and "Assertion failed: <file>:<line>, condition:
  <cond>"), and a torch check inside the engines' csrc / sgl-kernel / FlashInfer / CUTLASS headers;
- a CUTLASS kernel's own status (NVIDIA/cutlass include/cutlass/cutlass.h `cutlassGetStatusString`: "Error
  Internal", "Error Arch Mismatch", ...), which vLLM's CUTLASS_CHECK (csrc/cutlass_extensions/common.hpp) raises
  as the whole RuntimeError message;
- the engine asking for a bug report in an ERROR record or an exception: vLLM's "Failed to advance FSM for
  request %s for tokens %s. Please file an issue." (vllm/v1/structured_output/backend_xgrammar.py), "This is a
  bug, please file an issue." (vllm/config.py assert_hashable), SGLang's "This should never happen."
  (sglang/srt/managers/schedule_batch.py);
- a bare `AssertionError` named in prose (no message: an `assert` without one) on a page about an engine;
- a Rust component's panic (`remedies.rustpanic`): a frontend or router that stopped on what it did not handle.

A sign is looked for only on lines that hold its literal (`Sign.literals`), so the scan stays cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import BinaryIO, Callable, Iterator

from remedies.advisories import engine_release
from remedies.bugfeatures import MAX_FEATURE_LINES, features
from remedies.crash import CARRIED_ON, Crash, Frame, exception_line, progress
from remedies.enginebug import ENGINE_WORD, NamedBug, Verdict, engine_in
from remedies.matcher import MAX_LINE, WRAP_SCAN_BYTES, Match
from remedies.model import UNKNOWN
from remedies.normalise import normalise
from remedies.prose import INLINE
from remedies.rustpanic import panic_site

_VENDORED = r"(?:deep_gemm|DeepGEMM|cutlass|cute|flashinfer|sgl[-_]kernel|csrc|flash_attn|vllm_flash_attn|kernels)"
# A C++ / CUDA source position inside a kernel library the engines vendor or build.
KERNEL_SITE = re.compile(r"(?P<path>[^\s:'\"()`,]{0,300}" + _VENDORED + r"[/\\][^\s:'\"()`,]{0,300}"
                         r"\.(?:cuh|cu|h|hpp|cc|cpp|c)):(?P<line>\d{1,7})")
_ASSERT_WORDS = re.compile(r"(?i)\bassert(?:ion)?\b|\bcheck failed\b|\bexpected .{1,200} to be true\b")
CUTLASS_STATUS = ("Error Misaligned Operand", "Error Invalid Data Type", "Error Invalid Layout",
                  "Error Invalid Problem", "Error Not Supported", "Error Workspace Null", "Error Internal",
                  "Error Arch Mismatch", "Error Insufficient Driver", "Error Memory Allocation")
_LEVELS_OF_FAILURE = ("ERROR", "CRITICAL", "FATAL")


@dataclass(frozen=True)
class Sign:
    """One engine-bug sign: the literals a line must hold (lower case) before `pattern` (and `also`, when set)
    run, whether it counts only on an ERROR record or an exception line (`failing`), and why it makes the
    failure the engine's."""

    name: str
    literals: tuple[str, ...]
    pattern: re.Pattern[str]
    reason: str
    failing: bool = False
    also: re.Pattern[str] | None = None

    def search(self, text: str) -> re.Match[str] | None:
        lowered = text.lower()
        if not any(literal in lowered for literal in self.literals):
            return None
        if self.also is not None and not self.also.search(text):
            return None
        return self.pattern.search(text)


SIGNS: tuple[Sign, ...] = (
    Sign("kernel architecture guard", ("only supports sm",),
         re.compile(r"(?i)\bkernel only supports (?P<arch>sm_?\d{2,3}[a-z]?)\b"),
         "A kernel's own architecture guard fired: the engine launched a kernel built only for {arch} on a GPU of "
         "another generation (the guard traps, so the launch fails), a dispatch the engine should not make."),
    Sign("vendored kernel assertion", ("assert", "check failed", "to be true"), KERNEL_SITE,
         "An assertion inside a kernel library the engine ships ({where}) failed: the engine called the kernel "
         "with shapes or a GPU it does not support, which no setting of yours asked for.", also=_ASSERT_WORDS),
    Sign("CUTLASS kernel status", ("error ",),
         re.compile(r"(?:^|[\s`*\"'(:])(?:(?:[\w.]{0,80}\.)?(?:RuntimeError|Error)|CUTLASS error): ?"
                    r"(?P<status>" + "|".join(CUTLASS_STATUS) + r")\b"),
         "A CUTLASS kernel inside the engine returned \"{status}\" (cutlassGetStatusString): the kernel refused "
         "or failed the problem the engine gave it, not a setting of yours."),
    Sign("engine asks for a bug report",
         ("file an issue", "file a bug", "open an issue", "report this", "this is a bug", "should never happen",
          "should not happen"),
         re.compile(r"(?i)\bplease (?:file|open|submit|report) (?:an? |this )?(?:issue|bug)\b|\bthis is a bug\b"
                    r"|\bplease report this\b|\bthis should (?:never|not) happen\b"),
         "The engine's own message calls the condition a bug and asks for an issue to be filed.",
         failing=True),
    # PyO3's DowncastError ("'%s' object cannot be converted to '%s'", pyo3 src/err/mod.rs): the engine's Python
    # wrapper passed its own Rust extension (sglang_router's Router, ...) a value of the wrong type
    Sign("Rust binding type conversion", ("cannot be converted to",),
         re.compile(r"'(?P<given>\w{1,40})' object cannot be converted to '(?P<target>\w{1,40})'"),
         "The engine's Python code handed its Rust extension (a PyO3 binding) a {given} where it takes a {target}: "
         "the wrapper should have filled or refused that argument itself, a bug of the wrapper.",
         also=re.compile(r"\bERROR\b|Error\b")),
    # reqwest's Error Display for a request it could not even build (reqwest src/error.rs Kind::Builder:
    # "builder error"), logged by the engine's Rust router at its own source line: the URL the router composed
    # for a worker is one HTTP cannot take (a gRPC worker probed over HTTP, a scheme-less address)
    Sign("Rust router request build error", ("builder error",),
         re.compile(r"\b(?:WARN|ERROR)\b.{0,120}src/[\w/]{1,120}\.rs:\d{1,6}.{0,600}\bbuilder error\b"),
         "The engine's Rust router could not build the HTTP request it sends a worker ({where}): it composed a URL "
         "HTTP cannot take for that worker, a dispatch of the router's own."),
    # ptxas refusing an instruction for the target it compiles (ptxas "Instruction '%s' not supported on .target
    # '%s'"): a kernel the engine builds (vLLM's csrc NVFP4 / CUTLASS kernels, sgl-kernel) emits an instruction the
    # architecture in its build list lacks (cvt.e2m1x2 on sm_121), a bug of the engine's build matrix
    # Rust's default panic hook (rust-lang/rust library/std/src/panicking.rs default_hook: "thread '{name}'
    # panicked at {location}:\n{msg}"): a Rust frontend / router of the engine stopped on an error or a state its
    # own code did not handle (an `unwrap` / `expect` on a failure) instead of reporting it
    Sign("Rust panic", ("panicked at",), re.compile(r"\bthread '[^'\n]{0,120}' panicked at\b"),
         "A Rust component of the serving stack panicked ({where}): its code met an error or a state it does not "
         "handle (an `unwrap` / `expect` on a failure) and stopped instead of reporting it, a bug of that "
         "component even where a setting underneath (an address, a missing service) set it off."),
    Sign("ptxas instruction not on target", ("not supported on .target",),
         re.compile(r"Instruction '(?P<instruction>[^'\n]{1,80})' not supported on \.target '(?P<arch>sm_\d{2,3}[af]?)'"),
         "ptxas refused the instruction {instruction} for {arch} while building the engine's kernels: the engine's "
         "build compiles a kernel for an architecture that lacks it, a bug of its build matrix."),
    # Python's json "Extra data" (Lib/json/decoder.py JSONDecoder.decode: a second document after the first) on
    # tool-call arguments: vLLM's chat preprocessing json.loads each assistant tool call's `arguments`
    # (vllm/entrypoints/chat_utils.py _postprocess_messages, a 400 for the request), so arguments holding several
    # calls' JSON objects back to back fail the turn and every later one; 0.32's vllm/renderers/chat_utils.py
    # catches JSONDecodeError there and coerces the arguments to {} with a warning
    Sign("tool-call arguments with several JSON documents", ("extra data",),
         re.compile(r"JSONDecodeError\W{0,3}:?\s{0,2}\W?Extra data\b|\bExtra data: line \d{1,6} column \d{1,7}"),
         "The serving layer parsed an assistant message's tool-call arguments as one JSON document and found several "
         "(one per tool call): vLLM's chat preprocessing json.loads them and fails the request (later releases "
         "coerce malformed arguments instead), a bug of the engine's tool-call handling, not of the request.",
         also=re.compile(r"(?i)tool[ _-]?calls?\b|tool[_ ]?parser|_postprocess_messages|chat_utils|serving_chat")),
)
# A Rust log line's source position (tracing / env_logger with file and line): `src/core/worker.rs:563:`.
RUST_SITE = re.compile(r"(?:^|\s)(?P<crate>\w{1,80}(?:::\w{1,80}){0,8}):? (?P<path>src/[\w/]{1,200}\.rs):(?P<line>\d{1,6})")
# `AssertionError` with no message (an `assert` without one) quoted in a sentence or a heading.
BARE_ASSERT = re.compile(r"(?:^|[\s`*\"'(\[])(?P<e>(?:[A-Za-z_]\w{0,40}\.){0,4}AssertionError)(?=[`*\"')\],.;!]|\s*$)")
_BARE_REASON = ("A bare AssertionError (an `assert` without a message) is an internal invariant of the engine's "
                "code, not a refusal of a setting.")


@dataclass(frozen=True)
class Signed:
    """A sign found on a line: which one, the line's text, the reason with its figures, and the kernel source
    position it names (as a frame), if any."""

    sign: Sign | None
    text: str
    reason: str
    frame: Frame | None


def sign_in(text: str, level: str | None = None, exception: bool = False) -> Signed | None:
    """The first sign a line carries; a `failing` sign counts only on an ERROR record or an exception line."""
    for sign in SIGNS:
        if sign.failing and not exception and level not in _LEVELS_OF_FAILURE:
            continue
        hit = sign.search(text)
        if hit is None:
            continue
        frame = kernel_frame(text)
        values = {k: v for k, v in hit.groupdict().items() if v}
        values["where"] = str(frame) if frame is not None else "its C++ source"
        return Signed(sign, text, sign.reason.format_map(_Blank(values)), frame)
    return None


class _Blank(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> str:
        return key


def kernel_frame(text: str) -> Frame | None:
    """The C++ / CUDA source position of a vendored kernel library, or the Rust source position a Rust log line
    names, as a frame."""
    hit = KERNEL_SITE.search(text)
    if hit is None and "panicked at" in text:
        return panic_site(text)
    if hit is None:
        rust = RUST_SITE.search(text)
        return Frame(rust.group("path"), int(rust.group("line")), rust.group("crate")) if rust else None
    function = "DG_HOST_ASSERT" if re.search(r"(?i)deep_?gemm", hit.group("path")) else ""
    return Frame(hit.group("path"), int(hit.group("line")), function)


def bare_assert(text: str) -> str | None:
    """A bare `AssertionError` quoted in a line of prose (no message after it), or None."""
    if "AssertionError" not in text:
        return None
    found = BARE_ASSERT.search(text)
    if found is None or text[found.end("e"):found.end("e") + 1] == ":" or text[found.end("e"):].lstrip("`*").startswith(":"):
        return None
    return found.group("e")


def signed_in(lines: list[str]) -> Signed | None:
    """The first sign among a log's first MAX_FEATURE_LINES lines (records and exception lines as read) that the
    server did not carry on after."""
    head = lines[:MAX_FEATURE_LINES]
    for number, raw in enumerate(head):
        line = normalise(raw[:MAX_LINE])
        text = line.text.strip()
        found = sign_in(text, line.level, exception_line(text) or _inline_exception(text))
        if found is not None and not survived(head, number):
            return replace(found, text=raw[:MAX_LINE].strip())
    return None


def survived(lines: list[str], index: int) -> bool:
    """Whether the server went on after line `index`: CARRIED_ON records of progress (`remedies.crash.progress`)
    follow it within LOOKAHEAD lines (a request that failed while the server kept serving is no crash)."""
    count = 0
    for raw in lines[index + 1:index + 1 + LOOKAHEAD]:
        count += progress(normalise(raw[:MAX_LINE]))
        if count >= CARRIED_ON:
            return True
    return False


LOOKAHEAD = 40


def _inline_exception(text: str) -> bool:
    return INLINE.search(text) is not None


def signed_bug(exception: str, lines: list[str], frame: Frame | None = None, line: str = "") -> NamedBug | None:
    """The engine bug a crash is by a sign on its own exception (printed on `line`) or, on a page that names an
    engine, on the log's lines; None when neither carries one or no engine is named."""
    own = sign_in(exception, exception=True)
    found = replace(own, text=line or exception) if own is not None else signed_in(lines)
    if found is None:
        return None
    at = found.frame or frame or logger_frame(found.text)
    engine = engine_in(frame, lines) or (_component(at) if found.frame is not None else None)
    if engine is None:
        return None
    named = _NAMED_CALL.findall(found.text)
    raised_at = (str(at) if at is not None else
                 f"{engine} `{named[-1]}` (the function the report names; no frame printed)" if named else
                 f"{engine} ({found.sign.name if found.sign else 'assert'}, no frame printed)")
    release = engine_release(lines, engine) if engine in ("vllm", "sglang") else None
    return NamedBug(engine, raised_at, release, (), None, at, reason=found.reason, features=features(lines))


# vLLM's record prefix names the logging call's file and line (vllm/logger.py `[%(fileinfo)s:%(lineno)d]`).
_LOGGER_SITE = re.compile(r"\[(?P<f>[\w.-]{1,80}\.py):(?P<n>\d{1,7})\]")
_NAMED_CALL = re.compile(r"`/?(?:\w+\.)*(\w{3,60})(?:\(\))?`")


def logger_frame(text: str) -> Frame | None:
    """The file and line a record's logger prefix names, as a frame (the record was printed there)."""
    hit = _LOGGER_SITE.search(text)
    return Frame(hit.group("f"), int(hit.group("n")), "") if hit else None


def signed_crashes(stream: BinaryIO) -> Iterator[Match]:
    """The first line of a pasted excerpt (at most WRAP_SCAN_BYTES) that carries a sign, or a bare
    AssertionError quoted in prose, as a crash, when the excerpt names vLLM or SGLang."""
    data = stream.read(WRAP_SCAN_BYTES + 1)[:WRAP_SCAN_BYTES]
    text = data.decode("utf-8", errors="replace")
    if not ENGINE_WORD.search(text):
        return
    lines = text.split("\n")
    for lineno, raw in enumerate(lines, 1):
        line = normalise(raw[:MAX_LINE])
        stripped = line.text.strip()
        inline = INLINE.search(stripped)
        found = sign_in(stripped, line.level, exception_line(stripped) or inline is not None)
        bare = bare_assert(stripped) if found is None and line.level is None else None
        if (found is None and bare is None) or survived(lines, lineno - 1):
            continue
        quoted = f"{inline.group('exception')}: {inline.group('message').strip()}" if inline is not None else ""
        exception = bare or (quoted if found is not None and found.sign is not None and found.sign.search(quoted)
                             else stripped)
        frame = found.frame or logger_frame(raw) if found is not None else None
        yield Match(UNKNOWN, lineno, raw.strip()[:400],
                    crash=Crash(lineno, exception[:400], exception[:400], frame, _component(frame), "exception"))
        return


def _component(frame: Frame | None) -> str:
    if frame is not None and re.search(r"(?i)deep_?gemm", frame.path):
        return "deep_gemm"
    return "cuda" if frame is not None and not frame.path.endswith(".rs") else "engine"


# Speculative decoding named in a log or its prose: the flags (vLLM --speculative-config, SGLang
# --speculative-algorithm) and the methods' names (vllm/config/speculative.py SpeculativeMethod, SGLang
# sglang/srt/speculative/spec_info.py SpeculativeAlgorithm: EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM; MTP).
SPECULATIVE = re.compile(r"(?i)--speculative[-_](?:config|algorithm|algo|model|method)\b"
                         r"|\b(?:MTP|NEXTN|EAGLE3?|speculative decoding)\b")
# Entries for a kernel's memory fault or index assert: with speculative decoding named, the fault is in the
# engine's draft / verify path (a kernel given positions past the KV cache it allocated, an input-preparation index
# past the tensors it sized: vllm/v1/spec_decode, sglang/srt/speculative), not a setting the entry's advice changes.
KERNEL_FAULTS = {
    "QD-R-CUDA-ILLEGAL-MEMORY-ACCESS":
        "The memory fault happened with speculative decoding on: the draft / verify kernels read past the KV cache "
        "the engine allocated for the request, an engine bug that no sizing setting fixes.",
    "QD-R-CUDA-DEVICE-ASSERT":
        "The index assert fired with speculative decoding on: the engine's draft / verify input preparation indexed "
        "past the tensors it sized for the accepted tokens, an engine bug that no request or sizing setting fixes.",
}


def speculative_fault(entry_id: str, read_lines: Callable[[], list[str]]) -> Verdict | None:
    """An engine bug beside a kernel-fault entry when the log names speculative decoding, else None; the log's
    lines are read (`read_lines`) only for those entries."""
    if entry_id not in KERNEL_FAULTS:
        return None
    head = read_lines()[:MAX_FEATURE_LINES]
    if not any(SPECULATIVE.search(line[:4096]) for line in head):
        return None
    engine = engine_in(None, head)
    if engine is None:
        return None
    reason = KERNEL_FAULTS[entry_id]
    release = engine_release(head, engine) if engine in ("vllm", "sglang") else None
    bug = NamedBug(engine, f"{engine} speculative decoding path (no frame printed)", release, (), None, None,
                   reason=reason, features=features(head))
    return Verdict(bug, "beside")


# Wrapper entries whose line heads the traceback of a process that failed while serving: SGLang's scheduler
# (python/sglang/srt/managers/scheduler.py run_scheduler_process, "Scheduler hit an exception: {traceback}"), vLLM's
# engine core (vllm/v1/engine/core.py run_engine_core, "EngineCore encountered a fatal error.") and its workers
# (vllm/v1/executor/multiproc_executor.py, "WorkerProc hit an exception."). Start-up failures have their own entries.
SERVING_WRAPPERS = ("QD-R-SGLANG-SCHEDULER-EXCEPTION", "QD-R-VLLM-ENGINE-CORE-FAILED", "QD-R-VLLM-WORKER-EXCEPTION")
MAX_CUT_LINES = 200  # lines of the wrapper's traceback read for its exception line
CUT_REASON = ("The serving loop raised with speculative decoding on, and its traceback is cut after the loop's own "
              "frames: no message of the user's setting is printed, and the draft / verify path runs inside that loop "
              "(vllm/v1/spec_decode, sglang/srt/speculative), so this is read as that path's bug, which no sizing or "
              "configuration setting fixes. Running without speculative decoding tells whether it is.")


def speculative_cut(entry_id: str, line: int, read_lines: Callable[[], list[str]]) -> Verdict | None:
    """An engine bug beside a serving wrapper's entry (SERVING_WRAPPERS) at 1-based `line` whose traceback is cut
    before its exception line, when the log names speculative decoding; else None (the log's lines are read only
    for those entries)."""
    if entry_id not in SERVING_WRAPPERS:
        return None
    lines = read_lines()
    after = lines[line:line + MAX_CUT_LINES]
    if any(exception_line(normalise(text[:MAX_LINE]).text.strip()) for text in after):
        return None
    head = lines[:MAX_FEATURE_LINES]
    if not any(SPECULATIVE.search(text[:4096]) for text in head):
        return None
    engine = engine_in(None, head)
    if engine is None:
        return None
    release = engine_release(head, engine) if engine in ("vllm", "sglang") else None
    bug = NamedBug(engine, f"{engine} serving loop, speculative decoding path (traceback cut before its exception)",
                   release, (), None, None, reason=CUT_REASON, features=features(head))
    return Verdict(bug, "beside")
