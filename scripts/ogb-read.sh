#!/usr/bin/env bash
# Reading OGB's raw layout against reading the same arrays from an .npz:
# for each dataset, writes both (lab/ogblayout), then times
# `graft data info` on each, printing wall and CPU seconds and peak RSS.
#
#   GRAFT_DATA=/path/to/data scripts/ogb-read.sh [DATASET...]
#
# Defaults: coauthor-cs (18,333 nodes, 6,805 bag-of-words counts written as
# dense text, as OGB writes node-feat.csv) and sbm:22000:20:128:10 (22,000
# nodes, 128 dense floats). GRAFT names a prebuilt binary; OUT the
# directory for the files (default: a temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."
datasets=("$@")
[ ${#datasets[@]} -gt 0 ] || datasets=(coauthor-cs sbm:22000:20:128:10)
graft=${GRAFT:-}
if [ -z "$graft" ]; then
  graft=$(mktemp -d)/graft
  go build -o "$graft" ./cmd/graft
fi
out=${OUT:-$(mktemp -d)}
for d in "${datasets[@]}"; do
  dir="$out/$(echo "$d" | tr ':' '_')"
  go run ./lab/ogblayout "$d" "$dir"
  for p in "$dir/ogb" "$dir/same.npz"; do
    /usr/bin/time -f "$d $(basename "$p"): %e s wall, %U s user, %S s sys, %M KiB peak RSS" \
      "$graft" data info "$p" --json >/dev/null
  done
done
