#!/usr/bin/env bash
# Issue-12 verification and benchmark of the generated backward kernels.
#
#   gpu/bwd.sh gen   (where Go is) generates the sources:
#       .devbin/bwd-gen       every examples/*.flex attention, gpu/bwd_cases
#                             (float buffers in the score, a pre-pass mask,
#                             head dim 256) and
#                             the eight flex_baseline cases (gpu/bench_cases)
#       .devbin/bwd-genbench  the eight flex_baseline cases
#   gpu/bwd.sh run   (on the GPU machine, .devbin carried) runs
#       gpu/bwd_bench.py on .devbin/bwd-genbench, gpu/bwd_check.py on
#       .devbin/bwd-gen and compute-sanitizer (memcheck, racecheck) on three
#       kernels with buffers, writing *.txt and *.jsonl into $OUT (default
#       /tmp/maskc-bwd). Extra arguments go to bwd_check.py (e.g. --shapes 1,4
#       --cases causal,document).
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
gen)
	rm -rf .devbin/bwd-gen .devbin/bwd-genbench
	go run ./cmd/genkernels -o .devbin/bwd-gen examples/*.flex gpu/bwd_cases/*.flex gpu/bench_cases/*.flex
	go run ./cmd/genkernels -o .devbin/bwd-genbench gpu/bench_cases/*.flex
	;;
run)
	shift
	OUT=${OUT:-/tmp/maskc-bwd}
	mkdir -p "$OUT"
	nvidia-smi -L
	timeout "${BENCH_TIMEOUT:-300}" python3 gpu/bwd_bench.py --generated .devbin/bwd-genbench --out "$OUT/bwd_bench.jsonl" >"$OUT/bwd_bench.txt" 2>&1
	echo "bench exit $?"
	tail -18 "$OUT/bwd_bench.txt"
	timeout "${CHECK_TIMEOUT:-400}" python3 gpu/bwd_check.py --generated .devbin/bwd-gen --out "$OUT/bwd_check.jsonl" "$@" >"$OUT/bwd_check.txt" 2>&1
	rc=$?
	echo "check exit $rc"
	grep -E "FAIL|COMPILE|passed" "$OUT/bwd_check.txt" | tail -30
	timeout "${SANITIZER_TIMEOUT:-180}" python3 gpu/bwd_sanitize.py --generated .devbin/bwd-gen \
		--cases head_scaled,biased_layer,bias_window --out "$OUT" >"$OUT/sanitize.txt" 2>&1
	echo "sanitize exit $?"
	tail -4 "$OUT/sanitize.txt"
	exit $rc
	;;
*)
	echo "usage: gpu/bwd.sh gen|run [bwd_check.py args]" >&2
	exit 2
	;;
esac
