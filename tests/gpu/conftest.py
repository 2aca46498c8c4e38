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


@pytest.fixture(scope="module")
def builder(tmp_path_factory):
    """A Builder on a compile cache of the test module's own (no test reads another's binaries)."""
    from autosched.build import BuildCache, Builder
    with Builder(cache=BuildCache(tmp_path_factory.mktemp("cache"))) as b:
        yield b


@pytest.fixture(scope="module")
def wgmma_gpu():
    """GPU 0 made current, or the module skipped where it has no wgmma (not an sm_90 GPU)."""
    from cuda.core import Device

    from autosched.device import query
    from autosched.templates.hgemm_wgmma import HgemmWgmmaTemplate
    Device(0).set_current()
    why = HgemmWgmmaTemplate().device_refuses(query(0))
    if why:
        pytest.skip(why)
