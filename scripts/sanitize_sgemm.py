"""compute-sanitizer over SGEMM configs that stage more than 48 KB (dynamic shared memory), in one
process.

    compute-sanitizer --tool memcheck python3 scripts/sanitize_sgemm.py [MxNxK ...]

Per shape (A plain and transposed), the configs with the most shared memory and two random ones
over 48 KB are built, launched on poisoned output and checked against the float64 reference; the
sanitizer reports any out-of-bounds or misaligned access (exit code != 0 on error).
"""
import random
import sys

from autosched.build import Builder
from autosched.device import STATIC_SMEM_LIMIT
from autosched.measure.protocol import Protocol
from autosched.measure.worker import Worker
from autosched.templates import SgemmTemplate
from autosched.workloads import Sgemm


def main(shapes, per_shape=4):
    w0 = Worker(0, Protocol(flush_bytes=1 << 20, warmup=0, repeat=1))
    t = SgemmTemplate()
    bad = 0
    with Builder() as b:
        for shape in shapes:
            for trans_a in (0, 1):
                w = Sgemm.from_shape(shape, trans_a=trans_a)
                big = [c for c in t.space(w, w0.info).enumerate()
                       if t.render(w, c, w0.info).smem_bytes > STATIC_SMEM_LIMIT]
                big.sort(key=lambda c: -t.render(w, c, w0.info).smem_bytes)
                cfgs = big[:per_shape - 2] + random.Random(2).sample(big, 2)
                specs = [t.render(w, c, w0.info) for c in cfgs]
                for c, s, binary in zip(cfgs, specs, b.build_many(specs)):
                    m = w0.measure(s, binary)
                    bad += not m.ok
                    print(w.key, s.smem_bytes, "B", m.status.value, c, m.error[:200], flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["300x260x200"]))
