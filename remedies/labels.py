"""Lines shaped like `Name: message` that are a paste's own labels, not an exception Python printed.

Python's traceback prints `Name: message`, or the bare `Name` when the message is empty: never a name and a
colon with nothing after it (cpython Lib/traceback.py TracebackException.format_exception_only). So:

- a bare heading, `Error:` / `Exception:` / `Output:` alone on its line (an issue form's or a person's heading
  over the paste), is not an exception; a class name that ends like one (`RuntimeError:`) still is, since a
  message that starts with a newline leaves it alone on its line;
- a labelled command line, `Command: vllm serve ...`, `Docker命令: docker run ...`, `Befehl: python -m ...` (any
  language's label), is the command that was run: a label that is not an exception class's name followed by a
  command line.
"""

from __future__ import annotations

import re

# The endings of Python's exception class names (and the few other words the crash scan takes as one).
EXCEPTION_SUFFIX = re.compile(r"(?:Error|Exception|Exit|Interrupt|Failure|Fault|Timeout|Abort|Warning)$")
# Generic words a heading uses that are no class Python would print unqualified.
GENERIC = frozenset({"error", "errors", "exception", "exceptions", "failure", "fault", "timeout", "abort", "warning"})
# A command line as pasted: an optional prompt, sudo, environment assignments, then a launcher of the engines,
# their containers and the tools around them.
COMMAND = re.compile(
    r"^\s{0,4}(?:[$#>]\s{1,4})?(?:sudo\s{1,4})?(?:[A-Z_][A-Z0-9_]{0,60}=\S{0,200}\s{1,4}){0,8}"
    r"(?:vllm|sglang|python[\d.]{0,4}|docker|podman|nerdctl|kubectl|helm|torchrun|ray|uv|uvx|pip[\d.]{0,4}|conda"
    r"|accelerate|deepspeed|llamafactory-cli|trl|lmcache_\w{1,40}|dynamo|bash|sh|srun|sbatch|nvidia-smi|curl"
    r"|text-generation-launcher|ollama)(?=\s|$)"
)


def label_line(name: str, message: str | None) -> bool:
    """Whether `name: message` is a paste's heading or a labelled command line, not an exception line; a bare
    name without a colon (`message` None: `StopIteration`, `AssertionError`) is never a label."""
    if message is None:
        return False
    bare = name.rsplit(".", 1)[-1]
    if not message.strip():
        return "." not in name and (bare.lower() in GENERIC or not EXCEPTION_SUFFIX.search(bare))
    return not EXCEPTION_SUFFIX.search(bare) and bool(COMMAND.match(message))
