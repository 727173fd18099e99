#!/usr/bin/env bash
# Runs `maskc run --check` on every attention block of every example on the
# GPU, at five shapes per block: S=256 (the first run, on an empty kernel
# cache: the cold compile time), a ragged S=200 (a cache hit: the warm load
# time), Sq < Skv, Sq > Skv and GQA (H=8, HKV=2). Then fp16 kernels and
# shapes large enough that --check samples rows, and two --bench runs.
# Writes the full output to $OUT/run_examples.log and prints a summary table
# (also $OUT/summary.txt). Exit status 1 if any run failed.
#
# Build the binary first, without cgo:
#   CGO_ENABLED=0 go build -o .devbin/maskc ./cmd/maskc
set -u
BIN=${MASKC:-.devbin/maskc}
OUT=${OUT:-/tmp/maskc-run-examples}
JOBS=${JOBS:-8}
mkdir -p "$OUT"
TMP=$(mktemp -d)
export MASKC_CACHE_DIR="$TMP/cache"

CASES=(
	"S=256 (cold)|--shape 2,4,256,@D"
	"S=200 ragged|--shape 2,4,200,@D"
	"Sq=100 Skv=300|--shape 2,4,256,@D --sq 100 --skv 300"
	"Sq=300 Skv=100|--shape 2,4,256,@D --sq 300 --skv 100"
	"GQA H=8 HKV=2|--shape 2,8,256,@D --kv-heads 2"
)

# head_dim FILE BLOCK prints the block's head_dim setting (default 128).
head_dim() {
	awk -v a="$2" '$1 == "attention" && $2 == a { inb = 1 }
		inb && $1 == "head_dim" { print $3; found = 1; exit }
		inb && $1 == "}" { inb = 0 }
		END { if (!found) print 128 }' "$1"
}

# run_one FILE BLOCK LABEL ARGS... runs one check and appends its output to
# $TMP/FILE.BLOCK.log and its summary line to $TMP/FILE.BLOCK.sum.
run_one() {
	local f=$1 a=$2 label=$3 base out rc res orel lrel comp note
	shift 3
	base="$TMP/$(basename "$f" .flex).$a"
	out=$(timeout 120 "$BIN" run "$f" --attention "$a" "$@" --check 2>&1)
	rc=$?
	printf '### %s %s: %s (%s): exit %d\n%s\n\n' "$f" "$a" "$label" "$*" "$rc" "$out" >>"$base.log"
	res=ERROR
	if grep -q '^check: .*: PASS$' <<<"$out"; then res=PASS; fi
	if grep -q '^check: .*: FAIL$' <<<"$out"; then res=FAIL; fi
	if [ "$rc" -ne 0 ] && [ "$res" = PASS ]; then res=FAIL; fi
	orel=$(sed -n 's/^check: O rel err \([^ ]*\).*/\1/p' <<<"$out")
	lrel=$(sed -n 's/^check: .*LSE rel err \([^ ]*\).*/\1/p' <<<"$out")
	comp=$(sed -n 's/^compile: cold, \([0-9.]*\) ms.*/cold \1 ms/p; s/^compile: cache hit, loaded in \([0-9.]*\) ms.*/warm \1 ms/p' <<<"$out")
	note=$(sed -n 's/^check: .*reference on \(.*\) in .*/\1/p' <<<"$out")
	if [ "$res" != PASS ]; then note=$(grep -m1 -E 'error|FAIL|maskc:' <<<"$out" | cut -c1-90); fi
	printf '%-34s %-18s %-5s %-9s %-9s %-15s %s\n' "$(basename "$f" .flex)/$a" "$label" "$res" "${orel:--}" "${lrel:--}" "${comp:--}" "$note" >>"$base.sum"
}

# run_block FILE BLOCK runs every case of one block, in order.
run_block() {
	local f=$1 a=$2 d c args
	d=$(head_dim "$f" "$a")
	for c in "${CASES[@]}"; do
		args=${c#*|}
		# shellcheck disable=SC2086
		run_one "$f" "$a" "${c%%|*}" ${args//@D/$d}
	done
}

# Extra cases, after the kernels are cached: fp16 kernels, and shapes whose
# reference is over the CPU budget, so that --check samples rows.
EXTRA=(
	"examples/causal.flex|decoder|fp16 S=200|--shape 2,4,200,128 --dtype fp16"
	"examples/document_causal.flex|packed_layer|fp16 GQA|--shape 2,8,256,128 --kv-heads 2 --dtype fp16"
	"examples/gpt_oss.flex|layer_0|fp16 Sq<Skv|--shape 2,4,256,64 --sq 130 --skv 250 --dtype fp16"
	"examples/document_causal.flex|packed_layer|sampled S=4096|--shape 2,16,4096,128"
	"examples/gpt_oss.flex|layer_0|sampled S=8192 GQA|--shape 1,16,8192,64 --kv-heads 2"
	"examples/prefix_lm_per_batch.flex|prefix_layer|sampled S=2047|--shape 4,8,2047,128"
	"examples/relative_bias.flex|biased_layer|sampled 1000/3000|--shape 2,4,1000,128 --skv 3000"
)

t0=$(date +%s)
{ nvidia-smi -L 2>/dev/null; "$BIN" version; } | tee "$OUT/run_examples.log"
blocks=()
for f in examples/*.flex; do
	for a in $("$BIN" classify "$f" 2>/dev/null | awk '/^attention /{ n = $2; sub(":$", "", n); print n }'); do
		blocks+=("$f $a")
	done
done
for b in "${blocks[@]}"; do
	# shellcheck disable=SC2086
	run_block $b &
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
done
wait
for x in "${EXTRA[@]}"; do
	IFS='|' read -r f a label args <<<"$x"
	# shellcheck disable=SC2086
	run_one "$f" "$a" "$label" $args &
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
done
wait

bench=$(timeout 120 "$BIN" run examples/causal.flex --shape 2,16,4096,128 --bench 2>&1)
benchDoc=$(timeout 120 "$BIN" run examples/document_causal.flex --shape 2,16,4096,128 --bench 2>&1)

{
	printf '%-34s %-18s %-5s %-9s %-9s %-15s %s\n' "example/attention" "case" "check" "O relerr" "LSE rel" "compile" "note"
	for b in "${blocks[@]}"; do
		set -- $b
		cat "$TMP/$(basename "$1" .flex).$2.sum"
	done
	echo
	echo "runs: $(cat "$TMP"/*.sum | wc -l), PASS $(cat "$TMP"/*.sum | awk '$0 ~ / PASS / { n++ } END { print n + 0 }')"
	echo
	echo "bench causal 2,16,4096,128: $(grep -E '^(compile|bench):' <<<"$bench" | tr '\n' ' ')"
	echo "bench document_causal 2,16,4096,128: $(grep -E '^(compile|bench|buffer):' <<<"$benchDoc" | tr '\n' ' ')"
	echo "wall: $(($(date +%s) - t0)) s"
} | tee "$OUT/summary.txt"
for b in "${blocks[@]}"; do
	set -- $b
	cat "$TMP/$(basename "$1" .flex).$2.log" >>"$OUT/run_examples.log"
done
printf '### bench\n%s\n%s\n' "$bench" "$benchDoc" >>"$OUT/run_examples.log"
! grep -qv ' PASS ' "$TMP"/*.sum
