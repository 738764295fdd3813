# Shared set-up of the multi-host tests (scripts/netns-test.sh,
# scripts/tta.sh), sourced, not run: 4 "hosts" from network namespaces
# joined by veth pairs to a bridge in a fifth namespace (addresses
# 10.231.0.0/24, no uplink, no route out), link shaping, and the helpers
# that start a job on every host and tabulate time to accuracy. The caller
# sets `me` (its name for messages) and runs from the repository's root
# with set -euo pipefail; the set-up builds graft (or uses GRAFT_BIN) and
# removes its namespaces and processes on exit. Env: OUT (results
# directory, default a temporary one), GRAFT_BIN.
me=${me:-netns}

[[ $(id -u) == 0 ]] || { echo "$me: needs root (network namespaces)" >&2; exit 2; }
for tool in ip tc; do
	command -v "$tool" >/dev/null || { echo "$me: needs $tool (apt-get install iproute2)" >&2; exit 2; }
done

tag=g$$ # namespace and interface prefix, unique per run
ns() { echo "$tag-$1"; }
hosts=4
addr() { echo "10.231.0.$((10 + $1))"; }
port=29500
work=$(mktemp -d /tmp/graft-netns.XXXXXX)
OUT=${OUT:-$work/results}
mkdir -p "$OUT"
pids=()

cleanup() {
	set +e
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	for n in $(ip netns list | awk '{print $1}' | grep "^$tag-"); do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$n"
	done
	rm -rf "$work/bin" "$work/ckpt"* "$work/wire."*
	rmdir "$work" 2>/dev/null || true
}
trap cleanup EXIT
trap 'echo "$me: interrupted" >&2; exit 1' INT TERM

if [[ -n ${GRAFT_BIN:-} ]]; then
	graft=$GRAFT_BIN
else
	echo "== build (static, CGO_ENABLED=0)"
	CGO_ENABLED=0 go build -o "$work/bin/graft" ./cmd/graft
	graft=$work/bin/graft
fi

echo "== 4 hosts: namespaces $(ns 0)..$(ns 3) on a bridge in $(ns sw)"
ip netns add "$(ns sw)"
ip -n "$(ns sw)" link add br0 type bridge
ip -n "$(ns sw)" link set br0 up
ip -n "$(ns sw)" link set lo up
for h in $(seq 0 $((hosts - 1))); do
	ip netns add "$(ns "$h")"
	ip link add "$tag-v$h" type veth peer name "$tag-p$h"
	ip link set "$tag-v$h" netns "$(ns "$h")"
	ip link set "$tag-p$h" netns "$(ns sw)"
	ip -n "$(ns "$h")" link set "$tag-v$h" name eth0
	ip -n "$(ns "$h")" addr add "$(addr "$h")/24" dev eth0
	ip -n "$(ns "$h")" link set eth0 up
	ip -n "$(ns "$h")" link set lo up
	ip -n "$(ns sw)" link set "$tag-p$h" master br0
	ip -n "$(ns sw)" link set "$tag-p$h" up
done
if command -v ping >/dev/null; then
	ip netns exec "$(ns 0)" ping -c 1 -W 2 "$(addr 3)" >/dev/null || { echo "$me: hosts cannot reach each other" >&2; exit 1; }
fi

# shape [LOSS [RATE]]: RATE (tc's notation, default 1gbit) each way on every
# host's link (host egress and the switch port's egress), 1 ms delay and
# LOSS percent of packets lost, with netem where the kernel has it. Kernels without sch_netem (Firecracker's, for one) cannot delay
# packets at all, so there the shaped runs go over a second network: TUN
# devices joined by lab/wire, a userspace switch that applies the
# same rate, delay and loss (addresses 10.232.0.0/24, MTU 65000 like the
# 64 KiB GSO packets netem sees on a veth).
netem=0
if ip netns exec "$(ns 0)" tc qdisc add dev eth0 root netem delay 1ms 2>/dev/null; then
	netem=1
	ip netns exec "$(ns 0)" tc qdisc del dev eth0 root
