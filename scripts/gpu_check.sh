#!/usr/bin/env bash
# The device-side checks of the project, in stages, each bounded in time, logs under $OUT.
#   bash scripts/gpu_check.sh tests      # install, the GPU test suite (less the splitk/dyn-splitk/cluster/prefill-tc-attn files)
#   bash scripts/gpu_check.sh sanitize   # compute-sanitizer memcheck and racecheck over extreme configs
#   bash scripts/gpu_check.sh bench-gemv bench-sgemm   # bench on two GEMV shapes, SGEMM 4096^3
#   bash scripts/gpu_check.sh record-hgemm   # recordings at 4096^3: hgemm_wgmma whole, hgemm_mma sampled
#   bash scripts/gpu_check.sh record-sched   # paired_drift.py (the bench's alternating pairs at 8192^3), then
#                                            # hgemm_wgmma_sched sampled at SCHED_SHAPES (SCHED_RECORD_S each, ~7 min)
#   bash scripts/gpu_check.sh ray        # the Ray GPU path on this machine's GPU (needs .whl/a, .whl/b carried)
#   bash scripts/gpu_check.sh hgemm-wmma # wmma, and mma in tn/tt/BF16: GPU tests, sanitizers, 4096^3 timing
#                                        # (about 2 minutes; each step bounded, at most 5)
#   bash scripts/gpu_check.sh hgemm-wgmma   # the wgmma + TMA GEMM: GPU tests (its exported .cu files too: nvcc,
#                                           # then run), sanitizers, a timing (at most 260 s)
#   bash scripts/gpu_check.sh splitk     # the template hgemm_wgmma_splitk (switch on for the stage): GPU tests,
#                                        # memcheck and racecheck of the deepest split, timings of split 1 (hgemm_wgmma)
#                                        # and split_k 2..8 vs cuBLAS (at most 150 s); passed on an H100 on
#                                        # 2026-11-23, so templates/hgemm_wgmma_splitk.py SPLIT_K_VERIFIED is True
#   bash scripts/gpu_check.sh stream     # hgemm_stream (the weight-streaming GEMM for M <= 256): GPU tests vs
#                                        # float64, memcheck + racecheck of its corners (at most ~250 s)
#   bash scripts/gpu_check.sh bench-stream  # a protocol-timed look: stream, wgmma and split-K tuned on few-row shapes
#                                           # vs cuBLAS (STREAM_SHAPES, STREAM_TIME s a shape; at most 400 s)
#   bash scripts/gpu_check.sh dyn-splitk # split-K micro-kernels for a dynamic M (switch on for the stage): GPU
#                                        # tests of HgemmDispatch serving them vs float64 over ragged Ms through
#                                        # one reused workspace, memcheck + racecheck, timings at M = 1..256 of
#                                        # 4096^2 vs the non-split kernels and cuBLAS (at most ~200 s); when it
#                                        # passes, flip templates/hgemm_wgmma_splitk.py DYN_SPLIT_K_VERIFIED to True
#   bash scripts/gpu_check.sh dyn-stream # hgemm_stream micro-kernels for a dynamic M (switch on for the stage): GPU
#                                        # tests of HgemmDispatch serving them vs float64 over ragged Ms through one
#                                        # workspace (fp16, bf16), memcheck + racecheck, the quick DietCode bench
#                                        # with them and without (at most ~580 s); when it passes and the bench's
#                                        # vs-cuBLAS figure at M <= 256 rises, flip templates/hgemm_stream.py
#                                        # DYN_STREAM_VERIFIED
#   bash scripts/gpu_check.sh swap       # hgemm_wgmma_swap, the operands' roles swapped for few rows, K split
#                                        # or not (on since 2026-11-27): GPU tests vs float64 (static, and
#                                        # served for a dynamic M by ops.HgemmDispatch; hgemm_wgmma_sched served
#                                        # so too, and the Timer's host_late count), memcheck + racecheck of its
#                                        # corners, a timing against hgemm_wgmma and cuBLAS at BERT's and
#                                        # few-row Llama shapes (swap_sweep.py) (at most ~560 s)
#   bash scripts/gpu_check.sh pair-order # scripts/experiments/pair_order.py: does the kernel before it move a short
#                                        # GEMM's time (series / pairing / cuBLAS against itself)? (at most 150 s)
#   bash scripts/gpu_check.sh bench-swap # the quick DietCode bench (at most 240 s)
#   bash scripts/gpu_check.sh sched      # hgemm_wgmma_sched, cooperative or ping-pong consumers staging their output
#                                        # whole or a box at a time (switch on for the stage): GPU tests vs float64
#                                        # in every layout, memcheck + racecheck of its corners, then
#                                        # scripts/experiments/sched_sweep.py (at most ~590 s)
#   bash scripts/gpu_check.sh cluster    # hgemm_wgmma_cluster, clusters of 2 + TMA multicast (switch on for the
#                                        # stage): GPU tests, memcheck and racecheck of pairs along m and n, timings
#                                        # of 4096^3 nt/nn and 8192^3 cluster 1 vs 2 vs cuBLAS (at most ~200 s); when
#                                        # it passes, flip templates/hgemm_wgmma_cluster.py CLUSTER_VERIFIED to True
#                                        # (passed on an H100 on 2026-11-26: on)
#   bash scripts/gpu_check.sh bench-hgemm   # issue 15's measurements: every hgemm template tuned and timed vs
#                                          # cuBLAS FP16/BF16 (planned for ~500 s; killed at 560)
#   bash scripts/gpu_check.sh prefill    # batched prefill: its GPU tests, then the quick 7B time-to-first-token bench
#   bash scripts/gpu_check.sh prefill-wgmma  # ops/prefill on the wgmma backend: GPU tests, then 7B GEMMs and
#                                            # 2048-token prefill wgmma vs mma vs torch (at most ~170 s); when it
#                                            # passes, flip ops/hgemm.py WGMMA_IN_AUTO to True
#   bash scripts/gpu_check.sh prefill-tc-attn  # the tensor-core prefill attention (switch on for the stage): GPU tests
#                                              # vs float64 and the stepwise path, memcheck + racecheck on ragged
#                                              # cases, 7B attention and 512/2048-token prefill on vs off vs torch
#                                              # (each step bounded, at most 240 s); when it passes and beats the
#                                              # CUDA-core kernel, flip engine/prefill.py TC_ATTENTION_VERIFIED to True
#   bash scripts/gpu_check.sh verify     # after a kernel refactor: the engine/epilogue/ops/prefill, persistent and
#                                        # prefill-wgmma GPU tests, three pytest processes side by side (at most 240 s)
#   bash scripts/gpu_check.sh timings    # the timings of `persistent` (with --phases) and `prefill-wgmma` without their tests (~230 s)
#   bash scripts/gpu_check.sh dynamic    # issue 16's DietCode bench, quick and bounded (at most 480 s; rows kept
#                                        # in dynamic-partial.json as each workload finishes); DYNAMIC_NO_ROW_PROBE=1:
#                                        # without the row probe (measurer.py; on by default since 2026-11-26)
#   bash scripts/gpu_check.sh dynamic-full  # issue 16's full DietCode bench (two calls of ~565 s: the second with
#                                           # DYNAMIC_RESUME=<the first's dynamic-partial.json, carried back>;
#                                           # set AUTOSCHED_COMMIT=<HEAD's sha> in the call: the device's copy of
#                                           # the tree keeps an older .git, so the results file would name that)
#   bash scripts/gpu_check.sh transfer   # issue 17's transfer figures on 8 unseen GEMV shapes (TRANSFER_S, default 540 s;
#                                        # finished shapes kept in model-transfer-partial.json)
#   bash scripts/gpu_check.sh scale-gpu  # issue 18 on two GPUs: measuring rate on one vs both, NVRTC rate, tune
#                                        # end to end, then tune-model --gpus all (at most ~540 s)
#   bash scripts/gpu_check.sh model-tune   # issue 17's model figures: llama3.2-1b decode before, tune-model (budget
#                                         # MODEL_TUNE_MIN, default 4), after; the 7B q4f16_1 as shipped
#                                         # (MODEL_TUNE_PHASES to run some, MODEL_TUNE_MERGE=JSON to keep an earlier
#                                         # call's rows; the tuned database is $OUT/model-tune.db: carry it
#                                         # back for `after`) (at most MODEL_TUNE_S, default 580 s)
#   bash scripts/gpu_check.sh step-timeline  # where a per-kernel decode step's time goes inside its graph
#                                         # (scripts/step_timeline.py): 7B q4f16_1 and llama3.2-1b fp16 and
#                                         # q4f16_1 as shipped, by role, JSON in $OUT (at most ~200 s)
#   bash scripts/gpu_check.sh persistent   # the persistent decode step (fp16): GPU tests vs the per-kernel
#                                         # step (the phase-timeline build's too), then llama3.2-1b tokens/s
#                                         # both ways and --phases: where a step's time goes, phase by phase
#                                         # (the sums per kind: embed, qkv, attn, o, gate_up, down, cls,
#                                         # argmax; span, barrier waits, share) (at most ~190 s)
# Stages run in the order given.
# Run on a GPU machine from the repository root; nothing is downloaded (install with --no-deps).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PY=$(command -v python3)  # the sanitizer would otherwise find another python3 on its PATH
export PYTHONPATH=$PWD AUTOSCHED_HOME=${AUTOSCHED_HOME:-/tmp/as} PYTHONUNBUFFERED=1
"$PY" -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 || { tail "$OUT/install.log"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
stage() { echo "== $1 ($(date +%T))"; }
# compute-sanitizer memcheck, then racecheck, over one python command, each bounded:
#   [VAR=... ] sanitize_both LOG LABEL SECONDS PATTERN SCRIPT ARGS...
# logs in $OUT/<tool>-LOG.log; prints the exit code and the log's lines matching PATTERN
sanitize_both() {
  local log=$1 label=$2 secs=$3 pattern=$4; shift 4
  for tool in memcheck racecheck; do
    stage "$tool $label"
    timeout "$secs" compute-sanitizer --tool $tool --print-limit 5 "$PY" "$@" >"$OUT/$tool-$log.log" 2>&1
    echo "rc=$?"; grep -E "$pattern" "$OUT/$tool-$log.log" | tail -6
  done
}
SANITIZE_HGEMM="ERROR SUMMARY|RACECHECK SUMMARY|configs$| B (wrong|compile_error|launch_error|timeout|crash) "
for what in "${@:-tests}"; do
case "$what" in
tests)
  stage pytest
  # the whole GPU suite has outgrown one call with split-K, clusters and the tensor-core attention: their
  # own stages (splitk, dyn-splitk, cluster, prefill-tc-attn) cover those files, so they are left out here
  timeout 540 python3 -m pytest -q -m gpu -x -p no:cacheprovider tests/gpu --ignore=tests/gpu/test_hgemm_wgmma_splitk_gpu.py \
    --ignore=tests/gpu/test_dynamic_splitk_gpu.py --ignore=tests/gpu/test_hgemm_wgmma_cluster_gpu.py --ignore=tests/gpu/test_prefill_tc_attn_gpu.py 2>&1 | tee "$OUT/pytest-gpu.log" | tail -25
  ;;
