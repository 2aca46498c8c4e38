"""compute-sanitizer over fp16 tensor-core GEMM configs, in one process.

    compute-sanitizer --tool memcheck python3 scripts/sanitize_hgemm.py [MxNxK[_bt] ...]
    compute-sanitizer --tool racecheck python3 scripts/sanitize_hgemm.py ...

Per shape, the config with the most shared memory, the largest and smallest block tiles, the
default and two random configs are built, launched on poisoned output and checked against the
float64 reference; the sanitizer reports out-of-bounds and misaligned accesses (memcheck) or
shared-memory hazards of the cp.async ring (racecheck); the exit code is 1 if a check failed.
"""
import random
import sys

from autosched.build import Builder
from autosched.measure.protocol import Protocol
from autosched.measure.worker import Worker
from autosched.templates import HgemmMmaTemplate
from autosched.templates.hgemm_mma import smem_bytes
from autosched.workloads import Hgemm


def main(shapes):
    w0 = Worker(0, Protocol(flush_bytes=1 << 20, warmup=0, repeat=1))
    t = HgemmMmaTemplate()
    bad = 0
    with Builder() as b:
        for shape in shapes:
            w = Hgemm.from_shape(shape)
            cfgs = t.space(w, w0.info).enumerate()
            pick = [max(cfgs, key=lambda c: smem_bytes(c["bm"], c["bn"], c["bk"], c["stages"], c["pad"], w.b_col)),
                    max(cfgs, key=lambda c: c["bm"] * c["bn"]), min(cfgs, key=lambda c: c["bm"] * c["bn"]),
                    t.default_config(w, w0.info)] + random.Random(2).sample(cfgs, 2)
            specs = [t.render(w, c, w0.info) for c in pick]
            for c, s, binary in zip(pick, specs, b.build_many(specs)):
                m = w0.measure(s, binary)
                bad += not m.ok
                print(w.key, s.smem_bytes, "B", m.status.value, c, m.error[:200], flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["300x264x200", "300x260x200_bt"]))