elif [[ -c /dev/net/tun ]]; then
	mkdir -p "$work/bin"
	go build -o "$work/bin/wire" ./lab/wire
fi
waddr() { echo "10.232.0.$((10 + $1))"; }
wirepid=""
wire_down() {
	if [[ -n $wirepid ]]; then
		exec 7>&-
		kill "$wirepid" 2>/dev/null
		wait "$wirepid" 2>/dev/null || true
		wirepid=""
	fi
}
# wire_set COMMAND: sends "loss F" or "rate R" to the switch, starting it
# and giving every host one of its devices, as wire0, the first time. Later
# calls change the running switch: a new switch would have to wait for the
# kernel to remove the old one's devices, which can take minutes after
# heavy traffic.
wirecmds=0
wire_set() {
	if [[ -z $wirepid ]]; then
		mkfifo "$work/wire.ctl"
		ip netns exec "$(ns sw)" "$work/bin/wire" -hosts "$hosts" -name "$tag-w" -first "$(waddr 0)" \
			-rate 1e9 -delay 1ms <"$work/wire.ctl" >"$work/wire.out" 2>>"$OUT/wire.log" &
		wirepid=$!
		pids+=($!)
		exec 7>"$work/wire.ctl"
		for _ in $(seq 600); do
			grep -q ready "$work/wire.out" 2>/dev/null && break
			kill -0 "$wirepid" 2>/dev/null || break
			sleep 0.1
		done
		grep -q ready "$work/wire.out" || { echo "$me: the userspace switch did not start within 60 s: $(tail -n 3 "$OUT/wire.log")" >&2; exit 1; }
		for h in $(seq 0 $((hosts - 1))); do
			ip -n "$(ns sw)" link set "$tag-w$h" netns "$(ns "$h")"
			ip -n "$(ns "$h")" link set "$tag-w$h" name wire0
			ip -n "$(ns "$h")" addr add "$(waddr "$h")/24" dev wire0
			ip -n "$(ns "$h")" link set wire0 mtu 65000 up
		done
	fi
	wirecmds=$((wirecmds + 1))
	echo "$1" >&7
	for _ in $(seq 100); do
		grep -q "^ok $wirecmds\$" "$work/wire.out" && return
		sleep 0.1
	done
	echo "$me: the userspace switch did not take \"$1\": $(tail -n 1 "$work/wire.out")" >&2
	exit 1
}
# bits RATE: tc's rate (e.g. 1gbit, 100mbit, 500kbit) in bits per second.
bits() {
	awk -v r="$1" 'BEGIN {
		n = r + 0; u = tolower(substr(r, length(n "") + 1))
		m = u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : u == "kbit" ? 1e3 : u == "bit" ? 1 : 0
		if (n <= 0 || m == 0) exit 1
		printf "%.0f", n * m
	}' || { echo "$me: link rate \"$1\": want N followed by gbit, mbit, kbit or bit" >&2; exit 2; }
}
shaping="none"
rdv=$(addr 0) # where the jobs meet: the bridge, or the wire where it shapes
shape() {
	local loss=${1:-0} rate=${2:-1gbit}
	if [[ $loss == none ]]; then # the plain bridge; the switch, if any, idles
		rdv=$(addr 0)
		for h in $(seq 0 $((hosts - 1))); do
			ip netns exec "$(ns "$h")" tc qdisc del dev eth0 root 2>/dev/null || true
			ip netns exec "$(ns sw)" tc qdisc del dev "$tag-p$h" root 2>/dev/null || true
			ip netns exec "$(ns "$h")" nft delete table inet graftloss 2>/dev/null || true
		done
		shaping="none"
		echo "   shaping: none (the bridge)"
		return
	fi
	if [[ $netem == 0 && -c /dev/net/tun ]]; then
		# The switch's packets are up to 64 KiB, so a fixed 20 ms of queue
		# holds under 4 of them at 100 Mbit/s and TCP lost a quarter of its
		# packets there; the queue holds 2.5 MB at every rate (20 ms at
		# 1 Gbit/s, 38 packets), more time on slower links.
		wire_set "rate $(bits "$rate")"
		wire_set "queue $(awk -v b="$(bits "$rate")" 'BEGIN { q = 2e10 / b; printf "%gms", (q > 20 ? q : 20) }')"
		wire_set "loss $(awk -v l="$loss" 'BEGIN { print l / 100 }')"
		rdv=$(waddr 0)
		shaping="userspace switch lab/wire (no netem in this kernel): rate $rate, delay 1ms"
	elif [[ $netem == 0 ]]; then
		# Neither netem nor TUN: tbf limits the rate, nftables drops, and
		# nothing can delay.
		for h in $(seq 0 $((hosts - 1))); do
			ip netns exec "$(ns "$h")" tc qdisc replace dev eth0 root tbf rate $rate burst 256kb latency 20ms
			ip netns exec "$(ns sw)" tc qdisc replace dev "$tag-p$h" root tbf rate $rate burst 256kb latency 20ms
			ip netns exec "$(ns "$h")" nft delete table inet graftloss 2>/dev/null || true
			if [[ $loss != 0 ]]; then
				command -v nft >/dev/null || { echo "$me: needs nft for loss without netem or TUN (apt-get install nftables)" >&2; exit 2; }
				ip netns exec "$(ns "$h")" nft -f - <<-EOF
					table inet graftloss {
						chain in { type filter hook input priority 0; numgen random mod 100 < $loss drop; }
						chain out { type filter hook output priority 0; numgen random mod 100 < $loss drop; }
					}
				EOF
			fi
		done
		shaping="tbf rate $rate on every link (no netem and no TUN here: no delay)"
	else
		local extra=""
		[[ $loss != 0 ]] && extra="loss $loss%"
		for h in $(seq 0 $((hosts - 1))); do
			ip netns exec "$(ns "$h")" tc qdisc replace dev eth0 root netem rate $rate delay 1ms limit 10000 $extra
			ip netns exec "$(ns sw)" tc qdisc replace dev "$tag-p$h" root netem rate $rate delay 1ms limit 10000 $extra
		done
		shaping="netem rate $rate delay 1ms on every link"
	fi
	[[ $loss != 0 ]] && shaping="$shaping, loss $loss%"
	echo "   shaping: $shaping"
}