sanitize)
  for fam in gemv-q4f16 sgemm hgemm; do
    stage "memcheck $fam"
    PER_TEMPLATE=6 timeout 60 compute-sanitizer --tool memcheck --print-limit 5 "$PY" scripts/sanitize.py $fam \
      >"$OUT/memcheck-$fam.log" 2>&1; echo "rc=$?"; grep -E "ERROR SUMMARY|configs$" "$OUT/memcheck-$fam.log" | tail -4
  done
  stage "racecheck hgemm"
  PER_TEMPLATE=3 timeout 60 compute-sanitizer --tool racecheck --print-limit 5 "$PY" scripts/sanitize.py hgemm \
    >"$OUT/racecheck-hgemm.log" 2>&1; echo "rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|configs$" "$OUT/racecheck-hgemm.log" | tail -4
  ;;
hgemm-wmma)
  stage "pytest hgemm wmma + mma layouts"
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_hgemm_wmma_gpu.py \
    tests/gpu/test_hgemm_gpu.py -k "not bench" 2>&1 | tee "$OUT/pytest-hgemm-wmma.log" | tail -15
  # the wmma extreme configs on a ragged row shape, A stored (K, M) in BF16, and the blocked layout
  TEMPLATES=hgemm_wmma PER_TEMPLATE=4 sanitize_both hgemm-wmma hgemm_wmma 60 \
    "ERROR SUMMARY|RACECHECK SUMMARY|configs$| (wrong|launch_error|crash) " \
    scripts/sanitize.py hgemm 300x264x200 296x262x200_tt_bf16 304x272x208_bb
  stage "timing hgemm 4096^3 (wmma, mma default, cuBLAS)"
  timeout 100 python3 scripts/hgemm_wmma_timing.py 2>&1 | tee "$OUT/timing-hgemm-wmma.log" | tail -14
  ;;
