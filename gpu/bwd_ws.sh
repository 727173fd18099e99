#!/usr/bin/env bash
# The warp-specialized sm_90a backward (attn_bwd.h's MASKC_BWD_WS: a producer
# warpgroup copying Q and dO by the bulk tensor copy engine into two stages
# for two consumer warpgroups on 128 keys; genkernels -bwd-ws) against main's
# backward, in one device call.
#
#   gpu/bwd_ws.sh gen   (where Go is) writes into .devbin:
#       bws        gpu/bench_cases, gpu/bwd_cases, two examples, -bwd-ws
#       bmain      gpu/bench_cases, main's build
#       dense-ws   gpu/dense_cases, -bwd-ws (.devbin/dense: gpu/dense.sh gen)
#   gpu/bwd_ws.sh run [check|bench]   (on the GPU machine, .devbin carried):
#       bwd_check.py on bws (float64, Flex left out, lengths up to 1000,
#       deterministic bitwise x3), then, if it passed (or with "bench"),
#       bwd_bench.py main against ws (rotated rounds) and dense_bench.py's
#       forward + backward of .devbin/dense and of dense-ws at D = 128, 64
#       over cuDNN, each in its own process; then compute-sanitizer
#       (memcheck, racecheck) on $SANITIZE (kernel names, default none) of
#       the checked build. Logs under $OUT (default /tmp/maskc-bwd-ws).
#   Other builds: $WS_BUILD (default .devbin/bws) is the one checked,
#   $WS_VARIANTS (default "ws=.devbin/bws") bwd_bench's variants against
#   $BWD_MAIN (default .devbin/bmain) at $HEAD_DIM (default the kernels'
#   own, 128), $DENSE (default "dense dense-ws") the dense builds under
#   .devbin, timed at head dims $DENSE_DIMS (default 128,64).
#   Other experiments: gen builds bws and dense-ws with $WS_FLAGS (default
#   -bwd-ws), and bws and bmain at $HEAD_DIM where it is set (e.g.
#   WS_FLAGS=-bwd-dq-order HEAD_DIM=64: the ordered dQ at head dim 64,
#   run 51c).
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
gen)
	rm -rf .devbin/bws .devbin/bmain .devbin/dense-ws
	G="go run ./cmd/genkernels"
	flags=${WS_FLAGS:--bwd-ws}
	dim=${HEAD_DIM:+-head-dim $HEAD_DIM}
	# shellcheck disable=SC2086 # flags and dim are word lists
	$G $flags $dim -o "${WS_BUILD:-.devbin/bws}" examples/full.flex examples/t5_bias.flex gpu/bwd_cases/*.flex gpu/bench_cases/*.flex &&
		$G $dim -o .devbin/bmain gpu/bench_cases/*.flex &&
		$G $flags -o .devbin/dense-ws gpu/dense_cases/*.flex
	;;
run)
	OUT=${OUT:-/tmp/maskc-bwd-ws}
	mkdir -p "$OUT"
	nvidia-smi -L
	S0=$(date +%s)
	el() { echo $(($(date +%s) - S0)); }
	rc=0
	if [ "${2:-}" != bench ]; then
		timeout "${CHECK_TIMEOUT:-150}" python3 gpu/bwd_check.py --generated "${WS_BUILD:-.devbin/bws}" --no-flex --max-len 1000 \
			--out "$OUT/ws_check.jsonl" >"$OUT/ws_check.txt" 2>&1
		rc=$?
		echo "bwd_check.py, -bwd-ws build: exit $rc [$(el) s]"
		grep -E "^kernel|FAIL|COMPILE|passed|failed|Error|error" "$OUT/ws_check.txt" | cut -c1-160 | head -40
	fi
	[ "${2:-}" = check ] && exit $rc
	if [ $rc = 0 ]; then
		vs=()
		for v in ${WS_VARIANTS:-ws=.devbin/bws}; do vs+=(--variant "$v"); done
		timeout "${BENCH_TIMEOUT:-200}" python3 gpu/bwd_bench.py --generated "${BWD_MAIN:-.devbin/bmain}" "${vs[@]}" ${HEAD_DIM:+--head-dim "$HEAD_DIM"} \
			--rounds "${ROUNDS:-2}" --out "$OUT/ws_bench.jsonl" >"$OUT/ws_bench.txt" 2>&1
		echo "bwd_bench.py main / ws: exit $? [$(el) s]"
		grep -E "^(full|causal|sliding|prefix|document|dilated)" "$OUT/ws_bench.txt" | grep -v split | cut -c1-130 | tail -40
		for d in ${DENSE:-dense dense-ws}; do
			timeout 120 python3 gpu/dense_bench.py --generated .devbin/$d --mode bench --dims "${DENSE_DIMS:-128,64}" \
				--seqs 8192,2048,32768 --iters 10 --no-flex --out "$OUT/$d.jsonl" >"$OUT/$d.txt" 2>&1
			echo "dense_bench.py $d: exit $? [$(el) s]"
			grep -E "BAD|nan rows|FAIL|Error" "$OUT/$d.txt" | grep -v "nan rows/grads 0/0" | head -6
			grep -E "^mask " "$OUT/$d.txt" | tail -1 | cut -c1-160
			grep -E "^(full|causal) +[0-9]" "$OUT/$d.txt" | tail -12 | cut -c1-160
		done
		if [ -n "${SANITIZE:-}" ]; then
			timeout 150 python3 gpu/bwd_sanitize.py --generated "${WS_BUILD:-.devbin/bws}" --cases "$SANITIZE" \
				--out "$OUT" >"$OUT/sanitize.txt" 2>&1
			echo "bwd_sanitize.py $SANITIZE: exit $? [$(el) s]"
			tail -4 "$OUT/sanitize.txt"
		fi
	fi
	exit $rc
	;;
*)
	echo "usage: gpu/bwd_ws.sh gen | run [check|bench]" >&2
	exit 2
	;;
esac
