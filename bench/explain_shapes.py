"""How often `explain` still names the right entry first when a log arrives in the shapes real pastes take.

Two families of shapes, each scored against its own control:

- `traceback`: each catalogue entry whose first sample is an exception line (`ValueError: ...`, the message as
  its engine's source prints it) is put at the end of a traceback, and the traceback is wrapped in each shape:
  a code viewer's gutter, a Markdown table cell, HTML escapes in `<details><pre>`, Docker's JSON lines, a
  newest-first CloudWatch export, stern's pod prefix, two tensor-parallel workers printing at once, the
  traceback escaped into one Python string, an IPython traceback. Scored: named first, and named with its
  raise site (the traceback's deepest frame, as the finding's root or crash frame).
- `line`: EVERY error entry's first sample (exception lines, log records, native C/C++ messages, HTTP / JSON
  payloads) as the one failing line of a short log (`block`), put in the shapes prose-heavy and one-line
  pastes take: the message quoted in a sentence, in a Markdown H1 / H2 title, inside `code`, **bold** or CJK
  quotes; JSON-escaped in an error payload hard-wrapped at 80 columns; every line behind a grep `file:`,
  docker-compose, kubectl `--prefix`, journald or stern prefix; the message cut at 60 / 100 characters; the
  block's lines joined into one backtick span; Windows CRLF line ends. Scored: named first, and any finding
  at all. A shape that does not change a sample (a cut longer than it) is not counted for it.

A shape's scores are shares of the entries its family's control names first; the entries missed in most
shapes are listed last.

    python bench/explain_shapes.py [--family traceback|line] [--limit N] [--shape NAME ...] [--worst N]
"""

from __future__ import annotations

import argparse
import html
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remedies import explain_sources, load_catalogue  # noqa: E402
from remedies.crash import exception_line  # noqa: E402

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
    "ranks": interleaved,
    "escaped": lambda lines: [repr("\n".join(lines) + "\n")],
    "ipython": lambda lines: ["-" * 75, f"{lines[-1].split(':', 1)[0]}{' ' * 30}Traceback (most recent call last)",
                              "Cell In[3], line 1", "----> 1 llm = LLM(model='Qwen/Qwen3.5-35B-A3B')", "",
                              f"File {VLLM}/engine/arg_utils.py:1500, in EngineArgs.create_engine_config(self)",
                              "   1499 if bad:",
                              f"-> 1500     raise {lines[-1].split(':', 1)[0].rsplit('.', 1)[-1]}(", "", lines[-1]],
}

# --- the line family: the sample as the failing line of a short log -------------------------------------------

BEFORE = "INFO 12-05 10:00:00 [api_server.py:1052] vLLM API server version 0.11.0"
AFTER = "Process exited with code 1"
WRAP = 80


def block(sample: str) -> list[str]:
    """The sample as the failing line between a startup record and the shell's exit notice."""
    return [BEFORE, sample, AFTER]


def _cut(width: int) -> Shape:
    def shape(lines: list[str]) -> list[str] | None:
        return None if len(lines[1]) <= width else [lines[0], lines[1][:width]]
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
    "crlf": lambda lines: [x + "\r" for x in lines],
}
FAMILIES: dict[str, tuple[dict[str, Shape], Callable[[str], list[str]]]] = {
    "traceback": (TRACEBACK_SHAPES, traceback),
    "line": (LINE_SHAPES, block),
}


def first_named(text: str, folder: Path) -> tuple[str | None, bool, bool]:
    """The entry named first, whether it names the raise site (the deepest frame's function), and whether
    anything was found at all."""
    path = folder / "paste.log"
    path.write_bytes(text.encode("utf-8"))
    found = explain_sources([path])
    if not found:
        return None, False, False
    frame = found[0].root.frame if found[0].root is not None else found[0].crash.frame if found[0].crash else None
    return found[0].remedy.id, frame is not None and frame.function == "create_engine_config", True


def entries_of(family: str) -> list[tuple[str, str]]:
    """(id, first sample) of the entries a family scores: error entries that name a line alone."""
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
                other += (named == rid and site) if args.family == "traceback" else anything
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
