"""compute-sanitizer over the extreme configs of every template of an operator family, in one process.

    compute-sanitizer --tool memcheck python3 scripts/sanitize.py FAMILY [SHAPE ...]
    compute-sanitizer --tool racecheck python3 scripts/sanitize.py hgemm 300x264x200

FAMILY is a registry name (gemv-q4f16, sgemm, hgemm, ...); the shapes default to the family's ragged
sanitizer shapes, and the configs are those the registry picks for each template (corners of the
space: most shared memory, largest and smallest tiles, the default, a few random ones).  Each is
built, launched once on NaN-poisoned output and checked against the float64 reference; the
sanitizer reports out-of-bounds or misaligned accesses (memcheck) or shared-memory hazards
(racecheck).  The exit code is 1 if any check failed.  PER_TEMPLATE=N keeps the first N configs;
TEMPLATE=NAME runs only that template of the family.
"""
import os
import sys

from autosched.build import Builder
from autosched.measure.protocol import Protocol
from autosched.measure.worker import Worker
from autosched.registry import family


def main(name, shapes, per_template=None, only=None):
    fam = family(name)
    if fam.sanitize_picks is None:
        print(f"{fam.name} names no sanitizer configs in the registry", file=sys.stderr)
        return 2
    w0 = Worker(0, Protocol(flush_bytes=1 << 20, warmup=0, repeat=1))
    bad = 0
    with Builder() as b:
        for shape in shapes or fam.sanitize_shapes:
            w = fam.parse(shape)
            for t in fam.templates_for(w):
                if only and t.family != only:
                    continue
                cfgs = fam.sanitize_picks(t, w, w0.info)[:per_template]
                specs = [t.render(w, c, w0.info) for c in cfgs]
                for c, s, binary in zip(cfgs, specs, b.build_many(specs)):
                    m = w0.measure(s, binary)
                    bad += not m.ok
                    print(w.key, t.family, s.smem_bytes, "B", m.status.value, c, m.error[:200], flush=True)
                print(f"{w.key} {t.family}: {len(cfgs)} configs", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:], int(os.environ.get("PER_TEMPLATE", "0")) or None,
                  os.environ.get("TEMPLATE") or None))
