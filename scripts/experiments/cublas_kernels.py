"""Which kernel cuBLAS (through torch, FP16, B an (N, K) weight) runs for the few-row GEMMs where it
beats ours: the name of each kernel it launches, from torch's profiler.  nvjet's names carry the tile
(`hsh_64x24_64x16_2x4_h_bz_TNT`: 64 x 24 output tiles, 64-deep K blocks, 16 slots, clusters of 2 x 4,
`TNT` an output written transposed: the weight as wgmma's M side, the tokens as its N side).  Rows to
$OUT/cublas-kernels.json.

    python3 scripts/experiments/cublas_kernels.py"""
import json
import os

SHAPES = [(M, N, K) for (N, K) in ((768, 768), (3072, 768), (768, 3072)) for M in (16, 48, 80, 112, 160, 192, 256)]
SHAPES += [(M, 4096, 4096) for M in (1, 16, 33, 70, 128, 256)]


def main():
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    rows = []
    for M, N, K in SHAPES:
        x = torch.randn(M, K, device="cuda", dtype=torch.float16)
        w = torch.randn(N, K, device="cuda", dtype=torch.float16)
        y = torch.empty(M, N, device="cuda", dtype=torch.float16)
        for _ in range(3):
            torch.matmul(x, w.t(), out=y)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            torch.matmul(x, w.t(), out=y)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type.name == "CUDA"]
        rows.append({"shape": f"{M}x{N}x{K}_bt", "kernels": names})
        print(rows[-1]["shape"], names)
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "cublas-kernels.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
