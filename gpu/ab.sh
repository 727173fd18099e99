#!/usr/bin/env bash
# A kernel change timed against main's build in one device call: the same
# cases built from the working tree (base) and from other revisions
# (branches with untimed kernel changes), checked, then timed side by side.
#
#   gpu/ab.sh gen DIR CASES [REV[=NAME[:FLAGS]] ...]   (where Go is) builds
#       each revision's kernels of the extended benchmark and the corpus
#       (gpu/bench_ext.sh gen with CORPUS=1, in a git worktree of REV, with
#       FLAGS, comma-separated genkernels flags, e.g. HEAD=bws:-bwd-ws
#       for an experiment of the working tree's revision) and
#       keeps those of CASES (comma-separated case ids, file:attention as
#       bench_ext.py names them, e.g. moba:moba,gemma4_sliding:sliding_layer)
#       in DIR/NAME (NAME defaults to REV with / replaced), the working
#       tree's in DIR/base, each with a manifest of just those kernels, and
#       the benchmark's buffer contents and tile counts in DIR. Carry DIR
#       (and nothing else of .devbin) to the device. With no REV, DIR/base
#       alone (for gpu/profile.sh).
#   gpu/ab.sh run DIR   (on the GPU machine) runs, in $OUT (default
#       /tmp/maskc-ab), gpu/check.py and gpu/bwd_check.py (float64
#       reference, up to 1000 tokens, no Flex) on every variant side by
#       side, then gpu/bench_ext.py (forward) with each variant as --alt and
#       gpu/bwd_bench.py (forward + backward, atomic and deterministic) with
#       each as --variant, against base, ROUNDS rounds (default 2), the last
#       within LIMIT seconds of the start (default 540); it prints the
#       checks' counts, both tables and each kernel's registers and local
#       memory, and leaves fwd.txt, bwd.txt and
#       raw.tgz (the checks' logs and every JSON line) in $OUT.
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
gen)
	[ $# -ge 3 ] || { echo "usage: gpu/ab.sh gen DIR CASES [REV[=NAME[:FLAGS]] ...]" >&2; exit 2; }
	dir=$2 cases=$3
	shift 3
	rm -rf "$dir"
	mkdir -p "$dir"
	tmp=$(mktemp -d)
	trap 'for w in "$tmp"/wt-*; do [ -d "$w" ] && git worktree remove --force "$w"; done; rm -rf "$tmp"' EXIT
	CORPUS=1 EXT_DIR="$tmp/base" bash gpu/bench_ext.sh gen >"$tmp/base.log" 2>&1 || { cat "$tmp/base.log"; exit 1; }
	cp "$tmp/base/buffers.json" "$tmp/base/tiles.jsonl" "$dir/"
	builds="base=$tmp/base/gen"
	for spec in "$@"; do
		rev=${spec%%=*}
		name=${spec#*=}
		[ "$name" = "$spec" ] && name=${rev//\//_}
		flags=
		case "$name" in *:*) flags=${name#*:} name=${name%%:*} ;; esac
		git worktree add -q --detach "$tmp/wt-$name" "$rev" || exit 1
		(cd "$tmp/wt-$name" && CORPUS=1 EXT_DIR="$tmp/$name" GENFLAGS="${flags//,/ }" bash gpu/bench_ext.sh gen) >"$tmp/$name.log" 2>&1 ||
			{ cat "$tmp/$name.log"; exit 1; }
		builds="$builds $name=$tmp/$name/gen"
	done
	python3 - "$dir" "$cases" $builds <<'EOF' || exit 1
import json, os, shutil, sys
sys.path.insert(0, "gpu")
from cases import case_id
out, cases, builds = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
for b in builds:
    name, src = b.split("=", 1)
    man = json.load(open(os.path.join(src, "manifest.json")))
    kept = [k for k in man["kernels"] if case_id(k) in cases]
    missing = set(cases) - {case_id(k) for k in kept}
    if missing:
        sys.exit("ab.sh: %s has no kernel for %s" % (name, ", ".join(sorted(missing))))
    dst = os.path.join(out, name)
    os.makedirs(dst)
    for k in kept:
        for f in (k["source"], k.get("bwd_source")):
            if f:
                shutil.copy(os.path.join(src, f), dst)
    man["kernels"] = kept
    json.dump(man, open(os.path.join(dst, "manifest.json"), "w"))
    print("%s: %d kernels in %s" % (name, len(kept), dst))
EOF
	;;
run)
	[ $# -eq 2 ] || { echo "usage: gpu/ab.sh run DIR" >&2; exit 2; }
	dir=$2
	OUT=${OUT:-/tmp/maskc-ab}
	mkdir -p "$OUT"
	start=$(date +%s)
	nvidia-smi -L
	variants=$(cd "$dir" && ls -d */ | tr -d / | grep -v '^base$')
	cases=$(python3 -c "import sys; sys.path.insert(0, 'gpu'); from cases import manifest_case_ids; print(','.join(manifest_case_ids('$dir/base/manifest.json')))")
	n=0
	for v in $variants; do
		n=$((n + 1))
		MASKC_CACHE_DIR=/tmp/ab-c$n timeout 120 python3 gpu/check.py --generated "$dir/$v" --no-flex \
			--out "$OUT/check_$v.jsonl" >"$OUT/check_$v.txt" 2>&1 &
		MASKC_CACHE_DIR=/tmp/ab-b$n timeout 150 python3 gpu/bwd_check.py --generated "$dir/$v" --no-flex --max-len 1000 \
			--out "$OUT/bwd_check_$v.jsonl" >"$OUT/bwd_check_$v.txt" 2>&1 &
	done
	wait
	for v in $variants; do
		echo "$v: $(grep -E 'passed|failed' "$OUT/check_$v.txt" | tail -1); $(grep -E 'passed|failed' "$OUT/bwd_check_$v.txt" | tail -1)"
	done
	alts=$(for v in $variants; do printf '%s=%s,' "$v" "$dir/$v"; done)
	vars=$(for v in $variants; do printf -- '--variant %s=%s ' "$v" "$dir/$v"; done)
	timeout 200 python3 gpu/bench_ext.py --generated "$dir/base" --buffers "$dir/buffers.json" --tiles "$dir/tiles.jsonl" \
		--cases "$cases" --alt "${alts%,}" --rounds "${ROUNDS:-2}" --out "$OUT/fwd.jsonl" >"$OUT/fwd.txt" 2>&1
	echo "bench_ext exit $? [$(($(date +%s) - start)) s]"
	grep -A60 "^case " "$OUT/fwd.txt" | cut -c1-140
	left=$((${LIMIT:-540} - ($(date +%s) - start)))
	# shellcheck disable=SC2086 # $vars is a list of arguments
	timeout "$left" python3 gpu/bwd_bench.py --generated "$dir/base" --ext-buffers "$dir/buffers.json" --cases "$cases" \
		$vars --rounds "${ROUNDS:-2}" --out "$OUT/bwd.jsonl" >"$OUT/bwd.txt" 2>&1
	echo "bwd_bench exit $? [$(($(date +%s) - start)) s]"
	grep -E "^[a-z_0-9+]+(:[a-z_0-9]+)? +[a-z0-9/-]+ +[0-9.]+ +[0-9.]+" "$OUT/bwd.txt" |
		awk '{printf "%-34s %-12s %7s %7s %7s %6s\n", $1, $2, $4, $6, $7, $9}'
	# Registers and local memory per variant (ptxas, as the benchmarks record them): a
	# change that spills shows here before it shows in a time.
	python3 - "$OUT/fwd.txt" "$OUT/bwd.txt" <<'EOF'
import json, sys
keys = ("regs", "local_bytes", "bwd_regs", "bwd_local_bytes", "dq_regs", "ordered_regs", "ordered_local_bytes", "error")
for path in sys.argv[1:]:
    for line in open(path, errors="replace"):
        if not line.startswith("{"):
            continue
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("kind") == "kernel":
            print("%-8s %-34s %-8s %s" % (path.rsplit("/", 1)[-1][:-4], r.get("case"), r.get("variant"),
                                          " ".join("%s=%s" % (k, str(r[k])[:80]) for k in keys if k in r)))
EOF
	# A device call brings back at most eight files: the two tables, and the
	# rest (checks' logs, JSON lines) in one archive.
	(cd "$OUT" && tar czf raw.tgz --remove-files $(ls | grep -v -E '^(fwd|bwd)\.txt$|^raw\.tgz$'))
	;;
*)
	echo "usage: gpu/ab.sh gen DIR CASES [REV[=NAME[:FLAGS]] ...] | run DIR" >&2
	exit 2
	;;
esac
