#!/usr/bin/env bash
# Multi-host tests of graft train on 4 "hosts" with their own addresses:
# network namespaces joined by veth pairs to a bridge that lives in a fifth
# namespace, so nothing touches the root namespace's interfaces and no
# packet can leave the machine (addresses 10.231.0.0/24, no uplink, no
# route out).
#
#   sudo scripts/netns-test.sh            # the CI subset (~2-3 minutes)
#   sudo FULL=1 scripts/netns-test.sh     # longer time-to-accuracy runs
#
# Runs:
#   tta   links shaped to 1 Gbit/s and 1 ms delay:
#         time to accuracy of full communication vs VARCO (truncate, linear
#         schedule) on Amazon Computers, 4 workers;
#   kill  SIGKILL a worker mid-run: the others must exit non-zero within 10 s
#         naming it; resume from rank 0's checkpoint must end with the
#         parameters of an undisturbed run, bit for bit;
#   loss  1% packet loss on every host: the run still completes, with the
#         parameters of an undisturbed run;
#   dp    data-parallel sampled training (SAGE, --sampler neighbor:10,5)
#         under 1% loss: the saved model equals the in-process --parts 4
#         run's, byte for byte;
#   dpkill  the kill test for data-parallel sampled training: the resumed
#         run (sampler state included) saves the undisturbed run's model.
# Needs root, iproute2 (ip, tc), /dev/net/tun where the kernel lacks netem
# (else nftables, and the links get no delay), and Go to build graft and the
# userspace switch.
# Env: GRAFT_DATA (Amazon Computers; without it tta uses Cora), OUT (results
# directory, default a temporary one), ONLY (space-separated runs to do),
# GRAFT_BIN (a graft binary to use instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $(id -u) == 0 ]] || { echo "netns-test: needs root (network namespaces)" >&2; exit 2; }
for tool in ip tc; do
	command -v "$tool" >/dev/null || { echo "netns-test: needs $tool (apt-get install iproute2)" >&2; exit 2; }
done

FULL=${FULL:-0}
ONLY=${ONLY:-tta kill loss dp dpkill}
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
trap 'echo "netns-test: interrupted" >&2; exit 1' INT TERM

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
	ip netns exec "$(ns 0)" ping -c 1 -W 2 "$(addr 3)" >/dev/null || { echo "netns-test: hosts cannot reach each other" >&2; exit 1; }
fi

# shape [loss%]: 1 Gbit/s each way on every host's link (host egress and the
# switch port's egress), 1 ms delay and the loss with netem where the kernel
# has it. Kernels without sch_netem (Firecracker's, for one) cannot delay
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
# wire_loss LOSS: sets the switch's loss (percent), starting the switch and
# giving every host one of its devices, as wire0, the first time. Later
# calls change the loss of the running switch: a new switch would have to
# wait for the kernel to remove the old one's devices, which can take
# minutes after heavy traffic.
wirecmds=0
wire_loss() {
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
		grep -q ready "$work/wire.out" || { echo "netns-test: the userspace switch did not start within 60 s: $(tail -n 3 "$OUT/wire.log")" >&2; exit 1; }
		for h in $(seq 0 $((hosts - 1))); do
			ip -n "$(ns sw)" link set "$tag-w$h" netns "$(ns "$h")"
			ip -n "$(ns "$h")" link set "$tag-w$h" name wire0
			ip -n "$(ns "$h")" addr add "$(waddr "$h")/24" dev wire0
			ip -n "$(ns "$h")" link set wire0 mtu 65000 up
		done
	fi
	wirecmds=$((wirecmds + 1))
	echo "loss $(awk -v l="$1" 'BEGIN { print l / 100 }')" >&7
	for _ in $(seq 100); do
		grep -q "^ok $wirecmds\$" "$work/wire.out" && return
		sleep 0.1
	done
	echo "netns-test: the userspace switch did not take loss $1%: $(tail -n 1 "$work/wire.out")" >&2
	exit 1
}
shaping="none"
rdv=$(addr 0) # where the jobs meet: the bridge, or the wire where it shapes
shape() {
	local loss=${1:-0}
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
		wire_loss "$loss"
		rdv=$(waddr 0)
		shaping="userspace switch lab/wire (no netem in this kernel): rate 1gbit, delay 1ms"
	elif [[ $netem == 0 ]]; then
		# Neither netem nor TUN: tbf limits the rate, nftables drops, and
		# nothing can delay.
		for h in $(seq 0 $((hosts - 1))); do
			ip netns exec "$(ns "$h")" tc qdisc replace dev eth0 root tbf rate 1gbit burst 256kb latency 20ms
			ip netns exec "$(ns sw)" tc qdisc replace dev "$tag-p$h" root tbf rate 1gbit burst 256kb latency 20ms
			ip netns exec "$(ns "$h")" nft delete table inet graftloss 2>/dev/null || true
			if [[ $loss != 0 ]]; then
				command -v nft >/dev/null || { echo "netns-test: needs nft for loss without netem or TUN (apt-get install nftables)" >&2; exit 2; }
				ip netns exec "$(ns "$h")" nft -f - <<-EOF
					table inet graftloss {
						chain in { type filter hook input priority 0; numgen random mod 100 < $loss drop; }
						chain out { type filter hook output priority 0; numgen random mod 100 < $loss drop; }
					}
				EOF
			fi
		done
		shaping="tbf rate 1gbit on every link (no netem and no TUN here: no delay)"
	else
		local extra=""
		[[ $loss != 0 ]] && extra="loss $loss%"
		for h in $(seq 0 $((hosts - 1))); do
			ip netns exec "$(ns "$h")" tc qdisc replace dev eth0 root netem rate 1gbit delay 1ms limit 10000 $extra
			ip netns exec "$(ns sw)" tc qdisc replace dev "$tag-p$h" root netem rate 1gbit delay 1ms limit 10000 $extra
		done
		shaping="netem rate 1gbit delay 1ms on every link"
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

if [[ -n ${GRAFT_DATA:-} && -e ${GRAFT_DATA}/gnn-benchmark/amazon_electronics_computers.npz ]]; then
	data=(--dataset amazon-computers --split random:20:30 --lcc --row-normalize=false --features sparse
		--model sage --hidden 64 --lr 0.01)
else
	echo "   (no GRAFT_DATA with Amazon Computers: time to accuracy on Cora)"
	data=(--dataset cora)
fi
ttaEpochs=60
[[ $FULL == 1 ]] && ttaEpochs=150

if [[ " $ONLY " == *" tta "* ]]; then
	echo "== tta: full communication vs VARCO, ${data[*]}, $ttaEpochs epochs"
	shape 0
	rm -f "$OUT/tta-wall.txt"
	for cfg in full varco; do
		case $cfg in
		full) flags=(--compress none) ;;
		varco) flags=(--compress truncate --schedule varco-paper) ;; # the authors' linear:128:1.5:5
		esac
		start=$(date +%s.%N)
		job "tta-$cfg" 600 "${data[@]}" --epochs "$ttaEpochs" --patience 0 --partition random "${flags[@]}" --json
		wait_job || fail "tta $cfg: exit $?; $(tail -n 2 "$OUT/tta-$cfg.rank0.log")"
		echo "$cfg $(since "$start")" >>"$OUT/tta-wall.txt"
	done
	# Time to accuracy: the first epoch whose validation accuracy reaches
	# 95% and 99% of the best full-communication value, in measured seconds
	# since training began (sum of rank 0's epoch times).
	python3 - "$OUT" "$shaping" <<'EOF' | tee "$OUT/tta.md"