hgemm-wgmma)
  stage "pytest hgemm-wgmma"
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_hgemm_wgmma_gpu.py tests/gpu/test_export_gpu.py \
    2>&1 | tee "$OUT/pytest-wgmma.log" | tail -20
  TEMPLATES=hgemm_wgmma PER_TEMPLATE=4 sanitize_both wgmma hgemm_wgmma 35 "$SANITIZE_HGEMM" \
    scripts/sanitize.py hgemm 300x264x200 296x264x200_tn_bf16
  stage "timing hgemm_wgmma vs cuBLAS"
  timeout 40 python3 scripts/wgmma_timing.py 4096x4096x4096_bt 4096x4096x4096 2>&1 | tee "$OUT/wgmma-timing.log" | tail -14
  ;;
splitk)
  # the template in the registry (the sanitizer's) even where the switch has been turned off again
  export AUTOSCHED_WGMMA_SPLIT_K=1
  stage "pytest hgemm_wgmma_splitk"
  timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_hgemm_wgmma_splitk_gpu.py 2>&1 \
    | tee "$OUT/pytest-splitk.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  # the registry's picks of hgemm_wgmma_splitk put the deepest split first: PER_TEMPLATE=2 keeps just those
  TEMPLATES=hgemm_wgmma_splitk PER_TEMPLATE=2 sanitize_both splitk "hgemm_wgmma_splitk, deepest split" 25 \
    "$SANITIZE_HGEMM" scripts/sanitize.py hgemm 300x264x200 136x264x520_tn_bf16
  stage "timing split 1 (hgemm_wgmma), split_k 2..8 vs cuBLAS"
  timeout 40 "$PY" scripts/wgmma_splitk_timing.py 128x4096x4096_bt 128x4096x11008_bt 2>&1 | tee "$OUT/timing-splitk.log" | tail -12
  echo "rc=${PIPESTATUS[0]}"
  unset AUTOSCHED_WGMMA_SPLIT_K
  ;;
