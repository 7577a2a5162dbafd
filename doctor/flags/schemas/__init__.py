"""Flag schemas (JSON package data), one file per backend version; see docs/flags.md."""
