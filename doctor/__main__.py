"""`python -m doctor` runs the CLI."""

from doctor.cli.main import main

main()
