#!/usr/bin/env bash
# bench-instructions.sh: the instructions two graft binaries execute per
# training epoch, counted by valgrind's callgrind: repeatable to the
# instruction whatever else the machine is doing, so it separates a real
# change in the training loop's work from timing noise (it does not see
# memory stalls: compare wall times with bench-compare.sh too).
#
# Per configuration it runs `graft train` for E1 and E2 epochs (patience
# off, evaluation every epoch) under callgrind with each binary and prints
# (I(E2) − I(E1)) / (E2 − E1) for each, and the ratio new/old. Kernels are
# capped at AVX2 (GRAFT_SIMD), which valgrind decodes; GOMAXPROCS is fixed
# so that both binaries split work alike.
#
# Usage: scripts/bench-instructions.sh OLD_BINARY NEW_BINARY
# Environment: E1 (default 3), E2 (default 13).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
  exit 2
fi
old=$1 new=$2
e1=${E1:-3} e2=${E2:-13}
configs=(
  "cora gcn|--dataset cora"
  "cora sage|--dataset cora --model sage"
  "cora gat|--dataset cora --model gat"
  "cora gcn, 4 parts|--dataset cora --parts 4"
  "cora gcn, 4 parts, topk|--dataset cora --parts 4 --compress topk --schedule fixed:4"
  "sbm 20k gcn|--dataset sbm:20000:20:32:8 --hidden 64"
  "sbm 20k sage|--dataset sbm:20000:20:32:8 --model sage --hidden 64"
)

count() { # binary epochs args...
  local bin=$1 epochs=$2
  shift 2
  GODEBUG=asyncpreemptoff=1 GRAFT_SIMD=avx2 GOMAXPROCS=2 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$bin" train "$@" --epochs "$epochs" --patience 0 --json 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

printf '%-28s %16s %16s %8s\n' configuration "old instr/epoch" "new instr/epoch" new/old
for c in "${configs[@]}"; do
  name=${c%%|*}
  read -r -a args <<<"${c#*|}"
  per() { echo $(( ($(count "$1" "$e2" "${args[@]}") - $(count "$1" "$e1" "${args[@]}")) / (e2 - e1) )); }
  a=$(per "$old")
  b=$(per "$new")
  printf '%-28s %16d %16d %8s\n' "$name" "$a" "$b" "$(echo "scale=4; $b / $a" | bc)"
done
