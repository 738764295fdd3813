#!/usr/bin/env bash
# A real single-node Slurm (Debian's slurm-wlm with munge, localhost only)
# runs docs/slurm.sbatch with 3 tasks:
#
#   scripts/slurm-test.sh
#
# Checks:
#   - `sbatch --wait docs/slurm.sbatch --dataset cora ...` (3 tasks through
#     srun: the transport self-test, then training) gives the in-process
#     run's result: `graft train --parts 3` with the same flags saves the
#     same model bytes, writes the same per-epoch losses and accuracies, and
#     its summary has the same accuracies;
#   - a task killed with SIGKILL during training (rank 2, found through
#     `scontrol listpids`) makes the job fail within 10 s, and its output
#     names rank 2.
# Starts munged, slurmctld and slurmd as root with a configuration, key,
# state and logs in a temporary directory (nothing under /etc is touched);
# installs slurm-wlm and munge with apt-get when they are missing (root and
# the network needed; it says so and exits 2 otherwise). Cleans up its
# daemons and temporary directory on exit.
# Env: GRAFT_BIN (a graft binary to use instead of building one), KEEP=1
# (keep the temporary directory), GRAFT_DATA (where Cora is read from).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
start=$(date +%s.%N)

say() { echo "slurm-test: $*" >&2; }

missing=()
for tool in sbatch:slurm-wlm slurmctld:slurm-wlm slurmd:slurm-wlm munged:munge mungekey:munge jq:jq openssl:openssl bc:bc; do
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
if [[ $(id -u) != 0 ]]; then
	say "slurmd runs jobs as their user and must run as root; run this as root"
	exit 2
fi

work=$(mktemp -d /tmp/graft-slurm.XXXXXX)
chmod 0700 "$work"
pids=()
cleanup() {
	set +e
	if [[ -n ${SLURM_CONF:-} ]] && [[ -f $SLURM_CONF ]]; then
		scancel --quiet --partition=graft 2>/dev/null
		for _ in $(seq 50); do
			[[ -z $(squeue --noheader --partition=graft 2>/dev/null) ]] && break
			sleep 0.1
		done
	fi
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	if [[ ${KEEP:-0} == 1 ]]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'say interrupted; exit 1' INT TERM

# logs DAEMON...: print the last lines of the daemons' logs.
logs() {
	for d in "$@"; do
		echo "--- $d.log" >&2
		tail -20 "$work/$d.log" >&2 2>/dev/null
	done
}

if [[ -n ${GRAFT_BIN:-} ]]; then
	cp "$GRAFT_BIN" "$work/graft"
else
	go build -o "$work/graft" ./cmd/graft
fi
# sbatch exports the submitting environment: srun finds graft on PATH.
export PATH=$work:$PATH

# Free loopback ports: slurmctld, slurmd, graft's rendezvous.
free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || [[ " ${taken:-} " == *" $p "* ]]; do p=$((p + 1)); done
	echo "$p"
}
taken=""
ctld_port=$(free_port 16817)
taken="$taken $ctld_port"
slurmd_port=$(free_port $((ctld_port + 1)))
taken="$taken $slurmd_port"
graft_port=$(free_port 29600)

# munge: its own key and socket.
mkdir -p "$work/munge" && chmod 0700 "$work/munge"
mungekey --create --keyfile="$work/munge/munge.key"
chmod 0400 "$work/munge/munge.key"
socket=$work/munge/munge.socket
munged --force --foreground --socket="$socket" --key-file="$work/munge/munge.key" \
	--pid-file="$work/munge/munged.pid" --seed-file="$work/munge/munged.seed" \
	--log-file="$work/munged.log" >"$work/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [[ -S $socket ]] && break; sleep 0.1; done
[[ -S $socket ]] || { logs munged; say "munged did not start"; exit 1; }

# One node, localhost, with this machine's CPUs but at least 3: Slurm
# refuses more tasks per node than CPUs even with --overcommit, so on a
# 2-core machine the node declares 3 (config_overrides keeps slurmd from
# draining it for that) and the 3 tasks share the cores. No cgroups, no
# accounting: processes are tracked through /proc.
cpus=$(nproc)
((cpus >= 3)) || cpus=3
mkdir -p "$work/state" "$work/spool"
cat >"$work/slurm.conf" <<EOF
ClusterName=graft-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=2
MinJobAge=60
SlurmdTimeout=30
InactiveLimit=0
SlurmdParameters=config_overrides
NodeName=localhost CPUs=$cpus State=UNKNOWN
PartitionName=graft Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -i >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N localhost >"$work/slurmd.out" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 300); do
	state=$(sinfo --noheader --nodes=localhost --format=%t 2>/dev/null || true)
	[[ $state == idle ]] && break
	sleep 0.1
done
[[ $state == idle ]] || { logs slurmctld slurmd; say "the node is not idle (state '$state')"; exit 1; }
say "slurmctld on 127.0.0.1:$ctld_port, slurmd on :$slurmd_port; node localhost idle with $cpus CPUs ($(nproc) cores)"

# The sbatch file asks for 4 nodes of 32 CPUs; options on the command line
# win over its #SBATCH lines.
sbatch_opts=(--nodes=1 --ntasks=3 --ntasks-per-node=3 --cpus-per-task=1 --time=10)
train=(--dataset cora --seed 3)

