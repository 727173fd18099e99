#!/usr/bin/env bash
# The sm_90a backward's overlapped products (codegen.Options.BwdOverlap,
# genkernels -bwd-overlap: dV's and dK's products left in flight through dS
# and dQ, P computed while dP runs where there is no score mod) against the
# default build, in one device call, to decide whether they become the
# default.
#
#   gpu/bwd_overlap.sh gen   (where Go is) writes into .devbin:
#       dense, dense-ov            gpu/dense_cases (full, causal; D = 64, 128, 256)
#       bwd-genbench, -ov          gpu/bench_cases (the eight flex_baseline cases)
#       bwdw-ov                    the same on the wide key tile (-bwd-wide)
#       chk-ov                     bench_cases, bwd_cases and two examples, for bwd_check
#   gpu/bwd_overlap.sh run [short]   (on the GPU machine, .devbin carried):
#       bwd_check.py on chk-ov (float64 reference, deterministic bitwise x3),
#       bwd_bench.py on the eight cases with the ov and ovw variants in
#       rotated rounds (forward + backward over Flex, registers and local
#       memory per kernel), then, time allowing, dense_bench.py on dense and
#       dense-ov at D = 128 and 64 (over cuDNN SDPA; main's build also with
#       the forward variant ws-reuse at D = 64 and 128). "short" (about 250 s
#       of device time): six kernels checked, five cases timed, no dense.
#       Logs under $OUT (default /tmp/maskc-bwdov).
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
gen)
	rm -rf .devbin/dense .devbin/dense-ov .devbin/bwd-genbench .devbin/bwd-genbench-ov .devbin/bwdw-ov .devbin/chk-ov
	G="go run ./cmd/genkernels"
	$G -o .devbin/dense gpu/dense_cases/*.flex && $G -bwd-overlap -o .devbin/dense-ov gpu/dense_cases/*.flex &&
		$G -o .devbin/bwd-genbench gpu/bench_cases/*.flex &&
		$G -bwd-overlap -o .devbin/bwd-genbench-ov gpu/bench_cases/*.flex &&
		$G -bwd-overlap -bwd-wide -o .devbin/bwdw-ov gpu/bench_cases/*.flex &&
		$G -bwd-overlap -o .devbin/chk-ov examples/full.flex examples/t5_bias.flex gpu/bwd_cases/*.flex gpu/bench_cases/*.flex
	;;
run)
	OUT=${OUT:-/tmp/maskc-bwdov}
	mkdir -p "$OUT"
	nvidia-smi -L
	S0=$(date +%s)
	el() { echo $(($(date +%s) - S0)); }
	short=0
	[ "${2:-}" = short ] && short=1
	chk_cases="" bench_cases="" variants="--variant ov=.devbin/bwd-genbench-ov --variant ovw=.devbin/bwdw-ov" rounds=3
	if [ $short = 1 ]; then
		chk_cases="--cases full,encoder,causal,document,causal_softcap,bias_window"
		bench_cases="--cases full,causal,document,causal_softcap,sliding1024"
		variants="--variant ov=.devbin/bwd-genbench-ov" rounds=2
	fi
	timeout $((short ? 80 : 140)) python3 gpu/bwd_check.py --generated .devbin/chk-ov --no-flex --max-len 1000 $chk_cases \
		--out "$OUT/chk_ov.jsonl" >"$OUT/chk_ov.txt" 2>&1
	echo "bwd_check (ov) exit $? [$(el) s]"
	grep -E "FAIL|COMPILE|bwd_check:|^kernel" "$OUT/chk_ov.txt" | cut -c1-110 | tail -20
	# shellcheck disable=SC2086
	timeout $((short ? 150 : 220)) python3 gpu/bwd_bench.py --generated .devbin/bwd-genbench $bench_cases $variants \
		--rounds $rounds --out "$OUT/bwdb.jsonl" >"$OUT/bwdb.txt" 2>&1
	echo "bwd_bench exit $? [$(el) s]"
	python3 gpu/bwd_overlap_summary.py kernels "$OUT/bwdb.jsonl"
	grep -v '^{' "$OUT/bwdb.txt" | grep -v "^  " | tail -52 | cut -c1-125
	[ $short = 1 ] && exit 0
	dense() {
		# shellcheck disable=SC2086
		timeout 80 python3 gpu/dense_bench.py --generated ".devbin/$1" --mode bench --dims 128,64 --seqs 8192,32768,2048 \
			--iters 10 --no-flex --out "$OUT/$1.jsonl" ${2:-} >"$OUT/$1.txt" 2>&1
		echo "dense_bench $1 exit $? [$(el) s]"
		grep -E "BAD|nan rows" "$OUT/$1.txt" | grep -v "nan rows/grads 0/0" | head -3
	}
	if [ "$(el)" -lt 330 ]; then
		dense dense "--variants ws-reuse --variant-dims 64,128"
		dense dense-ov
		grep -E "^(full|causal) " "$OUT/dense.txt" | head -12 | cut -c1-140
		python3 gpu/bwd_overlap_summary.py dense "$OUT/dense.jsonl" "$OUT/dense-ov.jsonl"
	fi
	;;
*)
	echo "usage: gpu/bwd_overlap.sh gen | run [short]" >&2
	exit 2
	;;
esac
