"""The classes the session-32 harvest of public logs missed are named from the components' own wording.

Each case is a message rendered from the source that prints it (named beside it), in the shapes users paste:
nvidia-smi's own text for NVML's driver-not-loaded, Triton's failed ptxas run before and after 3.3, torch's
device-index assert (raised directly or deferred by lazy init, cut after "device="), TRL's server check giving
up, SGLang's attention-backend gate for hybrid GDN models on Blackwell, and huggingface_hub's CacheNotFound.
The near misses at the end keep the new wordings from claiming what they do not cover.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remedies import explain_sources

PTXAS_OLD = ("/opt/conda/lib/python3.11/site-packages/triton/backends/nvidia/bin/ptxas -lineinfo -v "
             "--gpu-name={arch} /tmp/tmpb85wo12z.ptx -o /tmp/tmpb85wo12z.ptx.o 2> /tmp/tmp9opzz4lr.log")
PTXAS_NEW = ("/usr/local/lib/python3.12/dist-packages/triton/backends/nvidia/bin/ptxas -lineinfo -v "
             "--gpu-name={arch} /tmp/tmpkw7ug6t8.ptx -o /tmp/tmpkw7ug6t8.ptx.o")

NAMED = [
    # nvidia-smi prints this when nvmlInit fails with NVML_ERROR_DRIVER_NOT_LOADED
    ("nvidia-smi, driver module not loaded",
     "$ nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that "
     "the latest NVIDIA driver is installed and running.\n", "QD-R-CUDA-NVML-DRIVER-NOT-LOADED"),
    ("nvidia-smi, typographic apostrophe and wrapped",
     "NVIDIA-SMI has failed because it couldn\u2018t communicate with the NVIDIA driver.\nMake sure that the latest "
     "NVIDIA driver is installed and running.\n", "QD-R-CUDA-NVML-DRIVER-NOT-LOADED"),
    # Triton make_cubin before 3.3: subprocess.run(shell string, check=True) -> CalledProcessError
    ("Triton < 3.3 ptxas on sm_120, traceback cut before ptxas' stderr",
     "  File \"/opt/conda/lib/python3.11/subprocess.py\", line 571, in run\n    raise CalledProcessError(retcode, "
     "process.args,\nsubprocess.CalledProcessError: Command '" + PTXAS_OLD.format(arch="sm_120") + "' returned "
     "non-zero exit status 255.\n", "QD-R-TORCH-TRITON-PTXAS-ARCH"),
    ("Triton < 3.3 ptxas on sm_100a, Ray-prefixed and flattened",
     "(SGLangWorker pid=38138) subprocess.CalledProcessError: Command '" + PTXAS_OLD.format(arch="sm_100a")
     + "' returned non-zero exit status 255. (SGLangWorker pid=38138) During handling of the above exception\n",
     "QD-R-TORCH-TRITON-PTXAS-ARCH"),
    # Triton make_cubin from 3.3: PTXASError with "`ptxas` stderr:" and "Repro command: ..."
    ("Triton >= 3.3 PTXASError, stderr lost, repro command kept",
     "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n`ptxas` stderr:\n\n"
     "Repro command: " + PTXAS_NEW.format(arch="sm_121a") + "\n", "QD-R-TORCH-TRITON-PTXAS-ARCH"),
    # torch aten/src/ATen/cuda/CUDAContext.cpp getDeviceProperties AT_ASSERT, raised directly
    ("device index assert, raised", "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
     "\"../aten/src/ATen/cuda/CUDAContext.cpp\":49, please report a bug to PyTorch. device=3, num_gpus=3\n",
     "QD-R-TORCH-DEVICE-INDEX-NOT-VISIBLE"),
    # torch/cuda/__init__.py _lazy_init: DeferredCudaCallError, the paste cut after "device="
    ("device index assert, deferred by lazy init and cut",
     "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && "
     "device < num_gpus INTERNAL ASSERT FAILED at \"/workspace/aten/src/ATen/cuda/CUDAContext.cpp\":49, please "
     "report a bug to PyTorch. device=1,\n", "QD-R-TORCH-DEVICE-INDEX-NOT-VISIBLE"),
    # torch.cuda.set_device -> cudaSetDevice: cudaErrorInvalidDevice, in a vLLM worker's init_device
    ("invalid device ordinal, vLLM worker", "(VllmWorkerProcess pid=2020957) ERROR 10-01 10:44:31 "
     "multiproc_worker_utils.py:228]     torch._C._cuda_setDevice(device)\n(VllmWorkerProcess pid=2020957) ERROR "
     "10-01 10:44:31 multiproc_worker_utils.py:228] RuntimeError: CUDA error: invalid device ordinal\n",
     "QD-R-TORCH-DEVICE-INDEX-NOT-VISIBLE"),
    ("invalid device ordinal, NCCL", "node1:2144:2556 [2] misc/cudawrap.cc:190 NCCL WARN Cuda failure 'invalid "
     "device ordinal'\n", "QD-R-TORCH-DEVICE-INDEX-NOT-VISIBLE"),
    # trl/extras/vllm_client.py check_server_health: the retries, then the ConnectionError after total_timeout
    ("TRL server check, polling", "2025-03-26 05:53:13 - INFO - trl.extras.vllm_client - Server is not up yet. "
     "Retrying in 2.0 seconds...\n", "QD-R-VLLM-TRL-SERVER"),
    ("TRL server check, giving up", "ConnectionError: The vLLM server can't be reached at 0.0.0.0:8000 after "
     "120.0 seconds. Make sure the server is running by running `trl vllm-serve`.\n", "QD-R-VLLM-TRL-SERVER"),
    # sglang/srt/layers/attention/attention_registry.py: the hybrid GDN gate on Blackwell (0.5.23 wording)
    ("SGLang hybrid GDN backend gate, SM100 set",
     "AssertionError: Only {'triton', 'trtllm_mha', 'fa4', 'flashinfer'} backends are supported on Blackwell GPUs "
     "for hybrid GDN models. Got prefill=fa3, decode=fa3.\n", "QD-R-SGLANG-GDN-BLACKWELL-ATTN-BACKEND"),
    ("SGLang hybrid GDN backend gate, SM120 set, scheduler record",
     "[2026-03-04 10:31:59] Scheduler hit an exception: Traceback (most recent call last):\n  File \"/usr/local/"
     "lib/python3.12/dist-packages/sglang/srt/layers/attention/attention_registry.py\", line 474, in "
     "attn_backend_wrapper\n    assert prefill_be in allowed and decode_be in allowed, (\nAssertionError: Only "
     "{'triton', 'trtllm_mha', 'flashinfer'} backends are supported on Blackwell GPUs for hybrid GDN models. Got "
     "prefill=flashmla, decode=flashmla.\n", "QD-R-SGLANG-GDN-BLACKWELL-ATTN-BACKEND"),
    # huggingface_hub utils/_cache_manager.py scan_cache_dir: CacheNotFound for a directory that does not exist
    ("HF cache directory missing, exception line", "huggingface_hub.errors.CacheNotFound: Cache directory not found: "
     "/srv/hf-cache/hub. Please use `cache_dir` argument or set `HF_HUB_CACHE` environment variable.\n",
     "QD-R-HF-CACHE-NOT-FOUND"),
]

NOT_NAMED = [
    # a ptxas failure for Hopper is not the new-architecture case the shell-command wording stands for
    ("ptxas failure on sm_90", "subprocess.CalledProcessError: Command '" + PTXAS_OLD.format(arch="sm_90a")
     + "' returned non-zero exit status 255.\n", "QD-R-TORCH-TRITON-PTXAS-ARCH"),
    # an XPU device-range check words the same condition differently and is not a CUDA visibility problem
    ("XPU device range check", "RuntimeError: device is out of range, device is 2, total number of device is 1.\n",
     "QD-R-TORCH-DEVICE-INDEX-NOT-VISIBLE"),
    # the same scan given a file is a different mistake, worded differently
    ("HF cache path is a file", "ValueError: Scan cache expects a directory but found a file: /data/hf. Please use "
     "`cache_dir` argument or set `HF_HUB_CACHE` environment variable.\n", "QD-R-HF-CACHE-NOT-FOUND"),
]


def first(text: str, tmp_path: Path) -> str | None:
    log = tmp_path / "pasted.log"
    log.write_text(text, encoding="utf-8")
    findings = explain_sources([log])
    return findings[0].remedy.id if findings else None


@pytest.mark.parametrize("text,expected", [(t, e) for _, t, e in NAMED], ids=[n for n, _, _ in NAMED])
def test_each_wording_names_its_entry_first(text, expected, tmp_path):
    assert first(text, tmp_path) == expected


@pytest.mark.parametrize("text,entry", [(t, e) for _, t, e in NOT_NAMED], ids=[n for n, _, _ in NOT_NAMED])
def test_near_misses_do_not_borrow_the_entry(text, entry, tmp_path):
    assert first(text, tmp_path) != entry


def test_the_gdn_backend_fix_names_the_backends_the_message_allows(tmp_path):
    log = tmp_path / "pasted.log"
    gdn = next(text for name, text, _ in NAMED if name.endswith("SM120 set, scheduler record"))
    log.write_text(gdn, encoding="utf-8")
    finding = explain_sources([log])[0]
    fix = " ".join(step.text for step in finding.steps)
    assert "{'triton', 'trtllm_mha', 'flashinfer'}" in fix and "--attention-backend triton" in fix
