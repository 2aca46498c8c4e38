"""device.gpu_count: the GPUs this process can use, CUDA_VISIBLE_DEVICES applied as the driver does."""
import pytest

from autosched import device


@pytest.fixture
def two_gpus(monkeypatch):
    """A host of two GPUs as NVML counts them (it ignores CUDA_VISIBLE_DEVICES)."""
    monkeypatch.setattr(device, "_host_gpus", lambda: 2)


@pytest.mark.parametrize("visible, n", [
    (None, 2), ("1", 1), ("0,1", 2), ("1,0", 2), ("", 0), ("-1", 0), ("2", 0), ("0,2,1", 1), ("1,1", 1),
    ("GPU-8f2c1a3e-0000-1111-2222-333344445555", 1),
    ("MIG-GPU-8f2c1a3e-0000-1111-2222-333344445555/1/0,MIG-4a5b6c7d-aaaa-bbbb-cccc-ddddeeeeffff", 2),
    ("0,nonsense,1", 1),
])
def test_gpu_count_honours_cuda_visible_devices(two_gpus, monkeypatch, visible, n):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert device.gpu_count() == n
