#!/usr/bin/env bash
# Offline install of the carried wheel set: joins split wheels, installs every wheel with --no-deps into TARGET,
# writes TARGET/env.sh (PYTHONPATH incl. the .pth-added dirs, e.g. nvidia-cutlass-dsl's). Usage: install-set.sh PARTS_DIR [TARGET]
set -euo pipefail
W="$(cd "$1" && pwd)"; T="${2:-/tmp/site}"; J="$W/_joined"; mkdir -p "$J"
for first in $(find "$W" -path "$W/*part*" -type f -name '*.whl.split-aa'); do
  whl="$(basename "${first%.split-aa}")"
  mapfile -t pieces < <(find "$W" -path "$W/*part*" -type f -name "$whl.split-*" -printf '%f\t%p\n' | LC_ALL=C sort | cut -f2)
  cat "${pieces[@]}" > "$J/$whl"; echo "[install] joined $whl from ${#pieces[@]} pieces"
done
mapfile -t wheels < <(find "$W" -path "$W/*part*" -type f -name '*.whl'; find "$J" -type f -name '*.whl')
echo "[install] ${#wheels[@]} wheels -> $T"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$T" "${wheels[@]}"
EXTRA="$(cd / && python3 - "$T" <<'PY'
import os, site, sys
t = os.path.realpath(sys.argv[1]); before = list(sys.path); site.addsitedir(t)
print(':'.join(p for p in sys.path if p not in before and os.path.realpath(p) != t))
PY
)"
echo "export PYTHONPATH=\"$T${EXTRA:+:$EXTRA}\${PYTHONPATH:+:\$PYTHONPATH}\"" > "$T/env.sh"
echo "[install] wrote $T/env.sh (extra: ${EXTRA:-none})"
