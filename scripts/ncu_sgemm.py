"""Launch one SGEMM config, then cuBLAS FP32 (TF32 off) on the same inputs, for ncu.

    ncu --section SpeedOfLight ... python3 scripts/ncu_sgemm.py 4096x4096x4096 '<config json>'

No other kernel runs in this process (inputs are made on the host), so the profile holds exactly
our kernel then cuBLAS's.  A config over 48 KB of shared memory is opted in as the tuner does.
"""
import json
import sys

import torch
from cuda.core import Device, Stream

from autosched.benchmarks.common import Launchable
from autosched.build import Builder
from autosched.device import query
from autosched.runtime import allow_dynamic_smem
from autosched.templates import SgemmTemplate
from autosched.workloads import Sgemm


def main(shape, config_json):
    w = Sgemm.from_shape(shape)
    t = SgemmTemplate()
    info = query(0)
    dev = Device(0)
    dev.set_current()
    stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
    inputs = w.inputs(seed=7)
    out = torch.empty((w.M, w.N), dtype=torch.float32, device="cuda")
    with Builder() as b:
        spec = t.render(w, json.loads(config_json), info)
        binary = b.build(spec)
    print("ptxas:", binary.resources, "dynamic smem", spec.smem_bytes)
    k = Launchable(spec, binary, inputs, out)
    allow_dynamic_smem(k.kernel, spec.smem_bytes, dev.device_id)
    k.launch(stream)            # split-K configs are not profiled here (they need C zeroed)
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.from_numpy(inputs["A"]).cuda()
    bb = torch.from_numpy(inputs["B"]).cuda()
    c2 = torch.empty_like(out)
    torch.matmul(a, bb, out=c2)
    torch.cuda.synchronize()
    ref = w.reference(inputs)
    print("ours:", w.check(out.cpu().numpy(), ref, w.error_bound(inputs)).ok,
          "cuBLAS:", w.check(c2.cpu().numpy(), ref, w.error_bound(inputs)).ok)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
