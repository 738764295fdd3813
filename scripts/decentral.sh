#!/usr/bin/env bash
# Regenerates docs/decentral/results.md (3 seeds, mean ± std), the metric
# histories under docs/decentral/runs/ and the plot docs/decentral/metric_vs_rounds.svg.
# Full-size runs: about 15 minutes on two idle cores.
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/decentral
runs=$out/runs
mkdir -p "$runs"
go build -o /tmp/graft-decentral ./cmd/graft
g=/tmp/graft-decentral
seeds="1 2 3"

run() { # name task args...
	local name=$1 task=$2
	shift 2
	echo "== $name" >&2
	$g decentral "$task" --piggyback --json --metrics "$runs/$name.jsonl" "$@" >"$runs/$name.json"
}

for s in $seeds; do
	for opt in dadam damsgrad dsgd; do
		run "regression_${opt}_s$s" regression --optimizer "$opt" --seed "$s"
	done
	run "power_dadam_s$s" power --optimizer dadam --seed "$s"
	run "scheduling_dadam_s$s" scheduling --optimizer dadam --seed "$s"
done
# Robustness: message loss.
for p in 0.1 0.3; do
	for s in $seeds; do
		run "regression_dadam_drop${p}_s$s" regression --optimizer dadam --seed "$s" --drop "$p"
	done
done
run "power_dadam_drop0.1_s1" power --optimizer dadam --seed 1 --drop 0.1

$g decentral table "$runs" >"$out/results.md"
$g decentral plot --out "$out/metric_vs_rounds.svg" "$runs"/regression_dadam_s1.jsonl "$runs"/power_dadam_s1.jsonl "$runs"/scheduling_dadam_s1.jsonl
cat "$out/results.md"
