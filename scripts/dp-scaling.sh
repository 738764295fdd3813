#!/usr/bin/env bash
# Data-parallel scaling of sampled training: epoch time and bytes at
# N = 1, 2 and 4 workers in one process, and the same with every worker's
# messages charged to an emulated 1 Gbit/s link (--link), for docs/minibatch.md.
#
#   GRAFT_DATA=/path/to/data [GRAFT=bin] [EPOCHS=5] scripts/dp-scaling.sh [DATASET]
#
# The batch over all workers stays 512 seeds (512/N per worker), so every
# N trains the same union batches; one JSON summary line per run is printed
# after a table row.
set -euo pipefail
cd "$(dirname "$0")/.."
dataset=${1:-amazon-computers}
epochs=${EPOCHS:-5}
graft=${GRAFT:-}
if [ -z "$graft" ]; then
	graft=$(mktemp -d)/graft
	go build -o "$graft" ./cmd/graft
fi
common=(--dataset "$dataset" --model sage --layers 2 --hidden 256 --split frac:0.5:0.25 --sampler neighbor:25,10
	--epochs "$epochs" --patience 0 --eval-every "$epochs" --json)
echo "| workers | link | epoch (ms, median) | emulated s/epoch | structure MB/epoch | features MB/epoch | gradients MB/epoch | test acc |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for n in 1 2 4; do
	for link in "" 1gbit:100us; do
		[[ $n == 1 && -n $link ]] && continue
		args=("${common[@]}" --batch-size $((512 / n)))
		((n > 1)) && args+=(--parts "$n")
		[[ -n $link ]] && args+=(--link "$link")
		line=$("$graft" train "${args[@]}" 2>/dev/null)
		echo "$line" | python3 -c '
import json, sys
d = json.load(sys.stdin)
e = d["epochs"]
mb = lambda k: "%.1f" % (d.get(k, 0) / e / 1e6)
print("| %d | %s | %.0f | %.2f | %s | %s | %s | %.3f |" % (d.get("parts", 1), sys.argv[1] or "none", d["epoch_ms_median"],
      d.get("emulated_seconds", 0) / e, mb("bytes_structure"), mb("bytes_features"), mb("bytes_grad"), d["test_acc"]))
' "$link"
	done
done
