#!/usr/bin/env bash
# out-of-core.sh: mini-batch training with the node features on disk.
#
# Writes SPEC to $DIR/SPEC (its colons dashes) with `graft data generate` (unless it is there
# already), then trains GraphSAGE (LAYERS layers of width 256) with the
# neighbour sampler for EPOCHS epochs, once per entry of RUNS:
#
#   read      the features read into memory (--features-mmap=false)
#   mmap      the features mapped (--features-mmap), the page cache as the
#             previous step left it
#   cold      mapped, the file's pages dropped from the page cache once the
#             features are loaded (posix_fadvise DONTNEED on the file
#             alone, when graft names the split): loading reads the file
#             once to check its values, which leaves in the page cache
#             what fits
#   -willneed, -noadvice  suffixes (mmap-willneed, cold-noadvice, ...): each
#             batch's pages advised with MADV_WILLNEED always
#             (GRAFT_FEATURES_WILLNEED=on) or never (off); without a
#             suffix, graft's default (auto: after storage reads)
#
# Each run is timed by /usr/bin/time -v, and the process's anonymous and
# file-backed resident memory (RssAnon, RssFile) is read every second for
# their peaks. Printed per run: the training epoch (the last one's
# step_seconds) and how long sampling, gathering the features and the
# model's compute took in it, evaluation's time, peak RSS (VmHWM) with the
# peaks of its two parts, and for a mapped file the bytes the gathers
# touched, the bytes read from storage, the page-cache hit rate estimate,
# major faults and the file's residency before and after.
#
# Usage: DIR=/path/with/room scripts/out-of-core.sh [extra graft train flags...]
# Environment: DIR (required: the data and results go there; it needs the
#   features' bytes, N×F×4 for fp32, plus about 26 bytes per stored edge),
#   SPEC (default sbm:24000000:26:128:47), DTYPE (fp32 or bf16; bf16 runs
#   add --precision bf16), LAYERS (3), SAMPLER (neighbor:15,10,5), BATCH
#   (1024), EPOCHS (1), RUNS (default "mmap"), EVAL_NODES (default 50000:
#   evaluation reads the public split's training nodes and this many of
#   its validation and of its test nodes, drawn at random, through a
#   --split file; 0 keeps the whole split, whose test set is 80% of the
#   nodes), GRAFT (a graft binary instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DIR:?set DIR to a directory with room for the dataset}"
spec=${SPEC:-sbm:24000000:26:128:47}
dtype=${DTYPE:-fp32}
layers=${LAYERS:-3}
sampler=${SAMPLER:-neighbor:15,10,5}
batch=${BATCH:-1024}
epochs=${EPOCHS:-1}
runs=${RUNS:-mmap}
mkdir -p "$DIR"
bin=${GRAFT:-$DIR/graft}
[[ -n ${GRAFT:-} ]] || go build -o "$bin" ./cmd/graft
data=$DIR/${spec//:/-}
df -h "$DIR" | tail -1

if [[ ! -f $data/features.npy ]]; then
	/usr/bin/time -v "$bin" data generate "$spec" --out "$data" --features-dtype "$dtype" --json \
		>"$DIR/generate.json" 2>"$DIR/generate.time"
	jq -c '{spec, nodes, stored_directed_edges, features, feature_dtype, feature_bytes, seconds, peak_rss_bytes}' "$DIR/generate.json"
fi

# peaks PID OUT: every second, the largest RssAnon and RssFile of PID (kB).
peaks() {
	local pid=$1 out=$2 anon=0 file=0 a f
	while kill -0 "$pid" 2>/dev/null; do
		if read -r a f < <(awk '/^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {print a+0, f+0}' "/proc/$pid/status" 2>/dev/null); then
			((a > anon)) && anon=$a
			((f > file)) && file=$f
			echo "$anon $file" >"$out"
		fi
		sleep 1
	done
}

precision=()
[[ $dtype == bf16 ]] && precision=(--precision bf16)
# The public split's training nodes, and EVAL_NODES of its validation and
# of its test nodes: --eval-sampler evaluates every node of the split.
split=()
if [[ ${EVAL_NODES:-50000} != 0 ]]; then
	python3 - "$data" "${EVAL_NODES:-50000}" >"$DIR/split.csv" <<'PY'
import array, random, struct, sys

def ids(path):
    b = open(path, "rb").read()
    start = 10 + struct.unpack("<H", b[8:10])[0]
    assert b"'<i4'" in b[:start], path + ": want int32 node ids"
    a = array.array("i")
    a.frombytes(b[start:])
    return a

data, k = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
out = ["id,set"] + ["%d,train" % v for v in ids(data + "/train.npy")]
for name in ("val", "test"):
    nodes = ids("%s/%s.npy" % (data, name))
    out += ["%d,%s" % (v, name) for v in sorted(rng.sample(list(nodes), min(k, len(nodes))))]
print("\n".join(out))
PY
	split=(--split "file:$DIR/split.csv")
fi
for run in $runs; do
	mode=--features-mmap
	[[ $run == read* ]] && mode=--features-mmap=false
	advice=auto
	[[ $run == *-willneed ]] && advice=on
	[[ $run == *-noadvice ]] && advice=off
	out=$DIR/$run
	GRAFT_FEATURES_WILLNEED=$advice /usr/bin/time -v "$bin" train --dataset "$data" "$mode" "${precision[@]}" "${split[@]}" \
		--model sage --layers "$layers" --hidden 256 --sampler "$sampler" --batch-size "$batch" --eval-sampler "$sampler" \
		--epochs "$epochs" --patience 0 --metrics "$out.jsonl" --json "$@" >"$out.json" 2>"$out.time" &
	timepid=$!
	echo "0 0" >"$out.peaks"
	pid=
	while [[ -z $pid ]] && kill -0 "$timepid" 2>/dev/null; do
		pid=$(pgrep -P "$timepid" | head -1 || true)
	done
	[[ -n $pid ]] && peaks "$pid" "$out.peaks" &
	if [[ $run == cold* ]]; then
		while kill -0 "$timepid" 2>/dev/null && ! grep -Eq '^graft train: (split|.* loaded in)' "$out.time"; do sleep 0.2; done
		python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$data/features.npy"
	fi
	wait "$timepid"
	wait
	read -r anon file <"$out.peaks" || { anon=0; file=0; }
	echo "== $run: $(grep -E 'Elapsed|Maximum resident' "$out.time" | sed 's/^\s*//' | tr '\n' ' ')"
	jq -r --arg anon "$anon" --arg file "$file" '
	  def gib: . / 1073741824 * 100 | round / 100;
	  "epoch \(.step_seconds * 10 | round / 10) s: sample \(.sample_seconds * 10 | round / 10) s, gather \(.gather_seconds * 10 | round / 10) s, compute \(.compute_seconds * 10 | round / 10) s, model waited \(.wait_seconds * 10 | round / 10) s; \(.batches) batches, \(.input_nodes | round) input rows a batch; evaluation \(.eval_seconds * 10 | round / 10) s; RSS after the epoch \(.rss_bytes | gib) GiB; peak RssAnon \($anon | tonumber * 1024 | gib) GiB, peak RssFile \($file | tonumber * 1024 | gib) GiB"' \
		<(tail -1 "$out.jsonl")
	jq -c '{test_acc, peak_rss_bytes, features_mapped}' "$out.json"
done
