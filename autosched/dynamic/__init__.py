"""DietCode: one tuning run for a whole range of M, dispatched by a decision tree.

workload.py (symbolic M, instances, weights) -> sketch.py (jointly sampled tiles, mutation) ->
measurer.py (compile report, probes at #SMs and a full wave) -> cost_model.py ([kernels x instances]
matrix) -> tune.py (evolutionary search, selection, verification, tree) -> dispatch.py (Python
table lookup, C if-else) -> export.py (JSON artifact, standalone .cu).  synthetic.py: a modelled
runner for CPU tests; handmade.py: a result pinning given kernels to given ranges of M, no tuning
(GPU checks and timings).
"""

from autosched.dynamic.workload import BERT_BASE, LLAMA2_7B, DynamicWorkload, default_instances

__all__ = ["BERT_BASE", "LLAMA2_7B", "DynamicWorkload", "default_instances"]
