"""A Rust frontend's or router's panic, with no Python traceback, is read as a crash: its message is the root and
its source position the raise site, and on a page about an engine it is named a bug of that component
(remedies/rustpanic.py; rust-lang/rust library/std/src/panicking.rs default_hook prints both forms below)."""

from __future__ import annotations

from pathlib import Path

from remedies import explain_sources
from remedies.rustpanic import panic_site

NEW = ["thread 'tokio-runtime-worker' panicked at src/routers/http/router.rs:123:45:",
       "called `Result::unwrap()` on an `Err` value: Os { code: 111, kind: ConnectionRefused }",
       "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"]
OLD = ["thread 'main' panicked at 'failed to bind: Address in use', src/main.rs:42:10"]


def explain(tmp_path: Path, lines: list[str]) -> list:
    path = tmp_path / "router.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return explain_sources([path])


def test_the_message_on_the_line_after_the_location_is_the_root(tmp_path):
    (found,) = explain(tmp_path, ["2026-01-01T00:00:00Z INFO sglang_router_rs: starting router", *NEW])
    assert found.crash is not None
    assert found.crash.exception.endswith("called `Result::unwrap()` on an `Err` value: Os { code: 111, "
                                          "kind: ConnectionRefused }")
    assert found.crash.frame is not None and (found.crash.frame.path, found.crash.frame.line) == (
        "src/routers/http/router.rs", 123)
    assert found.engine_bug is not None  # the page names the engine (sglang_router_rs)


def test_the_older_form_quotes_the_message_before_the_location(tmp_path):
    (found,) = explain(tmp_path, OLD)
    assert found.crash is not None and "failed to bind: Address in use" in found.crash.exception
    assert panic_site(OLD[0]) is not None and panic_site(OLD[0]).path == "src/main.rs"


def test_a_line_that_only_mentions_a_panic_is_not_one(tmp_path):
    assert explain(tmp_path, ["The router never panicked at startup in 0.4, only later."]) == []
