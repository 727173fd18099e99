#!/usr/bin/env bash
# Issue-4 verification and benchmark of the generated kernels.
#
#   gpu/generated.sh gen   (where Go is) generates the sources:
#       .devbin/gen       every examples/*.flex attention, plus the
#                         flex_baseline causal and full (gpu/bench_cases) and
#                         the head-dim-256 cases (gpu/bwd_cases/*_d256.flex)
#       .devbin/genbench  the eight flex_baseline cases (gpu/bench_cases)
#   gpu/generated.sh run   (on the GPU machine, .devbin carried) runs
#       gpu/bench.py on .devbin/genbench, then gpu/check.py on .devbin/gen,
#       writing bench.* and check.* into $OUT (default /tmp/maskc-generated).
#       Extra arguments go to bench.py (e.g. --variants base,sync).
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
gen)
	rm -rf .devbin/gen .devbin/genbench
	go run ./cmd/genkernels -o .devbin/gen examples/*.flex gpu/bench_cases/causal.flex gpu/bench_cases/full.flex \
		gpu/bwd_cases/*_d256.flex
	go run ./cmd/genkernels -o .devbin/genbench gpu/bench_cases/*.flex
	;;
run)
	shift
	OUT=${OUT:-/tmp/maskc-generated}
	mkdir -p "$OUT"
	nvidia-smi -L
	timeout "${BENCH_TIMEOUT:-240}" python3 gpu/bench.py --generated .devbin/genbench --out "$OUT/bench.jsonl" "$@" >"$OUT/bench.txt" 2>&1
	echo "bench exit $?"
	tail -30 "$OUT/bench.txt"
	timeout "${CHECK_TIMEOUT:-260}" python3 gpu/check.py --generated .devbin/gen --out "$OUT/check.jsonl" >"$OUT/check.txt" 2>&1
	rc=$?
	echo "check exit $rc"
	tail -28 "$OUT/check.txt"
	exit $rc
	;;
*)
	echo "usage: gpu/generated.sh gen|run [bench.py args]" >&2
	exit 2
	;;
esac
