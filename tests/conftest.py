"""Shared fixtures: the DeviceInfo of the H100 the project's measurements are taken on."""

import pytest

from autosched.device import DeviceInfo
from autosched.templates import GemvQ4F16Template

# values read off the real GPU (no GPU is needed to build spaces or compile against them)
H100 = dict(name="NVIDIA H100 80GB HBM3", cc=(9, 0), sm_count=132, max_threads_per_block=1024,
            max_threads_per_sm=2048, regs_per_block=65536, regs_per_sm=65536, smem_per_block=49152,
            smem_per_block_optin=232448, smem_per_sm=233472, l2_bytes=52428800, warp_size=32,
            driver_version="580.159.04", cuda_version="13.0")


@pytest.fixture(scope="session")
def h100() -> DeviceInfo:
    return DeviceInfo(**H100)


@pytest.fixture(scope="session")
def gemv_template() -> GemvQ4F16Template:
    return GemvQ4F16Template()
