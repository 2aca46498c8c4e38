"""Operator definitions: shapes, input generators, float64 references, bytes moved.

Nothing here knows about kernels or GPUs.
"""

import re

from autosched.workloads.base import Workload, WorkloadError
from autosched.workloads.gemv_dense import GemvDense
from autosched.workloads.gemv_q4f16 import GemvQ4F16
from autosched.workloads.hgemm import Hgemm
from autosched.workloads.sgemm import Sgemm

WORKLOADS = {GemvQ4F16.name: GemvQ4F16, GemvDense.name: GemvDense, Sgemm.name: Sgemm, Hgemm.name: Hgemm}


def workload_from_key(key: str) -> Workload:
    """Inverse of ``Workload.key``: ``"gemv_q4f16:N=12288,K=4096"`` -> the workload."""
    name, _, params = key.partition(":")
    if name not in WORKLOADS:
        raise WorkloadError(f"unknown workload {name!r} in key {key!r}; known: {sorted(WORKLOADS)}")
    kw = {}
    for item in filter(None, params.split(",")):
        k, _, v = item.partition("=")
        # str.strip takes control characters such as \x1f that int() refuses: parse what was matched
        v = v.strip()
        if not re.fullmatch(r"-?[0-9]{1,30}", v):
            raise WorkloadError(f"workload key {key!r}: {item!r} is not NAME=INTEGER")
        kw[k] = int(v)
    try:
        return WORKLOADS[name](**kw)
    except TypeError as e:      # a parameter the workload does not take, or one missing
        raise WorkloadError(f"workload key {key!r} does not name {name}'s parameters: {e}") from None


__all__ = ["Workload", "WorkloadError", "GemvDense", "GemvQ4F16", "Hgemm", "Sgemm", "WORKLOADS", "workload_from_key"]
