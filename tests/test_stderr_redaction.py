"""The stderr stream redacts whole lines, even when a secret arrives over several writes."""

from __future__ import annotations

import io

from doctor.cli.stderr import RedactingStream, hosts_requested
from doctor.redact_hosts import HostHider


def test_a_secret_split_over_writes_is_redacted_once_the_line_is_complete():
    inner = io.StringIO()
    stream = RedactingStream(inner, None)
    stream.write("  starting: vllm serve m --api_key Pl4nt")
    assert inner.getvalue() == ""
    stream.write("edS3cret --port 8000\nlog: /tmp/x")
    stream.flush()
    assert inner.getvalue() == "  starting: vllm serve m --api_key [REDACTED] --port 8000\nlog: /tmp/x"


def test_hosts_are_hidden_when_asked_and_no_escape_sequence_passes_raw():
    """Nothing the tool writes on stderr is coloured, so any escape sequence there came from user input (a file
    name with ESC[8m would hide the rest of the line): it is handled as on stdout."""
    inner = io.StringIO()
    stream = RedactingStream(inner, HostHider(known=("gpu-node-17",)))
    stream.write("\x1b[31merror\x1b[0m: gpu-node-17 at 10.1.2.3 sent \x00\x1b]0;t\x07 \x1b[8mhidden\n")
    assert inner.getvalue() == "error: [HOST-1] at [IP-1] sent \\x00 hidden\n"


def test_the_hosts_flag_counts_only_before_a_double_dash():
    assert hosts_requested(["check", "--redact-hosts"])
    assert not hosts_requested(["deploy", "--", "--redact-hosts"])
