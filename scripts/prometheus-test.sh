#!/usr/bin/env bash
# A real Prometheus server (Debian's prometheus package) scrapes every
# worker of a 3-process graft launch job through the file_sd target file
# that `graft launch --metrics-sd` writes, with deploy/prometheus's sample
# configuration (scrape interval lowered to 1 s):
#
#   scripts/prometheus-test.sh
#
# Checks:
#   - the alerting rules pass `promtool check rules` and their unit tests
#     (deploy/prometheus/graft-rules.test.yml), and the server loads them;
#   - all three workers are up, labelled rank 0, 1, 2 and one graft_job;
#   - graft_epoch and the halo bytes (graft_bytes_total, fwd and bwd) that
#     the HTTP API returns for each worker, read at one instant, are the
#     run's values at that epoch in its --metrics JSON lines;
#   - after the job the target file lists nothing and Prometheus drops the
#     targets.
# Installs prometheus, curl and jq with apt-get when they are missing (root
# and the network needed; it says so and exits 2 otherwise). Cleans up its
# processes and temporary directory on exit.
# Env: GRAFT_BIN (a graft binary to use instead of building one), KEEP=1
# (keep the temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

say() { echo "prometheus-test: $*" >&2; }

missing=()
for tool in prometheus:prometheus promtool:prometheus curl:curl jq:jq; do
	pkg=${tool#*:}
	command -v "${tool%%:*}" >/dev/null || [[ " ${missing[*]} " == *" $pkg "* ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
	if ! command -v apt-get >/dev/null || [[ $(id -u) != 0 ]]; then
		say "needs Debian's ${missing[*]} (as root: apt-get install -y ${missing[*]}); no apt-get here, or not root"
		exit 2
	fi
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
		say "could not install ${missing[*]} with apt-get (no network, or no such package here?)"
		exit 2
	fi
fi

work=$(mktemp -d /tmp/graft-prometheus.XXXXXX)
pids=()
cleanup() {
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	if [[ ${KEEP:-0} == 1 ]]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'say interrupted; exit 1' INT TERM

say "promtool: the rules and their unit tests"
promtool check rules deploy/prometheus/graft-rules.yml
(cd deploy/prometheus && promtool test rules graft-rules.test.yml)

if [[ -n ${GRAFT_BIN:-} ]]; then
	graft=$GRAFT_BIN
else
	graft=$work/graft
	go build -o "$graft" ./cmd/graft
fi

# A free loopback port for the server.
port=19090
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
api=http://127.0.0.1:$port/api/v1

sed 's/scrape_interval: 15s/scrape_interval: 1s/; s/evaluation_interval: 15s/evaluation_interval: 1s/' \
	deploy/prometheus/prometheus.yml >"$work/prometheus.yml"
cp deploy/prometheus/graft-rules.yml "$work/"
echo '[]' >"$work/graft-sd.json"
promtool check config "$work/prometheus.yml" >/dev/null
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
	--web.listen-address="127.0.0.1:$port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && break
	sleep 0.1
done
curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null || { cat "$work/prometheus.log" >&2; say "prometheus did not start"; exit 1; }
rules=$(curl -sf "$api/rules" | jq -r '[.data.groups[].rules[].name] | sort | join(",")')
[[ $rules == GraftWorkerDown,GraftWorkerStalled ]] || { say "the server loaded rules '$rules'"; exit 1; }

say "graft launch --nproc 3 --metrics-sd $work/graft-sd.json (prometheus on 127.0.0.1:$port)"
# Trains until stopped; the checks below need it running.
(cd "$work" && exec "$graft" launch --nproc 3 --metrics-sd graft-sd.json -- train --epochs 1000000 --patience 0 \
	--start-timeout 60s --metrics run.jsonl) >"$work/launch.out" 2>"$work/launch.err" &
launcher=$!
pids+=($launcher)

# query EXPR TIME: the instant vector as "rank value" lines, sorted.
query() {
	curl -sf "$api/query" --data-urlencode "query=$1" --data-urlencode "time=$2" |
		jq -r '.data.result[] | "\(.metric.rank) \(.value[1])"' | sort
}

up=""
for _ in $(seq 600); do
	up=$(query 'up{job="graft"} == 1 and graft_epoch > 0' "$(date +%s.%N)" | wc -l)
	[[ $up == 3 ]] && break
	kill -0 "$launcher" 2>/dev/null || { cat "$work/launch.err" >&2; say "the job ended early"; exit 1; }
	sleep 0.1
done
[[ $up == 3 ]] || { say "3 workers never all up and past epoch 0 (saw $up)"; curl -s "$api/targets" >&2; exit 1; }
jobs=$(curl -sf "$api/query" --data-urlencode 'query=count by (graft_job) (up{job="graft"})' | jq -r '.data.result | length')
[[ $jobs == 1 ]] || { say "the workers carry $jobs graft_job labels, want 1"; exit 1; }
sleep 2 # a few epochs scraped

# One instant for both queries: the samples of one scrape.
at=$(date +%s.%N)
query graft_epoch "$at" >"$work/epoch.txt"
query 'sum by (rank) (graft_bytes_total{direction="fwd"})' "$at" >"$work/fwd.txt"
query 'sum by (rank) (graft_bytes_total{direction="bwd"})' "$at" >"$work/bwd.txt"
kill -TERM "$launcher"
wait "$launcher" || true # stopped by SIGTERM: the workers report the interruption
sleep 0.5

fail=0
[[ $(cut -d' ' -f1 "$work/epoch.txt" | tr '\n' ' ') == "0 1 2 " ]] || { say "graft_epoch by rank: $(cat "$work/epoch.txt")"; fail=1; }
while read -r rank epoch; do
	want_fwd=$(jq -s --argjson e "$epoch" '[.[] | select(.epoch <= $e) | .bytes_fwd] | add' "$work/run.jsonl")
	want_bwd=$(jq -s --argjson e "$epoch" '[.[] | select(.epoch <= $e) | .bytes_bwd] | add' "$work/run.jsonl")
	got_fwd=$(awk -v r="$rank" '$1 == r {print $2}' "$work/fwd.txt")
	got_bwd=$(awk -v r="$rank" '$1 == r {print $2}' "$work/bwd.txt")
	# Prometheus prints floats; byte counts below 2^53 print as integers.
	if [[ $got_fwd != "$want_fwd" || $got_bwd != "$want_bwd" || $want_fwd == null || $want_fwd == 0 ]]; then
		say "rank $rank at epoch $epoch: halo bytes fwd $got_fwd bwd $got_bwd from Prometheus, $want_fwd and $want_bwd in run.jsonl"
		fail=1
	else
		say "rank $rank: graft_epoch $epoch, halo bytes fwd $got_fwd bwd $got_bwd: as in run.jsonl"
	fi
done <"$work/epoch.txt"
epochs=$(wc -l <"$work/run.jsonl")
[[ $(cut -d' ' -f2 "$work/epoch.txt" | sort -u | wc -l) == 1 ]] || say "note: the workers were scraped at different epochs"

[[ $(jq -c . "$work/graft-sd.json") == "[]" ]] || { say "the target file still lists targets after the job"; fail=1; }
for _ in $(seq 50); do
	active=$(curl -sf "$api/targets" | jq '.data.activeTargets | length')
	[[ $active == 0 ]] && break
	sleep 0.1
done
[[ $active == 0 ]] || { say "prometheus still has $active targets after the job"; fail=1; }

if [[ $fail != 0 ]]; then
	tail -5 "$work/launch.err" >&2
	exit 1
fi
say "ok: 3 workers scraped through file_sd; the job ran $epochs epochs"
