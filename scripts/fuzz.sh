#!/usr/bin/env bash
# Fuzz every fuzz target of the module, one after another, each for a count
# of executions rather than a time:
#
#   FUZZ_EXECS     executions per target (-fuzztime=Nx; default 3000)
#   FUZZ_MINIMIZE  executions spent minimising a new or failing input
#                  (-fuzzminimizetime=Nx; default 50)
#
# Counts, not durations: a duration window let FuzzNPZ spend its whole 30 s
# minimising one slow input, and -fuzztime as a duration trips a race in
# Go's fuzzing coordinator that fails a target which found nothing
# ("context deadline exceeded"). With counts there is no deadline to race,
# and minimisation is bounded by executions. A failing input is written to
# the package's testdata/fuzz/ and the script stops there.
#
#   scripts/fuzz.sh        fuzz every target
#   scripts/fuzz.sh -n     print the commands only
set -euo pipefail
cd "$(dirname "$0")/.."

execs=${FUZZ_EXECS:-3000}
minimize=${FUZZ_MINIMIZE:-50}
dry=
if [ "${1:-}" = "-n" ]; then dry=1; fi

# "./pkg FuzzName" for every fuzz target, from the test files' declarations.
targets() {
  grep -rHoE --include='*_test.go' --exclude-dir=testdata --exclude-dir=.git '^func Fuzz[A-Za-z0-9_]*\(' . |
    sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' | sort -u
}

while read -r pkg name; do
  cmd=(go test -run='^$' -fuzz="^${name}\$" -fuzztime="${execs}x" -fuzzminimizetime="${minimize}x" "$pkg")
  if [ -n "$dry" ]; then
    echo "${cmd[*]}"
  else
    echo "== $pkg $name"
    "${cmd[@]}"
  fi
done < <(targets)
