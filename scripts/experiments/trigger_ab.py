"""Device experiment: the 7B q4f16_1 engine as shipped against q4 GEMVs that let their successor
launch later, timed alternately in one process on the same GEMV configs (step_ab_kit).

    python scripts/experiments/trigger_ab.py OUT_DIR

pdl_trigger.py's synthetic layer (the 7B's four weight streams) took 44.3 us with each kernel
calling grid_dependents_launch after its stream against 46.7 calling it first thing.  Variants:
  as shipped     the q4 GEMV lets its successor launch right after its L2 prefetch
  trigger end    ... after its K loop (before the reduction and epilogue)
  trigger half   ... after half its K steps
Writes OUT_DIR/trigger-ab.json: per variant, tokens/s and the share of the limit a round.
"""
import sys
from pathlib import Path

from step_ab_kit import SHIPPED, engines_ab, replacing

FIRST = ("      autosched_pdl::grid_dependents_launch();\n    }\n#endif\n    u32 q[TILE_S][WPT];",
         "    }\n#endif\n    u32 q[TILE_S][WPT];")
REDUCE = "    // Reduce over r: first among the lanes of a warp, then across warps through shared memory.\n"
STEP = "      compute(cur, vv, sc, row0, w0, acc);\n"


def main():
    text = SHIPPED("gemv_q4f16.cuh")
    assert text.count(FIRST[0]) == 1 and text.count(REDUCE) == 1 and text.count(STEP) == 1
    engines_ab(Path(sys.argv[1]), {
        "as shipped": None,
        "trigger end": replacing([FIRST, (REDUCE, "    autosched_pdl::grid_dependents_launch();\n" + REDUCE)]),
        "trigger half": replacing([FIRST, (STEP, STEP + "      if (step == STEPS / 2) autosched_pdl::grid_dependents_launch();\n")]),
    }, "trigger-ab")


if __name__ == "__main__":
    main()
