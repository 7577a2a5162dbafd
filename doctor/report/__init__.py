"""Reports: one model (`Report`) rendered to every output format."""