export GRAFT_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
# The namespaces share this machine's kernel and /dev/shm, so graft would
# move the workers' data through shared memory, past the shaped links; the
# runs are about TCP between hosts, so they ask for TCP.
export GRAFT_TRANSPORT=tcp

# job NAME TIMEOUT ARGS...: one worker per host in the background; sets
# jobpids; output in $OUT/NAME.rankK.log, rank 0's metrics in NAME.jsonl.
job() {
	local name=$1 limit=$2
	shift 2
	jobpids=()
	for h in $(seq 0 $((hosts - 1))); do
		ip netns exec "$(ns "$h")" timeout -s KILL "$limit" "$graft" train "$@" \
			--rank "$h" --world "$hosts" --rendezvous "$rdv:$port" \
			--start-timeout 30s --peer-timeout 5s \
			--metrics "$OUT/$name.jsonl" >"$OUT/$name.rank$h.log" 2>&1 &
		jobpids+=($!)
		pids+=($!)
	done
}

# wait_job: wait for every worker; status of the first that failed.
wait_job() {
	local st=0
	for p in "${jobpids[@]}"; do
		wait "$p" || { [[ $st == 0 ]] && st=$?; } || true
	done
	return "$st"
}

# since T: seconds elapsed since date +%s.%N said T.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

