"""Fault campaign: variants of issue 23's classes run through the real CLI (`python -m doctor`), each judged by
the CLI's contract: exit 0/1, or 2 with one line on stderr (130 for Ctrl-C); never a traceback, an internal
error or a hang; no planted secret in stdout, stderr or any -o file; no raw escape sequence from user input on
stdout or stderr; no file outside the case's own folder changed.

Classes: secret forms (providers, Unicode separators, zero-width characters, wraps, continuations, JSON / YAML
values over lines, URL userinfo, env files, headers) in every format; -o targets (symlinks in the last or a
parent component, a directory, a FIFO, a device); deep or huge inputs (YAML alias bombs, deep YAML / JSON,
huge single lines, binary, /dev/zero and FIFOs as inputs); streams (closed stdout / stderr / stdin, EPIPE);
locales and PYTHONIOENCODING; escape sequences in profile names, model paths, hosts, flag values and file
names; a hostile server's replies (deep JSON, huge integers, NaN, escapes) read by probe and its exercises.
Second campaign: SIGTERM / SIGHUP mid-run (one line, 143 / 129, -o whole or absent, no temporary file); a deleted
current directory; -o to /dev/stdout, a symlink loop, a non-UTF-8 name; secrets in file names; HOME / TMPDIR /
XDG_CACHE_HOME unset or unusable; xz / bzip2 / zstd / zip / tar where gzip is read; /proc and /sys files; a
100 MiB line with no newline.
Third campaign: stdout on a terminal (click strips ANSI sequences from a pipe only, so the piped cases never saw
an ESC a command printed raw): escapes in a rendered command's env / model, a bundle's GPU name, a run record;
a valued engine option given as a switch (`reasoning-parser: true`, `--flag served-model-name`); run records
named by hand; collect_env dumps with CR-only line ends.
Fourth campaign: secrets in tools' own command-line forms (.netrc, mysql -pPW, sshpass -p, echo PW |
--password-stdin, wandb login KEY, Digest auth-params); bad deploy input with an existing -o / --report file (left
as it was); a --python that is no interpreter (writes without end, fails, answers another shape); a server that
trickles or never ends its replies, lists models in another shape or names a key twice; a profile naming a
key twice (PyYAML keeps the last silently); an -o file named with a newline (its `wrote` line stays one line).
Fifth campaign: each earlier class across every command and output: closed / full / broken stdout for every
command (a full disk is exit 2, one line), another user's symlink under every writer's -o / --report, deep inputs
in every reader (a checkpoint config, a flag's JSON, a notebook, a run record, an engine interpreter's answer),
secrets in collect's bundle, plan --from-log and probe's URL, name / value pairs, XML and TAB rows; numbers (NaN,
inf, 1e309, non-ASCII digits) in every numeric option and profile field; YAML tags, merge keys, streams; hostile
environment values (QWEN_DOCTOR_*, HF_ENDPOINT / proxies / index URLs that do not parse, COLUMNS, TERM, HOME);
sockets as inputs; SIGINT mid-write (through the installed command); hostile servers that send their head a
byte at a time, a gzip bomb, redirect loops, a file: redirect, a 1 MiB header or invalid UTF-8, read by probe,
the HF probe and the index reader; a bundle naming a key twice; a file or host named with a newline that would
forge a report line.
Sixth campaign: the campaign run whole (forks of one warmed interpreter); deploy --log naming an existing file or
a link to one; max-model-len: auto where the pinned release reads it and where it does not; a stream of nothing
but matching lines; -o on a full filesystem (root: a tmpfs filled up); a GCP private_key_id, grep's `/path/token:VALUE`, a token as a URL's user name.
Prints one row per case and the failures; exits 1 when any case fails.
Cases run in forks of one warmed interpreter (bench/forkserver.py) unless they need a start-up of their own
(signals, a terminal, a shell pipeline, the launcher, locale / PYTHON* / cache variables); --processes runs each
as `python -m doctor`, as the campaigns before the sixth did.
Usage: python bench/fault_variants.py [-k SUBSTRING] [--workers 2] [--tree DIR] [--json] [--processes]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.hostile_server import (ENDLESS, FILE_REDIRECT, GZIP_BOMB, HUGE_HEADER, REDIRECT_LOOP, SLOW_HEAD,
                                          TRICKLE, start as start_server)  # noqa: E402
from tests.support.terminal import on_terminal  # noqa: E402
TIMEOUT_S = 90
EARLY_STOP_S = 0.2  # python -m doctor's interpreter start-up, before its first statement, on a loaded machine
# C0 controls but tab and newline, DEL and C1 (U+0080-U+009F: U+009B is a CSI on many terminals).
CONTROLS = {chr(c) for c in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)]}

# Planted secrets: each must be absent from every output (whole or as its distinctive tail).
SECRETS = {
    "slack_webhook": "https://hooks.slack.com/services/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",
    "slack_app": "xapp-1-A0123456789-1234567890123-0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978",
    "stripe": "rk_live_51HqZx8Kd2Lm4Np6Rt8Vb0Xc2Ze4Gh",
    "sendgrid": "SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012",
    "npm": "npm_Zq8xWv3Lm9Np2Rt5Yb7Kc4Hd6Fj1Gs0Ae3Bq",
    "pypi": "pypi-AgEIcHlwaS5vcmcCJGQ4ZDU2ZjE3LWE5YjQtNGE5Yi05YjQ2LTk2ZmRjYTU4ZTk3ZAACKlszLCJm",
    "anthropic": "sk-ant-api03-Zq8xWv3Lm9Np2Rt5Yb7Kc4Hd6Fj1Gs0Ae3BZq8xWv3Lm9Np2Rt5Yb7Kc4Hd6Fj1Gs0Ae3BZq8xWv3Lm9Np2-AA",
    "databricks": "dapi0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    "digitalocean": "dop_v1_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
    "nvidia": "nvapi-Zq8xWv3Lm9Np2Rt5Yb7Kc4Hd6Fj1Gs0Ae3BZq8xWv3Lm9Np2Rt5Yb7Kc4H",
    "hf": "hf_Zq8xWv3Lm9Np2Rt5Yb7Kc4Hd6Fj1Gs0Ae",
    "password": "Tr0ub4dor-and-3-horses",
    "basic": "dXNlcjpwYXNzd29yZDEyMzQ1Njc4OTA=",
}
# The part of each secret whose presence proves a leak (a redactor may keep a provider prefix).
TAILS = {name: value[-14:] for name, value in SECRETS.items()}
TAILS["password"] = "3-horses"


def secret_lines() -> dict[str, str]:
    """One log / text form per variant: provider tokens in context, Unicode separators, wraps, continuations."""
    s = SECRETS
    return {
        "providers": "\n".join(f"INFO config {name}: {value}" for name, value in s.items() if name not in ("password", "basic")),
        "slack_webhook_bare": f"posting to {s['slack_webhook']} failed",
        "fullwidth_equals": f"HF_TOKEN\uff1d{s['hf']}",
        "fullwidth_colon": f"api_key\uff1a {s['npm']}",
        "nbsp_before": f"--api-key\u00a0{s['sendgrid']}",
        "zero_width_inside": f"token={s['hf'][:10]}\u200b{s['hf'][10:]}",
        "zero_width_name": f"pass\u200bword={s['password']}",
        "wrapped_token": f"Authorization: Bearer {s['anthropic'][:40]}\n{s['anthropic'][40:]}",
        "bearer_next_line": f"Authorization:\n  Bearer {s['digitalocean']}",
        "backslash_continuation": f"curl -H 'X-Api-Key: \\\n{s['databricks']}' http://x",
        "json_two_lines": f'{{"api_key":\n  "{s["stripe"]}"}}',
        "yaml_folded": f"password: >\n  {s['password'][:10]}\n  {s['password'][10:]}\n",
        "yaml_literal": f"secret: |\n  {s['password']}\n",
        "url_userinfo": f"pip install --index-url https://user:{s['password']}@pypi.example.com/simple x",
        "url_userinfo_encoded": f"git clone https://oauth2:{s['password'].replace('-', '%2D')}@gitlab.example.com/a.git",
        "env_file": f"export NVIDIA_API_KEY='{s['nvidia']}'\nPYPI_TOKEN=\"{s['pypi']}\"",
        "docker_auth_json": f'{{"auths": {{"ghcr.io": {{"auth": "{s["basic"]}"}}}}}}',
        "proxy_basic": f"Proxy-Authorization: Basic {s['basic']}",
        "curl_u": f"curl -u admin:{s['password']} https://example.com",
        "docker_login": f"docker login -u me -p {s['password']} ghcr.io",
        "aws_cli_value": f"aws configure set aws_secret_access_key {s['slack_app'][-40:]}",
        "netrc": f"machine pypi.example.com login me password {s['password']}",
        "netrc_token_a_line": f"machine pypi.example.com\n  login me\n  password {s['password']}",
        "mysql_attached": f"mysql -u root -p{s['password']} -h db",
        "sshpass": f"sshpass -p {s['password']} ssh root@node-2",
        "password_stdin": f"echo {s['password']} | docker login -u robot --password-stdin ghcr.io",
        "wandb_login": f"wandb login {s['digitalocean'][-40:]}",
        "digest_params": f'Authorization: Digest username="me", realm="r", response="{s["password"]}"',
        "k8s_env_entry": f"env:\n- name: NVIDIA_API_KEY\n  value: {s['password']}",
        "json_env_entry": f'[{{"name": "HF_TOKEN", "value": "{s["password"]}"}}]',
        "xml_element": f"<server><password>{s['password']}</password></server>",
        "nuget_attributes": f'<add key="ClearTextPassword" value="{s["password"]}" />',
        "password_tab": f"password\t{s['password']}",
        "gcp_private_key_id": f'{{"type": "service_account", "private_key_id": "{s["databricks"][4:]}"}}',
        "grep_path_token": f"/srv/app/.cache/huggingface/token:{s['databricks'][4:]}",
        "url_token_user": f"git clone https://{s['databricks'][4:]}@github.com/org/repo.git",
        "url_token_oauth_basic": f"https://{s['databricks'][4:]}:x-oauth-basic@github.com/org/repo",
    }


@dataclass
class Case:
    name: str
    klass: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    stdin: bytes | None = None
    codes: tuple[int, ...] = (0, 1, 2)
    secrets: tuple[str, ...] = ()
    closed: tuple[int, ...] = ()
    shell: str | None = None   # run through sh -c with this pipeline suffix (`| head -1`)
    watch: tuple[str, ...] = ()  # files that must not change
    escapes_ok: bool = False
    outputs: tuple[str, ...] = ()  # -o files whose content is judged with stdout and stderr
    stop: tuple[int, float] | None = None  # (signal, seconds after spawn): SIGTERM / SIGHUP mid-run
    cwd_gone: bool = False  # run in a current directory deleted before the command starts
    clean: str | None = None  # a folder that must hold nothing but the -o files afterwards (no temp file)
    tty: bool = False  # stdout on a pseudo-terminal: what a user's terminal receives, unstripped by click
    gone: tuple[str, ...] = ()  # files the command must have removed (a stale record it says it removed)
    one_line_stderr: bool = False  # stderr must be one line whatever the exit code (a `wrote PATH` line)
    ends_with: str | None = None  # exit 2 may follow the command's own stderr lines when the last starts so
    forged: str | None = None  # no stdout line may start with this (a name with a newline forging a line)
    launcher: bool = False  # run the installed `qwen-doctor` command (signals blocked during the interpreter's
    # start-up, which `python -m doctor` cannot do: a Ctrl-C there is Python's KeyboardInterrupt traceback)


@dataclass
class Outcome:
    case: str
    klass: str
    ok: bool
    why: str
    seconds: float


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def build_cases(tmp: Path) -> list[Case]:
    cases: list[Case] = []
    tails = tuple(TAILS.values())
    # Secrets: every form through explain (every format) and lint; deploy --dry-run with secrets in env / flags.
    base = json.loads((ROOT / "tests/fixtures/h200.json").read_text())
    for form, text in secret_lines().items():
        # On an error line and in the context after one: explain shows both.
        log = _write(tmp / "secrets" / f"{form}.log", f"RuntimeError: CUDA error: out of memory {text}\n"
                     f"RuntimeError: CUDA error: out of memory\n{text}\n")
        bundle_doc = {**base, "env": {**base["env"], "EXTRA_OPTS": text, "NOTE": f"see {text}"}}
        leaky_bundle = _write(tmp / "secrets" / f"{form}.bundle.json", json.dumps(bundle_doc))
        for fmt in ("json", "html", "text"):
            out = tmp / "secrets" / f"{form}.check.{fmt}"
            cases.append(Case(f"secret {form} check --from {fmt}", "secrets",
                              ["check", "--from", str(leaky_bundle), "-v", "--format", fmt, "-o", str(out)],
                              secrets=tails, outputs=(str(out),)))
        for fmt in ("text", "json", "md", "html", "junit"):
            out = tmp / "secrets" / f"{form}.{fmt}.out"
            cases.append(Case(f"secret {form} explain {fmt}", "secrets",
                              ["explain", str(log), "--format", fmt, "-o", f"{out}.{fmt}"], secrets=tails,
                              outputs=(f"{out}.{fmt}",)))
        cases.append(Case(f"secret {form} lint", "secrets", ["lint", str(_write(tmp / "secrets" / f"{form}.md",
                                                                                   f"```\n{text}\n```\n"))],
                          secrets=tails))
    env_profile = _write(tmp / "profiles" / "env.yaml", "\n".join([
        "name: leaky", "backend: vllm", "model: Qwen/Qwen3.5-35B-A3B", "flags:", "  tensor-parallel-size: 1",
        "env:", f"  NVIDIA_API_KEY: {SECRETS['nvidia']}", f"  SLACK_WEBHOOK: {SECRETS['slack_webhook']}",
        f"  PIP_INDEX_URL: https://u:{SECRETS['password']}@pypi.example.com/simple",
        f"  EXTRA: \"token\uff1d{SECRETS['npm']}\"", ""]))
    for fmt in ("text", "json", "html"):
        cases.append(Case(f"secret deploy --dry-run env {fmt}", "secrets",
                          ["deploy", "--profile", str(env_profile), "--dry-run", "--format", fmt], secrets=tails))
    cases.append(Case("secret deploy --dry-run --api-key", "secrets",
                      ["deploy", "--profile", "vllm-stable", "--dry-run", "--api-key", SECRETS["sendgrid"]],
                      secrets=tails))
    # -o targets: another user's files (as root: links and files given to uid 54321 in a sticky directory).
    other_uid = 54321
    private = tmp / "private"
    private.mkdir()
    victim = _write(private / "victim.txt", "precious\n")
    shared = tmp / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "last.json").symlink_to(victim)
    (shared / "evil").symlink_to(private, target_is_directory=True)
    theirs = _write(shared / "theirs.json", "theirs\n")
    (shared / "adir.json").mkdir()
    os.mkfifo(shared / "fifo.json")
    os.link(victim, shared / "hard.json")
    if os.geteuid() == 0:
        for link in (shared / "last.json", shared / "evil"):
            os.lchown(link, other_uid, other_uid)
        for path in (theirs, shared / "hard.json"):
            os.chown(path, other_uid, other_uid)
    bundle = str(ROOT / "tests/fixtures/h200.json")
    for label, target, watched in [
            ("their symlink, last component", shared / "last.json", victim),
            ("their symlink, parent component", shared / "evil" / "victim.txt", victim),
            ("their symlink, parent then ..", shared / "evil" / ".." / "private" / "victim.txt", victim),
            ("their file in a sticky dir", theirs, theirs), ("directory", shared / "adir.json", theirs),
            ("fifo", shared / "fifo.json", theirs), ("hardlink to their file", shared / "hard.json", victim),
            ("device", Path("/dev/full"), theirs), ("missing parent", tmp / "nope" / "r.json", theirs)]:
        # Each case watches only the file it aims at: cases run in parallel, and one that replaced its own
        # target must not be counted against another.
        cases.append(Case(f"-o {label}", "outfiles", ["check", "--from", bundle, "-o", str(target)],
                          watch=(str(watched),)))
    # Deep or huge inputs.
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9))
    deep_yaml = "name: deep\nflags:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(2000)) + "  " * 2001 + "v: 1\n"
    flow_yaml = "name: deep\nflags: " + "[" * 50000 + "]" * 50000 + "\n"
    deep_json = "[" * 100000 + "]" * 100000
    inputs = {
        "yaml alias bomb": _write(tmp / "in" / "bomb.yaml", "name: bomb\nbackend: vllm\n" + bomb),
        "deep block yaml": _write(tmp / "in" / "deep.yaml", deep_yaml),
        "deep flow yaml": _write(tmp / "in" / "flow.yaml", flow_yaml),
        "deep json": _write(tmp / "in" / "deep.json", deep_json),
        "huge single line": _write(tmp / "in" / "line.log", "x" * (3 << 20) + "\n"),
        "binary": _write(tmp / "in" / "bin.log", bytes(range(256)) * 4096),
        "dev zero": Path("/dev/zero"),
        "directory": tmp / "in",
    }
    fifo = tmp / "in" / "fifo.log"
    os.mkfifo(fifo)
    inputs["fifo without writer"] = fifo
    for label, path in inputs.items():
        for cmd in (["explain", str(path)], ["lint", str(path)], ["check", "--from", str(path)],
                    ["plan", "--gpus", "1xH200", "--profile", str(path)], ["deploy", "--profile", str(path), "--dry-run"],
                    ["deploy", "--status", str(path)], ["plan", "--from-log", str(path)],
                    ["profiles", "show", str(path)]):
            cases.append(Case(f"input {label}: {cmd[0]} {cmd[1]}", "inputs", cmd))
    cases.append(Case("deep --speculative-config", "inputs", ["plan", "--gpus", "1xH200", "--speculative-config",
                                                             "[" * 30000 + "]" * 30000]))
    # Streams.
    for label, fds in [("stdout", (1,)), ("stderr", (2,)), ("stdin", (0,)), ("all", (0, 1, 2))]:
        report = tmp / "streams" / f"closed-{label}.json"
        report.parent.mkdir(exist_ok=True)
        cases.append(Case(f"closed {label}: check -o", "streams", ["check", "--from", bundle, "-o", str(report)],
                          closed=fds))
    for cmd in (["check", "--from", bundle], ["profiles", "list"], ["plan", "--gpus", "1xH200"],
                ["explain", str(ROOT / "tests/data/logs/nccl-525-shm.log")], ["remedies", "list"]):
        cases.append(Case(f"EPIPE {' '.join(cmd[:2])} | head -1", "streams", cmd, shell="| head -1"))
        cases.append(Case(f"full stdout {' '.join(cmd[:2])} > /dev/full", "streams", cmd, shell="> /dev/full"))
    # Locales.
    for env in ({"LANG": "C", "LC_ALL": "C"}, {"LC_ALL": "POSIX"}, {"PYTHONIOENCODING": "ascii"},
                {"PYTHONIOENCODING": "latin-1"}, {"PYTHONIOENCODING": "utf-16"}, {"PYTHONUTF8": "0", "LC_ALL": "C"},
                {"PYTHONIOENCODING": "ascii:strict"}):
        label = " ".join(f"{k}={v}" for k, v in env.items())
        for cmd in (["check", "--from", bundle], ["lint", str(ROOT / "tests/data/lint/serve.sh")],
                    ["plan", "--gpus", "1xH200"], ["profiles", "list"],
                    ["explain", str(_write(tmp / "locale" / "u.log", "RuntimeError: CUDA error: out of memory ☃ é\n"))]):
            cases.append(Case(f"locale {label}: {cmd[0]}", "locales", cmd, env=env))
    # Escape sequences in user-supplied strings.
    for evil in ("ev\x1b[8mil\x1b]0;t\x07", "c1\u009b8mcsi\u009d0;t\u009c", "cr\rFAKE\bback\x7f"):
        cases += _escape_cases(tmp, evil)
    cases += _second_variants(tmp, bundle)
    cases += _third_variants(tmp, bundle)
    cases += _fourth_variants(tmp)
    cases += _fifth_variants(tmp, bundle)
    cases += _sixth_variants(tmp, bundle)
    # A hostile server read by probe (and the exercises it runs).
    for mode in SERVER_MODES:
        url = hostile_server(mode)
        # A reply that never ends is cut at --request-timeout; a short one keeps the case within TIMEOUT_S.
        quick = ["--request-timeout", "2", "--burst", "1"] if set(SERVER_MODES[mode]) & {TRICKLE, ENDLESS, SLOW_HEAD, GZIP_BOMB} else []
        cases.append(Case(f"server {mode}: probe", "servers", ["probe", url, *quick]))
        cases.append(Case(f"server {mode}: probe --model m", "servers", ["probe", url, "--model", "m", *quick]))
    return cases


def _fifth_variants(tmp: Path, bundle: str) -> list[Case]:
    """The fifth campaign's variations: each earlier class across every command and output (closed and full
    streams, symlinked -o targets, deep inputs, secrets in collect / plan / probe / index URLs), numbers in every
    numeric option, YAML tags and merge keys, hostile environment values, sockets as inputs, SIGINT mid-write,
    a head sent one byte at a time, a bundle naming a key twice."""
    import signal
    import socket

    cases: list[Case] = []
    log = str(ROOT / "tests/data/logs/nccl-525-shm.log")
    fifth = tmp / "fifth"
    commands = {
        "explain": ["explain", log], "explain -": ["explain", "-"], "lint": ["lint", str(ROOT / "tests/data/lint/serve.sh")],
        "plan": ["plan", "--gpus", "1xH200"], "plan --from-log": ["plan", "--from-log", log],
        "profiles show": ["profiles", "show", "vllm-stable", "--render"], "profiles suggest": ["profiles", "suggest", "--from", bundle],
        "remedies show": ["remedies", "show", "QD-R-HOST-EXEC-FORMAT"], "deploy --dry-run": ["deploy", "--profile", "vllm-stable", "--dry-run"],
        "deploy --status": ["deploy", "--status"], "collect": ["collect", "--timeout", "5"],
        "probe unreachable": ["probe", "http://127.0.0.1:9/", "--request-timeout", "1"], "check --list": ["check", "--list"],
    }
    for label, cmd in commands.items():
        for fds_label, fds in (("stdout", (1,)), ("stderr", (2,)), ("stdin", (0,)), ("all", (0, 1, 2))):
            if label == "explain -" and 0 not in fds:
                continue  # it would read the campaign's own stdin
            cases.append(Case(f"5 closed {fds_label}: {label}", "streams", cmd, closed=fds,
                              env={"QWEN_DOCTOR_STATE_DIR": str(fifth / "state")}))
        if label != "explain -":
            cases.append(Case(f"5 full stdout: {label} > /dev/full", "streams", cmd, shell="> /dev/full", codes=(2,),
                              ends_with="qwen-doctor: error: cannot write to stdout: No space left on device"))
            cases.append(Case(f"5 EPIPE: {label} | head -1", "streams", cmd, shell="| head -c 10"))
    # -o through another user's symlink (last or parent component) for every command that writes one.
    shared = fifth / "shared"
    shared.mkdir(parents=True)
    shared.chmod(0o1777)
    victim = _write(fifth / "private" / "victim.txt", "precious\n")
    writers = {"collect": ["collect", "--timeout", "5"], "plan": ["plan", "--gpus", "1xH200"], "explain": ["explain", log],
               "lint": ["lint", str(ROOT / "tests/data/lint/serve.sh")], "deploy --dry-run": ["deploy", "--profile", "vllm-stable", "--dry-run"],
               "probe": ["probe", "http://127.0.0.1:9/", "--request-timeout", "1"], "check": ["check", "--from", bundle]}
    for label, cmd in writers.items():
        for option in (["-o"], ["--report"]) if label == "deploy --dry-run" else (["-o"],):
            link = shared / f"{label.split()[0]}{option[0]}.out"
            link.symlink_to(victim)
            parent = shared / f"{label.split()[0]}{option[0]}.dir"
            parent.symlink_to(victim.parent, target_is_directory=True)
            if os.geteuid() == 0:
                os.lchown(link, 54321, 54321)
                os.lchown(parent, 54321, 54321)
            cases.append(Case(f"5 -o their symlink: {label} {option[0]}", "outfiles", [*cmd, *option, str(link)],
                              watch=(str(victim),)))
            cases.append(Case(f"5 -o their symlinked folder: {label} {option[0]}", "outfiles",
                              [*cmd, *option, str(parent / "victim.txt")], watch=(str(victim),)))
    # Deep inputs where other readers look: a model folder's config, a flag's JSON, a notebook, a run record.
    deep_json = "[" * 100000 + "]" * 100000
    model = fifth / "model"
    _write(model / "config.json", '{"architectures": ' + deep_json + "}")
    _write(model / "model.safetensors.index.json", '{"weight_map": ' + deep_json + "}")
    notebook = _write(fifth / "deep.ipynb", '{"cells": ' + deep_json + "}")
    record_state = fifth / "deep-state"
    _write(record_state / "runs" / "r.json", '{"pid": ' + deep_json + "}")
    deep_yaml_env = _write(fifth / "deep-env.yaml", (ROOT / "profiles/vllm-stable.yaml").read_text()
                           + "env:\n  X: " + "[" * 50000 + "]" * 50000 + "\n")
    for label, cmd, env in (
            ("--model deep config: plan", ["plan", "--gpus", "1xH200", "--model", str(model)], {}),
            ("--model deep config: deploy", ["deploy", "--profile", "vllm-stable", "--dry-run", "--model", str(model)], {}),
            ("--model deep config: check", ["check", "--from", bundle, "--model", str(model)], {}),
            ("--flag deep JSON: plan", ["plan", "--gpus", "1xH200", "--flag", "speculative-config=" + "[" * 30000 + "]" * 30000], {}),
            ("--flag deep JSON: deploy", ["deploy", "--profile", "vllm-stable", "--dry-run", "--flag",
                                          "speculative-config=" + "{\"a\":" * 15000 + "1" + "}" * 15000], {}),
            ("--set deep: profiles show", ["profiles", "show", "vllm-stable", "--set", "model=" + "[" * 30000, "--render"], {}),
            ("notebook: lint", ["lint", str(notebook)], {}),
            ("run record: deploy --status", ["deploy", "--status"], {"QWEN_DOCTOR_STATE_DIR": str(record_state)}),
            ("run record: deploy --stop all", ["deploy", "--stop", "all"], {"QWEN_DOCTOR_STATE_DIR": str(record_state)}),
            ("profile env: deploy", ["deploy", "--profile", str(deep_yaml_env), "--dry-run"], {})):
        cases.append(Case(f"5 deep {label}", "inputs", cmd, env=env))
    # Secrets in what collect writes, what plan reads from a log, what probe and the index reader echo.
    secret_env = {"HF_TOKEN": SECRETS["hf"], "MY_DB_PASSWORD": SECRETS["password"], "NOTE": f"key={SECRETS['stripe']}",
                  "PIP_INDEX_URL": f"https://me:{SECRETS['password']}@pypi.example.com/simple",
                  "HF_ENDPOINT": f"https://me:{SECRETS['password']}@127.0.0.1:9", "SLACK": SECRETS["slack_webhook"]}
    out = fifth / "collect.json"
    cases.append(Case("5 secret env: collect -o", "secrets", ["collect", "--timeout", "5", "-o", str(out)],
                      env=secret_env, secrets=tuple(TAILS.values()), outputs=(str(out),)))
    cases.append(Case("5 secret env: collect --hf -o", "secrets", ["collect", "--timeout", "5", "--hf", "-o", str(out) + "2"],
                      env=secret_env, secrets=tuple(TAILS.values()), outputs=(str(out) + "2",)))
    cases.append(Case("5 secret env: check --index", "secrets", ["check", "--index", "--only", "QD-PKG"],
                      env=secret_env, secrets=tuple(TAILS.values())))
    cases.append(Case("5 secret env: check --hf", "secrets", ["check", "--hf", "--only", "QD-NET"],
                      env=secret_env, secrets=tuple(TAILS.values())))
    for form, text in list(secret_lines().items())[:40]:
        leaky = _write(fifth / "secret-logs" / f"{form}.log", (Path(log).read_text() + text + "\n"))
        cases.append(Case(f"5 secret {form}: plan --from-log", "secrets", ["plan", "--from-log", str(leaky), "--format", "json"],
                          secrets=tuple(TAILS.values())))
    for url in (f"http://me:{SECRETS['password']}@127.0.0.1:9/", f"http://127.0.0.1:9/?token={SECRETS['hf']}"):
        cases.append(Case(f"5 secret in probe's URL {url[:12]}", "secrets", ["probe", url, "--request-timeout", "1"],
                          secrets=tuple(TAILS.values())))
        cases.append(Case(f"5 secret in probe's URL {url[:12]} json", "secrets", ["probe", url, "--request-timeout", "1",
                                                                               "--format", "json"], secrets=tuple(TAILS.values())))
    cases.append(Case("5 secret --api-key: probe", "secrets", ["probe", "http://127.0.0.1:9/", "--request-timeout", "1",
                                                              "--api-key", SECRETS["anthropic"], "--format", "html"],
                      secrets=tuple(TAILS.values())))
    # Numbers in every numeric option and profile field: NaN, infinities, 1e309, non-ASCII digits, huge.
    numeric = {"plan": (["plan", "--gpus", "1xH200"], ["--gpu-memory-utilization", "--max-model-len", "--tp",
                                                      "--overhead-gib", "--mem-fraction-static", "--block-size", "--kv-cache-memory"]),
               "probe": (["probe", "http://127.0.0.1:9/"], ["--request-timeout", "--burst"]),
               "deploy": (["deploy", "--profile", "vllm-stable", "--dry-run"], ["--port", "--timeout", "--burst"]),
               "check": (["check", "--from", bundle], ["--gpu-memory-utilization", "--tp", "--timeout"]),
               "explain": (["explain", log], ["--context"]), "collect": (["collect"], ["--timeout"])}
    for label, (cmd, options) in numeric.items():
        for option in options:
            for value in ("nan", "inf", "-inf", "1e309", "\u0664", "\uff18", "9" * 5000, "-0", "0x10"):
                cases.append(Case(f"5 number {label} {option} {value[:8]!r}", "numbers", [*cmd, option, value]))
    stable = (ROOT / "profiles/vllm-stable.yaml").read_text()
    for field_, value in (("port: 8000", "port: .nan"), ("port: 8000", "port: .inf"), ("port: 8000", "port: 1e309"),
                          ("port: 8000", "port: \"\u0668\u0660\u0660\u0660\""), ("max-model-len: 262144", "max-model-len: .nan"),
                          ("max-model-len: 262144", "max-model-len: 1e309"), ("port: 8000", "port: 0x1F40"),
                          ("max-model-len: 262144", "max-model-len: 99999999999999999999999999")):
        path = _write(fifth / "numbers" / f"{abs(hash(value))}.yaml", stable.replace(field_, value))
        for cmd in (["profiles", "show", str(path), "--render"], ["deploy", "--profile", str(path), "--dry-run"],
                    ["plan", "--gpus", "2xH200", "--profile", str(path)]):
            cases.append(Case(f"5 profile {value!r}: {' '.join(cmd[:2])}", "numbers", cmd))
    # YAML tags, merge keys, anchors across fields, binary and timestamps where text is read.
    for label, text in (("python tag", stable + "x: !!python/object/apply:os.system ['touch /tmp/qd-owned']\n"),
                        ("merge key", "base: &b\n  backend: vllm\n  model: Qwen/Qwen3.5-35B-A3B\nname: m\n<<: *b\n"),
                        ("binary value", stable.replace("port: 8000", "port: !!binary aGVsbG8=")),
                        ("timestamp model", stable.replace("port: 8000", "port: 2001-12-14t21:59:43.10-05:00")),
                        ("set flags", stable.replace("flags:", "flags: !!set {a, b}\nold_flags:")),
                        ("tagged str", stable.replace("port: 8000", "port: !custom 8000")),
                        ("document stream", stable + "---\nname: second\n"), ("top-level list", "- a\n- b\n"),
                        ("empty", ""), ("bom", "\ufeff" + stable), ("utf-16", None)):
        path = fifth / "yaml" / f"{label.replace(' ', '-')}.yaml"
        _write(path, text if text is not None else stable.encode("utf-16"))
        for cmd in (["profiles", "show", str(path), "--render"], ["deploy", "--profile", str(path), "--dry-run"],
                    ["plan", "--gpus", "2xH200", "--profile", str(path)], ["lint", str(path)]):
            cases.append(Case(f"5 yaml {label}: {' '.join(cmd[:2])}", "profiles", cmd))
    # Hostile environment values.
    for env in ({"QWEN_DOCTOR_STATE_DIR": "/dev/null"}, {"QWEN_DOCTOR_STATE_DIR": str(ROOT / "README.md")},
                {"QWEN_DOCTOR_CACHE": "/dev/null"}, {"QWEN_DOCTOR_VLLM_PYTHON": "/dev/null"},
                {"QWEN_DOCTOR_VLLM_PYTHON": ""}, {"QWEN_DOCTOR_VLLM_PYTHON": "\x1b[2J"}, {"CUDA_VISIBLE_DEVICES": "\x1b]0;x\x07,a,-1"},
                {"HF_ENDPOINT": "file:///etc/passwd"}, {"HF_ENDPOINT": "http://[::1"}, {"HF_HUB_OFFLINE": "maybe"},
                {"HF_ENDPOINT": "http://hub.example:99999"}, {"HTTPS_PROXY": "http://[::1"},
                {"PIP_INDEX_URL": "http://[::1"},
                {"COLUMNS": "0"}, {"COLUMNS": "-5"}, {"COLUMNS": "99999999999"}, {"TERM": "dumb"}, {"LINES": "x"},
                {"HOME": "/dev/null"}, {"QWEN_DOCTOR_API_KEY": "\x1b[2J"}, {"NO_COLOR": ""}, {"HF_HOME": "/dev/null"}):
        label = " ".join(f"{k}={v!r}" for k, v in env.items())
        for cmd in (["check", "--from", bundle], ["deploy", "--profile", "vllm-stable", "--dry-run"],
                    ["plan", "--gpus", "1xH200"], ["collect", "--timeout", "5", "--hf"], ["deploy", "--status"],
                    ["probe", "http://127.0.0.1:9/", "--request-timeout", "1"], ["check", "--hf", "--only", "QD-NET"],
                    ["check", "--index", "--format", "json"]):
            cases.append(Case(f"5 env {label}: {' '.join(cmd[:2])}", "environment", cmd, env=env))
    # A socket as an input (never blocks), a FIFO as an -o target.
    sock_path = fifth / "in.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock_path))
    listener.listen(1)
    _LISTENERS.append(listener)
    for cmd in (["explain", str(sock_path)], ["lint", str(sock_path)], ["check", "--from", str(sock_path)],
                ["plan", "--from-log", str(sock_path)], ["deploy", "--profile", str(sock_path), "--dry-run"],
                ["check", "--from", bundle, "--log", str(sock_path)], ["plan", "--facts", str(sock_path)]):
        cases.append(Case(f"5 socket input: {' '.join(cmd[:2])}", "inputs", cmd))
    # SIGINT mid-run (Ctrl-C): 130, one line, -o whole or absent, no temporary file.
    for delay in (0.25, 0.6, 1.2):
        for label, cmd in (("collect", ["collect", "--timeout", "5"]), ("explain", ["explain", log, "--format", "html"]),
                           ("deploy", ["deploy", "--profile", "vllm-stable", "--dry-run", "--format", "json"])):
            folder = fifth / "stop" / f"INT-{label}-{delay}"
            folder.mkdir(parents=True)
            cases.append(Case(f"5 SIGINT at {delay * 1000:.0f} ms: {label} -o", "signals", [*cmd, "-o", str(folder / "out")],
                              codes=(0, 1, 130), stop=(signal.SIGINT, delay), clean=str(folder), launcher=True))
    # Hugging Face reachability and the package index against a hostile server.
    for mode in ("slow head models", "gzip bomb models", "redirect loop", "file: redirect", "huge header", "trickle",
                 "endless", "deep models", "invalid UTF-8"):
        url = hostile_server(mode)
        for cmd in (["check", "--hf", "--only", "QD-NET", "--timeout", "3"], ["collect", "--hf", "--timeout", "3"]):
            cases.append(Case(f"5 hostile HF_ENDPOINT {mode}: {cmd[0]}", "servers", cmd, env={"HF_ENDPOINT": url}))
        cases.append(Case(f"5 hostile index {mode}: check --index", "servers", ["check", "--index", "--timeout", "3"],
                          env={"PIP_INDEX_URL": url + "/simple"}))
    # An engine interpreter whose flag-probe answer is deep, of another shape, or names a key twice.
    for label, answer in (("deep", '"[" * 100000 + "]" * 100000'), ("another shape", '\'{"x": 1}\''),
                          ("issues of another shape", '\'{"version": 1, "issues": [5]}\''),
                          ("a key twice", '\'{"version": 1, "issues": [], "issues": []}\'')):
        python = _write(fifth / "pythons" / label.replace(" ", "-"),
                        f"#!{sys.executable}\nprint('@@QWEN_DOCTOR_PROBE@@' + {answer})\n")
        python.chmod(0o755)
        for cmd in (["profiles", "show", "vllm-stable", "--render", "--validate", "real"],
                    ["deploy", "--profile", "vllm-stable", "--dry-run", "--python", str(python)],
                    ["lint", str(ROOT / "tests/data/lint/serve.sh")], ["check", "--from", bundle, "--profile", "vllm-stable"]):
            cases.append(Case(f"5 parser answer {label}: {' '.join(cmd[:2])}", "inputs", cmd,
                              env={"QWEN_DOCTOR_VLLM_PYTHON": str(python)}))
    # A name or host holding a newline and a forged line: the report keeps it on its own line.
    forged = "[✓] all checks passed"
    named = _write(fifth / f"server.log\n{forged}", "RuntimeError: CUDA error: out of memory\n")
    host_doc = json.loads(Path(bundle).read_text())
    host_doc["hostname"] = f"h\n{forged}"
    host_bundle = _write(fifth / "newline-host.json", json.dumps(host_doc))
    for cmd in (["explain", str(named)], ["explain", str(named), "-v"], ["lint", str(named)],
                ["check", "--from", str(host_bundle)], ["check", "--from", str(host_bundle), "-v"],
                ["plan", "--facts", str(host_bundle)]):
        cases.append(Case(f"5 newline name: {' '.join(cmd[:2])}", "terminal", cmd, forged=forged))
    # A bundle naming a key twice; a server whose reply head never ends.
    doc = Path(bundle).read_text()
    twice = _write(fifth / "twice.json", doc.replace("{", '{"hostname": "a", ', 1))
    for cmd in (["check", "--from", str(twice)], ["plan", "--facts", str(twice)], ["profiles", "suggest", "--from", str(twice)]):
        cases.append(Case(f"5 bundle key twice: {' '.join(cmd[:2])}", "inputs", cmd, codes=(2,)))
    return cases


_LISTENERS: list[Any] = []


def _sixth_variants(tmp: Path, bundle: str) -> list[Case]:
    """The sixth campaign's variations: deploy --log naming an existing file or a link to one (kept as it was),
    max-model-len: auto under a pin that reads it and one that does not, a stream of nothing but matching lines
    (the secret forms are in secret_lines)."""
    cases: list[Case] = []
    sixth = tmp / "sixth"
    victim = _write(sixth / "private" / "victim.log", "last night's crash, the only copy\n")
    existing = _write(sixth / "existing.log", "yesterday's boot\n")
    link = sixth / "link.log"
    link.symlink_to(victim)
    for label, path, watched in (("an existing file", existing, existing), ("a symlink to a file", link, victim)):
        for dry in (["--dry-run"], []):
            cases.append(Case(f"6 deploy --log {label}{' --dry-run' if dry else ''}", "outfiles",
                              ["deploy", "--profile", "vllm-stable", *dry, "--log", str(path), "--timeout", "5"],
                              codes=(2,), watch=(str(watched),)))
    stable = (ROOT / "profiles/vllm-stable.yaml").read_text()
    for pin, codes in (('">=0.17.0"', (0, 1)), ('">=0.15.0"', (2,)), ('"<0.35"', (2,))):
        for length in ("auto", "-1", "AUTO"):
            path = _write(sixth / "auto" / f"{abs(hash(pin + length))}.yaml", stable.replace(
                "max-model-len: 262144", f"max-model-len: {length}").replace('backend_version: ">=0.17.0"',
                                                                           f"backend_version: {pin}"))
            for cmd in (["profiles", "show", str(path), "--render"], ["deploy", "--profile", str(path), "--dry-run"],
                        ["plan", "--gpus", "1xH200", "--profile", str(path)]):
                cases.append(Case(f"6 max-model-len {length} pinned {pin}: {' '.join(cmd[:2])}", "profiles", cmd,
                                  codes=codes))
    stream = _write(sixth / "matching.log", b"RuntimeError: CUDA error: out of memory\n" * 160_000)
    cases.append(Case("6 a stream of matching lines: explain", "inputs", ["explain", str(stream)], codes=(1,)))
    cases += _full_filesystem(sixth / "full", bundle)
    return cases


_MOUNTS: list[Path] = []  # filesystems the campaign mounted, unmounted when it ends


def _full_filesystem(folder: Path, bundle: str) -> list[Case]:
    """-o on a full filesystem (a 64 KiB tmpfs filled up; root only): one line, exit 2, no file left behind."""
    writers = {"check": ["check", "--from", bundle], "plan": ["plan", "--gpus", "1xH200"],
               "explain": ["explain", str(ROOT / "tests/data/logs/nccl-525-shm.log")], "collect": ["collect", "--timeout", "5"],
               "lint": ["lint", str(ROOT / "tests/data/lint/serve.sh")],
               "deploy --dry-run": ["deploy", "--profile", "vllm-stable", "--dry-run"]}
    folder.mkdir(parents=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        return []
    _MOUNTS.append(folder)
    cases = []
    for label, cmd in writers.items():
        for fmt in ("json", "html"):
            each = folder / f"{label.split()[0]}-{fmt}"
            each.mkdir()
            cases.append(Case(f"6 -o on a full filesystem: {label} {fmt}", "outfiles",
                              [*cmd, "--format", fmt, "-o", str(each / "out")], codes=(2,), clean=str(each),
                              ends_with="qwen-doctor: error: cannot write report"))  # after deploy's progress
    try:
        with open(folder / "filler", "wb") as filler:
            while True:
                filler.write(b"x" * 1024)
                filler.flush()
    except OSError:
        pass
    return cases


def _packed(data: bytes) -> dict[str, bytes]:
    """`data` as every compressed or archived form a user may hand over where gzip is read."""
    import bz2
    import io
    import lzma
    import tarfile
    import zipfile

    zipped, tarred = io.BytesIO(), io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("server.log", data)
    with tarfile.open(fileobj=tarred, mode="w") as archive:
        member = tarfile.TarInfo("server.log")
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    return {"xz": lzma.compress(data), "bz2": bz2.compress(data), "zip": zipped.getvalue(), "tar": tarred.getvalue(),
            "zstd": b"\x28\xb5\x2f\xfd" + data[:64]}


def _second_variants(tmp: Path, bundle: str) -> list[Case]:
    """The re-run's variations (issue 23, second campaign): stopping signals mid-run, a deleted current
    directory, awkward -o targets and file names, other compression formats, /proc and /sys files."""
    import signal

    cases: list[Case] = []
    log = ROOT / "tests/data/logs/nccl-525-shm.log"
    # SIGTERM / SIGHUP mid-run: one line, 143 / 129, -o whole or absent, no temporary file left; through the
    # installed command, which blocks them during the interpreter's start-up (`python -m doctor` cannot).
    for signum, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")):
        for delay in (0.05, 0.25, 0.5, 0.9):
            for label, cmd in (("check", ["check", "--from", bundle, "--format", "json"]),
                               ("explain", ["explain", str(log), "--format", "html"]),
                               ("plan", ["plan", "--gpus", "1xH200", "--format", "json"])):
                folder = tmp / "stop" / f"{name}-{label}-{delay}"
                folder.mkdir(parents=True)
                cases.append(Case(f"{name} at {delay * 1000:.0f} ms: {label} -o", "signals",
                                  [*cmd, "-o", str(folder / "out")], codes=(0, 1, 128 + signum),
                                  stop=(signum, delay), clean=str(folder), launcher=True))
    # A current directory deleted before the command starts: relative -o refused in one line, the rest runs.
    for cmd in (["check", "--from", bundle, "-o", "r.json"], ["plan", "--gpus", "1xH200", "-o", "p.json"],
                ["explain", str(log), "-o", "e.html"], ["explain", "rel.log"], ["profiles", "list"],
                ["deploy", "--profile", "vllm-stable", "--dry-run"], ["lint", "rel.sh"]):
        cases.append(Case(f"deleted cwd: {' '.join(cmd[:2])} {cmd[-1]}", "paths", cmd, cwd_gone=True))
    # -o targets: stdout as a path, a read-only directory, a symlink loop; file names that are not UTF-8.
    read_only = tmp / "ro"
    read_only.mkdir()
    loop = tmp / "loop.json"
    loop.symlink_to(loop)
    bad_name = os.fsdecode(bytes(tmp / "in") + b"/bad\xff\xfe.log")
    Path(bad_name).parent.mkdir(exist_ok=True)
    Path(bad_name).write_text("RuntimeError: CUDA error: out of memory\n")
    for label, target in (("/dev/stdout", "/dev/stdout"), ("/dev/stderr", "/dev/stderr"),
                          ("symlink loop", str(loop)), ("non-UTF-8 name", bad_name + ".json")):
        cases.append(Case(f"-o {label}", "outfiles", ["check", "--from", bundle, "-o", target]))
    read_only.chmod(0o555)
    if os.geteuid() != 0:  # root writes anywhere
        cases.append(Case("-o in a read-only directory", "outfiles",
                          ["check", "--from", bundle, "-o", str(read_only / "r.json")]))
    for cmd in (["explain", bad_name], ["lint", bad_name], ["check", "--from", bad_name],
                ["explain", bad_name + ".missing"], ["explain", str(loop)], ["lint", str(loop)]):
        cases.append(Case(f"name {cmd[0]} {Path(cmd[-1]).name!r}", "paths", cmd))
    # A secret in a file name, echoed by an error (missing file) or a report title (existing file).
    for secret_name in ("hf", "anthropic", "nvidia"):
        named = tmp / "named" / f"{SECRETS[secret_name]}.log"
        for where, cmd in (("explain", ["explain", str(named) + ".missing"]),
                           ("check --from", ["check", "--from", str(named) + ".missing"]),
                           ("lint", ["lint", str(named) + ".missing"]),
                           ("-o", ["check", "--from", bundle, "-o", f"/nonexistent/{named.name}"])):
            cases.append(Case(f"secret {secret_name} in a file name: {where}", "secrets", cmd,
                              secrets=tuple(TAILS.values())))
    # HOME / TMPDIR unset or unusable.
    for env in ({"HOME": ""}, {"HOME": "/nonexistent"}, {"TMPDIR": "/nonexistent"}, {"TMPDIR": str(read_only)},
                {"XDG_CACHE_HOME": "/dev/null"}):
        label = " ".join(f"{k}={v or '(empty)'}" for k, v in env.items())
        for cmd in (["check", "--from", bundle], ["plan", "--gpus", "1xH200"], ["deploy", "--status"],
                    ["explain", str(log)]):
            cases.append(Case(f"env {label}: {cmd[0]}", "paths", cmd, env=env))
    # Other compression formats and archives where gzip is read; /proc and /sys files.
    for fmt, data in _packed(log.read_bytes()).items():
        packed = _write(tmp / "packed" / f"server.log.{fmt}", data)
        for where, cmd in (("explain", ["explain", str(packed)]), ("lint", ["lint", str(packed)]),
                           ("check --from", ["check", "--from", str(packed)]),
                           ("plan --from-log", ["plan", "--from-log", str(packed)]),
                           ("deploy --profile", ["deploy", "--profile", str(packed), "--dry-run"]),
                           ("check --log", ["check", "--from", bundle, "--log", str(packed)])):
            cases.append(Case(f"packed {fmt}: {where}", "inputs", cmd))
    for special in ("/proc/self/status", "/proc/self/maps", "/sys/kernel/mm/transparent_hugepage/enabled",
                    "/proc/self/mem"):
        for cmd in (["explain", special], ["lint", special], ["check", "--from", special],
                    ["plan", "--from-log", special]):
            cases.append(Case(f"special {special}: {cmd[0]}", "inputs", cmd))
    # One 100 MiB line with no newline.
    huge = tmp / "in" / "huge.log"
    with open(huge, "wb") as fh:
        fh.write(b"RuntimeError: CUDA error: out of memory " + b"x" * (100 << 20))
    for cmd in (["explain", str(huge)], ["lint", str(huge)], ["plan", "--from-log", str(huge)]):
        cases.append(Case(f"100 MiB line, no newline: {cmd[0]}", "inputs", cmd))
    return cases


def _third_variants(tmp: Path, bundle: str) -> list[Case]:
    """The third campaign's variations: what a terminal receives (escapes in rendered commands, a bundle's GPU
    name, run records), valued engine options given as switches, run records named by hand, CR-only dumps."""
    cases: list[Case] = []
    evil = "X\x1b[2JY\x1b]0;owned\x07Z\x9b1m\u202e"
    stable = (ROOT / "profiles/vllm-stable.yaml").read_text()
    profile = _write(tmp / "third" / "env.yaml", stable + f"env:\n  FOO: {json.dumps(evil)}\n")
    doc = json.loads(Path(bundle).read_text())
    doc["nvml"]["gpus"][0]["name"] += evil
    doc["env"]["NCCL_DEBUG"] = evil
    doc["hostname"] = evil
    evil_bundle = _write(tmp / "third" / "evil.json", json.dumps(doc))
    evil_log = _write(tmp / "third" / "evil.log", f"RuntimeError: CUDA error: out of memory {evil}\nValueError: {evil}\n")
    state = tmp / "third" / "state"
    record = {"pid": 4_000_001, "create_time": 5.0, "host": "h" + evil, "port": 8000, "profile": "p" + evil,
              "backend": "vllm", "log": "l" + evil, "started_at": "s"}
    _write(state / "runs" / "r.json", json.dumps(record))
    for cmd in (["profiles", "show", str(profile), "--render"], ["deploy", "--profile", str(profile), "--dry-run", "-v"],
                ["profiles", "show", "vllm-stable", "--set", f"model={evil}", "--render"],
                ["deploy", "--profile", "vllm-stable", "--dry-run", "--model", evil],
                ["plan", "--facts", str(evil_bundle)], ["check", "--from", str(evil_bundle), "-v"],
                ["explain", str(evil_log)], ["explain", str(evil_log), "--format", "md"], ["plan", "--from-log", str(evil_log)],
                ["lint", str(evil_log)], ["plan", "--gpus", "1xH200", "--flag", f"--served-model-name {evil}"]):
        cases.append(Case(f"terminal: {' '.join(cmd[:2])} {Path(cmd[2]).name if len(cmd) > 2 else ''}", "terminal",
                          cmd, tty=True))
    cases.append(Case("terminal: deploy --status of a hand-edited record", "terminal", ["deploy", "--status"],
                      env={"QWEN_DOCTOR_STATE_DIR": str(state)}, tty=True))
    # A valued engine option given as a switch, in a profile or through --flag.
    multinode = (ROOT / "profiles/sglang-multinode.yaml").read_text()
    for label, text in (("reasoning-parser: true", stable.replace("reasoning-parser: qwen3", "reasoning-parser: true")),
                        ("max-model-len: true", stable.replace("max-model-len: 262144", "max-model-len: true")),
                        ("dist-init-addr: true", multinode.replace('dist-init-addr: "{head_address}:20000"',
                                                                   "dist-init-addr: true"))):
        path = _write(tmp / "third" / f"{label.split(':')[0]}.yaml", text)
        for cmd in (["profiles", "show", str(path), "--render"], ["deploy", "--profile", str(path), "--dry-run"],
                    ["plan", "--gpus", "2xH200", "--profile", str(path)],
                    ["check", "--from", bundle, "--profile", str(path)]):
            cases.append(Case(f"switch {label}: {' '.join(cmd[:2])}", "profiles", cmd))
    for flag in ("reasoning-parser", "served-model-name", "max-model-len", "tensor-parallel-size"):
        cases.append(Case(f"switch --flag {flag}: deploy --dry-run", "profiles",
                          ["deploy", "--profile", "vllm-stable", "--dry-run", "--flag", flag]))
    # A stale run record whose file was copied or renamed by hand: --stop says removed, so it must be gone.
    for name in ("copied-by-hand.json", "4000002-5.json.json"):
        folder = tmp / "third" / f"state-{name}"
        stale = _write(folder / "runs" / name, json.dumps({**record, "host": "h", "profile": "p", "log": "l",
                                                              "pid": 4_000_002}))
        cases.append(Case(f"stale record {name}: deploy --stop all", "state", ["deploy", "--stop", "all"],
                          env={"QWEN_DOCTOR_STATE_DIR": str(folder)}, gone=(str(stale),)))
    # collect_env / check_env dumps with CR-only or CR LF line ends read like the original (exit 0 / 1, not 2).
    for dump in sorted((ROOT / "tests/fixtures/env-dumps").glob("*.txt"))[:6]:
        text = dump.read_bytes()
        for label, ends in (("CR", b"\r"), ("CR LF", b"\r\n")):
            path = _write(tmp / "third" / "dumps" / f"{dump.stem}.{label.replace(' ', '')}.txt", text.replace(b"\n", ends))
            cases.append(Case(f"dump {label} {dump.stem}: check --from", "inputs", ["check", "--from", str(path)],
                              codes=(0, 1)))
    return cases


def _fourth_variants(tmp: Path) -> list[Case]:
    """The fourth campaign's variations: bad deploy input beside an existing report, a --python that is no
    interpreter (the hostile servers and secret forms are in SERVER_MODES and secret_lines)."""
    cases: list[Case] = []
    for bad in (["--flag", "nosuch-flag=1"], ["--flag", "max-model-len=abc"], ["--set", "novalue"],
                ["--flag", "reasoning-parser"], ["--slo", "x"], ["--flag", "max-model-len=1.5"]):
        for option, name in (("-o", "r.json"), ("--output", "r.html"), ("--report", "r.md")):
            report = _write(tmp / "fourth" / "reports" / f"{bad[1]}-{name}", "PRECIOUS: the user's report\n")
            cases.append(Case(f"bad deploy input {' '.join(bad)} {option}: report kept", "outfiles",
                              ["deploy", "--profile", "vllm-stable", "--dry-run", *bad, option, str(report)],
                              codes=(2,), watch=(str(report),)))
    stable = (ROOT / "profiles/vllm-stable.yaml").read_text()
    twice = _write(tmp / "fourth" / "twice.yaml", stable.replace("port: 8000\n", "port: 8000\nport: 9000\n"))
    for cmd in (["profiles", "show", str(twice), "--render"], ["deploy", "--profile", str(twice), "--dry-run"],
                ["plan", "--gpus", "2xH200", "--profile", str(twice)], ["lint", str(twice)],
                ["check", "--from", str(ROOT / "tests/fixtures/h200.json"), "--profile", str(twice)]):
        cases.append(Case(f"key twice in a profile: {' '.join(cmd[:2])}", "profiles", cmd, codes=(2,)))
    newline = str(tmp / "fourth" / "new\nline.json")
    for cmd in (["check", "--from", str(ROOT / "tests/fixtures/h200.json")], ["collect"], ["plan", "--gpus", "1xH200"]):
        cases.append(Case(f"-o named with a newline: {cmd[0]}", "outfiles", [*cmd, "-o", newline], codes=(0, 1),
                          one_line_stderr=True))
    for label, body in (("writes without end", "exec yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
                        ("fails", "echo 'ModuleNotFoundError: No module named json' >&2; exit 1"),
                        ("answers another shape", "echo '{\"packages\": 5, \"complete\": 1, \"found\": 7}'")):
        program = _write(tmp / "fourth" / "python" / label.replace(" ", "-"), "#!/bin/sh\n" + body + "\n")
        program.chmod(0o755)
        cases.append(Case(f"--python that {label}: deploy --dry-run", "inputs",
                          ["deploy", "--profile", "vllm-stable", "--dry-run", "--python", str(program)], codes=(2,)))
    return cases


DEEP = "[" * 200_000 + "]" * 200_000
# A hostile server's replies, by path: /v1/models, then everything else (chat, completions, metrics).
SERVER_MODES = {
    "deep models": (DEEP, DEEP),
    "deep data": ('{"data": ' + DEEP + "}", "{}"),
    "huge integer": ('{"data": [{"id": "m", "max_model_len": ' + "9" * 100_000 + "}]}", "{}"),
    "NaN": ('{"data": [{"id": "m", "max_model_len": NaN}]}', '{"usage": {"completion_tokens": NaN}}'),
    "deep chat": ('{"data": [{"id": "m", "max_model_len": 4096}]}', DEEP),
    "escapes": ('{"data": [{"id": "m\\u001b[8mX\\u009b2J", "max_model_len": 4096}]}',
                '{"choices": [{"message": {"content": "\\u001b]0;owned\\u0007"}}], "usage": {"completion_tokens": 2}}'),
    "data not a list": ('{"data": 5}', "{}"),
    "models a list": ('[{"id": "m"}]', "{}"),
    "ids not text": ('{"data": [{"id": 7}, {"id": null}, "m"]}', "{}"),
    "duplicate keys": ('{"data": [{"id": "m"}], "data": 5}', '{"usage": {"completion_tokens": 1}, "usage": []}'),
    "trickle": ('{"data": [{"id": "m", "max_model_len": 4096}]}', TRICKLE),
    "endless": ('{"data": [{"id": "m", "max_model_len": 4096}]}', ENDLESS),
    "slow head": ('{"data": [{"id": "m", "max_model_len": 4096}]}', SLOW_HEAD),
    "slow head models": (SLOW_HEAD, "{}"),
    "gzip bomb": ('{"data": [{"id": "m", "max_model_len": 4096}]}', GZIP_BOMB),
    "gzip bomb models": (GZIP_BOMB, "{}"),
    "redirect loop": (REDIRECT_LOOP, REDIRECT_LOOP),
    "file: redirect": (FILE_REDIRECT, FILE_REDIRECT),
    "huge header": (HUGE_HEADER, HUGE_HEADER),
    "huge header chat": ('{"data": [{"id": "m", "max_model_len": 4096}]}', HUGE_HEADER),
    "invalid UTF-8": (b'{"data": [{"id": "m\xff\xfe", "max_model_len": 4096}]}', b'{"choices": [{"message": {"content": "\xff"}}]}'),
}


def hostile_server(mode: str) -> str:
    """A local server answering every request with SERVER_MODES[mode]; its base URL (it lives as long as the run)."""
    models, other = SERVER_MODES[mode]
    url, _stop = start_server(*(body if isinstance(body, bytes) else body.encode() for body in (models, other)))
    return url


def _escape_cases(tmp: Path, evil: str) -> list[Case]:
    """Every user-supplied string an output may echo, carrying `evil` (ESC / C1 sequences, CR, BS, DEL)."""
    cases: list[Case] = []
    tag = "".join(ch for ch in evil if ch.isalnum())[:6]
    evil_file = _write(tmp / "esc" / f"{evil}.log", "RuntimeError: CUDA error: out of memory\n")
    evil_profile = _write(tmp / "esc" / f"{tag}.yaml", f"name: {json.dumps(evil)}\nbackend: vllm\nmodel: {json.dumps(evil)}\n")
    for cmd in (["explain", str(evil_file)], ["lint", str(evil_file)], ["check", "--from", str(evil_file)],
                ["deploy", "--profile", evil, "--dry-run"], ["deploy", "--profile", str(evil_profile), "--dry-run"],
                ["plan", "--gpus", evil], ["plan", "--gpus", "1xH200", "--model", evil],
                ["probe", f"http://{evil}:1/"], ["plan", "--gpus", "1xH200", "--max-model-len", evil],
                ["profiles", "show", evil], ["check", "--from", str(ROOT / "tests/fixtures/h200.json"), "--format", evil]):
        cases.append(Case(f"escape {tag} in {cmd[0]} {cmd[1]!r}", "escapes", cmd))
    return cases


def _files_state(paths: tuple[str, ...]) -> dict[str, tuple[int, bytes]]:
    out = {}
    for p in paths:
        st = os.stat(p)
        out[p] = (st.st_ino, Path(p).read_bytes())
    return out


# Variables read by the interpreter's start-up or by what the fork server built before forking (the cache folder
# its matcher read): a case that sets one runs in a process of its own.
OWN_PROCESS_ENV = ("PYTHON", "LC_", "LANG", "HOME", "XDG_", "TMPDIR", "QWEN_DOCTOR_CACHE", "QWEN_DOCTOR_SIGNATURES")


class ForkServer:
    """bench/forkserver.py for one source tree: `run` is subprocess.run for `python -m doctor ARGS` without the
    interpreter's start-up and imports (a fork of one warmed interpreter per case)."""

    def __init__(self, tree: Path, folder: Path) -> None:
        self.socket = str(folder / "forkserver.sock")
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "forkserver.py"), self.socket], cwd=tree,
                                     env={**os.environ, "PYTHONPATH": str(tree)}, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != b"ready":
            raise RuntimeError("the fork server did not start")

    @staticmethod
    def serves(case: Case) -> bool:
        """Whether the case can run in a fork (it needs no start-up of its own)."""
        return not (case.stop or case.tty or case.shell or case.launcher) and not any(
            name.startswith(OWN_PROCESS_ENV) for name in case.env)

    def run(self, args: list[str], env: dict[str, str], cwd: Path, closed: tuple[int, ...], cwd_gone: bool,
            out_dir: Path) -> subprocess.CompletedProcess:
        import socket

        streams = [open(os.devnull, "rb"), open(out_dir / "stdout", "w+b"), open(out_dir / "stderr", "w+b")]
        given = [fd for fd in (0, 1, 2) if fd not in closed]
        request = {"argv": args, "env": env, "cwd": str(cwd), "cwd_gone": cwd_gone, "fds": given}
        pid = None
        try:
            with socket.socket(socket.AF_UNIX) as conn:
                conn.connect(self.socket)
                socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [streams[fd].fileno() for fd in given])
                conn.settimeout(TIMEOUT_S)
                reply = conn.makefile("rb")
                try:
                    pid = int(reply.readline().split()[1])
                    status = int(reply.readline().split()[1])
                except (socket.timeout, TimeoutError, IndexError):
                    if pid is not None:
                        try:
                            os.kill(pid, 9)
                        except OSError:
                            pass
                    raise subprocess.TimeoutExpired(args, TIMEOUT_S) from None
            streams[1].seek(0)
            streams[2].seek(0)
            return subprocess.CompletedProcess(args, status, streams[1].read(), streams[2].read())
        finally:
            for stream in streams:
                stream.close()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