import json, sys
out, shaping = sys.argv[1], sys.argv[2]
runs = {c: [json.loads(l) for l in open(f"{out}/tta-{c}.jsonl")] for c in ("full", "varco")}
wall = dict(l.split() for l in open(f"{out}/tta-wall.txt"))
best = max(m["val_acc"] for m in runs["full"])
print(f"links: {shaping}; 4 workers; target = fraction of full communication's best val acc {best:.4f}\n")
print("| run | epochs | wall s (all) | s/epoch | MB sent | best val | test at best | time to 95% | time to 99% |")
print("|---|---|---|---|---|---|---|---|---|")
for c, ms in runs.items():
    t, tt = 0.0, {}
    for m in ms:
        t += m["epoch_seconds"]
        for f in (0.95, 0.99):
            if f not in tt and m["val_acc"] >= f * best:
                tt[f] = (t, m["epoch"])
    b = max(ms, key=lambda m: (m["val_acc"], -m["val_loss"]))
    sent = sum(m["bytes_fwd"] + m["bytes_bwd"] + m["bytes_grad"] for m in ms) / 1e6
    fmt = lambda f: f"{tt[f][0]:.2f} s (epoch {tt[f][1]})" if f in tt else "not reached"
    print(f"| {c} | {len(ms)} | {float(wall[c]):.1f} | {t/len(ms):.3f} | {sent:.0f} | {b['val_acc']:.4f} | {b['test_acc']:.4f} | {fmt(0.95)} | {fmt(0.99)} |")
EOF
fi

