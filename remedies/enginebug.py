"""Is this root exception an engine bug? The one decision, for crashes and for the entries it overrules.

A root exception raised inside engine code (vllm/, sglang/, flashinfer/, sgl_kernel/) that no catalogue entry
ties to a setting of the user's is the engine's bug when it is one of:

- an internal invariant: AssertionError, IndexError, KeyError, UnboundLocalError, ZeroDivisionError, an
  AttributeError / TypeError on a `None` the code did not expect (Python's own wording: "'NoneType' object has
  no attribute 'x'", "'NoneType' object is not subscriptable"), a CUDA kernel's device-side assert, a host
  sync inside a CUDA-graph capture (cudaErrorStreamCaptureUnsupported: the engine's code called it there);
- an unsupported combination refused deep inside the engine (a ValueError / NotImplementedError saying "not
  supported") instead of by its argument checks at start-up (vLLM's arg_utils / config, SGLang's
  server_args): the combination should have been refused before the model loaded.

`advisories.engine_bug` already names crashes with a frame in engine code that are not USER_FACING; this module
widens that rule to the shapes the bugs are reported in: a crash pasted without its frames (a prose report, a
short fenced block) when the page names the engine; the TypeError / unsupported-combination cases above;
and an entry whose first fix is moot in the log's situation (`yields`) or whose cause is an engine kernel's
(`beside`). Each finding names the features and flags the log or its prose names (speculative decoding and its
method, the attention backend, sleep mode, the tool parser, KV-cache dtype, the model family, CUDA), which is
what the engine's tracker needs and what tells one report of a bug from another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from remedies.advisories import EngineBug, engine_bug, engine_release, load_advisories, native_bug, nearest_clean
from remedies.bugfeatures import MAX_FEATURE_LINES, features, mined_span
from remedies.crash import Crash, Frame
from remedies.kvtransfer import transfer_library, transfer_reason
from remedies.layergaps import LAYER_REASON, capability_gap, capability_reason, own_layer_attribute
from remedies.model import FixStep
from remedies.normalise import normalise
from remedies.packaged import PACKAGED_ENTRIES, image_torch
from remedies.packaged import REASON as PACKAGED_REASON
from remedies.source import Located
from remedies.templates import load_templates

ENGINE_CODE = re.compile(r"(?:^|[/\\])(vllm|sglang|flashinfer|sgl_kernel)[/\\]")
_ENGINE_OF = {"vllm": "vllm", "sglang": "sglang", "flashinfer": "flashinfer", "sgl_kernel": "sglang"}
_CLASS = r"^(?:[\w.]{0,200}\.)?"
# Python's own wordings of an internal invariant (cpython Objects/object.c "'%.100s' object has no attribute",
# Objects/abstract.c "'%.200s' object is not subscriptable" / "is not iterable" / "is not callable", and the
# wordings that name the type without "object": "unsupported operand type(s) for %.100s: '%.100s' and '%.100s'",
# "object of type '%.200s' has no len()", "argument of type '%.200s' is not iterable", Python/ceval.c "cannot
# unpack non-iterable %.200s object", Objects/object.c "'%s' not supported between instances of"), torch's
# device-side assert (c10/cuda/CUDAException.cpp) and the CUDA runtime's capture error (cudaError_t 900).
INTERNAL = re.compile(
    _CLASS + r"(?:AssertionError|IndexError|KeyError|UnboundLocalError|ZeroDivisionError|RecursionError)\b"
    + r"|" + _CLASS + r"(?:AttributeError|TypeError)\b.{0,200}\bNoneType\b"
    # a builtin container or scalar where the code expected its own object (a tensor, a config): "'list' object
    # has no attribute 'zero_'", "'tuple' object is not callable"
    + r"|" + _CLASS + r"(?:AttributeError|TypeError): '(?:list|tuple|dict|int|float|str|bool|set)' object "
    r"(?:has no attribute|is not (?:callable|subscriptable))"
    # the engine's own model classes (vllm/model_executor/models, sglang/srt/models) missing a member that
    # another engine path expects of them: one part of the engine out of step with another
    r"|" + _CLASS + r"AttributeError: '\w{1,100}For(?:CausalLM|ConditionalGeneration)' object has no attribute"
    r"|device-side assert triggered|operation not permitted when stream is capturing|cudaErrorStreamCaptureUnsupported"
    # torch's own refusal of a host sync inside a capture (aten/src/ATen/native/cuda/Copy.cu)
    r"|Cannot copy between CPU and CUDA tensors during CUDA graph capture"
    # torch's device check of an operator's inputs (aten/src/ATen/TensorIterator.cpp compute_types, aten/src/ATen/
    # native/TensorCompare.cpp and c10 checks: "Expected all tensors to be on the same device, but found at least two
    # devices"): inside a serving engine the engine places every tensor (weights offloaded to the CPU, the fused MoE
    # kernel's inputs), so two devices in one operator is its own code path out of step
    r"|Expected all tensors to be on the same device"
    # torch's index_put_ check (aten/src/ATen/native/TensorAdvancedIndexing.cpp make_index_put_iterator): the
    # engine's own tensors disagree in shape
    r"|shape mismatch: value tensor of shape .{1,80} cannot be broadcast to indexing result"
)
_USER_CLASS = re.compile(_CLASS + r"(?:ValueError|NotImplementedError|RuntimeError|AssertionError)\b")
UNSUPPORTED = re.compile(r"(?i)\b(?:not (?:yet |currently )?supported|unsupported|does(?: not|n't) support"
                         r"|not (?:yet )?implemented)\b")
# Where the engines check their arguments at start-up: a refusal raised there is the user's to act on.
STARTUP = re.compile(r"(?:^|[/\\])(?:vllm|sglang)[/\\](?:\w+[/\\]){0,6}(?:server_args|arg_utils|cli_args|envs|config|configs)"
                     r"(?:\.py$|[/\\])")
ENGINE_WORD = re.compile(r"(?i)(?<![A-Za-z0-9])(vllm|sglang)(?![A-Za-z0-9])")  # VLLM_USE_V1, sglang.launch_server
# The tool parser each model family's card and vLLM's recipes name (the entry QD-R-VLLM-TOOL-PARSER-MISMATCH's
# fix; vllm/entrypoints/openai/tool_parsers/qwen3coder_tool_parser.py and qwen3xml_tool_parser.py read the
# same XML <function=...> format; hermes_tool_parser.py reads <tool_call> JSON).
RIGHT_PARSERS: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (re.compile(r"(?i)Qwen3[.-]?5|Qwen3-Coder|Qwen3-Next"), frozenset({"qwen3_coder", "qwen3_xml"})),
    (re.compile(r"(?i)Qwen3-(?!Coder|Next)|Qwen2\.5"), frozenset({"hermes"})),
    # vLLM's tool-calling guide (docs/features/tool_calling.md): each family with the parser it documents
    (re.compile(r"(?i)Hermes-[23]"), frozenset({"hermes"})),
    (re.compile(r"(?i)Mistral-[\w.-]*Instruct"), frozenset({"mistral"})),
    (re.compile(r"(?i)Llama-3\.[123]"), frozenset({"llama3_json"})),
    (re.compile(r"(?i)Llama-4"), frozenset({"llama4_pythonic", "llama4_json"})),
    (re.compile(r"(?i)DeepSeek-V3"), frozenset({"deepseek_v3", "deepseek_v31"})),
    (re.compile(r"(?i)Kimi-K2"), frozenset({"kimi_k2"})),
    (re.compile(r"(?i)GLM-4\.[56]"), frozenset({"glm45"})),
    (re.compile(r"(?i)gpt-oss"), frozenset({"openai"})),
)
# The flag as typed, and as the engines print their arguments at start-up: vLLM's "non-default args: {...,
# 'tool_call_parser': 'qwen3_coder'}" (vllm/entrypoints/utils.py log_non_default_args) and the older
# "args: Namespace(..., tool_call_parser='qwen3_coder')", SGLang's "server_args=ServerArgs(model_path='...',
# tool_call_parser='qwen3_coder', ...)".
_PARSER = re.compile(r"--tool[-_]call[-_]parser[= ](?P<p>[\w-]{1,40})"
                     r"|\btool_call_parser['\"]?\s{0,2}[:=]\s{0,2}['\"](?P<q>[\w-]{1,40})['\"]")
_MODEL = re.compile(r"(?i)(?:--model(?:[-_]path)?[= ]|\bserve\s+|model(?:_path)?=['\"]?|['\"]model(?:_path)?['\"]:\s{0,2}['\"])"
                    r"(?P<m>[\w./-]{3,200})")
# Entries whose first fix is moot when the log shows the user already did it: the engine bug comes first.
YIELDS = ("QD-R-VLLM-TOOL-PARSER-MISMATCH",)
# Entries for a failure inside a kernel or a capture the engine's own code ran: named beside the entry when the
# root exception was raised in engine code.
BESIDE = ("QD-R-CUDA-DEVICE-ASSERT", "QD-R-CUDA-STREAM-CAPTURING")
# Entries for a command a kernel package generated and a tool refused: the package's bug when the log shows the
# command is that package's (FlashInfer's JIT writes build.ninja under ~/.cache/flashinfer: flashinfer/jit/cpp_ext.py).
BUILT_BY = {"QD-R-CUDA-NVCC-REJECTED-COMMAND": ("flashinfer", re.compile(r"(?i)[/\\]\.?cache[/\\]flashinfer[/\\]"
                                                                   r"|[/\\]flashinfer[/\\](?:jit|data|csrc)[/\\]"))}
# Entries whose cause the component's own source or documentation calls its behaviour, not a user's setting: named
# beside the entry as that component's bug, at the site its record prints (glog's "file.cpp:line]").
# Mooncake's TCP transport opens a socket per transfer unless its (default-off) pool is on, so a busy PD link runs
# out of ephemeral ports (kvcache-ai/Mooncake docs/source/troubleshooting/troubleshooting.md "TCP Transport").
COMPONENT_BUGS = {"QD-R-SGLANG-PD-MOONCAKE-TCP-PORTS": (
    "mooncake-transfer-engine", "tcp_transport.cpp (TcpTransport::startTransfer)",
    "Mooncake's TCP transport opens a new socket for every transfer unless its connection pool is turned on (off "
    "by default), so sustained transfers exhaust the local ports: the transport's own connection handling, which "
    "its troubleshooting guide documents, not an address or port the user chose.")}
_GLOG_SITE = re.compile(r"\b(?P<site>[\w.-]{1,80}\.(?:cpp|cc|h|hpp|cu)):(?P<n>\d{1,7})\]")
_LOGGER_SITE = re.compile(r"\[(?P<f>[\w.-]{1,80}\.py):(?P<n>\d{1,7})\]")


@dataclass(frozen=True)
class NamedBug(EngineBug):
    """An EngineBug with what makes it one, the features the log names, and the releases that raise it."""

    reason: str = ""
    features: tuple[str, ...] = ()
    mined: str = ""
    moot: str = ""

    @property
    def why(self) -> str:
        text = super().why
        extra = [self.reason] if self.reason else []
        if self.moot:
            extra.append(self.moot)
        if self.features:
            extra.append(f"The log names {', '.join(self.features)}: report the bug with that combination.")
        if self.mined:
            extra.append(self.mined)
        return " ".join([text, *extra])

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "reason": self.reason, "features": list(self.features),
                "mined": self.mined or None}


@dataclass(frozen=True)
class Verdict:
    """An engine bug and how it stands to the entry matched with it: 'first' (the entry's first fix is moot),
    'beside' (the entry stays, the bug is named with it) or 'crash' (no entry)."""

    bug: NamedBug
    place: str = "crash"
    dropped: int = field(default=0)


# A KeyError pasted without its frames is as often a registry refusing a user's name (transformers'
# CONFIG_MAPPING[model_type] on a model type it does not know yet, a LoRA or adapter name) as an engine's slip.
_NAME_LOOKUP = re.compile(_CLASS + r"KeyError\b")


def internal(exception: str, framed: bool = True) -> bool:
    """Whether an exception is an internal invariant of the code that raised it (see INTERNAL); without its
    raise frame (`framed` False) a KeyError does not count."""
    if not framed and _NAME_LOOKUP.search(exception):
        return False
    return bool(INTERNAL.search(exception))


def _unsupported_deep(exception: str, frame: Frame | None) -> bool:
    """A refusal of a combination raised in engine code outside its start-up argument checks."""
    if frame is None or not _USER_CLASS.search(exception) or not UNSUPPORTED.search(exception):
        return False
    path = frame.path.replace("\\", "/")
    return bool(ENGINE_CODE.search(path)) and not STARTUP.search(path)


# A library the engines call (an installed package, torch, Triton): an internal invariant raised there with an
# engine frame above it is the engine handing it what it cannot take. A KeyError there is a registry's refusal
# of a name (transformers' CONFIG_MAPPING), not counted.
_LIBRARY = re.compile(r"[/\\](?:site-packages|dist-packages|torch|triton)[/\\]")


def engine_caller(crash: Crash) -> Frame | None:
    """The deepest engine frame of a root exception raised inside a library the engine called, or None."""
    frame = crash.frame
    if frame is None or not _LIBRARY.search(frame.path) or _NAME_LOOKUP.search(crash.exception):
        return None
    return next((f for f in reversed(crash.frames[:-1]) if ENGINE_CODE.search(f.path.replace("\\", "/"))), None)


def engine_in(frame: Frame | None, lines: Iterable[str]) -> str | None:
    """The engine a crash belongs to: its raise frame's package, else the engine the page names most."""
    if frame is not None:
        found = ENGINE_CODE.findall(frame.path.replace("\\", "/"))
        if found:
            return _ENGINE_OF[found[-1]]
    counts: dict[str, int] = {}
    for line in lines:
        for word in ENGINE_WORD.findall(line[:4096]):
            counts[word.lower()] = counts.get(word.lower(), 0) + 1
    return max(counts, key=counts.__getitem__) if counts else _printed_by(lines)


def _printed_by(lines: Iterable[str]) -> str | None:
    """The engine whose own records a page without the engine's name holds: vLLM's logger format (vllm/logger.py
    `%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d]`, date `%m-%d %H:%M:%S`), else the package of the mined
    templates its lines match (at most MAX_PRINTED_LINES lines are looked up)."""
    looked = 0
    counts: dict[str, int] = {}
    index = load_templates()
    for line in lines:
        if _VLLM_RECORD.search(line[:200]) or _VLLM_PROCESS.search(line[:200]):
            return "vllm"
        if _SGLANG_RECORD.search(line[:200]):
            return "sglang"
        text = normalise(line[:4096]).text.strip()
        if len(text) < MIN_PRINTED or looked >= MAX_PRINTED_LINES:
            continue
        looked += 1
        hit = index.lookup(text)
        if hit is not None and hit.whole and hit.template.package in ("vllm", "sglang"):
            counts[hit.template.package] = counts.get(hit.template.package, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else None


_VLLM_RECORD = re.compile(r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})? \[[\w./-]{1,128}:\d{1,7}\]")
# vLLM's process prefix (vllm/utils decorate_logs: "(EngineCore_DP0 pid=…) ", "(APIServer pid=…) ", "(VllmWorker
# TP1 pid=…) " / "(Worker_TP1 pid=…) ") and SGLang's record with its rank prefix (python/sglang/srt/utils.py
# configure_logger: "[%(asctime)s{prefix}] " with prefix " DP0 TP0 EP0" etc.): the page is that engine's output.
_VLLM_PROCESS = re.compile(r"\((?:EngineCore(?:_DP\d{1,5})?|APIServer|VllmWorker(?: [A-Z]{2}\d{1,5}){0,4}"
                           r"|Worker(?:_[A-Z]{2}\d{1,5}){0,4}) pid=\d{1,10}\) ")
_SGLANG_RECORD = re.compile(r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?: (?:DP|TP|PP|EP|CP|ATTN_DP|MOE_DP)\d{1,5}){1,6}\] ")
MIN_PRINTED = 24
MAX_PRINTED_LINES = 200


