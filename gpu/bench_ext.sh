#!/usr/bin/env bash
# Issue 11's extended benchmark and the correctness check of its kernels.
#
#   gpu/bench_ext.sh gen   (where Go is) writes .devbin/ext: the kernels of
#       the eight baseline cases, gpu/bench_cases_ext, every example that
#       generates a kernel and the masks pasted from public code ($OUTSIDE)
#       (gen/), their buffer contents (buffers.json) and the
#       exact tile counts of the benchmark launch (tiles.jsonl). CORPUS=1 adds
#       testdata/tilemasks (issue 27's corpus, buffers.py's contents).
#   gpu/bench_ext.sh run   (on the GPU machine, .devbin/ext carried) runs
#       gpu/bench_ext.py, then gpu/check.py on the same kernels, writing
#       bench_ext.* and check.* into $OUT (default /tmp/maskc-ext). Extra
#       arguments go to bench_ext.py (e.g. --variants base,seq, or
#       --alt other=DIR, another genkernels build of the same cases).
set -u
cd "$(dirname "$0")/.."
DIR=${EXT_DIR:-.devbin/ext}
SHAPE=2,16,8192
EXAMPLES="examples/dilated_window.flex examples/prefix_lm.flex examples/prefix_lm_per_batch.flex examples/relative_bias.flex examples/softcap.flex examples/t5_bias.flex"
# Masks pasted from public code (testdata/ported): Gemma 4's sliding layers
# with images (transformers' token_type_ids_mask_function, or-ed with the
# window) and Transfusion's causal mask with bidirectional image spans.
OUTSIDE="testdata/ported/gemma4_sliding.flex testdata/ported/transfusion.flex"
case "${1:-}" in
gen)
	rm -rf "$DIR"
	mkdir -p "$DIR"
	FILES="gpu/bench_cases/*.flex gpu/bench_cases_ext/*.flex $EXAMPLES $OUTSIDE"
	# CORPUS=1 adds the tile-map corpus (testdata/tilemasks, issue 27) with
	# buffers.py's realistic contents.
	[ "${CORPUS:-0}" = 1 ] && FILES="$FILES testdata/tilemasks/*.flex"
	# GENFLAGS: more genkernels flags (its experiments, e.g. -bwd-ws).
	go run ./cmd/genkernels ${GENFLAGS:-} -o "$DIR/gen" $FILES || exit 1
	names=$(python3 -c "import sys; sys.path.insert(0, 'gpu'); from cases import manifest_case_ids; print(' '.join(sorted(set(manifest_case_ids('$DIR/gen/manifest.json')))))")
	python3 gpu/bench_ext_buffers.py $SHAPE "$DIR/buffers.json" $names || exit 1
	go run ./cmd/tilecount -shape $SHAPE,8192 -buffers "$DIR/buffers.json" $FILES >"$DIR/tiles.jsonl" || exit 1
	python3 -c "
import json
for l in open('$DIR/tiles.jsonl'):
    t = json.loads(l)
    print('%-45s %-9s visited %6d kept %6d (%.3f) density %.4f' % (t['flex'] + ':' + t['name'], t['sparsity'], t['tiles_visited'], t['tiles_with_kept_pairs'], t['tiles_visited'] / max(1, t['tiles_with_kept_pairs']), t['density']))"
	;;
run)
	shift
	OUT=${OUT:-/tmp/maskc-ext}
	mkdir -p "$OUT"
	nvidia-smi -L
	timeout "${BENCH_TIMEOUT:-300}" python3 gpu/bench_ext.py --generated "$DIR/gen" --buffers "$DIR/buffers.json" \
		--tiles "$DIR/tiles.jsonl" --out "$OUT/bench_ext.jsonl" "$@" >"$OUT/bench_ext.txt" 2>&1
	echo "bench_ext exit $?"
	tail -40 "$OUT/bench_ext.txt"
	timeout "${CHECK_TIMEOUT:-200}" python3 gpu/check.py --generated "$DIR/gen" --out "$OUT/check.jsonl" >"$OUT/check.txt" 2>&1
	rc=$?
	echo "check exit $rc"
	tail -32 "$OUT/check.txt"
	exit $rc
	;;
*)
	echo "usage: gpu/bench_ext.sh gen|run [bench_ext.py args]" >&2
	exit 2
	;;
esac
