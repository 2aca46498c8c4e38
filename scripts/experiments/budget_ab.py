"""Device experiment: the 7B q4f16_1 engine as shipped against other L2 prefetch budgets of the
kernels that ask the L2 for their first weights before their dependency wait (pdl.cuh's
PREFETCH_BUDGET, bytes a whole grid asks for; 8 MiB since 2026-11-22, never swept in the step),
timed alternately in one process on the same GEMV configs (step_ab_kit.engines_ab).  It edits the
constant of the trees before 8f9a2ff and stops at its first assertion on later ones: since then the
engine times the budgets itself (engine.PREFETCH_BUDGETS) and passes its choice as a macro.

    python scripts/experiments/budget_ab.py OUT_DIR
"""
import sys
from pathlib import Path

from step_ab_kit import SHIPPED, engines_ab, replacing

BUDGET = "constexpr long long PREFETCH_BUDGET = 8ll << 20;"


def main():
    """python budget_ab.py OUT_DIR [--model M --format F] [MIB ...]: the budgets to try (default 0 4 16
    32), each against 8, on M's F engine (default random:llama2-7b, q4f16_1)."""
    assert SHIPPED("pdl.cuh").count(BUDGET) == 1
    args, kw = sys.argv[2:], {}
    for flag, key in (("--model", "model"), ("--format", "fmt")):
        if flag in args:
            i = args.index(flag)
            kw[key] = args[i + 1]
            del args[i:i + 2]
    mibs = [float(a) for a in args] or [0, 4, 16, 32]
    tag = "-".join([kw.get("model", "").split(":")[-1], kw.get("fmt", "")] + [f"{m:g}" for m in (mibs if args else [])]).strip("-")
    engines_ab(Path(sys.argv[1]), {"8 MiB (shipped)": None} | {
        f"{m:g} MiB": replacing([(BUDGET, f"constexpr long long PREFETCH_BUDGET = {int(m * 2**20)}ll;")])
        for m in mibs
    }, "budget-ab" + (f"-{tag}" if tag else ""), **kw)


if __name__ == "__main__":
    main()
