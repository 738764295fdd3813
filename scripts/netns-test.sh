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
# The set-up (namespaces, shaping, jobs) is scripts/netns-lib.sh's, shared
# with scripts/tta.sh, the time-to-accuracy runs at several link rates.
# Env: GRAFT_DATA (Amazon Computers; without it tta uses Cora), OUT (results
# directory, default a temporary one), ONLY (space-separated runs to do),
# GRAFT_BIN (a graft binary to use instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."

me=netns-test
FULL=${FULL:-0}
ONLY=${ONLY:-tta kill loss dp dpkill}
source scripts/netns-lib.sh

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
	tta_table tta "$shaping" epoch_seconds full varco | tee "$OUT/tta.md"
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
