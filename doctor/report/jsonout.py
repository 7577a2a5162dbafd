"""JSON rendering of a report (schema `qwen-doctor.report`, versioned)."""

from __future__ import annotations

import json

from doctor.report.model import Report


def render_json(report: Report) -> str:
    report = report.redacted()
    return json.dumps(report.to_dict(), indent=2, default=str) + "\n"
