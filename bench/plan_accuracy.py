"""Residuals of `qwen-doctor plan` against every logged boot in tests/data/published_kv/.

    python bench/plan_accuracy.py            # print KV-token and weight residuals per boot, mean and max
    python bench/plan_accuracy.py --write    # also refresh doctor/planner/calibration.yaml (the printed band)

Only entries marked `predict: true` (model, GPUs, vLLM version and flags all known) are predicted end to
end; the others check the cache layout from the logged KV memory (tests/test_planner_published.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from doctor.planner.accuracy import residuals  # noqa: E402

DATA = ROOT / "tests" / "data" / "published_kv"
CALIBRATION = ROOT / "doctor" / "planner" / "calibration.yaml"


def load_entries() -> list[dict]:
    out: list[dict] = []
    for path in sorted(DATA.glob("*.yaml")):
        out += yaml.safe_load(path.read_text(encoding="utf-8"))["entries"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="refresh doctor/planner/calibration.yaml")
    args = parser.parse_args(argv)
    rows = residuals(load_entries())
    if not rows:
        print("no predictable entries")
        return 1
    print(f"{'boot':<28} {'KV tokens logged':>17} {'planned':>11} {'error':>7}   {'weights logged':>14} "
          f"{'planned':>8} {'error':>7}   {'KV GiB logged':>13} {'planned':>8}")
    for r in rows:
        w = f"{r.weights_error:+.2%}" if r.weights_error is not None else "-"
        lw = f"{r.logged_weights_gib:.2f}" if r.logged_weights_gib is not None else "-"
        la = f"{r.logged_available_gib:.2f}" if r.logged_available_gib is not None else "-"
        print(f"{r.id:<28} {r.logged_tokens:>17,} {r.planned_tokens:>11,} {r.tokens_error:>+7.2%}   {lw:>14} "
              f"{r.planned_weights_gib:>8.2f} {w:>7}   {la:>13} {r.planned_available_gib:>8.2f}")
    tok = [abs(r.tokens_error) for r in rows]
    wts = [abs(r.weights_error) for r in rows if r.weights_error is not None]
    print(f"\nKV tokens: mean abs error {sum(tok) / len(tok):.2%}, max {max(tok):.2%} over {len(tok)} boots")
    if wts:
        print(f"weights:   mean abs error {sum(wts) / len(wts):.2%}, max {max(wts):.2%} over {len(wts)} boots")
    if args.write:
        cal = yaml.safe_load(CALIBRATION.read_text(encoding="utf-8"))
        header = "".join(line + "\n" for line in CALIBRATION.read_text(encoding="utf-8").splitlines()
                         if line.startswith("#"))
        cal.update(boots=len(tok), kv_tokens_mean_abs_error=round(sum(tok) / len(tok) + 5e-4, 3),
                   kv_tokens_max_abs_error=round(max(tok) + 5e-4, 3),
                   weights_max_abs_error=round(max(wts) + 5e-4, 3) if wts else None)
        CALIBRATION.write_text(header + yaml.safe_dump(cal, sort_keys=False), encoding="utf-8")
        print(f"wrote {CALIBRATION.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
