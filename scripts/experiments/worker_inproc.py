"""The GPU worker's measure loop in this process (no subprocess), over the wgmma GPU test's corner
configs of one layout and dtype, with faulthandler on: where a worker dies, the traceback says where.
    python3 scripts/experiments/worker_inproc.py [LAYOUT] [DTYPE]"""
import faulthandler
import sys

sys.path.insert(0, "tests/gpu")


def main(layout="nt", dtype="fp16"):
    faulthandler.enable()
    from test_hgemm_wgmma_gpu import SHAPES, corners

    from autosched.build import Builder
    from autosched.measure.protocol import Protocol
    from autosched.measure.worker import Worker
    from autosched.templates import HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    t = HgemmWgmmaTemplate()
    wk = Worker(0, Protocol(flush_bytes=1 << 24, warmup=1, repeat=3))
    dev = wk.info
    with Builder() as builder:
        for shape in SHAPES[layout[0]]:
            w = Hgemm.from_shape(shape, layout=layout, dtype=dtype)
            for c in corners(t, w, dev):
                spec = t.render(w, c, dev)
                print("measure", shape, c, flush=True)
                m = wk.measure(spec, builder.build(spec))
                print("  ->", m.status.value, m.max_abs_err, (m.error or "")[:300], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
