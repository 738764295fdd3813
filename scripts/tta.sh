#!/usr/bin/env bash
# Time to accuracy on shaped links: 4 workers as 4 hosts in network
# namespaces (scripts/netns-lib.sh's set-up, as scripts/netns-test.sh), over
# TCP, on Amazon Computers with docs/varco.md's model (SAGE-mean, 3 layers,
# hidden 64, Adam lr 0.01, no dropout or weight decay, seeded stratified
# 60/20/20 split, random partition), for each link rate: full
# communication, graft's recipe (--compress auto), the recipe with the
# evaluations' halo rows compressed too (auto-eval: --eval-compress
# entropy:quant8) and VARCO's authors' schedule (truncate, --schedule
# varco-paper), then the same configurations
# in one process under --link RATE:1ms (emulated time) for comparison.
#
#   sudo GRAFT_DATA=/path/to/data scripts/tta.sh    # about 40 minutes on 2 cores
#
# Per rate it writes $OUT/tta-RATE.md (measured, the shaped links) and
# $OUT/emu-RATE.md (emulated), each a table of wall time, seconds per
# epoch, MB sent (training, and evaluation apart), best validation accuracy, test accuracy at it, time to
# 95% and 99% of full communication's best validation accuracy, and the
# speed-up at 99% against full communication.
# Env: GRAFT_DATA (required), TTA_RATES (link rates in tc's notation,
# default "1gbit 100mbit"), TTA_CONFIGS (default "full auto auto-eval varco"; the
# first is the reference), TTA_EPOCHS (default 300, the authors' iteration
# count: at 100 full communication's validation accuracy still rises),
# TTA_FLAGS (more graft train flags for every run, e.g. "--eval-every 5"),
# TTA_EMULATE (default 1; 0 skips the one-process --link runs), OUT
# (results directory, default a temporary one), GRAFT_BIN (a graft binary
# to use instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."

me=tta
rates=${TTA_RATES:-1gbit 100mbit}
configs=${TTA_CONFIGS:-full auto auto-eval varco}
epochs=${TTA_EPOCHS:-300}
[[ -e ${GRAFT_DATA:-}/gnn-benchmark/amazon_electronics_computers.npz ]] ||
	{ echo "tta: needs GRAFT_DATA with Amazon Computers (gnn-benchmark/amazon_electronics_computers.npz)" >&2; exit 2; }
source scripts/netns-lib.sh

model=(--dataset amazon-computers --recipe none --model sage --layers 3 --hidden 64 --lr 0.01
	--weight-decay 0 --dropout 0 --partition random --epochs "$epochs" --patience 0)
# shellcheck disable=SC2206 # TTA_FLAGS are words
model+=(${TTA_FLAGS:-})
flags() {
	case $1 in
	full) echo --compress none ;;
	auto) echo --compress auto ;;                           # entropy:delta:2:0:0 with --compress-last
	auto-eval) echo --compress auto --eval-compress entropy:quant8 ;; # and the evaluations' rows in 8 bits, entropy-coded
	varco) echo --compress truncate --schedule varco-paper ;; # the authors' linear:128:1.5:5
	*) echo "tta: unknown configuration $1 (want full, auto, auto-eval or varco)" >&2; exit 2 ;;
	esac
}
for cfg in $configs; do flags "$cfg" >/dev/null; done

for rate in $rates; do
	bits "$rate" >/dev/null
	echo "== $rate: ${configs// /, } on 4 hosts, ${model[*]}"
	shape 0 "$rate"
	rm -f "$OUT/tta-$rate-wall.txt"
	for cfg in $configs; do
		start=$(date +%s.%N)
		# shellcheck disable=SC2046 # flags are words
		job "tta-$rate-$cfg" 3600 "${model[@]}" $(flags "$cfg") --json
		wait_job || fail "$rate $cfg: exit $?; $(tail -n 2 "$OUT/tta-$rate-$cfg.rank0.log")"
		echo "$cfg $(since "$start")" >>"$OUT/tta-$rate-wall.txt"
		echo "   $cfg: $(since "$start") s"
	done
	# shellcheck disable=SC2086
	tta_table "tta-$rate" "$shaping" epoch_seconds $configs | tee "$OUT/tta-$rate.md"
	[[ ${TTA_EMULATE:-1} == 1 ]] || continue
	echo "== $rate emulated: one process, --parts 4 --link $rate:1ms"
	rm -f "$OUT/emu-$rate-wall.txt"
	for cfg in $configs; do
		start=$(date +%s.%N)
		# shellcheck disable=SC2046
		"$graft" train "${model[@]}" $(flags "$cfg") --parts 4 --link "$rate:1ms" \
			--metrics "$OUT/emu-$rate-$cfg.jsonl" --json >"$OUT/emu-$rate-$cfg.log" 2>&1 ||
			fail "emulated $rate $cfg: exit $?; $(tail -n 2 "$OUT/emu-$rate-$cfg.log")"
		echo "$cfg $(since "$start")" >>"$OUT/emu-$rate-wall.txt"
	done
	# shellcheck disable=SC2086
	tta_table "emu-$rate" "emulated, --link $rate:1ms in one process" emulated_seconds $configs | tee "$OUT/emu-$rate.md"
done

wire_down
echo "results in $OUT"
[[ $failed == 0 ]] || { echo "== tta: FAILED"; exit 1; }