def _bug(engine: str, raised_at: str, frame: Frame | None, lines: list[str], reason: str,
         located: Located | None = None, moot: str = "") -> NamedBug:
    release = engine_release(lines, engine) if engine in ("vllm", "sglang") else None
    matched: tuple[Any, ...] = ()
    if release is not None:
        matched = tuple(a for a in load_advisories() if a.covers(engine, release, raised_at, frame))
    clean = nearest_clean(engine, release, matched) if release and matched else None
    return NamedBug(engine, raised_at, release, matched, clean, frame, reason=reason, features=features(lines),
                    mined=mined_span(located), moot=moot)


def refusal(exception: str, frame: Frame | None, located: Located | None) -> bool:
    """Whether a crash is the engine refusing a setting, whatever its class: its message names a flag or asks
    the user to change something, or it was raised (the frame, else every mined site of its template) by the
    start-up argument checks (SGLang asserts many of its server_args checks: "Speculative decoding is
    currently not supported with Flex Attention backend", sglang/srt/server_args.py)."""
    if _ASKS.search(exception):
        return True
    if frame is not None and re.search(r"[/\\]", frame.path):
        return bool(STARTUP.search(frame.path.replace("\\", "/")))
    sites = located.sites if located is not None else ()
    return bool(sites) and all(STARTUP.search(site.where.split("::", 1)[0]) for site in sites)


