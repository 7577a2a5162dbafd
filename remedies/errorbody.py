"""A client's schema validation of an error reply: the reply's own message is the root.

An OpenAI-compatible server refuses a request with an error body (vLLM's ErrorResponse: `{"object": "error",
"message": ..., "type": "BadRequestError", "code": 400}`; OpenAI's and LiteLLM's `{"error": {"message": ...}}`). A
wrapper that parses that body as a success (`ChatCompletion.model_validate(...)`) fails with a pydantic
ValidationError about missing fields (id, choices, ...), whose `input_value` is the error body, cut. That
validation error says only that the reply was an error; the reply's message, printed above it, says why.
`reply_root` returns it as the root (`<type>: <message>`) when the validation error's lines show an error body as
their input and an error body was printed before them.
"""

from __future__ import annotations

import re

from remedies.validationroot import HEADER

# the validated input was an error reply: vLLM / SGLang ErrorResponse, or the OpenAI / LiteLLM error envelope
_PARSED_ERROR = re.compile(r"""input_value=\{\s*['"](?:object['"]\s*:\s*['"]error|error['"]\s*:\s*\{)""")
_ERROR_BODY = re.compile(r"""['"]object['"]\s*:\s*['"]error['"]|['"]error['"]\s*:\s*\{""")
_MESSAGE = re.compile(r"""['"]message['"]\s*:\s*(?P<q>['"])(?P<message>(?:\\.|(?!(?P=q)).){8,600}?)(?P=q)""")
_TYPE = re.compile(r"""['"]type['"]\s*:\s*['"](?P<type>[A-Za-z_]\w{2,60})['"]""")
MAX_AFTER = 8


def reply_root(lines: list[str], at: int) -> str | None:
    """`<type>: <message>` of the last error reply printed before line `at` (an index into `lines`) when the line
    there is a pydantic validation header whose errors below it were raised on an error reply, else None."""
    if not HEADER.search(lines[at].strip()):
        return None
    if not any(_PARSED_ERROR.search(line) for line in lines[at + 1:at + 1 + MAX_AFTER]):
        return None
    for line in reversed(lines[:at]):
        if not _ERROR_BODY.search(line):
            continue
        message = _MESSAGE.search(line)
        if message is None:
            continue
        kind = _TYPE.search(line[message.end():]) or _TYPE.search(line)
        return f"{kind.group('type') if kind else 'Error'}: {message.group('message')}"
    return None
