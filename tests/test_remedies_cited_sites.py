"""An entry matched on a message printed without a traceback names the raise site its sources know.

The sites come from the entry's linked mined templates (remedies/template_links.json) or, without any, from the
files its `source` cites (asyncio's BaseEventLoop.create_server for a port in use; the CDI library's
pkg/cdi/cache.go for an unresolvable device).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain
from remedies.loader import load_catalogue
from remedies.rootcause import cited_sites


@pytest.mark.parametrize("line, entry, site", [
    ("open-webui-1  | ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8080): address "
     "already in use\n", "QD-R-VLLM-PORT-IN-USE", "asyncio/base_events.py"),
    ("Error: unable to start container: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all\n",
     "QD-R-CUDA-CDI-UNRESOLVABLE", "pkg/cdi/cache.go"),
])
def test_a_message_without_traceback_gets_the_entrys_cited_raise_site(tmp_path, line, entry, site):
    log = tmp_path / "paste.log"
    log.write_text(line)
    (finding,) = explain.explain_sources([log])
    assert finding.remedy.id == entry
    assert finding.root is not None and finding.root.frame is None
    assert any(site in cited for cited in finding.root.cited)
    assert "the entry's engine sources place the raise in" in finding.why


def test_an_entry_whose_sources_cite_no_file_gets_no_invented_site(tmp_path):
    log = tmp_path / "paste.log"
    log.write_text("$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n")
    found = explain.explain_sources([log])
    assert found and all(f.root is None or not f.root.cited for f in found)


def test_nccls_shm_entry_cites_the_nccl_source_that_prints_its_warning():
    entry = load_catalogue().get("QD-R-NCCL-SHM-NO-SPACE")
    assert entry is not None
    assert any(site.startswith("src/misc/shmutils.cc") for site in cited_sites(entry.id, entry.source))


def test_a_warning_level_entry_named_first_gets_its_root_and_mined_raise_site(tmp_path):
    log = tmp_path / "client.log"
    log.write_text('openai.BadRequestError: Error code: 400 - {"object": "error", "message": "This model\'s maximum '
                   "context length is 16384 tokens. However, you requested 122946 tokens (112946 in the messages, "
                   '10000 in the completion). Please reduce the length of the messages or completion."}\n')
    (finding, *_) = explain.explain_sources([log])
    assert finding.remedy.id == "QD-R-VLLM-CONTEXT-EXCEEDED" and finding.remedy.severity == "warning"
    assert finding.root is not None
    sites = finding.root.cited or tuple(s.where for s in (finding.root.located.sites if finding.root.located else ()))
    assert any("serving_engine.py" in site or "serving" in site for site in sites)
