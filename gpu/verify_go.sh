#!/usr/bin/env bash
# The Go path on the GPU machine (gpu/verify.sh's step go): the runtime's and
# the compiler's GPU tests, then `maskc run --check` forward and backward on
# five examples against the Go float64 reference (eval), through NVRTC and the
# CUDA driver over purego, with no Go toolchain on the machine.
#
#   bash gpu/verify_go.sh MASKC_BINARY GOTESTS_TGZ
#
# GOTESTS_TGZ holds runtime.test and compiler.test, built by `gpu/verify.sh gen`
# (CGO_ENABLED=0 go test -c). Exit status: the number of failed parts.
set -u
bin=$1
tests=$2
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
tar xzf "$tests" -C "$work"
failed=0
part() { # name command...: runs one part, prints its verdict
	local name=$1 t0=$SECONDS
	shift
	echo "== $name: $*"
	"$@"
	local rc=$?
	echo "== $name exit $rc ($((SECONDS - t0)) s)"
	[ $rc -eq 0 ] || failed=$((failed + 1))
	return $rc
}
export MASKC_GPU_TESTS=1 MASKC_CACHE_DIR="$work/cache"
# The test binaries read their package's testdata and the examples relative
# to the package directory, as `go test` runs them.
(cd runtime && part runtime "$work/runtime.test" -test.run GPU -test.v) || failed=$((failed + 1))
(cd compiler && part compiler "$work/compiler.test" -test.run GPU -test.v) || failed=$((failed + 1))
ex=examples
run() { part "maskc run $*" "$bin" run "$@" --check --seed 7; }
run "$ex/causal.flex" --shape 2,4,1000,128
run "$ex/gpt_oss.flex" --attention layer_0 --shape 1,8,257,64 --kv-heads 2 --backward --deterministic
run "$ex/relative_bias.flex" --attention biased_layer --shape 2,4,300,128 --skv 200 --backward --dlse
run "$ex/alibi.flex" --shape 1,4,300,128 --backward --dlse --deterministic
run "$ex/document_causal.flex" --shape 2,4,300,128 --backward
# Document ids out of order (issue 32): the mask as written, forward and
# backward, against the float64 reference: restarting, -1 padding between and
# after documents, shuffled and reused ids (300 tokens each).
ids() { python3 -c "import sys; print(','.join(str(i) for i, n in zip(map(int, sys.argv[1::2]), map(int, sys.argv[2::2])) for _ in range(n)))" "$@"; }
run "$ex/document_causal.flex" --shape 2,4,300,128 --backward --buffer "doc=$(ids 0 90 1 60 0 100 1 50)"
run "$ex/document_causal.flex" --shape 1,4,300,128 --backward --deterministic --buffer "doc=$(ids 0 70 -1 30 1 120 -1 80)"
run "$ex/document_causal.flex" --shape 2,4,300,128 --backward --buffer "doc=$(ids 3 50 1 70 4 20 0 60 2 100)"
run "$ex/document_causal.flex" --shape 1,4,300,128 --backward --buffer "doc=$(ids 0 40 1 40 0 40 1 180)"
run "$ex/t5_bias.flex" --shape 1,4,200,128 --sq 150 --backward --deterministic
rm -rf "$work"
echo "== go: $failed failed"
exit "$failed"
