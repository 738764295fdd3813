#!/usr/bin/env bash
# Measures subspace's default schedule (compress.DefaultSchedule) and milder
# ones against full communication: docs/varco/subspace/results.jsonl and its
# results.md (docs/varco-detail.md, "Subspace's default").
#
#   scripts/subspace.sh     Amazon Computers and the synthetic graph, N = 4,
#                           random, 3 seeds, SAGE-64 × 100 iterations
#
# Runs already in the results file are skipped, so an interrupted sweep
# resumes. GRAFT_DATA must name the data directory; SUBSPACE_OUT writes
# elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${SUBSPACE_OUT:-docs/varco/subspace/results.jsonl}
mkdir -p "$(dirname "$out")"
go build -o /tmp/varco-subspace.$$ ./lab/varco
trap 'rm -f /tmp/varco-subspace.$$' EXIT
configs=full,subspace-linear2,subspace-linear4-10,subspace-linear1.25,subspace-linear4
/tmp/varco-subspace.$$ run -out "$out" -datasets sbm-arxiv,amazon-computers -parts 4 -partitions random \
	-seeds 1,2,3 -configs "$configs" -epochs 100 -hidden 64
/tmp/varco-subspace.$$ report -in "$out" -dir "$(dirname "$out")"
