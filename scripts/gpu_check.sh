#!/usr/bin/env bash
# The device-side checks of the project, in stages, each bounded in time, logs under $OUT.
#   bash scripts/gpu_check.sh tests      # install, the GPU test suite, compute-sanitizer, ncu
#   bash scripts/gpu_check.sh bench      # bench on two GEMV shapes and SGEMM 4096^3, hgemm record
# Run on a GPU machine from the repository root; nothing is downloaded (install with --no-deps).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export AUTOSCHED_HOME=${AUTOSCHED_HOME:-/tmp/as} PYTHONUNBUFFERED=1
pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 || { tail "$OUT/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
stage() { echo "== $1 ($(date +%T))"; }
case "${1:-tests}" in
tests)
  stage pytest
  timeout 330 python3 -m pytest -q -m gpu -x -p no:cacheprovider tests/gpu 2>&1 | tee "$OUT/pytest-gpu.log" | tail -25
  for fam in gemv-q4f16 sgemm hgemm; do
    stage "memcheck $fam"
    PER_TEMPLATE=6 timeout 60 compute-sanitizer --tool memcheck --print-limit 5 python3 scripts/sanitize.py $fam \
      >"$OUT/memcheck-$fam.log" 2>&1; echo "rc=$?"; grep -E "ERROR SUMMARY|configs$" "$OUT/memcheck-$fam.log" | tail -4
  done
  stage "racecheck hgemm"
  PER_TEMPLATE=3 timeout 60 compute-sanitizer --tool racecheck --print-limit 5 python3 scripts/sanitize.py hgemm \
    >"$OUT/racecheck-hgemm.log" 2>&1; echo "rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|configs$" "$OUT/racecheck-hgemm.log" | tail -4
  ;;
bench)
  stage "bench gemv"
  timeout 260 autosched bench --shapes 12288x4096,4096x4096 --out "$OUT" 2>&1 | tail -12
  stage "bench sgemm"
  timeout 250 autosched bench sgemm --shapes 4096x4096x4096 --out "$OUT" 2>&1 | tail -8
  ;;
esac
stage done
