"""How often `explain` still names the right entry first when a log arrives in the shapes real pastes take.

Two families of shapes, each scored against its own control:

- `traceback`: each catalogue entry whose first sample is an exception line (`ValueError: ...`, the message as
  its engine's source prints it) is put at the end of a traceback, and the traceback is wrapped in each shape:
  a code viewer's gutter, a Markdown table cell, HTML escapes in `<details><pre>`, Docker's JSON lines, a
  newest-first CloudWatch export, stern's, grep's `file:`, docker-compose's, kubectl's and journald's prefix
  on every line, a Markdown quote, CRLF line ends, two tensor-parallel workers printing at once, the
  traceback escaped into one Python string, an IPython traceback; the traceback cut before its exception line,
  alone or under a C library's WARN line (`cut`, `cut-upstream`: no message to name, scored by the raise site
  alone). Scored: named first, and named with its raise site (the traceback's deepest frame, as the finding's
  root or crash frame).
- `line`: EVERY error entry's first sample (exception lines, log records, native C/C++ messages, HTTP / JSON
  payloads) as the one failing line of a short log (`block`), put in the shapes prose-heavy and one-line
  pastes take: the message quoted in a sentence, in a Markdown H1 / H2 title, inside `code`, **bold** or CJK
  quotes; JSON-escaped in an error payload hard-wrapped at 80 columns; every line behind a grep `file:`,
  docker-compose, kubectl `--prefix`, journald or stern prefix; the line cut at 60 / 100 characters (counted
  only where the cut keeps remedies.templates.MIN_PREFIX characters of the message, the least a cut message
  is told by: a timestamp and a class name are not a message); the
  block's lines joined into one backtick span; Windows CRLF line ends; the message without its class in a
  one-line question's code span, a bullet's bold, an issue title, a CJK title behind a wrapper's
  `[address=..., pid=...]`, a wrapped summary paragraph, and an issue title above a traceback cut before its
  exception line. Scored: named first, and any finding
  at all. A shape that does not change a sample (a cut longer than it) is not counted for it.
- `source`: the line shapes over exception lines printed from vLLM's and SGLang's mined raise templates that
  no entry covers (every SOURCE_EVERY-th, holes filled with a figure): scored as located in the engine's
  source (the first finding's raise site is that template), and any finding at all.

A shape's scores are shares of the entries its family's control names first; the entries missed in most
shapes are listed last.

    python bench/explain_shapes.py [--family traceback|line|source] [--limit N] [--shape NAME ...] [--worst N]
"""

from __future__ import annotations

import argparse
import html
import json
import textwrap
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remedies import explain_sources, load_catalogue  # noqa: E402
from remedies.crash import exception_line  # noqa: E402
from remedies.normalise import normalise  # noqa: E402
from remedies.links import load_links  # noqa: E402
from remedies.templates import MIN_PREFIX, load_templates, skeleton  # noqa: E402

VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"
Shape = Callable[[list[str]], "list[str] | None"]


def traceback(sample: str) -> list[str]:
    name = sample.split(":", 1)[0]
    return ["Traceback (most recent call last):",
            f'  File "{VLLM}/entrypoints/openai/api_server.py", line 1200, in run_server',
            "    await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)",
            f'  File "{VLLM}/engine/arg_utils.py", line 1500, in create_engine_config',
            f"    raise {name.rsplit('.', 1)[-1]}(",
            sample]


def interleaved(lines: list[str], lag: int = 2) -> list[str]:
    first = [f"(VllmWorker TP0 pid=71) ERROR 12-03 10:00:01 [multiproc_executor.py:470] {x}" for x in lines]
    second = [f"(VllmWorker TP1 pid=72) ERROR 12-03 10:00:01 [multiproc_executor.py:470] {x}" for x in lines]
    out: list[str] = []
    for step in range(len(lines) + lag):
        out += [first[step]] if step < len(first) else []
        out += [second[step - lag]] if 0 <= step - lag < len(second) else []
    return out