stream)
  stage "pytest hgemm_stream"
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_hgemm_stream_gpu.py 2>&1 \
    | tee "$OUT/pytest-stream.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  # the registry's picks of hgemm_stream put the deepest split, the most shared memory, the most
  # registers and the most warps along K first: PER_TEMPLATE=4 keeps those
  TEMPLATES=hgemm_stream PER_TEMPLATE=4 sanitize_both stream "hgemm_stream corners" 40 "$SANITIZE_HGEMM" \
    scripts/sanitize.py hgemm 200x264x200_bt 37x264x520_bt_bf16
  ;;
bench-stream)
  # a first protocol-timed look (tuned, flushed L2) at the streaming template beside wgmma and cuBLAS
  stage "bench hgemm, few-row shapes"
  timeout 400 "$PY" -m autosched bench hgemm --shapes "${STREAM_SHAPES:-128x4096x4096_bt,128x11008x4096_bt,128x4096x11008_bt,16x4096x4096_bt}" \
    --split "${STREAM_SPLIT:-wgmma=0.5,wgmma_splitk=0.2,stream=0.6,mma=0,wmma=0.6}" --time-per-shape "${STREAM_TIME:-30}" \
    --out "$OUT" --db "$OUT/stream.db" 2>&1 | tee "$OUT/bench-stream.log" | tail -30
  echo "rc=${PIPESTATUS[0]}"
  ;;
dyn-splitk)
  # the dispatcher serves split-K micro-kernels only with the dynamic switch on
  export AUTOSCHED_DYN_SPLIT_K=1
  stage "pytest dynamic split-K"
  timeout 70 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_dynamic_splitk_gpu.py 2>&1 \
    | tee "$OUT/pytest-dyn-splitk.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  # a ragged shape, split_k 2..8, Ms growing and shrinking the shared workspace
  sanitize_both dyn-splitk "dynamic split-K" 35 "ERROR SUMMARY|RACECHECK SUMMARY|configs$|WRONG" \
    scripts/sanitize_dyn_splitk.py
  stage "timing dynamic split-K vs non-split vs cuBLAS, 4096x4096, M = 1..256"
  timeout 55 "$PY" scripts/dyn_splitk_timing.py 4096 4096 1 16 64 128 256 2>&1 | tee "$OUT/timing-dyn-splitk.log" | tail -16
  echo "rc=${PIPESTATUS[0]}"
  unset AUTOSCHED_DYN_SPLIT_K
  ;;
dyn-stream)
  # the dispatcher serves hgemm_stream micro-kernels only with their dynamic switch on
  export AUTOSCHED_DYN_STREAM=1
  stage "pytest dynamic stream"
  timeout 120 "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_dynamic_stream_gpu.py 2>&1 \
    | tee "$OUT/pytest-dyn-stream.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  sanitize_both dyn-stream "dynamic stream" 60 "ERROR SUMMARY|RACECHECK SUMMARY|configs$|WRONG" \
    scripts/sanitize_dyn_stream.py
  # A/B in one process tree on one GPU: the quick DietCode bench (default rounds) with the stream
  # micro-kernels, then without; each run's vs-cuBLAS ratios are measured in that run
  stage "DietCode bench with stream micro-kernels (quick)"
  mkdir -p "$OUT/with-stream" "$OUT/without-stream"
  timeout ${DYNAMIC_S:-170} "$PY" -m autosched.benchmarks.dynamic --quick --out "$OUT/with-stream" \
    2>&1 | tee "$OUT/bench-dynamic-stream.log" | tail -8
  echo "rc=${PIPESTATUS[0]}"
  unset AUTOSCHED_DYN_STREAM
  stage "DietCode bench without them (quick)"
  timeout ${DYNAMIC_S:-170} "$PY" -m autosched.benchmarks.dynamic --quick --out "$OUT/without-stream" \
    2>&1 | tee "$OUT/bench-dynamic-no-stream.log" | tail -8
  echo "rc=${PIPESTATUS[0]}"
  ;;
