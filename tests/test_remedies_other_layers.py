"""The same failure printed by another layer or release names the same entry: pyzmq's bind error (zmq/sugar/
socket.py), `ray start`'s version check (ray/scripts/scripts.py), vLLM's own GGUF loader (gguf_loader.py), NCCL's
CUDACHECK WARN line (src/include/checks.h) ahead of a traceback cut before its exception, and torch's CPU-only
build (torch/cuda/__init__.py, libtorch_cuda.so missing)."""

from __future__ import annotations

import pytest

from remedies import explain_sources

CUT = ["Traceback (most recent call last):",
       '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/parallel_state.py", line 1000, in init_group',
       "    self.pynccl_comm = PyNcclCommunicator("]


@pytest.mark.parametrize(("lines", "entry"), [
    (["zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:5570')"], "QD-R-VLLM-PORT-IN-USE"),
    (["RuntimeError: Ray version mismatch: cluster has Ray version 2.49.1 but local Ray version is 2.51.0"],
     "QD-R-RAY-VERSION-MISMATCH"),
    (["RuntimeError: Unknown gguf model_type: qwen35moe"], "QD-R-HF-GGUF-ARCH-UNSUPPORTED"),
    (["node-1:1234:1300 [0] include/alloc.h:103 NCCL WARN Cuda failure 'out of memory'", *CUT],
     "QD-R-NCCL-CUDA-ERROR"),
    (["AssertionError: Torch not compiled with CUDA enabled"], "QD-R-TORCH-CPU-ONLY-BUILD"),
    (["ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory"],
     "QD-R-TORCH-CPU-ONLY-BUILD"),
])
def test_another_layers_wording_names_the_entry(tmp_path, lines, entry):
    paste = tmp_path / "paste.log"
    paste.write_text("\n".join(lines) + "\n")
    assert explain_sources([paste])[0].remedy.id == entry


def test_a_cuda_runtime_library_missing_stays_the_runtime_entry(tmp_path):
    paste = tmp_path / "paste.log"
    paste.write_text("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n")
    assert explain_sources([paste])[0].remedy.id == "QD-R-CUDA-RUNTIME-LIB-MISSING"


def test_a_capture_error_in_nccls_warn_line_stays_the_capture_entry(tmp_path):
    paste = tmp_path / "paste.log"
    paste.write_text("n:1:2 [0] NCCL WARN Cuda failure 'dependency created on uncaptured work in another stream'\n")
    assert explain_sources([paste])[0].remedy.id == "QD-R-CUDA-STREAM-CAPTURING"