TRACEBACK_SHAPES: dict[str, Shape] = {
    "plain": lambda lines: lines,
    "gutter": lambda lines: [f"{55 + i:>4} | {x}" for i, x in enumerate(lines)],
    "table": lambda lines: ["| step | error |", "|---|---|",
                            "| serve | " + "<br>".join(x.replace("|", "\\|") for x in lines) + " |"],
    "html": lambda lines: ["<details><summary>log</summary>", "<pre>", *(html.escape(x) for x in lines), "</pre>",
                           "</details>"],
    "docker-json": lambda lines: [json.dumps({"log": x + "\n", "stream": "stderr", "time": "2026-12-03T10:00:00Z"})
                                  for x in lines],
    "export-newest-first": lambda lines: [f"2026-12-03T10:00:{i:02d}.000Z\t{x}" for i, x in enumerate(lines)][::-1],
    "stern": lambda lines: [f"vllm-7d9f8c6b5-x2k4p vllm {x}" for x in lines],
    "grep": lambda lines: [f"logs/serve-0.log:{x}" for x in lines],
    "compose": lambda lines: [f"vllm-1  | {x}" for x in lines],
    "kubectl": lambda lines: [f"[pod/vllm-0/vllm] {x}" for x in lines],
    "journald": lambda lines: [f"Dec 05 10:00:00 gpu-node-1 vllm[2481]: {x}" for x in lines],
    "quoted": lambda lines: [f"> {x}" for x in lines],
    "crlf": lambda lines: [x + "\r" for x in lines],
    "one-span": lambda lines: ["The server crashed with:", "`" + " ".join(x.strip() for x in lines) + "`"],
    "flattened": lambda lines: [" ".join(x.strip() for x in lines)],
    "ranks": interleaved,
    "escaped": lambda lines: [repr("\n".join(lines) + "\n")],
    "cut": lambda lines: lines[:-1],
    "cut-upstream": lambda lines: ["node-1:2222:2222 [1] misc/cudawrap.cc:188 NCCL WARN Cuda failure 1 'invalid argument'",
                                   *lines[:-1]],
    "ipython": lambda lines: ["-" * 75, f"{lines[-1].split(':', 1)[0]}{' ' * 30}Traceback (most recent call last)",
                              "Cell In[3], line 1", "----> 1 llm = LLM(model='Qwen/Qwen3.5-35B-A3B')", "",
                              f"File {VLLM}/engine/arg_utils.py:1500, in EngineArgs.create_engine_config(self)",
                              "   1499 if bad:",
                              f"-> 1500     raise {lines[-1].split(':', 1)[0].rsplit('.', 1)[-1]}(", "", lines[-1]],
}

CUT_SHAPES = ("cut", "cut-upstream")  # the traceback without its exception line: scored by its raise site alone

# --- the line family: the sample as the failing line of a short log -------------------------------------------

BEFORE = "INFO 12-05 10:00:00 [api_server.py:1052] vLLM API server version 0.11.0"
AFTER = "Process exited with code 1"
WRAP = 80
_CLASS = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)\s*:\s*")


def block(sample: str) -> list[str]:
    """The sample as the failing line between a startup record and the shell's exit notice."""
    return [BEFORE, sample, AFTER]


def readable_cut(line: str) -> bool:
    """Whether a cut line keeps MIN_PREFIX characters of its message (beyond a log prefix, an exception class and
    figures, compared as skeletons): the least a cut message can be told by (`remedies.templates`)."""
    text = _CLASS.sub("", normalise(line).text.strip(), count=1)
    return len(skeleton(re.sub(r"\d", "", text))) >= MIN_PREFIX


def _cut(width: int) -> Shape:
    def shape(lines: list[str]) -> list[str] | None:
        cut = lines[1][:width]
        return None if len(lines[1]) <= width or not readable_cut(cut) else [lines[0], cut]
    return shape


def _quoted(lead: str, tail: str) -> Shape:
    return lambda lines: [f"{lead}{lines[1]}{tail}"]


def _prefixed(prefix: Callable[[int], str]) -> Shape:
    return lambda lines: [prefix(i) + x for i, x in enumerate(lines)]


def _title(marks: str) -> Shape:
    return lambda lines: [f"{marks} {lines[1]}", "", "### Your current environment", "", "vLLM 0.11.0, 2x H100",
                          "", "### How to reproduce", "", "Run `vllm serve Qwen/Qwen3.5-35B-A3B` and it exits."]


def _json_wrapped(lines: list[str]) -> list[str]:
    """The message in an OpenAI-style error payload, cut every WRAP columns wherever that falls (`fold -w 80`)."""
    payload = json.dumps({"error": {"message": lines[1], "type": "BadRequestError", "param": None, "code": 400}})
    return ["Error: request failed:", *(payload[i:i + WRAP] for i in range(0, len(payload), WRAP))]


