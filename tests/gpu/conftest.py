"""GPU tests: skipped (not failed) on a machine without a CUDA GPU, such as CI."""
import pytest

from autosched.device import gpu_count


def pytest_collection_modifyitems(config, items):
    if gpu_count() > 0:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
