"""autosched.patch: a transformers Llama-family model's linear layers served by autosched's ops.

    model = LlamaForCausalLM.from_pretrained(path, torch_dtype=torch.float16).cuda()
    report = autosched.patch(model, quant="q4f16_1")      # or "fp16"
    print(report)                                         # the shapes, which are untuned, what tunes them
    model = torch.compile(model, fullgraph=True)          # the ops trace (ops/torch_ops.py)

Every nn.Linear named like a Llama layer's projections (q/k/v/o_proj, gate/up/down_proj) becomes an
AutoschedLinear: "q4f16_1" quantizes its weight on its device (engine/weights.py, the engine's own
quantization) and serves the GEMV selection.rank puts first for its shape at one row; "fp16" keeps
the weight (fp16, or bf16 as loaded) and serves DietCode's dispatcher.  The classifier stays as it is
unless lm_head=True.  Patch after moving the model to its GPU: the q4f16_1 packing is made for the
kernel of that GPU (a model patched on the CPU runs the ops' CPU reference).
"""

from __future__ import annotations

import dataclasses

import torch

from autosched.engine.weights import quantize_q4f16_1
from autosched.ops import torch_ops
from autosched.selection import untuned
from autosched.workloads.gemv_q4f16 import GROUP

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
QUANTS = ("q4f16_1", "fp16")


class AutoschedLinear(torch.nn.Module):
    """y = x . W^T (+ b) through torch.ops.autosched: q4f16_1 words and scales (natural and packed
    for this GPU's GEMV), or an fp16/bf16 weight."""

    def __init__(self, linear: torch.nn.Linear, quant: str, name: str = "", db=None):
        super().__init__()
        w = linear.weight.detach()
        self.out_features, self.in_features = w.shape
        self.quant, self.name = quant, name
        self.bias = None if linear.bias is None else torch.nn.Parameter(linear.bias.detach(), requires_grad=False)
        self.origin = None           # where the served config came from (selection.Origin), on a GPU
        if quant == "q4f16_1":
            if self.in_features % GROUP:
                raise ValueError(f"{name}: q4f16_1 needs in_features to be a multiple of {GROUP}, got "
                                 f"{self.in_features}")
            words, scales = quantize_q4f16_1(w)
            self.register_buffer("words", words.contiguous())
            self.register_buffer("scales", scales.contiguous())
            self.kid = -1
            packed_q = packed_s = torch.empty(0, dtype=torch.int32, device=w.device)
            if w.is_cuda:
                self.kid, kernel = torch_ops.q4_kernel(w.device.index or 0, self.out_features, self.in_features, db)
                packed_q, packed_s = kernel.pack(self.words, self.scales)
                self.origin = kernel.choice
            self.register_buffer("packed_q", packed_q)
            self.register_buffer("packed_s", packed_s)
        elif quant == "fp16":
            if self.in_features % 8:
                raise ValueError(f"{name}: the fp16 linear reads rows in 16-byte chunks: in_features must be a "
                                 f"multiple of 8, got {self.in_features}")
            dtype = w.dtype if w.dtype in (torch.float16, torch.bfloat16) else torch.float16
            self.register_buffer("weight", w.to(dtype).contiguous())
        else:
            raise ValueError(f"quant={quant!r}: choose from {', '.join(QUANTS)}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.quant == "q4f16_1":
            if x.is_cuda and self.kid < 0:
                raise RuntimeError(f"{self.name}: patched on the CPU and called on {x.device}: patch the model "
                                   "after moving it to its GPU")
            y = torch.ops.autosched.q4f16_linear(x.to(torch.float16), self.words, self.scales, self.packed_q,
                                                 self.packed_s, self.kid)
        else:
            y = torch.ops.autosched.linear(x.to(self.weight.dtype), self.weight)
        if self.bias is not None:
            y = y + self.bias.to(y.dtype)
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, quant={self.quant}"


@dataclasses.dataclass
class PatchReport:
    """What patch() did: the layers replaced, per (N, K) shape the layers and where the served
    config came from, the untuned shapes and the command that tunes them."""
    quant: str
    layers: list[str]
    shapes: dict            # (N, K) -> [layer names]
    origins: dict           # (N, K) -> Origin string (None on the CPU or for fp16)
    untuned: list           # (N, K) never measured on this GPU (q4f16_1 on a GPU)
    command: str | None     # what tunes them

    def __str__(self) -> str:
        lines = [f"autosched.patch: {len(self.layers)} linear layers as {self.quant} "
                 f"({len(self.shapes)} shapes)"]
        for (n, k), names in self.shapes.items():
            where = self.origins.get((n, k))
            lines.append(f"  {n}x{k}: {len(names)} layers" + (f", config from {where}" if where else ""))
        if self.untuned:
            shapes = ", ".join(f"{n}x{k}" for n, k in self.untuned)
            lines.append(f"untuned here: {shapes}; tune them with: {self.command}")
        elif self.command:
            lines.append(self.command)
        return "\n".join(lines)


def patch(model: torch.nn.Module, quant: str = "q4f16_1", *, lm_head: bool = False, db=None) -> PatchReport:
    """Replace `model`'s Llama projection layers (and its lm_head where asked) by AutoschedLinear,
    in place; the report says which shapes run a config never measured on this GPU."""
    if quant not in QUANTS:
        raise ValueError(f"quant={quant!r}: choose from {', '.join(QUANTS)}")
    names = PROJECTIONS + (("lm_head",) if lm_head else ())
    targets = [(parent, child_name, f"{pname}.{child_name}" if pname else child_name, child)
               for pname, parent in model.named_modules()
               for child_name, child in parent.named_children()
               if child_name in names and isinstance(child, torch.nn.Linear)]
    if not targets:
        raise ValueError(f"no nn.Linear named {', '.join(names)} in {type(model).__name__}: autosched.patch "
                         "serves Llama-family models (transformers' LlamaForCausalLM and its kin)")
    report = PatchReport(quant, [], {}, {}, [], None)
    for parent, child_name, full, child in targets:
        new = AutoschedLinear(child, quant, full, db)
        setattr(parent, child_name, new)
        key = (new.out_features, new.in_features)
        report.layers.append(full)
        report.shapes.setdefault(key, []).append(full)
        if new.origin is not None:
            report.origins[key] = new.origin.origin
            if untuned(new.origin) and key not in report.untuned:
                report.untuned.append(key)
    if quant == "q4f16_1":
        # the patched layers keep the model's own projections (q, k, v apart; gate and up apart), which
        # are not the engine's fused shapes that tune-model tunes: each shape is tuned on its own
        todo = report.untuned or list(report.shapes)
        report.command = " && ".join(f"autosched tune gemv-q4f16 --shape {n}x{k}" for n, k in todo)
    else:
        report.command = ("the fp16 layers are served by DietCode's dispatcher: autosched tune-dynamic hgemm "
                          "--shape Mx<N>x<K>_bt --range 1:4096 tunes a shape")
    return report


__all__ = ["AutoschedLinear", "PROJECTIONS", "PatchReport", "patch"]