# kill_resume NAME EPOCHS ARGS...: runs ARGS with checkpoints in one
# directory, SIGKILLs rank 2's worker once rank 0 has logged EPOCHS epochs,
# checks that the others exit non-zero within 10 s naming rank 2, resumes
# the job on every host and compares its saved model with an undisturbed
# in-process run of ARGS over 4 parts, bit for bit.
kill_resume() {
	local name=$1 upto=$2
	shift 2
	local ckpt=$work/ckpt-$name
	job "$name" 120 "$@" --checkpoint-dir "$ckpt"
	for _ in $(seq 600); do # at most 60 s
		[[ $({ wc -l <"$OUT/$name.jsonl"; } 2>/dev/null || echo 0) -ge $upto ]] && break
		sleep 0.1
	done
	local victim=${jobpids[2]} worker killed took r
	# timeout's child is the worker; kill the worker itself.
	worker=$(awk -v p="$victim" '$4 == p { print $1 }' /proc/[0-9]*/stat 2>/dev/null | head -n 1)
	worker=${worker:-$victim}
	kill -9 "$worker" 2>/dev/null || fail "$name: rank 2 had exited before the kill"
	killed=$(date +%s.%N)
	for r in 0 1 3; do
		wait "${jobpids[$r]}" && fail "$name: rank $r exited 0 after rank 2 died"
		took=$(since "$killed")
		echo "   rank $r exited after ${took} s: $(tail -n 1 "$OUT/$name.rank$r.log")"
		awk -v t="$took" 'BEGIN { exit !(t < 10) }' || fail "$name: rank $r took $took s"
		grep -q "lost rank 2 after epoch" "$OUT/$name.rank$r.log" || fail "$name: rank $r did not name rank 2"
	done
	wait "${jobpids[2]}" 2>/dev/null || true
	job "$name-resumed" 120 "$@" --resume "$ckpt" --save "$OUT/$name-resumed.safetensors"
	wait_job || fail "$name: resume failed: $(tail -n 2 "$OUT/$name-resumed.rank0.log")"
	grep -h "^resuming" "$OUT/$name-resumed.rank0.log" | sed 's/^/   /' || fail "$name: rank 0 did not say it resumed"
	"$graft" train "$@" --parts 4 --save "$OUT/$name-undisturbed.safetensors" >/dev/null 2>&1 || fail "$name: undisturbed run failed"
	if cmp -s "$OUT/$name-resumed.safetensors" "$OUT/$name-undisturbed.safetensors"; then
		echo "   resumed parameters equal the undisturbed run's, bit for bit"
	else
		fail "$name: resumed parameters differ from the undisturbed run's"
	fi
}

if [[ " $ONLY " == *" kill "* ]]; then
	echo "== kill: SIGKILL rank 2 mid-run, then resume"
	shape none
	kill_resume kill 20 --dataset cora --epochs 300 --patience 0 --compress truncate --schedule linear:32:1:5 --checkpoint-every 5
fi

if [[ " $ONLY " == *" loss "* ]]; then
	echo "== loss: 1% packet loss"
	shape 1
	common=(--dataset cora --epochs 60 --patience 0 --compress truncate --schedule linear:32:1:5)
	start=$(date +%s.%N)
	job loss 300 "${common[@]}" --save "$OUT/loss.safetensors"
	wait_job || fail "loss: exit $?: $(tail -n 2 "$OUT/loss.rank0.log")"
	echo "   completed in $(since "$start") s: $(grep -h "best val acc" "$OUT/loss.rank0.log")"
	"$graft" train "${common[@]}" --parts 4 --save "$OUT/loss-undisturbed.safetensors" >/dev/null 2>&1 || fail "loss: undisturbed run failed"
	cmp -s "$OUT/loss.safetensors" "$OUT/loss-undisturbed.safetensors" && echo "   parameters equal a loss-free run's, bit for bit" ||
		fail "loss: parameters differ from a loss-free run's"
	for h in $(seq 0 $((hosts - 1))); do
		ip netns exec "$(ns "$h")" nstat -az TcpRetransSegs 2>/dev/null | awk -v h="$h" '/TcpRetransSegs/ {print "   host " h ": " $2 " TCP segments retransmitted"}'
	done
fi

# Data-parallel sampled training: each host holds one part of the graph
# and samples its own seeds' neighbourhoods from the owners.
sampled=(--dataset cora --model sage --sampler neighbor:10,5 --batch-size 32 --patience 0)

if [[ " $ONLY " == *" dp "* ]]; then
	echo "== dp: data-parallel sampled training under 1% packet loss"
	shape 1
	start=$(date +%s.%N)
	job dp 300 "${sampled[@]}" --epochs 10 --save "$OUT/dp.safetensors"
	wait_job || fail "dp: exit $?: $(tail -n 2 "$OUT/dp.rank0.log")"
	echo "   completed in $(since "$start") s: $(grep -h "best val acc" "$OUT/dp.rank0.log")"
	"$graft" train "${sampled[@]}" --epochs 10 --parts 4 --save "$OUT/dp-inprocess.safetensors" >/dev/null 2>&1 || fail "dp: in-process run failed"
	cmp -s "$OUT/dp.safetensors" "$OUT/dp-inprocess.safetensors" && echo "   parameters equal the in-process run's over 4 parts, bit for bit" ||
		fail "dp: parameters differ from the in-process run's over 4 parts"
fi

if [[ " $ONLY " == *" dpkill "* ]]; then
	echo "== dpkill: data-parallel sampled training, SIGKILL rank 2 mid-run, then resume"
	shape none
	kill_resume dpkill 10 "${sampled[@]}" --epochs 100 --checkpoint-every 3
fi

wire_down # its drop counts go to $OUT/wire.log
echo "results in $OUT"
if [[ $failed == 0 ]]; then echo "== netns-test: all passed"; else echo "== netns-test: FAILED"; exit 1; fi