sched)
  export AUTOSCHED_WGMMA_SCHED=1
  stage "pytest hgemm_wgmma_sched"
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_hgemm_wgmma_sched_gpu.py 2>&1 \
    | tee "$OUT/pytest-sched.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  # the registry's picks per schedule: the smallest tile on the shortest ring, the most shared memory, with
  # the box ring and with a whole-share staging; 300 x 264 is ragged in both, 296 x 264 tn BF16 MN-major A
  # (boxes wholly outside C), 1064 x 2120 many turns a CTA
  TEMPLATES=hgemm_wgmma_sched PER_TEMPLATE=8 sanitize_both sched "hgemm_wgmma_sched corners" 90 "$SANITIZE_HGEMM" \
    scripts/sanitize.py hgemm 300x264x200 296x264x200_tn_bf16 1064x2120x136_bt
  stage "timing: hgemm_wgmma_sched vs hgemm_wgmma vs cuBLAS"
  timeout 300 "$PY" scripts/experiments/sched_sweep.py 2>&1 | tee "$OUT/sched-sweep.log" | tail -12
  echo "rc=${PIPESTATUS[0]}"
  unset AUTOSCHED_WGMMA_SCHED
  ;;
swap)
  stage "pytest hgemm_wgmma_swap"
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_hgemm_wgmma_swap_gpu.py \
    tests/gpu/test_dynamic_swap_gpu.py tests/gpu/test_dynamic_sched_gpu.py tests/gpu/test_timer_gpu.py \
    tests/gpu/test_dynamic_bench_gpu.py 2>&1 \
    | tee "$OUT/pytest-swap.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  # the registry's picks: the smallest tile (BT 8, 32B swizzle, 2 slots), the deepest K split of the widest
  # tile, the most shared memory, two m64 blocks at the widest BT, a 64B-swizzled ring ending off the
  # staging's 1024-byte boundary; 5 rows (one token tile, mostly past M), 300 x 2120 BF16 (clipped in
  # both), 112 x 768 and 160 x 768 x 3072 (BERT)
  TEMPLATES=hgemm_wgmma_swap PER_TEMPLATE=6 sanitize_both swap "hgemm_wgmma_swap corners" 120 "$SANITIZE_HGEMM" \
    scripts/sanitize.py hgemm 5x264x200_bt 300x2120x136_bt_bf16 112x768x768_bt 160x768x3072_bt
  stage "timing: hgemm_wgmma_swap (K split or not) vs hgemm_wgmma vs cuBLAS at few rows"
  timeout 360 "$PY" scripts/experiments/swap_sweep.py 2>&1 | tee "$OUT/swap-sweep.log" | tail -12
  echo "rc=${PIPESTATUS[0]}"
  ;;
pair-order)
  # whether the kernel before it moves a few-microsecond GEMM's time: series vs the bench's pairing vs
  # cuBLAS alternating with itself, at BERT's and a few-row Llama shape
  stage "pair order: series / pair / self-pair / ours-pair"
  timeout 150 "$PY" scripts/experiments/pair_order.py 2>&1 | tee "$OUT/pair-order.log" | tail -6
  echo "rc=${PIPESTATUS[0]}"
  ;;
bench-swap)
  # the quick DietCode bench (4096 x 4096 and BERT's 768 x 768) with hgemm_wgmma_swap micro-kernels among
  # the templates; its rows' cublas_paired hold the same-buffer pairing, the series and the host_late counts
  stage "DietCode bench with swap micro-kernels (quick)"
  timeout ${DYNAMIC_S:-240} "$PY" -m autosched.benchmarks.dynamic --quick \
    --out "$OUT/with-swap" 2>&1 | tee "$OUT/bench-dynamic-swap.log" | tail -8
  echo "rc=${PIPESTATUS[0]}"
  ;;
