"""`deploy --rehearse`: the model's real architecture served with random weights from a generated checkpoint
folder (config, tokenizer, chat template, processor configs), so memory, kernels, CUDA graphs, KV capacity and
the API can be proven on the user's GPUs before any download."""

from doctor.rehearse.launch import NOTICE, Rehearsal, rehearse_spec

__all__ = ["NOTICE", "Rehearsal", "rehearse_spec"]
