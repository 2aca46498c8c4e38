"""Launch one config of any registry family (then the family's baseline over the same inputs), for ncu.

    ncu --set full -o prof python3 scripts/ncu_kernel.py gemv-q4f16 4096x4096 ['<config json>']
    ncu --section SpeedOfLight python3 scripts/ncu_kernel.py sgemm 4096x4096x4096 '<config json>'

The config defaults to the one autosched serves (autosched.best_config: database, then a same-GPU
recording, then the default); a union family's config names its "template".  Our kernel runs 3
times, each after a 256 MB write that leaves the L2 as the timing protocol does (flushed, dirty),
then the baseline the registry names (the GEMV's same-bytes read stream, cuBLAS for the GEMMs) 3
times the same way.  No other kernel of note runs, so the profile holds ours then the baseline's.
The output is checked against the float64 reference before the process exits.
"""
import json
import sys

import numpy as np
import torch
from cuda.core import Device, Stream

import autosched
from autosched.benchmarks.common import Launchable
from autosched.build import Builder
from autosched.device import query
from autosched.registry import family, template_named
from autosched.runtime import allow_dynamic_smem


def main(name, shape, config_json=None):
    fam = family(name)
    w = fam.parse(shape)
    info = query(0)
    dev = Device(0)
    dev.set_current()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    if config_json:
        cfg = json.loads(config_json)
        t = template_named(cfg.pop("template")) if "template" in cfg else fam.templates_for(w)[0]
    else:
        cand = autosched.best_config(w, device=info)
        t, cfg = template_named(cand.template), cand.config
        print("config from", cand.source, json.dumps(cfg))
    inputs = w.inputs(seed=7)
    shape_out, dtype = w.output_spec()
    out = torch.empty(shape_out, dtype=torch.from_numpy(np.empty(0, dtype)).dtype, device="cuda")
    flush = torch.empty(256 * 10**6, dtype=torch.uint8, device="cuda")
    with Builder() as b:
        spec = t.render(w, cfg, info)
        binary = b.build(spec)
        print("ptxas:", binary.resources, "dynamic smem", spec.smem_bytes)
        k = Launchable(spec, binary, inputs, out)
        allow_dynamic_smem(k.kernel, spec.smem_bytes, dev.device_id)
        baseline = fam.baseline_fn()(w, inputs, b, info) if fam.profile_baseline else None
    for _ in range(3):
        flush.fill_(1)
        if spec.output_init == "zero":      # split-K accumulates into its output
            out.zero_()
        k.launch(stream)
    torch.cuda.synchronize()
    ref = w.reference(inputs)
    check = w.check(out.cpu().numpy(), ref, w.error_bound(inputs)) if hasattr(w, "error_bound") else \
        w.check(out.cpu().numpy(), ref)
    for _ in range(3 if baseline else 0):
        flush.fill_(2)
        baseline()
    torch.cuda.synchronize()
    print("ours:", check)
    return 0 if check.ok else 1


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:4]))
