"""On a host of two or more GPUs: a tune under CUDA_VISIBLE_DEVICES=1 measures on physical GPU 1
(device.gpu_count counts what the process sees, as the measuring workers' CUDA contexts do)."""

import json
import os
import subprocess
import sys

import pytest

from autosched.device import gpu_count

pytestmark = pytest.mark.gpu

# runs under CUDA_VISIBLE_DEVICES=1: tunes a few configs, then names the one GPU it could see
_CHILD = """
import json, sys
import autosched
from autosched.database import Database
from autosched.device import gpu_count
from cuda.bindings import driver
run = autosched.tune(("gemv-q4f16", "4096x4096"), runner="gpu", strategy="random", trials=3, db=sys.argv[1])
with Database(sys.argv[1]) as db:
    rows = sum(n for *_, n in db.workloads())
driver.cuInit(0)
_, dev = driver.cuDeviceGet(0)
_, bus = driver.cuDeviceGetPCIBusId(64, dev)
print(json.dumps({"gpus": gpu_count(), "rows": rows, "ok": run.result.best is not None,
                  "bus": bus.split(b"\\0")[0].decode()}))
"""


def _bus(text: str) -> str:
    """PCI bus:device.function, the domain dropped (nvidia-smi pads it to 8 digits, CUDA to 4)."""
    return ":".join(text.strip().lower().split(":")[-2:])


@pytest.mark.skipif(gpu_count() < 2, reason="needs a host of two or more GPUs")
def test_a_tune_under_cuda_visible_devices_1_measures_on_gpu_1(tmp_path):
    smi = subprocess.run(["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True).stdout
    buses = {int(i): _bus(b) for i, b in (line.split(",") for line in smi.strip().splitlines())}
    # PCI order, the order nvidia-smi numbers GPUs in, so that index 1 means the same GPU to both
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="1", CUDA_DEVICE_ORDER="PCI_BUS_ID")
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "db")], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["gpus"] == 1 and got["ok"] and got["rows"] >= 3
    assert _bus(got["bus"]) == buses[1]
