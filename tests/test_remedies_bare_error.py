"""A client's bare `Error: ...` heading is not the root when the lines below it quote the engine's exception
(remedies/explain.py `_bare_last`). The quoted message is SGLang's own (sglang/srt/server_args.py
ServerArgs._handle_encoder_disaggregation: "--enable-prefix-mm-cache requires --encoder-only to be enabled")."""

from __future__ import annotations

from remedies import explain_sources

PAYLOAD = ('{"error": {"message": "ValueError: --enable-prefix-mm-cache requires --encoder-only to be enabled", '
           '"type": "BadRequestError", "param": null, "code": 400}}')


def test_the_quoted_exception_below_a_bare_error_heading_is_the_root(tmp_path):
    paste = tmp_path / "client.txt"
    paste.write_text(f"Error: request failed:\n{PAYLOAD}\n")
    (found,) = explain_sources([paste])
    assert found.crash is not None and found.crash.exception.startswith("ValueError: --enable-prefix-mm-cache")
    assert found.located is not None and "server_args.py" in found.located.hit.template.sites[0].module


def test_a_bare_error_alone_is_still_reported(tmp_path):
    paste = tmp_path / "shell.txt"
    paste.write_text("Error: failed to start the sglang server: exit status 1\n")
    found = explain_sources([paste])
    assert found and found[0].crash is not None and found[0].crash.exception.startswith("Error: failed to start")