# tta_table NAME LINKS CLOCK CONFIG...: the time-to-accuracy table of the
# runs NAME-CONFIG (rank 0's metrics in $OUT/NAME-CONFIG.jsonl, wall times
# in $OUT/NAME-wall.txt as "CONFIG SECONDS" lines, if any), in Markdown on
# stdout. The first CONFIG is the reference: the targets are 95% and 99% of
# its best validation accuracy, reached at the first epoch whose validation
# accuracy is at least that, in seconds since training began (the sum of
# the epochs' CLOCK field: epoch_seconds, measured, or emulated_seconds
# under --link); the speed-up is the reference's time to 99% over the run's.
# "eval s/epoch" is the measured time of the evaluation passes (the epoch's
# time minus its training step's), and "eval MB" what their halo exchanges
# sent (compressed only with --eval-compress), which "MB sent", the
# training's, leaves out. Peak RSS is rank 0's (or the one process's), from
# the --json summary that ends $OUT/NAME-CONFIG.rank0.log or
# $OUT/NAME-CONFIG.log, if there is one; with --eval-compress, "best val"
# and "test at best" are that summary's, the kept model evaluated with
# whole rows.
tta_table() {
	python3 - "$OUT" "$@" <<'EOF'
import json, os, sys
out, name, links, clock, cfgs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
runs = {c: [json.loads(l) for l in open(f"{out}/{name}-{c}.jsonl")] for c in cfgs}
wf = f"{out}/{name}-wall.txt"
wall = dict(l.split() for l in open(wf)) if os.path.exists(wf) else {}
ref = cfgs[0]
best = max(m["val_acc"] for m in runs[ref])
print(f"links: {links}; 4 workers; clock: {clock}; targets: fractions of {ref}'s best val acc {best:.4f}\n")
print(f"| run | epochs | wall s | s/epoch | eval s/epoch | MB sent | eval MB | best val | test at best | time to 95% | time to 99% | speed-up at 99% vs {ref} | peak RSS MB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
def summary(c):
    for log in (f"{out}/{name}-{c}.rank0.log", f"{out}/{name}-{c}.log"):
        try:
            return json.loads(open(log).read().splitlines()[-1])
        except (OSError, IndexError, ValueError):
            pass
    return {}
def rss(c):
    s = summary(c)
    return f"{s['peak_rss_bytes'] / 1e6:.0f}" if "peak_rss_bytes" in s else "–"
tt = {}
for c, ms in runs.items():
    t, tt[c] = 0.0, {}
    for m in ms:
        t += m[clock]
        for f in (0.95, 0.99):
            if f not in tt[c] and m["val_acc"] >= f * best:
                tt[c][f] = (t, m["epoch"])
    tt[c]["total"] = t
for c, ms in runs.items():
    b = max(ms, key=lambda m: (m["val_acc"], -m["val_loss"]))
    sent = sum(m["bytes_fwd"] + m["bytes_bwd"] + m["bytes_grad"] for m in ms) / 1e6
    evsent = sum(m.get("bytes_eval", 0) for m in ms) / 1e6
    s = summary(c)
    exact = s.get("eval_compress", "none") != "none" and "test_acc" in s
    val, test = (s["best_val_acc"], s["test_acc"]) if exact else (b["val_acc"], b["test_acc"])
    ev = sum(m["epoch_seconds"] - m["step_seconds"] for m in ms) / len(ms)
    fmt = lambda f: f"{tt[c][f][0]:.2f} s (epoch {tt[c][f][1]})" if f in tt[c] else "not reached"
    w = f"{float(wall[c]):.1f}" if c in wall else "–"
    up = f"{tt[ref][0.99][0] / tt[c][0.99][0]:.2f}×" if 0.99 in tt[c] and 0.99 in tt[ref] else "–"
    print(f"| {c} | {len(ms)} | {w} | {tt[c]['total'] / len(ms):.3f} | {ev:.3f} | {sent:.0f} | {evsent:.0f} | {val:.4f} | {test:.4f} | {fmt(0.95)} | {fmt(0.99)} | {up} | {rss(c)} |")
EOF
}
