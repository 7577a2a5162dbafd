#!/usr/bin/env bash
# Boot vLLM 0.26.0 on the lent H200 machine once per flag set and keep each boot's log up to the engine's last memory
# line (gpu_worker's "Free memory on device ... Current kv cache memory in use"): how the MTP sweep in
# tests/fixtures/h200-rehearsal/kv-sweep/ was recorded. The server is stopped there: the memory accounting is whole.
# Before it: the vLLM wheel set copied to /tmp/w/partNN (../shared/gpu-rehearsal/README.md).
# Usage: OUT=DIR bash scripts/h200_kv_sweep.sh NAME:SPEC:MAX_NUM_SEQS:MAX_NUM_BATCHED_TOKENS[:UTILISATION] ...
#   SPEC: 0 (none), N (MTP with N tokens) or dflashN (the registry's DFlash drafter, config only, N tokens).
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
boot_s="${BOOT_S:-420}"
if [ ! -f /tmp/site/env.sh ]; then
  bash /tmp/w/part01/install.sh /tmp/w > "$OUT/install.txt" 2>&1 || { tail -20 "$OUT/install.txt"; exit 3; }
fi
. /tmp/site/env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_CACHE_ROOT=/tmp/vllm-cache PYTHONPATH="$PWD:${PYTHONPATH:-}"
folder="$(python3 -c 'from doctor.rehearse import checkpoint; print(checkpoint.build("Qwen/Qwen3.5-35B-A3B").path)')" || exit 3
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for run in "$@"; do
  IFS=: read -r name k seqs tokens util <<< "$run"
  args=(--load-format dummy --served-model-name Qwen/Qwen3.5-35B-A3B --max-model-len 262144 --reasoning-parser qwen3
        --language-model-only --max-num-seqs "$seqs" --max-num-batched-tokens "$tokens" --port 8000 --host 127.0.0.1)
  if [[ "$k" == dflash* ]]; then
    drafter="$(python3 -c 'from doctor.rehearse import drafter; print(drafter.build("z-lab/Qwen3.5-35B-A3B-DFlash"))')" || exit 3
    args+=(--speculative-config "{\"method\":\"dflash\",\"model\":\"$drafter\",\"num_speculative_tokens\":${k#dflash}}")
  elif [ "$k" != 0 ]; then
    args+=(--speculative-config "{\"method\":\"mtp\",\"num_speculative_tokens\":$k}")
  fi
  [ -n "${util:-}" ] && args+=(--gpu-memory-utilization "$util")
  log="$OUT/$name.log"; t0=$(date +%s)
  echo "vllm serve $folder ${args[*]}" > "$log"
  setsid vllm serve "$folder" "${args[@]}" >> "$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$boot_s" ]; do
    grep -q "Current kv cache memory in use\|Application startup complete\|Engine core initialization failed" "$log" && break
    sleep 2
  done
  echo "$name: $(( $(date +%s) - t0 )) s; $(grep -c 'Current kv cache memory in use' "$log") memory line(s)"
  grep -h "GPU KV cache size\|Available KV cache memory\|CUDA graph pool memory\|Model loading took" "$log" | sed 's/^/  /'
  kill -INT -- -"$pid" 2>/dev/null; for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- -"$pid" 2>/dev/null; sleep 3
done
