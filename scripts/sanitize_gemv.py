"""compute-sanitizer over the corner configs of every GEMV template family, in one process.

    compute-sanitizer --tool memcheck python3 scripts/sanitize_gemv.py [NxK ...]

Each config is built, launched once on poisoned output and checked against the reference; the
sanitizer reports any out-of-bounds access or race (exit code != 0 on error).
"""
import sys

from autosched.build import Builder
from autosched.measure.protocol import Protocol
from autosched.measure.worker import Worker
from autosched.templates import GemvQ4F16Template
from autosched.templates.gemv_q4f16 import extreme_configs
from autosched.workloads import GemvQ4F16


def main(shapes, per_family=None):
    w0 = Worker(0, Protocol(flush_bytes=1 << 20, warmup=0, repeat=1))
    t = GemvQ4F16Template()
    bad = 0
    with Builder() as b:
        for shape in shapes:
            w = GemvQ4F16.from_shape(shape)
            cfgs = extreme_configs(t.space(w, w0.info).enumerate())
            if per_family:      # keep the first corners of each family (sanitizer runs are slow)
                kept, count = [], {}
                for c in cfgs:
                    f = (c["tx"], c["load"], c["compute"], c["vec_c"])
                    if count.get(f, 0) < per_family:
                        kept.append(c)
                        count[f] = count.get(f, 0) + 1
                cfgs = kept
            specs = [t.render(w, c, w0.info) for c in cfgs]
            for c, s, binary in zip(cfgs, specs, b.build_many(specs)):
                m = w0.measure(s, binary)
                bad += not m.ok
                print(shape, m.status.value, c if not m.ok else "", m.error[:200], flush=True)
            print(f"{shape}: {len(cfgs)} corner configs", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    import os
    per = int(os.environ.get("PER_FAMILY", "0")) or None
    sys.exit(main(sys.argv[1:] or ["264x4128", "4096x4096"], per))
