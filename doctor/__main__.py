"""`python -m doctor` runs the CLI."""

from doctor.cli import interrupt

interrupt.exit_at_once()  # Ctrl-C while the CLI imports: one line, exit 130

from doctor.cli.main import main  # noqa: E402

main()