_ASKS = re.compile(r"\s--[a-z][a-z-]{1,60}|(?i:\bplease (?:use|set|specify|pass|install|upgrade|reduce|increase)\b)")


def crash_verdict(crash: Crash, lines: list[str], located: Located | None = None) -> Verdict | None:
    """An engine bug for an unrecognised crash `advisories.engine_bug` did not name: an internal invariant
    (with its frame in engine code, or pasted without frames on a page that names the engine), or an
    unsupported combination refused deep in engine code; never a `refusal`."""
    frame = crash.frame
    gap = capability_gap(crash.exception, crash.frames or ((frame,) if frame else ()), located)
    if gap is not None:
        engine, site = gap
        return Verdict(_bug(engine, str(site), site, lines, capability_reason(engine, crash.exception), located))
    transfer = transfer_library(crash.exception, lines)
    if transfer is not None:
        engine = engine_in(frame, lines) or "vllm"
        library, stack_line = transfer
        return Verdict(_bug(engine, f"{library} (native crash: {stack_line})", frame, lines,
                            transfer_reason(library, engine), located))
    layer = own_layer_attribute(crash.exception, crash.frames)
    if layer is not None:
        return Verdict(_bug(engine_in(layer, lines) or "vllm", str(layer), layer, lines, LAYER_REASON, located))
    if refusal(crash.exception, frame, located):
        return None
    in_engine = frame is not None and ENGINE_CODE.search(frame.path.replace("\\", "/")) is not None
    unplaced = frame is None or not re.search(r"[/\\]", frame.path)  # no frame, or a bare file name
    caller = None if in_engine else engine_caller(crash)
    if internal(crash.exception, framed=in_engine or caller is not None) and (in_engine or unplaced or caller):
        engine = engine_in(frame if in_engine else caller, lines)
        if engine is None:
            return None
        where = (str(frame) if in_engine and frame is not None else f"{frame} (called from {caller})" if caller
                 else _printed_site(crash.exception, lines, engine))
        return Verdict(_bug(engine, where, frame, lines, _reason_internal(crash.exception), located))
    if _unsupported_deep(crash.exception, frame) and frame is not None:
        engine = engine_in(frame, lines) or "vllm"
        reason = ("The refusal was raised deep in engine code, not by its start-up argument checks: the "
                  "engine accepted a combination it cannot run, which it should have refused before loading.")
        return Verdict(_bug(engine, str(frame), frame, lines, reason, located))
    return None


