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
# capped at AVX2 (GRAFT_SIMD), which valgrind decodes. GOMAXPROCS is 1:
# with more, idle workers spin for work for as long as timing dictates,
# and the counts of two identical runs differ by several percent. The
# garbage collector is off (GOGC=off): when its cycles start depends on
# timing too, and one cycle more or less moved a Cora epoch's count by a
# third; without it repeated counts agree to 0.05%. Each count is the
# least of REPS runs, for what timers still add now and then.
#
# Usage: scripts/bench-instructions.sh OLD_BINARY NEW_BINARY
# Environment: E1 (default 3), E2 (default 13), REPS (default 1); GRAFT_DATA for the
# amazon-computers rows.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
  exit 2
fi
old=$1 new=$2
e1=${E1:-3} e2=${E2:-13} reps=${REPS:-1}
configs=(
  "cora gcn|--dataset cora"
  "cora sage|--dataset cora --model sage"
  "cora gat|--dataset cora --model gat"
  "cora gcn, 4 parts|--dataset cora --parts 4"
  "cora gcn, 4 parts, topk|--dataset cora --parts 4 --compress topk --schedule fixed:4"
  "amazon-computers gcn|--dataset amazon-computers --split random:20:30"
  "amazon-computers sage|--dataset amazon-computers --split random:20:30 --model sage"
)

count() { # binary epochs args...
  local bin=$1 epochs=$2 out n
  shift 2
  out=$(GOGC=off GODEBUG=asyncpreemptoff=1 GRAFT_SIMD=avx2 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$bin" train "$@" --epochs "$epochs" --patience 0 --json 2>&1 >/dev/null) || {
    echo "$bin train $* --epochs $epochs failed:" >&2
    grep -v "^==" <<<"$out" | tail -3 >&2
    exit 1
  }
  n=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<<"$out")
  [ -n "$n" ] || { echo "no instruction count from $bin train $*" >&2; exit 1; }
  echo "$n"
}

fewest() { # binary epochs args...: the least count of REPS runs
  local n best=
  for _ in $(seq "$reps"); do
    n=$(count "$@") || return 1
    if [ -z "$best" ] || [ "$n" -lt "$best" ]; then best=$n; fi
  done
  echo "$best"
}

printf '%-28s %16s %16s %8s\n' configuration "old instr/epoch" "new instr/epoch" new/old
for c in "${configs[@]}"; do
  name=${c%%|*}
  read -r -a args <<<"${c#*|}"
  per() {
    local hi lo
    hi=$(fewest "$1" "$e2" "${args[@]}") || return 1
    lo=$(fewest "$1" "$e1" "${args[@]}") || return 1
    echo $(((hi - lo) / (e2 - e1)))
  }
  a=$(per "$old")
  b=$(per "$new")
  printf '%-28s %16d %16d %8s\n' "$name" "$a" "$b" "$(echo "scale=4; $b / $a" | bc)"
done
