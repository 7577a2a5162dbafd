"""How often `explain` still names the right entry first when a log arrives in the shapes real pastes take.

Each catalogue entry whose first sample is an exception line (`ValueError: ...`, the message as its engine's
source prints it) is put at the end of a traceback, and the traceback is wrapped in each shape: a code
viewer's gutter, a Markdown table cell, HTML escapes in `<details><pre>`, Docker's JSON lines, a newest-first
CloudWatch export, stern's pod prefix, two tensor-parallel workers printing at once, the traceback escaped
into one Python string, an IPython traceback.
A shape's scores are the share of entries named first, and named with their raise site (the traceback's
deepest frame, as the finding's root or crash frame), among those the plain traceback names first (the
control).

    python bench/explain_shapes.py [--limit N] [--shape NAME ...]
"""

from __future__ import annotations

import argparse
import html
import json
import sys
import tempfile
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remedies import explain_sources, load_catalogue  # noqa: E402
from remedies.crash import exception_line  # noqa: E402

VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"


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


SHAPES: dict[str, Callable[[list[str]], list[str]]] = {
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


def first_named(text: str, folder: Path) -> tuple[str | None, bool]:
    """The entry named first, and whether it names the raise site (the deepest frame's function)."""
    path = folder / "paste.log"
    path.write_text(text, encoding="utf-8")
    found = explain_sources([path])
    if not found:
        return None, False
    frame = found[0].root.frame if found[0].root is not None else found[0].crash.frame if found[0].crash else None
    return found[0].remedy.id, frame is not None and frame.function == "create_engine_config"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="at most N entries (0: all)")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="only these shapes")
    args = parser.parse_args()
    entries = [(r.id, r.samples[0].strip()) for r in load_catalogue()
               if r.samples and not r.stop and r.context_regex is None and r.severity == "error"
               and exception_line(r.samples[0].strip()) and ":" in r.samples[0]]
    entries = entries[:args.limit] if args.limit else entries
    shapes = args.shape or list(SHAPES)
    with tempfile.TemporaryDirectory() as folder:
        control = [(rid, sample) for rid, sample in entries
                   if first_named("\n".join(traceback(sample)) + "\n", Path(folder))[0] == rid]
        print(f"entries with an exception-line sample: {len(entries)}; named first as a plain traceback: "
              f"{len(control)}")
        print(f"{'shape':22s} {'named first':>16s} {'with raise site':>16s}")
        for shape in shapes:
            results = [(first_named("\n".join(SHAPES[shape](traceback(s))) + "\n", Path(folder)), rid)
                       for rid, s in control]
            right = sum(named == rid for (named, _), rid in results)
            sited = sum(named == rid and site for (named, site), rid in results)
            total = max(1, len(control))
            print(f"{shape:22s} {right:5d} ({right / total:6.1%}) {sited:6d} ({sited / total:6.1%})")


if __name__ == "__main__":
    main()
