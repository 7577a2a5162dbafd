#!/usr/bin/env bash
# Boot SGLang once per flag set on the lent GPU machine and keep each boot's log up to its last memory line
# ("max_total_num_tokens=..." after the CUDA graphs), or up to its refusal: how the SGLang boots off the H200 in
# tests/fixtures/h200-rehearsal/ were recorded. The server is stopped there: the memory accounting is whole.
# Before it: the SGLang set copied to /tmp/g/partNN (scripts/h200_rehearsal.sh says how).
# STOP_AT (a grep pattern) ends a boot earlier, e.g. at "Memory pool end" once the pools are sized.
# Usage: OUT=DIR bash scripts/h200_sglang_kv.sh NAME:MODEL:BOOT_S[:FLAG=VALUE,...] ...
#   e.g. fp8-default:Qwen/Qwen3.5-35B-A3B-FP8:420   bf16-default:Qwen/Qwen3.5-35B-A3B:150
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
if [ ! -f /tmp/site/env.sh ]; then
  bash /tmp/g/part01/install.sh /tmp/g /tmp/site > "$OUT/install.txt" 2>&1 || { tail -20 "$OUT/install.txt"; exit 3; }
fi
. /tmp/site/env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH="$PWD:${PYTHONPATH:-}"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for run in "$@"; do
  IFS=: read -r name model boot_s extra <<< "$run"
  folder="$(python3 -c "from doctor.rehearse import checkpoint; print(checkpoint.build('$model').path)")" || exit 3
  args=(--host 127.0.0.1 --port 30000 --context-length 262144 --reasoning-parser qwen3 --model-path "$folder"
        --load-format dummy --served-model-name "$model")
  IFS=, read -ra pairs <<< "${extra:-}"
  for pair in "${pairs[@]}"; do args+=("--${pair%%=*}" "${pair#*=}"); done
  log="$OUT/$name.log"; t0=$(date +%s)
  echo "python3 -m sglang.launch_server ${args[*]}" > "$log"
  setsid python3 -m sglang.launch_server "${args[@]}" >> "$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$boot_s" ]; do
    grep -q "${STOP_AT:-max_total_num_tokens=\|Not enough memory}" "$log" && break
    sleep 2
  done
  echo "$name: $(( $(date +%s) - t0 )) s"
  grep -o "mem_fraction_static=[0-9.]*" "$log" | head -1 | sed 's/^/  /'
  grep -h "avail mem=\|Cache is allocated\|max_total_num_tokens\|Not enough memory\|Error" "$log" | cut -c1-300 | sed 's/^/  /'
  kill -INT -- -"$pid" 2>/dev/null; for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- -"$pid" 2>/dev/null; pkill -9 -f "sglang[.]launch_server" 2>/dev/null; sleep 3
done
