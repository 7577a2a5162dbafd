"""Adversarial inputs for redaction: each one repeats a pattern's own pieces so that a backtracking pattern
would rescan the same characters from every start (quadratic); a linear redactor reads each once."""

from __future__ import annotations

# Pieces repeated to the requested size: starts of every pass (flags, assignments, headers, URLs, tokens, PEM,
# truncation marks, escape sequences, host names) without the ending that would complete a match.
PIECES: tuple[str, ...] = (
    "-", "--a", "--api-key", "--api_key ", "-a-", "token", "token=", "token: ", "key=", "a.", "a=", "a:", "a-",
    "://", "://a:", "://a:b", "hf_", "hf_a", "sk-", "ghp_", "github_pat_", "AKIA", "eyJ", "eyJa.", "eyJaaaaaaaaa.",
    "-----BEGIN ", "-----BEGIN A ", "Bearer ", "bearer\t", "'", '"', "\\", "Authorization: ", "Authorization: Bearer ",
    "Cookie: ", "?api_key=", "&", "password=\"\\", "x …", "…", "\x1b[", "\x1b]", "\x1b[0", "0.", "1.1.1.", ":",
    "0:", "[", "a", "A", " ", "\t", "node-1.corp.", "a.b-", "http://", "x://a@", "X-Api-Key:",
)


def adversarial(piece: str, size: int) -> str:
    """`piece` repeated to `size` characters, then a tail that completes no pattern."""
    return (piece * (size // len(piece) + 1))[:size] + "!"


def single_runs(size: int) -> list[str]:
    """One long run after a single start: a value, a name, a quoted string, a URL authority, a token body."""
    run = "a" * size
    return ["--api-key " + run, "password=" + run, '"password": "' + run, "://u:" + run, "hf_" + run,
            "eyJ" + run, "-----BEGIN RSA PRIVATE KEY-----" + run, run + "=", "Authorization: Bearer " + run,
            "Cookie: " + run, "eyJ" + run + ".eyJ" + run, "\x1b[" + "0" * size, "\x1b]" + run,
            "http://" + run + ".corp.internal", run + " …"]
