"""compute-sanitizer over the configs the raster-group rule newly admits (group 4 where M has two tile
rows) of hgemm_wgmma, its split-K and its pairs, on a ragged M (the last tile row moved up) and an
exact one; each launched once on NaN-poisoned output and checked against float64.

    compute-sanitizer --tool memcheck python3 scripts/experiments/sanitize_groups.py"""
import sys

from autosched.build import Builder
from autosched.measure.protocol import Protocol
from autosched.measure.worker import Worker
from autosched.registry import family
from autosched.workloads import Hgemm

T64 = {"bm": 64, "bn": 64, "consumers": 1, "swizzle": 128, "stages": 4, "group": 4}
CASES = [("hgemm_wgmma", T64), ("hgemm_wgmma", {**T64, "bn": 128, "stages": 6}),
         ("hgemm_wgmma", {**T64, "bm": 128, "consumers": 2}),
         ("hgemm_wgmma_splitk", {**T64, "split_k": 2}),
         ("hgemm_wgmma_cluster", {**T64, "cluster_dim": "m"}), ("hgemm_wgmma_cluster", {**T64, "cluster_dim": "n"})]
SHAPES = ("100x520x264_bt", "128x256x512_bt", "200x264x520_bt")


def main():
    temps = {t.family: t for t in family("hgemm").templates}
    w0 = Worker(0, Protocol(flush_bytes=1 << 20, warmup=0, repeat=1))
    bad = ran = 0
    with Builder() as b:
        for shape in SHAPES:
            w = Hgemm.from_shape(shape)
            for fam, cfg in CASES:
                sp = temps[fam].space(w, w0.info)
                if not sp.contains(cfg):
                    print(f"{shape} {fam} {cfg}: not in the space ({'; '.join(sp.violations(cfg))})", flush=True)
                    continue
                s = temps[fam].render(w, cfg, w0.info)
                m = w0.measure(s, b.build(s))
                ran += 1
                bad += not m.ok
                print(f"{shape} {fam} {cfg}: {m.status} {m.error or ''}", flush=True)
    print(f"{ran} launched, {bad} failed")
    return 1 if bad or not ran else 0


if __name__ == "__main__":
    sys.exit(main())