FORK: list[ForkServer] = []  # the run's fork server, when it uses one


def run_case(case: Case, tmp: Path, tree: Path = ROOT) -> Outcome:
    env = {**os.environ, "NO_COLOR": "1", **case.env}
    env.pop("QWEN_DOCTOR_DEBUG", None)
    before = _files_state(case.watch)
    started = time.monotonic()
    argv = [sys.executable, "-m", "doctor", *case.args]
    if case.launcher:
        argv = [str(Path(sys.executable).parent / "qwen-doctor"), *case.args]
        env["PYTHONPATH"] = str(tree)
    (tmp / "outputs").mkdir(exist_ok=True)
    out_dir = Path(tempfile.mkdtemp(dir=tmp / "outputs"))  # its own: two cases may share a name
    cwd: Path = tree
    if case.cwd_gone:
        cwd = out_dir / "gone"
        cwd.mkdir(exist_ok=True)
    try:
        if FORK and ForkServer.serves(case):
            proc = FORK[0].run(case.args, env, cwd, case.closed, case.cwd_gone, out_dir)
        elif case.stop:
            proc = _stopped(argv, env, cwd, *case.stop)
        elif case.tty:
            proc = on_terminal(argv, env, cwd, TIMEOUT_S)
        elif case.shell:
            cmd = " ".join(_quote(a) for a in argv) + f" 2>{_quote(str(out_dir / 'err'))} {case.shell}"
            proc = subprocess.run(["sh", "-c", cmd], capture_output=True, timeout=TIMEOUT_S, env=env, cwd=tree)
            proc.stderr = (out_dir / "err").read_bytes()
        else:
            closed = case.closed
            gone = cwd if case.cwd_gone else None
            proc = subprocess.run(argv, capture_output=not closed, stdin=subprocess.DEVNULL if not closed else None,
                                  timeout=TIMEOUT_S, env={**env, "PYTHONPATH": str(tree)} if gone else env, cwd=cwd,
                                  preexec_fn=_preexec(closed, gone))
    except subprocess.TimeoutExpired:
        return Outcome(case.name, case.klass, False, "hang", time.monotonic() - started)
    seconds = time.monotonic() - started
    stdout = proc.stdout or b""
    stderr = proc.stderr or b""
    text = stdout + stderr
    for path in case.outputs:
        if os.path.exists(path):
            text += Path(path).read_bytes()
    why = []
    if b"Traceback" in text or b"internal error" in text:
        why.append("traceback/internal error: " + stderr.decode("utf-8", "replace").strip().splitlines()[-1][:160])
    # A stopping signal sent within EARLY_STOP_S may land before the program's first statement (`python -m
    # doctor` has no launcher to block it during the interpreter's start-up): the default action, silent,
    # nothing written (a shell shows 128 + n). Later, it must be the command's own line and code.
    early_stop = (bool(case.stop) and case.stop[1] < EARLY_STOP_S and proc.returncode == -case.stop[0]
                  and not stderr.strip())
    if proc.returncode not in case.codes and not early_stop:
        why.append(f"exit {proc.returncode}")
    err_lines = stderr.decode("utf-8", "replace").strip().splitlines()
    ended = case.ends_with is not None and bool(err_lines) and err_lines[-1].startswith(case.ends_with)
    if proc.returncode == 2 and not case.closed and len(err_lines) != 1 and not ended:
        why.append(f"exit 2 with {len(stderr.splitlines())} stderr lines")
    if case.one_line_stderr and len(stderr.decode("utf-8", "replace").strip().splitlines()) != 1:
        why.append(f"{len(stderr.splitlines())} stderr lines")
    if case.stop and proc.returncode == 128 + case.stop[0] and stderr.decode().count("qwen-doctor:") != 1:
        why.append(f"stopped with {len(stderr.splitlines())} stderr lines: {stderr.decode()[-160:]!r}")
    if case.clean:
        left = sorted(p.name for p in Path(case.clean).iterdir())
        if left not in ([], ["out"]):
            why.append(f"left behind: {left}")
        elif left and not Path(case.clean, "out").read_bytes().rstrip().endswith((b"}", b"</html>")):
            why.append("a half-written -o file")
    if case.forged is not None and any(line.startswith(case.forged.encode()) for line in stdout.splitlines()):
        why.append(f"a line forged by a name: {case.forged!r}")
    for secret in case.secrets:
        if secret.encode() in text or secret.encode("utf-16-le") in text:
            why.append(f"leak {secret}")
    charset = (case.env.get("PYTHONIOENCODING") or "utf-8").split(":")[0]
    shown = stdout.decode(charset, "replace") + stderr.decode(charset, "replace")
    if not case.escapes_ok and any(ch in shown for ch in CONTROLS):
        why.append("raw control character " + ", ".join(repr(ch) for ch in sorted(set(shown) & CONTROLS)))
    if case.watch and _files_state(case.watch) != before:
        why.append("a watched file changed")
    if any(os.path.lexists(path) for path in case.gone):
        why.append("a file it said it removed is still there")
    return Outcome(case.name, case.klass, not why, "; ".join(why), seconds)


