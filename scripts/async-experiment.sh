#!/usr/bin/env bash
# The parameter-server experiment of docs/async.md: accuracy of --mode
# async against the synchronous modes at N workers and one server, and the
# wall time of the parameter server's synchronous and asynchronous modes
# with and without one worker slowed down.
#
#   [PART=all|accuracy|time] [SEEDS=3] [REPS=3] [WORKERS=4] [SLOW=1:3] [EPOCHS=30] [GRAFT=bin] scripts/async-experiment.sh
#
# Accuracy: GraphSAGE on the embedded Cora with a 60/20/20 random split,
# neighbour sampling 10,10, batches of 64 seeds, for seeds 1..SEEDS, in four
# modes: one process (--mode sync), the synchronous parameter server
# (ps-sync), and async with the staleness rules none and inverse. Wall time:
# ps-sync and async (rule inverse) interleaved REPS times, evaluating only
# after the last epoch so that the time is training's, with no straggler and
# with worker RANK slowed FACTOR times (SLOW=RANK:FACTOR), in two settings:
# the accuracy runs' (hidden 32, batches of 64: a step's compute is small
# next to the server's work per gradient) and a heavier one (hidden 256,
# batches of 256, 8 epochs: compute dominates, as a straggler's does).
# Times on a loaded machine vary from run to run: compare the modes within
# one repetition.
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=${SEEDS:-3}
reps=${REPS:-3}
workers=${WORKERS:-4}
slow=${SLOW:-1:3}
epochs=${EPOCHS:-30}
graft=${GRAFT:-}
if [ -z "$graft" ]; then
  graft=$(mktemp -d)/graft
  go build -o "$graft" ./cmd/graft
fi
common=(train --model sage --sampler neighbor:10,10 --batch-size 64 --split frac:0.6:0.2 --lr 0.01 --epochs "$epochs" --json)

summary() { # mode label, then the JSON summary on stdin
  python3 -c '
import json, sys
d = json.load(sys.stdin)
print("%-28s test %.4f  val %.4f  train %6.2f s  staleness mean %.2f p50 %d p99 %d max %d  dropped %d  updates/s %.1f" % (
    sys.argv[1], d["test_acc"], d["best_val_acc"], d.get("train_seconds", 0), d.get("staleness_mean", 0),
    d.get("staleness_p50", 0), d.get("staleness_p99", 0), d.get("staleness_max", 0), d.get("dropped_updates", 0), d.get("updates_per_second", 0)))
' "$1"
}

part=${PART:-all}
if [ "$part" != time ]; then
echo "== accuracy: $workers workers, 1 server, $epochs epochs"
for seed in $(seq 1 "$seeds"); do
  "$graft" "${common[@]}" --seed "$seed" --mode sync 2>/dev/null | summary "seed $seed sync (one process)"
  "$graft" "${common[@]}" --seed "$seed" --mode ps-sync --workers "$workers" 2>/dev/null | summary "seed $seed ps-sync"
  "$graft" "${common[@]}" --seed "$seed" --mode async --workers "$workers" --staleness-rule none 2>/dev/null | summary "seed $seed async none"
  "$graft" "${common[@]}" --seed "$seed" --mode async --workers "$workers" --staleness-rule inverse 2>/dev/null | summary "seed $seed async inverse"
done

fi
[ "$part" = accuracy ] && exit 0

for setting in "small:--epochs $epochs --eval-every $epochs" "heavy:--hidden 256 --batch-size 256 --epochs 8 --eval-every 8"; do
  echo "== wall time, ${setting%%:*} setting (${setting#*:}): $workers workers, 1 server, evaluation after the last epoch only"
  for rep in $(seq 1 "$reps"); do
    for straggler in "" "--slow-worker $slow"; do
      for mode in "ps-sync" "async --staleness-rule inverse"; do
        # shellcheck disable=SC2086
        "$graft" "${common[@]}" ${setting#*:} --mode $mode --workers "$workers" $straggler 2>/dev/null |
          summary "rep $rep ${mode%% *} ${straggler:-no straggler}"
      done
    done
  done
done
