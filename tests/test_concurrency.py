"""Tuning is never slower because another process runs: two model-guided replay tunes at once on
this machine finish within 3x the time of one alone.  Before the cost model was confined to one
OpenMP thread, the pair ran 40x slower on 2 cores (the model's threads spun against each other).
The bound is 3x, not 2x: on 2 cores any other process (a build, a second test run) pushes an honest
pair past 2x (16.4 s against 2 x 8.0 s once), while the failure this guards against is 40x."""

import os
import subprocess
import sys
import time


def _tune(db, env):
    return subprocess.Popen([sys.executable, "-m", "autosched.cli", "tune", "gemv-q4f16", "--shape", "12288x4096",
                             "--trials", "500", "--strategy", "model", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)


def _wait(procs):
    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0, out.decode()[-2000:]


def test_two_tunes_at_once_take_at_most_twice_one(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    t0 = time.perf_counter()
    _wait([_tune(tmp_path / "alone", env)])
    alone = time.perf_counter() - t0
    t0 = time.perf_counter()
    _wait([_tune(tmp_path / "a", env), _tune(tmp_path / "b", env)])
    pair = time.perf_counter() - t0
    assert pair < 3 * alone, f"two tunes at once took {pair:.1f} s, one alone {alone:.1f} s"