def _prose_wrapped(lines: list[str]) -> list[str]:
    """The message quoted in a paragraph a web page or an editor wrapped at spaces under WRAP columns."""
    return textwrap.wrap(f"When I start the server on two GPUs it fails with {lines[1]} and then exits, any idea?",
                         WRAP - 8, break_long_words=False, break_on_hyphens=False)


def _fold(lines: list[str]) -> list[str]:
    """Each line cut into WRAP-column pieces wherever that falls, as a terminal shows it."""
    return [line[i:i + WRAP] for line in lines for i in range(0, max(1, len(line)), WRAP)]


def bare(sample: str) -> str:
    """The sample's message as prose quotes it: without its log prefix and its exception class."""
    return _CLASS.sub("", normalise(sample).text.strip(), count=1)


def _cut_frames(lines: list[str]) -> list[str]:
    """A traceback up to its deepest frame, cut mid-frame: the page or the paste ends before its exception line."""
    return traceback(lines[1])[:4]


PROSE_SHAPES: dict[str, Shape] = {
    "bare-code-question": lambda lines: [f"Why does `vllm serve` fail with `{bare(lines[1])}` on two GPUs?"],
    "bare-bullet-bold": lambda lines: ["### Describe the bug", "", "- vLLM 0.11.0 on 2x H100",
                                       f"- it fails with **{bare(lines[1])}**", "- then the process exits"],
    "bare-title": lambda lines: [f"# [Bug]: Server fails at startup: {bare(lines[1])}", "",
                                 "### Your current environment", "", "vLLM 0.11.0, 2x H100"],
    "title-cut-traceback": lambda lines: [f"# [Bug]: {lines[1]}", "", "```", *_cut_frames(lines), "```"],
    "cjk-wrapper-title": lambda lines: [f"# 启动模型失败：[address=0.0.0.0:34567, pid=12345] {bare(lines[1])}", "",
                                        "使用 xinference 启动模型时报错。"],
    "summary-paragraph": lambda lines: ["## Summary", "", *textwrap.wrap(
        f"When serving the model with tensor parallel 2 the engine stops with {bare(lines[1])} and every request "
        "fails afterwards; it happens on every start.", WRAP - 8, break_long_words=False, break_on_hyphens=False)],
}

LINE_SHAPES: dict[str, Shape] = {
    "plain": lambda lines: lines,
    "prose": _quoted("When I start the server on two GPUs it fails with ", " and then exits, any idea why?"),
    "h1-title": _title("#"),
    "h2-title": _title("##"),
    "code": _quoted("The server dies with `", "` right after loading the weights."),
    "bold": _quoted("The server dies with **", "** right after loading the weights."),
    "cjk-corner": _quoted("启动服务时报错「", "」，然后进程退出。"),
    "cjk-curly": _quoted("启动服务时报错“", "”，然后进程退出。"),
    "json-wrapped": _json_wrapped,
    "grep": _prefixed(lambda i: f"logs/serve-0.log:{1041 + i}:"),
    "compose": _prefixed(lambda i: "vllm-1  | "),
    "kubectl": _prefixed(lambda i: "[pod/vllm-0/vllm] "),
    "journald": _prefixed(lambda i: f"Dec 05 10:00:0{i} gpu-node-1 vllm[2481]: "),
    "stern": _prefixed(lambda i: "vllm-7d9f8c6b5-x2k4p vllm "),
    "cut-60": _cut(60),
    "cut-100": _cut(100),
    "one-span": lambda lines: ["I get this when starting the server:", "`" + " ".join(lines) + "`"],
    "span-compose": lambda lines: ["Logs:", "`" + " ".join(f"vllm-1  | {x}" if i != 1 else f"vllm-1  | **{x}**"
                                                        for i, x in enumerate(lines)) + "`"],
    "prose-wrapped": _prose_wrapped,
    "fold-80": _fold,
    "crlf": lambda lines: [x + "\r" for x in lines],
    **PROSE_SHAPES,
}
FAMILIES: dict[str, tuple[dict[str, Shape], Callable[[str], list[str]]]] = {
    "traceback": (TRACEBACK_SHAPES, traceback),
    "line": (LINE_SHAPES, block),
    "source": (LINE_SHAPES, block),
}
SOURCE_PACKAGES = ("vllm", "sglang")
SOURCE_EVERY = 12  # every 12th mined raise template: about 180 of the two engines' user-facing ones