cluster)
  export AUTOSCHED_WGMMA_CLUSTER=1
  stage "pytest hgemm_wgmma_cluster"
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_hgemm_wgmma_cluster_gpu.py 2>&1 \
    | tee "$OUT/pytest-cluster.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  # the registry's picks put pairs along m and n (smallest tile, most shared memory) first: PER_TEMPLATE=4
  # keeps just those; 300 x 264 is odd along both (lone pairs)
  TEMPLATES=hgemm_wgmma_cluster PER_TEMPLATE=4 sanitize_both cluster "hgemm_wgmma_cluster" 30 "$SANITIZE_HGEMM" \
    scripts/sanitize.py hgemm 300x264x200 296x264x200_tn_bf16
  stage "timing cluster 1 vs 2 (m, n) vs cuBLAS"
  timeout 50 "$PY" scripts/wgmma_cluster_timing.py 4096x4096x4096_bt 4096x4096x4096 8192x8192x8192_bt 2>&1 \
    | tee "$OUT/timing-cluster.log" | tail -40
  echo "rc=${PIPESTATUS[0]}"
  unset AUTOSCHED_WGMMA_CLUSTER
  ;;
verify)
  # correctness only, so the three may share the GPU; each its own log
  stage "verify: engine+epilogue+ops+prefill | persistent | prefill-wgmma tests, side by side"
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_engine_gpu.py tests/gpu/test_epilogue_gpu.py \
    tests/gpu/test_ops_gpu.py tests/gpu/test_prefill_gpu.py >"$OUT/pytest-engine.log" 2>&1 &
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_persistent_gpu.py >"$OUT/pytest-persistent.log" 2>&1 &
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_prefill_wgmma_gpu.py >"$OUT/pytest-prefill-wgmma.log" 2>&1 &
  wait
  for f in engine persistent prefill-wgmma; do echo "-- $f"; tail -6 "$OUT/pytest-$f.log"; done
  ;;
timings)
  # the timing halves of `persistent` and `prefill-wgmma`, after `verify` ran their tests
  stage "llama3.2-1b fp16: per-kernel vs persistent step"
  timeout 110 "$PY" scripts/persistent_timing.py --model random:llama3.2-1b --steps 128 --phases --out "$OUT" 2>&1 \
    | tee "$OUT/timing-persistent.log" | tail -24
  echo "rc=${PIPESTATUS[0]}"
  stage "7B GEMMs and prefill: wgmma vs mma vs torch"
  timeout 120 "$PY" scripts/prefill_wgmma_timing.py --out "$OUT" 2>&1 | tee "$OUT/timing-prefill-wgmma.log" | tail -22
  echo "rc=${PIPESTATUS[0]}"
  ;;
dynamic)
  stage "DietCode bench (quick: one Llama and one BERT workload; 2 rounds of 8 micro-kernels)"
  timeout ${DYNAMIC_S:-480} "$PY" -m autosched.benchmarks.dynamic --quick --rounds 2 --per-round 8 --out "$OUT" \
    --db "$OUT/dynamic.db" ${DYNAMIC_NO_ROW_PROBE:+--no-row-probe} 2>&1 | tee "$OUT/bench-dynamic.log" | tail -20
  echo "rc=${PIPESTATUS[0]}"
  ;;
dynamic-full)
  # issue 16's official figures: the full DietCode bench, ~16 min on the H100, so two calls; each finished
  # workload's row is kept in $OUT/dynamic-partial.json: carry it back and pass DYNAMIC_RESUME=<its path>
  # to go on where the last call stopped (the results file is written when the last workload is done)
  stage "DietCode bench, full${DYNAMIC_RESUME:+ (resuming $DYNAMIC_RESUME)}"
  timeout ${DYNAMIC_S:-565} "$PY" -m autosched.benchmarks.dynamic --out "$OUT" \
    ${DYNAMIC_RESUME:+--resume "$DYNAMIC_RESUME"} 2>&1 | grep -v "━" | tee "$OUT/bench-dynamic-full.log" | tail -12
  echo "rc=${PIPESTATUS[0]}"
  ;;
transfer)
  stage "transfer: 8 unseen GEMV shapes, zero-trial / 32 / 512 trials (issue 17)"
  # TRANSFER_SHAPES=NxK,... measures only those; TRANSFER_MERGE=bench/results/model-transfer-....json keeps its rows
  timeout ${TRANSFER_S:-540} "$PY" -m autosched.benchmarks.transfer --gpu --out "$OUT" \
    ${TRANSFER_SHAPES:+--shapes "$TRANSFER_SHAPES"} ${TRANSFER_MERGE:+--merge "$TRANSFER_MERGE"} 2>&1 \
    | tee "$OUT/bench-transfer.log" | tail -14
  echo "rc=${PIPESTATUS[0]}"
  ;;
