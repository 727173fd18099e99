#!/usr/bin/env bash
# The persistent sm_90a forward (MASKC_WS_PERSIST in attn_fwd_sm90.h: a block
# takes tile after tile, the next tile's copies under the last one's softmax
# and epilogue) against main's forward, in one device call.
#
#   gpu/persist.sh gen   (where Go is) writes into .devbin:
#       dense      gpu/dense_cases (full, causal; D = 64, 128, 256)
#       pchk       gpu/bench_cases, gpu/bwd_cases, two examples
#       pchk-p     gpu/dense_cases, gpu/bench_cases with -fwd-persistent
#   gpu/persist.sh run [bench|quick]   (on the GPU machine, .devbin carried;
#   about 200 s; "bench": the dense_bench rounds only; "quick", about 130 s:
#   only ws-persist2 checked on check.py's shapes):
#       check.py with -D MASKC_WS_PERSIST=1 on 7 blocks (many tiles per
#       block, every (b, h) change) and on pchk-p (the manifest's grid of
#       a block per two q tiles, q_tiles_per_block), then
#       dense_bench.py: main's forward and the persistent one on one block
#       per multiprocessor (ws-persist) and on a block per 2 or 4 tiles
#       (ws-persist2, ws-persist4) over cuDNN at D = 128 and 64, two
#       processes in rotated order, ws-persist and ws-persist2 checked on
#       check.py's shapes in the first. Logs under $OUT (default /tmp/maskc-persist).
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
gen)
	rm -rf .devbin/dense .devbin/pchk .devbin/pchk-p
	G="go run ./cmd/genkernels"
	$G -o .devbin/dense gpu/dense_cases/*.flex &&
		$G -o .devbin/pchk examples/full.flex examples/t5_bias.flex gpu/bwd_cases/*.flex gpu/bench_cases/*.flex &&
		$G -fwd-persistent -o .devbin/pchk-p gpu/dense_cases/*.flex gpu/bench_cases/*.flex
	;;
run)
	OUT=${OUT:-/tmp/maskc-persist}
	mkdir -p "$OUT"
	nvidia-smi -L
	S0=$(date +%s)
	el() { echo $(($(date +%s) - S0)); }
	if [ "${2:-}" != bench ]; then
		timeout 100 python3 gpu/check.py --generated .devbin/pchk --no-flex -D MASKC_WS_PERSIST=1 --fwd-grid 7 \
			--out "$OUT/check_g7.jsonl" >"$OUT/check_g7.txt" 2>&1
		echo "check.py persistent, 7 blocks: exit $? [$(el) s]"
		grep -E "FAIL|passed|failed|^kernel" "$OUT/check_g7.txt" | cut -c1-120 | tail -20
		# genkernels -fwd-persistent: the manifest's grid of a block per two q tiles, as the launchers read it
		timeout 80 python3 gpu/check.py --generated .devbin/pchk-p --no-flex --out "$OUT/check_p.jsonl" \
			>"$OUT/check_p.txt" 2>&1
		echo "check.py, -fwd-persistent build: exit $? [$(el) s]"
		grep -E "FAIL|passed|failed" "$OUT/check_p.txt" | cut -c1-120 | tail -6
	fi
	for r in 1 2; do
		v=ws-persist,ws-persist2,ws-persist4
		[ $r = 2 ] && v=ws-persist4,ws-persist2,ws-persist
		chk=""
		[ $r = 1 ] && chk="--check-variants ws-persist,ws-persist2"
		[ $r = 1 ] && [ "${2:-}" = quick ] && chk="--check-variants ws-persist2"
		# shellcheck disable=SC2086
		timeout 150 python3 gpu/dense_bench.py --generated .devbin/dense --mode bench --dims 128,64 \
			--seqs 8192,32768,2048 --iters 10 --no-flex --variants $v --variant-dims 128,64 $chk \
			--out "$OUT/dense$r.jsonl" >"$OUT/dense$r.txt" 2>&1
		echo "dense_bench round $r exit $? [$(el) s]"
		grep -E "BAD|nan rows|variant check|FAIL|Error" "$OUT/dense$r.txt" | grep -v "nan rows/grads 0/0" | head -6
		# the table with the variants' columns (printed last)
		grep -E "^mask .*ws-" "$OUT/dense$r.txt" | tail -1 | cut -c1-190
		grep -E "^(full|causal) +[0-9]" "$OUT/dense$r.txt" | tail -12 | cut -c1-190
	done
	;;
*)
	echo "usage: gpu/persist.sh gen | run [bench|quick]" >&2
	exit 2
	;;
esac