def _preexec(closed: tuple[int, ...], gone: Path | None) -> Callable[[], None] | None:
    """The child's set-up: close the given descriptors; remove its (already entered) current directory."""
    if not closed and gone is None:
        return None

    def run() -> None:
        for fd in closed:
            os.close(fd)
        if gone is not None:
            os.rmdir(gone)

    return run


def _stopped(argv: list[str], env: dict[str, str], cwd: Path, signum: int, delay: float) -> subprocess.CompletedProcess:
    """Run argv and send it `signum` after `delay` s (unless it ended first)."""
    import signal

    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=cwd, preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL)
                                                        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)])
    try:
        proc.wait(delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signum)
    out, err = proc.communicate(timeout=TIMEOUT_S)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tree", type=Path, default=ROOT,
                        help="run the CLI of this source tree (an export of an older commit, for a before/after)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--processes", action="store_true",
                        help="run every case as a process of its own (`python -m doctor`), without the fork server")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        cases = [c for c in build_cases(tmp) if args.k in c.name]
        if not args.processes:
            FORK.append(ForkServer(args.tree.resolve(), tmp))
        try:
            with ThreadPoolExecutor(max_workers=args.workers) as pool:
                outcomes = list(pool.map(lambda c: run_case(c, tmp, args.tree.resolve()), cases))
        finally:
            while FORK:
                FORK.pop().close()
            while _MOUNTS:
                subprocess.run(["umount", str(_MOUNTS.pop())], capture_output=True)
    failed = [o for o in outcomes if not o.ok]
    if args.json:
        print(json.dumps([o.__dict__ for o in outcomes], indent=1))
    else:
        by_class: dict[str, list[Outcome]] = {}
        for o in outcomes:
            by_class.setdefault(o.klass, []).append(o)
        for klass, rows in by_class.items():
            print(f"{klass:<10}{len(rows):>5} cases{sum(not r.ok for r in rows):>5} failed")
        for o in failed:
            print(f"FAIL [{o.klass}] {o.case}: {o.why}")
        print(f"{len(outcomes)} cases, {len(failed)} failed, {time.monotonic() - started:.0f} s with {args.workers} "
              f"workers{' (a process per case)' if args.processes else ''}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
