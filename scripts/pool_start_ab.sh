# A/B of Builder.start on one GPU: a 128-config exhaustive tune of gemv-q4f16 4096x4096 on a cold build cache,
# the pool spawned on the first build ("late", as before 2026-11-26) against started beside the GPU worker
# ("early"), twice each.  Run from the repository root on a GPU machine.
export PYTHONPATH=$PWD AUTOSCHED_HOME=/tmp/as PYTHONUNBUFFERED=1
pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
# the GPU worker is spawned, which re-imports the parent's __main__: the A/B runs from a file, not stdin
ab=$(mktemp --suffix=.py)
cat > "$ab" <<'PY'
import sys, time
from autosched import api
from autosched.build import Builder
if __name__ == "__main__":
    if sys.argv[1] == "late":
        Builder.start = lambda self: self        # the pool spawns on the first build, as before
    t0 = time.perf_counter()
    r = api.tune(("gemv-q4f16", "4096x4096"), runner="gpu", db=f"/tmp/ab-{time.time()}.db", strategy="exhaustive", trials=128, gpus=[0])
    res = r.result
    print(sys.argv[1], f"wall {time.perf_counter()-t0:.2f} s, tune {res.elapsed_s:.2f} s, GPU waited {res.build_wait_s:.2f} s on builds, {res.measured_now} configs, statuses {dict(res.statuses)}")
PY
for mode in late early late early; do
  AUTOSCHED_CACHE=/tmp/cache-$mode-$RANDOM timeout 60 python3 "$ab" $mode
done
rm -f "$ab"