def crash_bug(crash: Crash, lines: list[str], located: Located | None = None) -> EngineBug | None:
    """The engine bug an unrecognised crash is, if any: never a `refusal`; a bug its own component declares
    (`advisories.native_bug`) as `advisories.engine_bug` names it; else `crash_verdict`'s, with the known
    regressions `advisories.engine_bug` matched when it found none itself; else `advisories.engine_bug`'s."""
    native = native_bug(crash.exception) is not None
    if refusal(crash.exception, crash.frame, located) and not native:
        return None
    named = engine_bug(crash, lines)
    if named is not None and native:
        return named
    verdict = crash_verdict(crash, lines, located)
    if verdict is None:
        return named
    bug = verdict.bug
    if named is not None and named.advisories and not bug.advisories:
        bug = replace(bug, release=named.release, advisories=named.advisories, nearest_clean=named.nearest_clean)
    return bug


def entry_verdict(entry_id: str, line: str, root_exception: str | None, root_frame: Frame | None,
                  read_lines: Callable[[], list[str]]) -> Verdict | None:
    """An engine bug beside or instead of a matched entry: a YIELDS entry whose first fix the log already
    applied, a BESIDE entry whose root exception was raised in engine code. The log's lines are read
    (`read_lines`) only for those entries."""
    if entry_id in COMPONENT_BUGS:
        package, site, reason = COMPONENT_BUGS[entry_id]
        printed = _GLOG_SITE.search(line)
        where = f"{printed.group('site')}:{printed.group('n')} (the record's source position)" if printed else site
        # the component's own release is not in the engine's log and the engine's features do not tell its bugs
        # apart, so neither is read (the log is not read at all)
        return Verdict(NamedBug(package, where, None, (), None, None, reason=reason), "beside")
    if entry_id not in YIELDS and entry_id not in BESIDE and entry_id not in BUILT_BY and entry_id not in PACKAGED_ENTRIES:
        return None
    lines = read_lines()
    if entry_id in PACKAGED_ENTRIES:
        shipped = image_torch(lines)
        if shipped is None:
            return None
        return Verdict(_bug(engine_in(None, lines) or "torch", f"the image's torch ({shipped})", None, lines,
                            PACKAGED_REASON), "beside")
    if entry_id in BUILT_BY:
        package, built = BUILT_BY[entry_id]
        if not any(built.search(text[:8192]) for text in lines[:MAX_FEATURE_LINES]):
            return None
        reason = (f"The refused command line is {package}'s own (its JIT generated it for the installed toolkit), "
                  "not one the user wrote.")
        return Verdict(_bug(package, f"{package} JIT build command", None, lines, reason), "beside")
    in_engine = root_frame is not None and ENGINE_CODE.search(root_frame.path.replace("\\", "/")) is not None
    if entry_id in YIELDS:
        moot = _parser_moot(lines)
        if moot is None:
            return None
        engine = engine_in(root_frame if in_engine else None, lines) or "vllm"
        where = str(root_frame) if in_engine and root_frame is not None else _logger_site(line, engine)
        reason = (_reason_internal(root_exception) if root_exception else
                  "The tool parser raised while reading a reply in the format it was written for.")
        return Verdict(_bug(engine, where, root_frame, lines, reason, moot=moot), "first", 1)
    if entry_id in BESIDE and not in_engine:
        root_frame = kernel_frame(line)
        in_engine = root_frame is not None
    if entry_id in BESIDE and in_engine and root_frame is not None:
        engine = engine_in(root_frame, lines) or "vllm"
        reason = ("The failing kernel or capture was launched by the engine's own code path (its raise frame "
                  "is in the engine), not by a setting the message names.")
        return Verdict(_bug(engine, str(root_frame), root_frame, lines, reason), "beside")
    return None


