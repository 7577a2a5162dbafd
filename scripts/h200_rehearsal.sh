#!/usr/bin/env bash
# Record a `deploy --rehearse` on the lent H200 machine (how tests/fixtures/h200-rehearsal/ was recorded).
# Before it: one device call per part copies /tmp/g/partNN: the SGLang 0.5.16 set
# (tests/fixtures/h200-rehearsal/sglang-wheels.yaml) plus the vLLM 0.26.0 set's dependencies
# (../shared/gpu-rehearsal/wheels.txt), packed in 52 MiB parts with install.sh (scripts/h200_install_set.sh)
# in part01; the vLLM wheel itself, for vLLM runs, in /tmp/g/vpartNN. Usage: OUT=DIR bash scripts/h200_rehearsal.sh sglang|sglang-NAME|vllm-fp8-vision [TIMEOUT_S]  (sglang-NAME: tests/fixtures/h200-rehearsal/sglang-h200-NAME.yaml)
set -uo pipefail
what="${1:?usage: h200_rehearsal.sh sglang|vllm-fp8-vision [TIMEOUT_S [DEPLOY_OPTION ...]]}"
wait_s="${2:-430}"
shift 2 2>/dev/null || shift $#
extra=("$@")  # more deploy options, e.g. --model fp8 --flag enable-metrics=true
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
t0=$(date +%s)
if [ ! -f /tmp/site/env.sh ]; then
  bash /tmp/g/part01/install.sh /tmp/g /tmp/site > "$OUT/install.txt" 2>&1 || { tail -20 "$OUT/install.txt"; exit 3; }
fi
. /tmp/site/env.sh
if [ "${what%%-*}" != sglang ] && ! python3 -c 'import vllm' 2>/dev/null; then
  cat $(ls /tmp/g/vpart*/vllm-*.split-* | LC_ALL=C sort -t/ -k5) > /tmp/g/vllm-0.26.0-cp38-abi3-manylinux_2_28_x86_64.whl
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/g/vllm-0.26.0-*.whl
fi
export PYTHONPATH="$PWD:$PYTHONPATH"
echo "installed in $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 - <<'PY' 2>&1 | tee "$OUT/versions.txt"
import importlib
for name in ("torch", "transformers", "flashinfer", "xgrammar", "vllm", "sglang", "sgl_kernel"):
    try:
        mod = importlib.import_module(name)
        print(name, getattr(mod, "__version__", "?"))
    except Exception as exc:
        print(name, "IMPORT FAILED:", type(exc).__name__, str(exc)[:300])
PY
case "$what" in
  sglang) profile=tests/fixtures/h200-rehearsal/sglang-h200.yaml; model=() ;;
  sglang-*) profile=tests/fixtures/h200-rehearsal/sglang-h200-${what#sglang-}.yaml; model=() ;;
  vllm-fp8-vision) profile=tests/fixtures/h200-rehearsal/vllm-h200.yaml; model=(--model fp8) ;;
  *) echo "unknown run $what"; exit 2 ;;
esac
timeout -s INT "$(( wait_s + 90 ))" python3 -m doctor deploy --profile "$profile" "${model[@]}" "${extra[@]}" --rehearse \
  --python python3 --force --timeout "$wait_s" --log "$OUT/$what.log" --report "$OUT/$what.json"
echo "deploy exit $? after $(( $(date +%s) - t0 )) s"
