#!/usr/bin/env bash
# partition-compare.sh: graft's partitioners beside gpmetis (METIS 5.1.0) on
# identical graphs. For each graph it writes the graph once in gpmetis's
# format (graft partition --write-metis-graph), runs gpmetis and graft's
# multilevel, stream and random partitioners for each K, scores every
# assignment with the same code (graft partition --assign), and prints one
# table row per graph and K:
#
#   cut ratio   multilevel edge cut / gpmetis edge cut
#   cpu ratio   multilevel CPU seconds (all threads) / gpmetis's reported
#               partitioning time, which METIS measures as CPU time
#   wall ratio  multilevel wall seconds / the same gpmetis time
#               (both without reading the graph; best of $REPS runs each,
#               taken in the same run of this script because the machine is
#               shared and wall times are noisy)
#   imbalance   max/mean part size of each
#   stream/rand stream edge cut / random edge cut
#
# Usage: scripts/partition-compare.sh [GRAPH...]
#   GRAPH is a dataset name (needs GRAFT_DATA) or rmat:SCALE:EDGES[:SEED];
#   default: amazon-computers coauthor-cs cnr-2000 rmat:20:16000000.
# Environment: KS (default "2 4 8 16"), REPS (default 2), WORK (scratch
# directory, default a new temporary one), GPMETIS (default gpmetis), GRAFT
# (a graft binary to use instead of building one).
set -euo pipefail

cd "$(dirname "$0")/.."
KS=${KS:-"2 4 8 16"}
REPS=${REPS:-2}
GPMETIS=${GPMETIS:-gpmetis}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
if [ $# -eq 0 ]; then
	set -- amazon-computers coauthor-cs cnr-2000 rmat:20:16000000
fi
command -v "$GPMETIS" >/dev/null || { echo "partition-compare: $GPMETIS not found (apt-get install metis)" >&2; exit 1; }

graft=${GRAFT:-}
if [ -z "$graft" ]; then
	go build -o "$WORK/graft" ./cmd/graft
	graft="$WORK/graft"
fi

# json FIELD: the number FIELD holds in the one-line JSON object on stdin.
json() { sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p"; }
# min A B: the smaller of two decimals.
fmin() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }'; }

printf '%-18s %3s | %9s %7s %5s | %9s %7s %7s %5s | %6s %6s %6s | %6s | %9s %11s\n' \
	graph K metis_cut metis_s imb ml_cut ml_wall ml_cpu imb cut_x cpu_x wall_x rss_MB rand_cut stream/rand
for g in "$@"; do
	tag=$(echo "$g" | tr ':/' '__')
	"$graft" partition --dataset "$g" --write-metis-graph "$WORK/$tag.graph"
	for k in $KS; do
		mtime=inf
		for _ in $(seq "$REPS"); do
			t=$("$GPMETIS" -seed=1 "$WORK/$tag.graph" "$k" | sed -n 's/.*Partitioning:[[:space:]]*\([0-9.]*\) sec.*/\1/p')
			mtime=$(fmin "$mtime" "$t")
		done
		metis=$("$graft" partition --dataset "$g" --assign "$WORK/$tag.graph.part.$k" --parts "$k" --json)
		ltime=inf
		lcpu=inf
		for _ in $(seq "$REPS"); do
			ml=$("$graft" partition --dataset "$g" --parts "$k" --method multilevel --seed 1 --out "$WORK/$tag.ml.$k" --json)
			ltime=$(fmin "$ltime" "$(echo "$ml" | json seconds)")
			lcpu=$(fmin "$lcpu" "$(echo "$ml" | json cpu_seconds)")
		done
		st=$("$graft" partition --dataset "$g" --parts "$k" --method stream --json)
		rd=$("$graft" partition --dataset "$g" --parts "$k" --method random --json)
		mcut=$(echo "$metis" | json edge_cut)
		lcut=$(echo "$ml" | json edge_cut)
		rss=$(echo "$ml" | json peak_rss_bytes)
		printf '%-18s %3s | %9s %7.3f %5.3f | %9s %7.3f %7.3f %5.3f | %6s %6s %6s | %6d | %9s %11s\n' \
			"$g" "$k" "$mcut" "$mtime" "$(echo "$metis" | json imbalance)" \
			"$lcut" "$ltime" "$lcpu" "$(echo "$ml" | json imbalance)" \
			"$(ratio "$lcut" "$mcut")" "$(ratio "$lcpu" "$mtime")" "$(ratio "$ltime" "$mtime")" $((rss / 1048576)) \
			"$(echo "$rd" | json edge_cut)" "$(ratio "$(echo "$st" | json edge_cut)" "$(echo "$rd" | json edge_cut)")"
	done
done