model-tune)
  stage "model figures: llama3.2-1b before / tune-model / after, 7B q4f16_1 as shipped (issue 17)"
  [ -n "${MODEL_TUNE_DB:-}" ] && cp "$MODEL_TUNE_DB" "$OUT/model-tune.db"
  timeout ${MODEL_TUNE_S:-580} "$PY" -m autosched.benchmarks.model_tune --out "$OUT" --budget-min ${MODEL_TUNE_MIN:-4} \
    ${MODEL_TUNE_PHASES:+--phases "$MODEL_TUNE_PHASES"} ${MODEL_TUNE_MERGE:+--merge "$MODEL_TUNE_MERGE"} 2>&1 \
    | tee "$OUT/bench-model-tune.log" | grep -v "━" | tail -30
  echo "rc=${PIPESTATUS[0]}"
  ;;
bench-gemv)
  stage "bench gemv"
  timeout 280 "$PY" -m autosched bench --shapes 12288x4096,4096x4096 --out "$OUT" 2>&1 | tail -12
  ;;
bench-sgemm)
  stage "bench sgemm"
  timeout 540 "$PY" -m autosched bench sgemm --shapes 4096x4096x4096 --out "$OUT" 2>&1 | tee "$OUT/bench-sgemm.log" | tail -8
  ;;
bench-hgemm)
  # the database under $OUT/hgemm.db: a second call that carries it back resumes the tuning
  stage "bench hgemm (issue 15's shapes)"
  timeout 560 "$PY" -m autosched bench hgemm --out "$OUT" --db "$OUT/hgemm.db" 2>&1 | tee "$OUT/bench-hgemm.log" | tail -30
  echo "rc=${PIPESTATUS[0]}"
  ;;
record-hgemm)
  # recordings for the replay runner (CPU machines): hgemm_wgmma's whole space at 4096^3 (672 configs
  # on the H100, ~0.2 ms a run), then a random (unbiased) sample of hgemm_mma's: an exhaustive walk of
  # mma's 2070 configs cut short holds only the small tiles first in its order (tried 2026-11-23)
  stage "record hgemm_wgmma 4096^3"
  timeout 200 "$PY" -m autosched record hgemm --shape 4096x4096x4096 --template hgemm_wgmma --time 180 \
    --out "$OUT/hgemm_wgmma-4096x4096x4096-NVIDIA_H100_80GB_HBM3.json.gz" 2>&1 | tail -3
  stage "record hgemm_mma 4096^3 (random sample)"
  timeout 100 "$PY" -m autosched record hgemm --shape 4096x4096x4096 --template hgemm_mma --strategy random \
    --screen 2 --time 80 --out "$OUT/hgemm_mma-4096x4096x4096-NVIDIA_H100_80GB_HBM3.json.gz" 2>&1 | tail -3
  ;;
record-sched)
  # the paired protocol's check (cuBLAS against itself at 8192^3, alternating vs two series), then
  # recordings of hgemm_wgmma_sched for the replay runner and the model that tunes it: a random sample
  # of its space a shape, screened at 2x (SCHED_RECORD_S seconds each, default 90)
  stage "paired protocol at 8192^3"
  timeout 60 "$PY" scripts/experiments/paired_drift.py 2>&1 | tail -2
  for shape in ${SCHED_SHAPES:-4096x4096x4096 512x11008x4096_bt 2048x11008x4096_bt 2048x4096x4096_bt}; do
    stage "record hgemm_wgmma_sched $shape"
    timeout $(( ${SCHED_RECORD_S:-90} + 30 )) "$PY" -m autosched record hgemm --shape "$shape" \
      --template hgemm_wgmma_sched --strategy random --screen 2 --time "${SCHED_RECORD_S:-90}" \
      --out "$OUT/hgemm_wgmma_sched-$shape-NVIDIA_H100_80GB_HBM3.json.gz" 2>&1 | tail -2
  done
  ;;
ray)
  # Ray on a machine with no index: the wheel comes in two carried parts (.whl/a, .whl/b: one call
  # carries at most 64 MiB), its dependencies beside the second
  stage "ray install"
  cat .whl/a/part00 .whl/b/part01 > .whl/ray-2.60.0-cp312-cp312-manylinux2014_x86_64.whl
  (cd .whl && sha256sum -c b/ray.sha256) || exit 1
  "$PY" -m pip install -q --no-index --find-links .whl --find-links .whl/b/deps ray >"$OUT/ray-install.log" 2>&1 \
    || { tail -5 "$OUT/ray-install.log"; exit 1; }
  stage "tune on a local Ray cluster (one GPU actor), then the same on the GPU runner"
  for runner in "--cluster local" "--runner gpu"; do
    db=/tmp/ray-check-$RANDOM.db
    timeout 200 "$PY" -m autosched tune gemv-q4f16 --shape 4096x4096 --trials 256 --db $db $runner 2>&1 \
      | tee -a "$OUT/ray-gpu.log" | tail -9
  done
  ;;