# A device assert's own line names the kernel's source: CUDA's "<file>.cu:<line>: <kernel>: block: [..], thread:
# [..] Assertion ... failed." (torch c10/macros/Macros.h CUDA_KERNEL_ASSERT) and Triton's tl.device_assert, which
# prints the Python file of the @triton.jit kernel the same way.
_KERNEL_ASSERT = re.compile(r"(?P<path>[^\s:]{1,400}\.(?:py|cu|cuh)):(?P<line>\d{1,7}): (?P<func>[\w:<>]{1,200}): "
                            r"block: \[")


def kernel_frame(line: str) -> Frame | None:
    """The kernel a device assert's line names, when its source is engine code, as a frame; else None."""
    hit = _KERNEL_ASSERT.search(line)
    if hit is None or not ENGINE_CODE.search(hit.group("path").replace("\\", "/")):
        return None
    return Frame(hit.group("path"), int(hit.group("line")), hit.group("func"))


def _parser_moot(lines: list[str]) -> str | None:
    """Why 'use the parser the model card names' is moot: the log's parser is already that model's, or None."""
    parser = model = None
    for line in lines[:MAX_FEATURE_LINES]:
        named = _PARSER.search(line[:4096]) if parser is None else None
        parser = (named.group("p") or named.group("q")) if named else parser
        hit = _MODEL.search(line[:4096]) if model is None else None
        if hit and any(p.search(hit.group("m")) for p, _ in RIGHT_PARSERS):
            model = hit.group("m")
    if parser is None or model is None:
        return None
    right = next((parsers for pattern, parsers in RIGHT_PARSERS if pattern.search(model)), frozenset())
    if parser not in right:
        return None
    return (f"The log already runs --tool-call-parser {parser}, the parser {model} is documented with, so "
            "switching parsers is no fix.")


