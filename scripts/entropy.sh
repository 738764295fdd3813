#!/usr/bin/env bash
# Measures the entropy stage (compress.Entropy, --compress entropy:CODEC)
# against the codec it wraps: halo bytes (bytes_fwd + bytes_bwd) and codec
# time (codec_seconds against the epochs' time), in runs that alternate
# plain and entropy-coded in each round (docs/compression.md, "Entropy coding").
#
#   scripts/entropy.sh      Amazon Computers (graft train --model sage
#                           --parts 4, the default recipe) and the synthetic
#                           graph (lab/varco, SAGE-64, 4 random parts)
#
# ENTROPY_ROUNDS rounds (default 2), ENTROPY_SBM_EPOCHS iterations on the
# synthetic graph (default 20). GRAFT_DATA must name the data directory;
# the runs' JSON goes to ENTROPY_OUT (default /tmp/graft-entropy) and the
# table to standard output.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${ENTROPY_OUT:-/tmp/graft-entropy}
rounds=${ENTROPY_ROUNDS:-2}
sbm_epochs=${ENTROPY_SBM_EPOCHS:-20}
mkdir -p "$out"
go build -o "$out/graft" ./cmd/graft
go build -o "$out/varco" ./lab/varco
codecs=("delta:2:0:0 --compress-last" "quant4" "quant8")
for round in $(seq 1 "$rounds"); do
	for c in "${codecs[@]}"; do
		set -- $c
		for stage in "" "entropy:"; do
			f="$out/amazon-$stage$1-$round.json"
			[[ -s $f ]] || "$out/graft" train --dataset amazon-computers --model sage --parts 4 --json --compress "$stage$1" "${@:2}" >"$f"
		done
	done
	for c in delta:2:0:0+last quant4 quant8; do
		for stage in "" "entropy:"; do
			"$out/varco" run -out "$out/sbm-$round.jsonl" -datasets sbm-arxiv -parts 4 -partitions random -seeds 1 \
				-configs "$stage$c" -epochs "$sbm_epochs" -hidden 64 >/dev/null
		done
	done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
def add(ds, codec, halo, codec_s, epoch_s, epochs):
    rows.setdefault((ds, codec), []).append((halo, codec_s / (epoch_s * epochs), codec_s / epochs))
for r in range(1, rounds + 1):
    for c in ["delta:2:0:0", "quant4", "quant8"]:
        for stage in ["", "entropy:"]:
            d = json.load(open(f"{out}/amazon-{stage}{c}-{r}.json"))
            add("Amazon Computers", stage + c, d["bytes_fwd"] + d["bytes_bwd"], d["codec_seconds"], d["epoch_ms_median"] / 1000, d["epochs"])
    for line in open(f"{out}/sbm-{r}.jsonl"):
        d = json.loads(line)
        add("synthetic", d["config"].replace("+last", ""), d["halo_bytes"], d["codec_seconds"], d["epoch_seconds_median"], d["epochs"])
print("| dataset | codec | halo bytes | entropy-coded | ratio | codec share of an epoch | codec ms per epoch |")
print("|---|---|---:|---:|---:|---:|---:|")
for (ds, codec), v in rows.items():
    if codec.startswith("entropy:"):
        continue
    e = rows[(ds, "entropy:" + codec)]
    b, eb = statistics.median(x[0] for x in v), statistics.median(x[0] for x in e)
    share = lambda v: statistics.median(x[1] for x in v) * 100
    ms = lambda v: statistics.median(x[2] for x in v) * 1000
    print(f"| {ds} | {codec} | {b/1e6:.1f} MB | {eb/1e6:.1f} MB | {eb/b:.3f}× | {share(v):.1f}% → {share(e):.1f}% | {ms(v):.1f} → {ms(e):.1f} |")
PY
