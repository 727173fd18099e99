#!/usr/bin/env bash
# Issue 15's dense table in one device call.
#
#   gpu/dense.sh gen   (where Go is) generates gpu/dense_cases/*.flex (full
#       and causal at head dims 64, 128, 256) into .devbin/dense.
#   gpu/dense.sh run [ARGS...]   (on the GPU machine, .devbin/dense carried)
#       runs gpu/dense_bench.py --mode bench on them: cuDNN, FlexAttention
#       and maskc, forward and forward + backward, at S = 8192, 2048, 32768;
#       then the forward variants named in $VARIANTS (default none) and the
#       check.py shapes on $CHECK_VARIANTS (default: the same). Logs and the
#       JSON lines under $OUT (default /tmp/maskc-dense). FlexAttention's
#       compilation (forward and backward of 18 rows, while NVRTC builds
#       maskc's kernels) is the long part: run 19x spent its 55 s budget on
#       it; $FLEX_BUDGET_S (default 70) caps it, rows past it get no flex
#       column; $DEADLINE_S (default 120) stops the variant checks. Extra
#       ARGS go to dense_bench.py.
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
gen)
	rm -rf .devbin/dense
	go run ./cmd/genkernels -o .devbin/dense gpu/dense_cases/*.flex
	;;
run)
	shift
	OUT=${OUT:-/tmp/maskc-dense}
	mkdir -p "$OUT"
	nvidia-smi -L
	variants=${VARIANTS:-}
	PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-150}" python3 gpu/dense_bench.py --generated .devbin/dense --mode bench \
		--dims 128,64,256 --seqs 8192,2048,32768 --iters 15 --variants "$variants" \
		--check-variants "${CHECK_VARIANTS:-$variants}" --flex-budget-s "${FLEX_BUDGET_S:-70}" \
		--deadline-s "${DEADLINE_S:-120}" --out "$OUT/dense.jsonl" "$@" >"$OUT/dense.txt" 2>&1
	rc=$?
	echo "dense_bench exit $rc"
	grep -v '^{' "$OUT/dense.txt" | tail -60
	exit $rc
	;;
*)
	echo "usage: gpu/dense.sh gen | run [dense_bench.py args]" >&2
	exit 2
	;;
esac
