"""Device experiment: the decode benchmark's attention rows (one 7B layer, contexts 128-4096, ours
one block a head and split-KV as served, torch SDPA), for the tree this runs from.

    PYTHONPATH=$PWD python3 scripts/experiments/attention_rows.py OUT.json
"""
import json
import sys

import torch

from autosched.benchmarks.decode import attention_rows
from autosched.build import Builder
from autosched.device import query

if __name__ == "__main__":
    with Builder() as b:
        rows = attention_rows(torch, query(0), b)
    for r in rows:
        print({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()})
    with open(sys.argv[1], "w") as f:
        json.dump(rows, f, indent=1)