say "in process: graft train --parts 3 ${train[*]} --epochs 5"
(cd "$work" && graft train --parts 3 "${train[@]}" --epochs 5 --json \
	--save local.safetensors --metrics local.jsonl >local.json 2>local.err) ||
	{ cat "$work/local.err" >&2; say "the in-process run failed"; exit 1; }

say "sbatch --wait docs/slurm.sbatch ${train[*]} --epochs 5 (3 tasks)"
t0=$(date +%s.%N)
(cd "$work" && MASTER_PORT=$graft_port sbatch --wait --quiet "${sbatch_opts[@]}" --output=job.out \
	"$repo/docs/slurm.sbatch" "${train[@]}" --epochs 5 --json \
	--save slurm.safetensors --metrics slurm.jsonl >job1.submit 2>&1) ||
	{ cat "$work/job1.submit" "$work/job.out" >&2; logs slurmctld slurmd; say "the job failed"; exit 1; }
say "the job took $(echo "$(date +%s.%N) - $t0" | bc) s"

fail=0
cmp "$work/local.safetensors" "$work/slurm.safetensors" ||
	{ say "the saved models differ"; fail=1; }
# Per-epoch figures and the summary's, without timings and memory.
figures='{epoch, loss, train_acc, val_acc, test_acc, val_loss, val_f1, test_f1, bytes_fwd, bytes_bwd, bytes_grad}'
summary='{epochs, best_epoch, best_val_acc, test_acc, train_acc, best_val_macro_f1, test_macro_f1, parameters, parts, bytes_total}'
diff <(jq -c "$figures" "$work/local.jsonl") <(jq -c "$figures" "$work/slurm.jsonl") >&2 ||
	{ say "the per-epoch metrics differ"; fail=1; }
# Rank 0 prints the summary; the job's output also holds the self-test's lines.
jq -c "$summary" "$work/local.json" >"$work/local.summary"
grep '^{"dataset"' "$work/job.out" | jq -c "$summary" >"$work/slurm.summary" || true
diff "$work/local.summary" "$work/slurm.summary" >&2 || { say "the summaries differ"; fail=1; }
[[ $(wc -l <"$work/local.jsonl") == 5 ]] || { say "the in-process run wrote $(wc -l <"$work/local.jsonl") epochs, want 5"; fail=1; }
if [[ $fail != 0 ]]; then
	cat "$work/job.out" >&2
	exit 1
fi
say "ok: the Slurm job equals the in-process run (model bytes, 5 epochs of metrics, summary $(cat "$work/slurm.summary"))"

say "failure: rank 2 killed with SIGKILL during training"
(cd "$work" && MASTER_PORT=$graft_port sbatch --parsable "${sbatch_opts[@]}" --output=job2.out \
	"$repo/docs/slurm.sbatch" "${train[@]}" --epochs 1000000 --patience 0 --metrics run.jsonl >job2.id) ||
	{ cat "$work/job2.id" >&2; say "sbatch failed"; exit 1; }
job=$(cat "$work/job2.id")
# Wait for training to run (epochs in the metrics file), then find the
# training step's rank-2 task.
for _ in $(seq 600); do
	[[ -s $work/run.jsonl ]] && (($(wc -l <"$work/run.jsonl") >= 3)) && break
	[[ -n $(squeue --noheader --jobs="$job" --format=%T 2>/dev/null) ]] ||
		{ cat "$work/job2.out" >&2; say "job $job ended before training"; exit 1; }
	sleep 0.1
done
# scontrol listpids: PID JOBID STEPID LOCALID GLOBALID; step 1 is training.
victim=$(scontrol listpids "$job.1" | awk '$5 == 2 {print $1; exit}')
[[ -n $victim ]] || { scontrol listpids "$job" >&2; say "no task of rank 2 in step $job.1"; exit 1; }
grep -qz '^SLURM_PROCID=2$' "/proc/$victim/environ" || { say "process $victim is not rank 2"; exit 1; }
epoch=$(wc -l <"$work/run.jsonl")
t0=$(date +%s.%N)
kill -KILL "$victim"
for _ in $(seq 150); do
	[[ $(squeue --noheader --jobs="$job" --format=%T 2>/dev/null) == "" ]] && break
	sleep 0.1
done
took=$(echo "$(date +%s.%N) - $t0" | bc)
state=$(scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' || true)
say "after the kill (at epoch $epoch) the job ended in $took s: $state"
if (($(echo "$took >= 10" | bc))); then say "the job did not end within 10 s"; fail=1; fi
[[ $state == JobState=FAILED ]] || { say "the job's state is '$state', want FAILED"; fail=1; }
grep -q 'lost rank 2' "$work/job2.out" || { say "the job's output does not name rank 2 ('lost rank 2')"; fail=1; }
grep -E 'lost rank|task 2' "$work/job2.out" | head -5 >&2
if [[ $fail != 0 ]]; then
	cat "$work/job2.out" >&2
	exit 1
fi
say "ok in $(echo "$(date +%s.%N) - $start" | bc) s: the job failed $took s after the kill, naming rank 2"
