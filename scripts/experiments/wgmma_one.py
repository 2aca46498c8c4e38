"""Launch one hgemm_wgmma config on one shape (checked against float64), optionally with a source
edit, to chase a failing config, then REPEAT more launches and a second check:
    REPEAT=200 python3 scripts/experiments/wgmma_one.py SHAPE LAYOUT 'CONFIG JSON' [OLD NEW]"""
import dataclasses
import json
import os
import sys
import time



def main(shape, layout, cfg_json, old=None, new=None):
    import torch
    from cuda.core import Device, Stream

    from autosched.benchmarks.common import Launchable, checked_launch
    from autosched.build import Builder
    from autosched.device import query
    from autosched.runtime import allow_dynamic_smem
    from autosched.templates import HgemmWgmmaTemplate
    from autosched.workloads import Hgemm
    info = query(0)
    dev = Device(0)
    dev.set_current()
    torch.cuda.init()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    w = Hgemm.from_shape(shape, layout=layout)
    inputs = w.inputs(1)
    ref, bound = w.reference(inputs), w.error_bound(inputs)
    spec = HgemmWgmmaTemplate().render(w, json.loads(cfg_json), info)
    if old is not None:
        assert old in spec.source, old
        spec = dataclasses.replace(spec, source=spec.source.replace(old, new))
    with Builder() as b:
        binary = b.build(spec)
    print(spec.name_expression, binary.resources, flush=True)
    out = torch.empty((w.M, w.N), dtype=torch.float16 if not w.bf16 else torch.bfloat16, device="cuda")
    k = Launchable(spec, binary, inputs, out)
    allow_dynamic_smem(k.kernel, spec.smem_bytes, dev.device_id)
    chk = checked_launch(lambda s: k.launch(s), w, out, ref, stream, spec.name_expression, bound)
    print("ok", chk.message if hasattr(chk, "message") else chk, flush=True)
    n = int(os.environ.get("REPEAT", "0"))
    if n:
        t0 = time.perf_counter()
        for _ in range(n):
            k.launch(stream)
        torch.cuda.synchronize()
        print(f"{n} launches in {time.perf_counter() - t0:.3f} s", flush=True)
        checked_launch(lambda s: k.launch(s), w, out, ref, stream, spec.name_expression, bound)
        print("ok again", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
