"""What the CPU tests of ops.HgemmDispatch load instead of the GPU: kernels that record their launches
and a TensorMapCache whose encode is the test's."""

from autosched.ops.hgemm import TensorMapCache


class RecordingKernel:
    def __init__(self):
        self.calls = []

    def launch(self, stream, grid, *args):
        self.calls.append((grid, args))


def load_fakes(g, monkeypatch, encode) -> None:
    """g (an HgemmDispatch) as if load()ed: a recording kernel per config, maps from encode(params,
    address) -> 128 bytes."""
    monkeypatch.setattr(g, "tensormaps", TensorMapCache(encode))
    g._kernels = [RecordingKernel() for _ in g.configs]
