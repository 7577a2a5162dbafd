"""qwen-doctor's own command-line options whose names an engine also uses (`--model`, `--host`, `--port`), for
the messages that point the user at them: these name our CLI's options (doctor/cli), not an engine flag.
tests/test_flag_literals.py checks that each is an option of the qwen-doctor command."""

MODEL = "--model"
HOST = "--host"
PORT = "--port"
