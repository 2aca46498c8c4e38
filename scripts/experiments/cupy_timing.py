"""Timing for the cupy experiments: `launch` (a function of a cupy stream that enqueues `count`
kernels) captured once in a CUDA graph and replayed, so launches cost no host time; microseconds a
kernel, the median and range over `reps` replays."""
import cupy as cp


def graph_us(stream, launch, count: int, reps: int = 9) -> tuple[float, list[float]]:
    with stream:
        stream.begin_capture()
        launch(stream)
        graph = stream.end_capture()
        graph.launch(stream)
        stream.synchronize()
        times = []
        for _ in range(reps):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record(stream)
            graph.launch(stream)
            e1.record(stream)
            e1.synchronize()
            times.append(cp.cuda.get_elapsed_time(e0, e1) * 1e3 / count)
    times.sort()
    return times[len(times) // 2], [times[0], times[-1]]
