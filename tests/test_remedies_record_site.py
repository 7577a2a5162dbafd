"""A message printed without a traceback names the source position its log record's prefix carries.

Record heads are written from the loggers' formats: glog / absl (`<L>MMDD hh:mm:ss.us tid file:line]`), Ray's C++
core (`[time L pid tid] file:line:`, src/ray/util/logging.cc), Ray's Python logger (`LEVEL file.py:N -- `), vLLM's
(vllm/logger.py `[%(fileinfo)s:%(lineno)d]`) and Python's warnings module (`file.py:N: Category: message`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain
from remedies.recordsite import message_site, record_site


@pytest.mark.parametrize("line, path, number", [
    ("W0816 16:43:33.649654 127 pinned_memory_manager.cc:236] Unable to allocate pinned system memory",
     "pinned_memory_manager.cc", 236),
    ("F tensorflow/core/common_runtime/gpu/gpu_device.cc:1520] Check failed",
     "tensorflow/core/common_runtime/gpu/gpu_device.cc", 1520),
    ("[2025-02-16 16:05:55,537 E 350061 350061] gcs_rpc_client.h:179: Failed to connect to GCS", "gcs_rpc_client.h", 179),
    ("2024-04-11 16:38:16,464\tWARNING worker.py:2037 -- The node with node id: x has been marked dead", "worker.py", 2037),
    ("INFO 06-13 11:42:20 [custom_ops.py:11] Failed to import", "custom_ops.py", 11),
    ("/opt/app/train.py:12: UserWarning: the flag is deprecated", "/opt/app/train.py", 12),
])
def test_a_records_own_source_position_is_read_from_its_head(line, path, number):
    site = record_site(line)
    assert site is not None and (site.path, site.line) == (path, number)


@pytest.mark.parametrize("line", [
    "Failed to initialize NVML: Driver/library version mismatch",
    "RuntimeError: cannot parse /etc/app/settings.conf:12: bad value",
    "ValueError: see https://example.org/page.html:8080 for details",
])
def test_a_line_without_a_record_position_has_none(line):
    assert record_site(line) is None


def test_a_position_inside_the_message_is_not_the_records(tmp_path):
    assert record_site("ERROR the loader said: config.py:40: bad key", "the loader said") is None


def test_an_entry_printed_by_a_ray_core_record_names_that_record_as_its_site(tmp_path):
    log = tmp_path / "ray.log"
    log.write_text("[2025-07-23 10:05:49,679 W 51000 51000] gcs_rpc_client.h:151: Failed to connect to GCS at "
                   "address 10.0.0.1:6379 within 5 seconds.\n")
    (finding, *_) = explain.explain_sources([log])
    assert finding.remedy.id == "QD-R-RAY-GCS-CONNECT"
    root = finding.root
    assert root is not None and root.logged and root.frame is not None
    assert (root.frame.path, root.frame.line) == ("gcs_rpc_client.h", 151)
    assert "printed at gcs_rpc_client.h, line 151" in finding.why


@pytest.mark.parametrize("text, path, number", [
    ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
     "unhandled cuda error", "../torch/csrc/distributed/c10d/NCCLUtils.hpp", 275),
    ("CUDA error 100 at /build/vendor/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:410: no CUDA-capable device is "
     "detected", "/build/vendor/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu", 410),
    ("UserWarning: the flag is ignored (Triggered internally at ../aten/src/ATen/Context.cpp:77.)",
     "../aten/src/ATen/Context.cpp", 77),
])
def test_a_native_position_printed_inside_a_message_is_read(text, path, number):
    site = message_site(text)
    assert site is not None and (site.path, site.line) == (path, number)


def test_a_file_named_inside_a_message_without_a_native_source_is_no_site():
    assert message_site("RuntimeError: could not open config at /etc/app/settings.yaml:3") is None


def test_a_crash_that_prints_its_native_position_is_placed_there(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("llm_load_tensors: offloading 32 repeating layers to GPU\n"
                   "CUDA error 700 at /build/vendor/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:2313: an illegal "
                   "memory access was encountered\n")
    (finding, *_) = explain.explain_sources([log])
    root = finding.root
    assert root is not None and root.frame is not None and not root.logged
    assert (root.frame.path.rsplit("/", 1)[-1], root.frame.line) == ("ggml-cuda.cu", 2313)
