"""autosched's kernels as PyTorch custom ops (torch.library.custom_op, each with a fake
implementation): torch.compile(fullgraph=True) traces them, CUDA graphs capture them, and
torch.library.opcheck checks them.

    y = torch.ops.autosched.q4f16_linear(x, words, scales, packed_q, packed_s, kid)   # x (..., K) fp16
    y = torch.ops.autosched.linear(x, w)                                              # w (N, K)

q4f16_linear holds a q4f16_1 weight twice: its natural words and scales (engine/weights.py
quantize_q4f16_1: (N, K/8) int32, (N, K/32) fp16) and the same packed in the layout of the GEMV config
selection.rank puts first for (N, K) on this GPU (`q4_kernel`: kid names it in this process).  At one
row (decode) it runs that GEMV; at more rows it dequantizes the natural words to fp16 on the GPU and
runs `linear`.  linear is DietCode's dispatcher for (N, K) (ops/hgemm.py linear: the dynamic tuning
result where the database holds one, the rule-based ladder where not).  On CPU tensors both run a
float32 reference of the same math (what the tests and opcheck run without a GPU).

This module imports torch at the top: it is only imported where torch is installed (autosched.patch,
ops/patching.py).
"""

from __future__ import annotations

import dataclasses

import torch

from autosched import layouts
from autosched.device import query
from autosched.registry import template_named
from autosched.selection import rank
from autosched.workloads import GemvQ4F16
from autosched.workloads.gemv_q4f16 import GROUP

# cuda (cuda.core) is imported inside functions: a CPU-only install runs the reference path without it;
# build, launch, runtime and ops.hgemm too, as they load or launch kernels (only on a GPU)


def dequantize(words: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """(N, K/8) int32 words (value j at bits 4j) and (N, K/32) fp16 scales -> (N, K) float32 weights
    (q - 7) * s, on the words' device."""
    n = words.shape[0]
    shifts = torch.arange(0, 32, 4, dtype=torch.int32, device=words.device)
    q = (words.unsqueeze(-1) >> shifts) & 0xF                 # the sign fill of >> never reaches the mask
    w = q.reshape(n, -1).float() - 7.0
    return w * scales.float().repeat_interleave(GROUP, dim=1)


@dataclasses.dataclass
class Q4Kernel:
    """The q4f16_1 GEMV config served for (N, K) on one GPU, its packing and its loaded kernel."""
    device_index: int
    n: int
    k: int
    choice: object           # selection.Candidate: config, template, origin
    spec: object             # templates.base.KernelSpec
    kernel: object = None    # launch.LoadedKernel, loaded on first use

    def pack(self, words: torch.Tensor, scales: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The natural words and scales in this config's layouts (on their device)."""
        host = {"A_q": words, "A_scale": scales}
        out = {a.name: layouts.apply(a.layout, a.params(), host[a.name]).contiguous()
               for a in self.spec.args if a.role == "input" and a.name in host}
        return out["A_q"], out["A_scale"]

    def launch(self, packed_q, packed_s, v, out) -> None:
        from cuda.core import Stream

        from autosched.runtime import ptr
        if self.kernel is None:
            from autosched.build import Builder
            from autosched.launch import LoadedKernel
            with Builder(workers=1) as b:
                self.kernel = LoadedKernel(self.spec, b)
        named = {"A_q": packed_q, "A_scale": packed_s, "V": v}
        args = [ptr(out) if a.role == "output" else ptr(named[a.name]) for a in self.spec.args]
        self.kernel(Stream.from_handle(torch.cuda.current_stream(v.device).cuda_stream), *args)


_Q4: list[Q4Kernel] = []
_Q4_BY_KEY: dict = {}


def q4_kernel(device_index: int, n: int, k: int, db=None) -> tuple[int, Q4Kernel]:
    """The GEMV for an (N, K) q4f16_1 weight on CUDA device `device_index`, chosen by
    selection.rank (database, packs, recording, sibling, prediction, default) and kept for the
    process: (its id for q4f16_linear, it)."""
    key = (device_index, n, k)
    if key not in _Q4_BY_KEY:
        from cuda.core import Device
        info = query(device_index)
        Device(device_index).set_current()
        wl = GemvQ4F16(n, k)
        choice = rank(wl, info, db)[0]
        spec = template_named(choice.template).render(wl, choice.config, info)
        _Q4.append(Q4Kernel(device_index, n, k, choice, spec))
        _Q4_BY_KEY[key] = len(_Q4) - 1
    i = _Q4_BY_KEY[key]
    return i, _Q4[i]


@torch.library.custom_op("autosched::linear", mutates_args=())
def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """y (..., N) = x (..., K) . w (N, K)^T in x's dtype (fp16; bf16 where the GPU's backend takes it)."""
    k = w.shape[1]
    x2 = x.reshape(-1, k)
    if x.is_cuda:
        from autosched.ops.hgemm import linear as hgemm_linear
        y = hgemm_linear(x2.contiguous(), w.contiguous())
    else:
        y = (x2.float() @ w.float().T).to(x.dtype)
    return y.reshape(*x.shape[:-1], w.shape[0])


@linear.register_fake
def _(x, w):
    return x.new_empty(*x.shape[:-1], w.shape[0])


@torch.library.custom_op("autosched::q4f16_linear", mutates_args=())
def q4f16_linear(x: torch.Tensor, words: torch.Tensor, scales: torch.Tensor, packed_q: torch.Tensor,
                 packed_s: torch.Tensor, kid: int) -> torch.Tensor:
    """y (..., N) fp16 = x (..., K) fp16 . dequant(words, scales)^T; on CUDA the GEMV `kid`
    (q4_kernel) at one row, the dequantized weights through `linear` at more."""
    n, k = words.shape[0], words.shape[1] * 8
    x2 = x.reshape(-1, k)
    if not x.is_cuda:
        y = (x2.float() @ dequantize(words, scales).T).half()
    elif x2.shape[0] == 1:
        if not 0 <= kid < len(_Q4) or (_Q4[kid].n, _Q4[kid].k) != (n, k):
            raise ValueError(f"q4f16_linear: kernel id {kid} is not an ({n}, {k}) GEMV of this process "
                             "(autosched.ops.torch_ops.q4_kernel makes one)")
        y = torch.empty((1, n), dtype=torch.float16, device=x.device)
        _Q4[kid].launch(packed_q, packed_s, x2.contiguous(), y)
    else:
        y = linear(x2.contiguous(), dequantize(words, scales).half())
    return y.reshape(*x.shape[:-1], n)


@q4f16_linear.register_fake
def _(x, words, scales, packed_q, packed_s, kid):
    return x.new_empty(*x.shape[:-1], words.shape[0])


__all__ = ["Q4Kernel", "dequantize", "linear", "q4_kernel", "q4f16_linear"]
