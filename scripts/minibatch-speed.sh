#!/usr/bin/env bash
# minibatch-speed.sh: mini-batch training's epoch against its floor, on the
# ogbn-products-sized graph by default. In one run it measures the memory
# bandwidth (STREAM triad) and GEMM rate with `graft bench kernels`, trains
# with `graft train --sampler`, and prints per epoch (the first, which
# grows every buffer, aside):
#
#   epoch s      the training pass (sampling, gathering, forward, backward,
#                step; evaluation apart)
#   floor s      the larger of gathered bytes / triad bandwidth and
#                estimated flops / GEMM rate (bytes and flops from the
#                epoch's --metrics line)
#   × floor      epoch / floor
#   sample+gather  the share of the epoch's wall time the background
#                sampling and gathering took (they overlap the compute)
#   wait s       how long the model waited for a batch
#   RSS          resident memory after the epoch
#
# Usage: scripts/minibatch-speed.sh [extra graft train flags...]
# Environment: DATASET (default sbm:2400000:52:100:47), EPOCHS (default 4),
# GRAFT (a graft binary instead of building one), OUT (the metrics file,
# default a temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=${GRAFT:-$work/graft}
[[ -n ${GRAFT:-} ]] || go build -o "$bin" ./cmd/graft
dataset=${DATASET:-sbm:2400000:52:100:47}
epochs=${EPOCHS:-4}
out=${OUT:-$work/m.jsonl}

"$bin" bench kernels --json >"$work/kernels.jsonl"
triad=$(jq -s '[.[] | select(.kernel == "triad")][0].gbps' "$work/kernels.jsonl")
gemm=$(jq -s '[.[] | select(.kernel == "gemm_nn")] | max_by(.k) | .gflops' "$work/kernels.jsonl")
echo "triad ${triad} GB/s, GEMM ${gemm} GFLOP/s (graft bench kernels, this run)"

"$bin" train --dataset "$dataset" --model sage --layers 3 --hidden 256 --lr 0.003 --weight-decay 0 --dropout 0.5 \
	--sampler neighbor:15,10,5 --batch-size 1024 --epochs "$epochs" --eval-every "$epochs" --patience 0 \
	--metrics "$out" --json "$@" >"$work/summary.json"
jq -c '{dataset, sampler, batch_size, epoch_ms_median, eval_ms_median, test_acc, peak_rss_bytes}' "$work/summary.json"

jq -r --argjson triad "$triad" --argjson gemm "$gemm" '
  select(.epoch > 1)
  | (.gathered_bytes / ($triad * 1e9)) as $mem
  | (.flops / ($gemm * 1e9)) as $flop
  | ([$mem, $flop] | max) as $floor
  | [.epoch, (.step_seconds * 100 | round / 100), ($mem * 100 | round / 100), ($flop * 100 | round / 100),
     ($floor * 100 | round / 100), (.step_seconds / $floor * 100 | round / 100),
     ((.sample_seconds + .gather_seconds) / .step_seconds * 1000 | round / 10),
     (.wait_seconds * 100 | round / 100), (.rss_bytes / 1073741824 * 100 | round / 100)]
  | @tsv' "$out" |
	(printf 'epoch\tepoch s\tbytes s\tflops s\tfloor s\t× floor\tsample+gather %%\twait s\tRSS GiB\n'; cat) | column -t -s $'\t'