scale-gpu)
  # issue 18 on a machine of two GPUs (nvidia-h200-x2 / nvidia-h100-x2): the measuring rate on GPU 0 and on
  # both (gpu2_throughput_speedup, bar 1.8), the NVRTC rate, tune end to end on one and both; then
  # tune-model on both GPUs (SCALE_TUNE_MIN minutes, default 2)
  stage "scaling: one GPU vs all (gemv-q4f16 4096x4096, 256 configs)"
  timeout ${SCALE_S:-300} "$PY" -m autosched.benchmarks.scale_gpu --configs ${SCALE_CONFIGS:-256} --out "$OUT" 2>&1 \
    | tee "$OUT/bench-scale-gpu.log" | tail -12
  echo "rc=${PIPESTATUS[0]}"
  stage "tune-model on every GPU"
  timeout 240 "$PY" -m autosched tune-model random:llama3.2-1b --budget ${SCALE_TUNE_MIN:-2} --gpus all \
    --db "$OUT/tune-model-2gpu.db" 2>&1 | tee "$OUT/tune-model-2gpu.log" | grep -v "━" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  ;;
prefill)
  # ~210 s at most: the prefill GPU tests (engines of two small models, the kernels on their own), then the 7B
  # fp16 prefill at 128 and 2048 tokens batched / stepwise / torch (bench/results-style JSON under $OUT)
  stage "prefill tests"
  timeout 100 python3 -m pytest -q -m gpu -x -p no:cacheprovider tests/gpu/test_prefill_gpu.py 2>&1 \
    | tee "$OUT/pytest-prefill.log" | tail -15
  stage "prefill bench (quick)"
  timeout 110 "$PY" -m autosched.benchmarks.prefill --quick --out "$OUT" 2>&1 | tee "$OUT/bench-prefill.log" | tail -14
  ;;
prefill-wgmma)
  stage "pytest prefill-wgmma"
  timeout 70 python3 -m pytest -q -m gpu -x -p no:cacheprovider tests/gpu/test_prefill_wgmma_gpu.py 2>&1 \
    | tee "$OUT/pytest-prefill-wgmma.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  stage "7B GEMMs and prefill: wgmma vs mma vs torch"
  timeout 100 "$PY" scripts/prefill_wgmma_timing.py --out "$OUT" 2>&1 | tee "$OUT/timing-prefill-wgmma.log" | tail -22
  echo "rc=${PIPESTATUS[0]}"
  ;;
prefill-tc-attn)
  stage "pytest prefill-tc-attn"
  timeout 80 python3 -m pytest -q -m gpu -x -p no:cacheprovider tests/gpu/test_prefill_tc_attn_gpu.py 2>&1 \
    | tee "$OUT/pytest-prefill-tc-attn.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  sanitize_both prefill-tc-attn prefill_attention_tc 35 "ERROR SUMMARY|RACECHECK SUMMARY|WRONG|all ok" \
    scripts/sanitize_prefill_attn.py
  stage "7B attention and prefill: tensor cores on vs off vs torch"
  timeout 90 "$PY" scripts/prefill_attn_timing.py --out "$OUT" 2>&1 | tee "$OUT/timing-prefill-tc-attn.log" | tail -12
  echo "rc=${PIPESTATUS[0]}"
  ;;
step-timeline)
  for mf in "random:llama2-7b q4f16_1" "random:llama3.2-1b fp16" "random:llama3.2-1b q4f16_1"; do
    read -r model fmt <<<"$mf"
    stage "step timeline: $model $fmt as shipped"
    timeout 100 "$PY" scripts/step_timeline.py "$model" "$fmt" --json "$OUT/timeline-${model#random:}-$fmt.json" 2>&1 \
      | grep -v -i warn | tee "$OUT/timeline-${model#random:}-$fmt.log" | head -14
    echo "rc=${PIPESTATUS[0]}"
  done
  ;;
persistent)
  stage "persistent step tests"
  timeout 100 python3 -m pytest -q -m gpu -x -p no:cacheprovider tests/gpu/test_persistent_gpu.py 2>&1 \
    | tee "$OUT/pytest-persistent.log" | tail -15
  echo "rc=${PIPESTATUS[0]}"
  stage "llama3.2-1b fp16: per-kernel vs persistent step"
  # --phases: the instrumented build (one more compile) and 128 steps of it after the two timings
  timeout 90 "$PY" scripts/persistent_timing.py --model random:llama3.2-1b --steps 128 --phases --out "$OUT" 2>&1 \
    | tee "$OUT/timing-persistent.log" | tail -24
  echo "rc=${PIPESTATUS[0]}"
  ;;
esac
done
stage done
