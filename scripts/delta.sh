#!/usr/bin/env bash
# Measures temporal delta coding of the halo exchange (--compress delta:…)
# against full communication and quant4: docs/varco/delta/results.jsonl and
# the tables of docs/varco/delta/results.md (docs/delta.md).
#
#   scripts/delta.sh        Amazon Computers and Coauthor CS, N = 4 and 8,
#                           random and multilevel, SAGE-64 × 100 iterations
#   DELTA_GRID=1 scripts/delta.sh   --compress auto's recipe (entropy:delta:2:0:0
#                           with the last layer) against full communication
#                           on the whole 24-cell grid: the three datasets
#                           (with the synthetic sbm-arxiv), N = 2, 4, 8, 16
#
# Runs already in the results file are skipped, so an interrupted sweep
# resumes; seeds go one at a time over every cell (seed-major), the cheapest
# cells first, so a sweep stopped early has covered as many cells as it could. GRAFT_DATA must name the data
# directory. DELTA_SEEDS (default 1,2,3), DELTA_CONFIGS and DELTA_OUT narrow
# or move it; DELTA_STOP_AT=HH:MM starts no new run after that time.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${DELTA_OUT:-docs/varco/delta/results.jsonl}
mkdir -p "$(dirname "$out")"
go build -o /tmp/varco-delta.$$ ./lab/varco
trap 'rm -f /tmp/varco-delta.$$' EXIT
stop=()
[[ -n ${DELTA_STOP_AT:-} ]] && stop=(-stop-at "$DELTA_STOP_AT")
IFS=, read -ra seeds <<<"${DELTA_SEEDS:-1,2,3}"
if [[ ${DELTA_GRID:-0} == 1 ]]; then
	configs=${DELTA_CONFIGS:-full,entropy:delta:2:0:0+last}
	for seed in "${seeds[@]}"; do
		# the cheapest cells first: the real graphs at every N, then the synthetic one
		for ds in amazon-computers,coauthor-cs sbm-arxiv; do
			for n in 8 4 2 16; do
				/tmp/varco-delta.$$ run -out "$out" "${stop[@]}" -datasets "$ds" -parts "$n" \
					-partitions multilevel,random -seeds "$seed" -configs "$configs" -epochs 100 -hidden 64
			done
		done
	done
	/tmp/varco-delta.$$ report -targets -fixed docs/varco/results.jsonl -in "$out" -dir "$(dirname "$out")"
	exit 0
fi
# full and quant4 are the references; delta:2:0:0+last codes both
# directions' differences at 2 bits with no skipping, the last layer's
# exchange too; :quant2 sends the gradients as plain 2-bit stochastic
# quantisation instead.
configs=${DELTA_CONFIGS:-full,quant4,delta:2:0:0+last,delta:2:0:0:quant2+last}
for seed in "${seeds[@]}"; do
	for cell in 8:multilevel 4:multilevel 8:random 4:random; do # the cheapest cells first
		/tmp/varco-delta.$$ run -out "$out" "${stop[@]}" -datasets amazon-computers,coauthor-cs -parts "${cell%%:*}" \
			-partitions "${cell##*:}" -seeds "$seed" -configs "$configs" -epochs 100 -hidden 64
	done
done
# The choices compared on one or two cells (docs/delta.md, "Choices").
if [[ -z ${DELTA_CONFIGS:-} ]]; then
	/tmp/varco-delta.$$ run -out "$out" "${stop[@]}" -datasets amazon-computers -parts 8 -partitions multilevel -seeds 2 \
		-configs delta:2:0:0,delta:2:0.05:4+last,delta:r@step:16:4:34:2+last,quantr@exp:16:4:1.5 -epochs 100 -hidden 64
	/tmp/varco-delta.$$ run -out "$out" "${stop[@]}" -datasets amazon-computers -parts 4 -partitions random -seeds 3 \
		-configs delta:4:0:0+last,delta:2:0:0:quant4+last -epochs 100 -hidden 64
	/tmp/varco-delta.$$ run -out "$out" "${stop[@]}" -datasets amazon-computers -parts 4 -partitions multilevel -seeds 2 \
		-configs delta:2:0:0:quant4+last -epochs 100 -hidden 64
fi
/tmp/varco-delta.$$ report -targets -fixed docs/varco/results.jsonl -in "$out" -dir "$(dirname "$out")"