def _reason_internal(exception: str | None) -> str:
    return ("The exception is an internal invariant of the code that raised it (an assertion, an index or key "
            "lookup, a None the code did not expect, a kernel's bounds check), not a message refusing a setting.")


def _logger_site(line: str, engine: str) -> str:
    hit = _LOGGER_SITE.search(line)
    return f"{hit.group('f')}:{hit.group('n')} (the record's logger location)" if hit else f"{engine} (site not printed)"


def _printed_site(exception: str, lines: list[str], engine: str) -> str:
    """For a crash pasted without frames: the function the page names in backticks next to the exception, else
    a note that the site was not printed."""
    head = lines[:MAX_FEATURE_LINES]
    for index, line in enumerate(head):
        if exception[:60] in line:
            nearby = " ".join(head[max(0, index - 1):index + 1])
            calls = [n for n in _NAMED_CALL.findall(nearby) if n not in exception]
            if calls:
                return f"{engine} `{calls[-1]}` (the function the report names; no frame printed)"
    return f"{engine} (no frame printed)"


_NAMED_CALL = re.compile(r"`/?(?:\w+\.)*(\w{3,60})(?:\(\))?`")


def steps_for(verdict: Verdict, own: tuple[FixStep, ...]) -> tuple[FixStep, ...]:
    """The finding's steps: the bug's first when the entry yields (without its moot first step), the entry's
    then the bug's when named beside it, the bug's alone for a crash."""
    if verdict.place == "first":
        return (*verdict.bug.steps(), *own[verdict.dropped:])
    if verdict.place == "beside":
        return (*own, *verdict.bug.steps())
    return verdict.bug.steps()