def first_named(text: str, folder: Path) -> tuple[str | None, bool, bool]:
    """The entry named first (for a finding located in the engines' source, `source:` and the located
    template), whether it names the raise site (the deepest frame's function), and whether anything was found
    at all."""
    path = folder / "paste.log"
    path.write_bytes(text.encode("utf-8"))
    found = explain_sources([path])
    if not found:
        return None, False, False
    first = found[0]
    frame = first.root.frame if first.root is not None else first.crash.frame if first.crash else None
    located = first.located or (first.root.located if first.root is not None else None)
    named = f"source:{located.hit.template.text}" if first.crash is not None and located is not None else \
        first.remedy.id
    return named, frame is not None and frame.function == "create_engine_config", True


def source_lines() -> list[tuple[str, str]]:
    """(`source:` template, exception line) of every SOURCE_EVERY-th mined raise template of vLLM and SGLang
    that no entry covers and that has MIN_PREFIX characters of fixed text, its holes filled with a figure."""
    links = load_links()
    chosen = sorted({(t.text, t.kind.partition(":")[2]) for t in load_templates().templates
                     if t.package in SOURCE_PACKAGES and t.raised and t.fixed >= MIN_PREFIX
                     and not links.entries(t) and "\n" not in t.text and "\x1b" not in t.text})
    return [(f"source:{text}", f"{kind}: {text.replace('{}', '7')}") for text, kind in chosen[::SOURCE_EVERY]]


def entries_of(family: str) -> list[tuple[str, str]]:
    """(id, first sample) of the entries a family scores: error entries that name a line alone; for `source`,
    raise templates no entry covers (`source_lines`)."""
    if family == "source":
        return source_lines()
    chosen = []
    for remedy in load_catalogue():
        if not remedy.samples or remedy.stop or remedy.context_regex is not None or remedy.severity != "error":
            continue
        sample = remedy.samples[0].strip()
        if family == "traceback" and not (exception_line(sample) and ":" in sample):
            continue
        chosen.append((remedy.id, sample))
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", choices=sorted(FAMILIES), default="line", help="which shapes (default: line)")
    parser.add_argument("--limit", type=int, default=0, help="at most N entries (0: all)")
    parser.add_argument("--shape", action="append", help="only these shapes")
    parser.add_argument("--worst", type=int, default=12, help="list the N entries missed in most shapes")
    parser.add_argument("--misses", action="store_true", help="print each miss: shape, entry, what was named")
    args = parser.parse_args()
    shapes, base = FAMILIES[args.family]
    unknown = sorted(set(args.shape or ()) - set(shapes))
    if unknown:
        parser.error(f"no {args.family} shape {', '.join(unknown)} (known: {', '.join(shapes)})")
    entries = entries_of(args.family)
    entries = entries[:args.limit] if args.limit else entries
    missed: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as folder:
        control = [(rid, sample) for rid, sample in entries
                   if first_named("\n".join(shapes["plain"](base(sample))) + "\n", Path(folder))[0] == rid]
        print(f"family {args.family}: {len(entries)} entries; named first in the plain shape (the control): "
              f"{len(control)}")
        third = "with raise site" if args.family == "traceback" else "any finding"
        print(f"{'shape':22s} {'named first':>16s} {third:>16s}")
        for shape in [s for s in shapes if s != "plain" and (not args.shape or s in args.shape)]:
            right = other = total = 0
            for rid, sample in control:
                lines = shapes[shape](base(sample))
                if lines is None:
                    continue
                total += 1
                named, site, anything = first_named("\n".join(lines) + "\n", Path(folder))
                right += named == rid
                if args.family == "traceback":  # a cut traceback has no message to name: its raise site counts
                    other += site if shape in CUT_SHAPES else (named == rid and site)
                else:
                    other += anything
                if named != rid:
                    missed[rid] += 1
                    if args.misses:
                        print(f"  miss {shape}: {rid} -> {named}: {lines[-1][:120]!r}")
            total = max(1, total)
            print(f"{shape:22s} {right:5d} ({right / total:6.1%}) {other:6d} ({other / total:6.1%})  of {total}")
    if args.worst and missed:
        print(f"entries missed in most shapes:")
        for rid, count in missed.most_common(args.worst):
            print(f"  {count:3d}  {rid}")


if __name__ == "__main__":
    main()
