#!/usr/bin/env bash
# The 7B q4f16_1 decode as shipped (autosched.benchmarks.model_tune --phases 7b: a fresh database, the
# step verification and descent, five rounds) from two source trees, alternately, each in its own
# process: the tree here ("new") against git revision OLD ("old", a worktree under /tmp), the order
# turned round every other pair.
#   bash scripts/experiments/step_ab_trees.sh OLD [PAIRS]      (JSON and logs under $OUT/ab-*)
# A pair takes about 3 minutes on an H100.
set -u
OLD=$1
PAIRS=${2:-2}
OUT=${OUT:-/tmp/out}
NEW=$PWD
rm -rf /tmp/ab-old && git worktree add -f --detach /tmp/ab-old "$OLD" >/dev/null 2>&1 || { echo "no worktree for $OLD"; exit 2; }
for i in $(seq 1 "$PAIRS"); do
  # odd pairs old first, even pairs new first: on 2026-11-27 the second run of a call read slower twice
  order="old new"; [ $((i % 2)) -eq 0 ] && order="new old"
  for tree in $order; do
    dir=$NEW; [ "$tree" = old ] && dir=/tmp/ab-old
    (cd "$dir" && AUTOSCHED_HOME=/tmp/as-$tree PYTHONPATH=$dir python3 -m autosched.benchmarks.model_tune --phases 7b \
      --out "$OUT/ab-$tree-$i" >"$OUT/ab-$tree-$i.log" 2>&1)
    echo "$tree $i: $(grep -h 'tok/s' "$OUT/ab-$tree-$i.log" | tail -1)"
  done
done
