#!/usr/bin/env bash
# bench-compare.sh: two graft binaries on the same benchmarks, alternated in
# one run of this script (A B B A per round) so that a busy or drifting
# machine weighs on both alike, as figures across runs cannot be compared.
#
#   graft bench train --json      full-graph epochs in one process (Cora,
#                                 Amazon Computers if GRAFT_DATA is set, the
#                                 1M-node SBM)
#   graft train --parts 4         partition-parallel epochs in one process,
#                                 SAGE-256 on Amazon Computers (needs
#                                 GRAFT_DATA; Cora without it), uncompressed
#                                 and with top-k at ratio 4
#
# The data preparation is spelled out (graft picks a recipe per dataset
# when it is not), so that both binaries train on the same input.
#
# It prints, per benchmark, each binary's median epoch time over its runs
# and the ratio B/A.
#
# Usage: scripts/bench-compare.sh OLD_BINARY NEW_BINARY
# Environment: ROUNDS (default 2), GRAFT_DATA, BENCH_FLAGS (extra flags for
# graft bench train, e.g. --quick).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
  exit 2
fi
A=$1 B=$2
ROUNDS=${ROUNDS:-2}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

dataset=cora split=public
if [ -n "${GRAFT_DATA:-}" ]; then
  dataset=amazon-computers split=random:20:30
fi

one() { # binary label
  local bin=$1 label=$2
  "$bin" bench train --json ${BENCH_FLAGS:-} ${GRAFT_DATA:+--data-dir "$GRAFT_DATA"} |
    jq -c --arg b "$label" '{bench: ("bench train " + .graph + " " + .model), bin: $b, ms: .epoch_ms}' >>"$out"
  for codec in none topk; do
    "$bin" train --dataset "$dataset" --split "$split" --lcc=false --row-normalize=true --features auto --select acc \
      --model sage --layers 3 --hidden 256 --parts 4 \
      --compress "$codec" --schedule fixed:4 --epochs 40 --patience 0 --json 2>/dev/null |
      jq -c --arg b "$label" --arg c "$codec" '{bench: ("train --parts 4 " + .dataset + " " + $c), bin: $b, ms: .epoch_ms_median}' >>"$out"
  done
}

for r in $(seq "$ROUNDS"); do
  echo "round $r of $ROUNDS" >&2
  one "$A" A
  one "$B" B
  one "$B" B
  one "$A" A
done

jq -rs '
  def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  group_by(.bench)[] as $g
  | ($g | map(select(.bin == "A") | .ms) | median) as $a
  | ($g | map(select(.bin == "B") | .ms) | median) as $b
  | "\($g[0].bench)\t\($a * 100 | round / 100) ms\t\($b * 100 | round / 100) ms\t\($b / $a * 1000 | round / 1000)"
' "$out" | (printf 'benchmark\tA median\tB median\tB/A\n'; cat) | column -t -s $'\t'
