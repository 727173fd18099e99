#!/usr/bin/env bash
# Nsight Compute's stall samples of one launch of a generated kernel, per
# instruction: where a kernel's time goes when the benchmarks only say how
# much (run 46a found MoBA-16's full-tile reads this way).
#
#   gpu/profile.sh DIR KERNEL [ENTRY]   (on the GPU machine) runs one
#       training step of KERNEL (a kernel name of DIR's manifest; DIR is
#       genkernels output such as gpu/ab.sh's DIR/base, the benchmark's
#       buffer contents read from DIR/../buffers.json where present) under
#       ncu (gpu/ncu_step.py, B, H, S = SHAPE, default 2,16,8192;
#       DETERMINISTIC=1 for the deterministic backward) and profiles the
#       launches of ENTRY (default maskc_attn_fwd; maskc_attn_bwd,
#       maskc_attn_bwd_dq, maskc_tile_flags, ...): SourceCounters,
#       WarpStateStats, SpeedOfLight. It writes $OUT/KERNEL.ENTRY.txt
#       (gpu/ncu_summary.py --sass: the runs of instructions with the most
#       samples and why they wait) and, with KEEP=1, the report.
set -u
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: gpu/profile.sh DIR KERNEL [ENTRY]" >&2; exit 2; }
dir=$1 kernel=$2 entry=${3:-maskc_attn_fwd}
OUT=${OUT:-/tmp/maskc-profile}
mkdir -p "$OUT"
args=(--generated "$dir" --kernel "$kernel" --shape "${SHAPE:-2,16,8192}")
[ -f "$dir/../buffers.json" ] && args+=(--buffers "$dir/../buffers.json")
[ "${DETERMINISTIC:-0}" = 1 ] && args+=(--deterministic)
rep="$OUT/$kernel.$entry"
timeout "${PROFILE_TIMEOUT:-300}" ncu --profile-from-start off --section SourceCounters --section WarpStateStats \
	--section SpeedOfLight -k "regex:^$entry\$" --export "$rep" -f \
	python3 gpu/ncu_step.py "${args[@]}" >"$rep.log" 2>&1
status=$?
tail -2 "$rep.log"
if [ $status -ne 0 ] || [ ! -f "$rep.ncu-rep" ]; then
	echo "profile.sh: ncu exit $status, no report (log: $rep.log)" >&2
	exit 1
fi
timeout 60 python3 gpu/ncu_summary.py --sass "$rep.ncu-rep" --kernel "$entry" --top "${TOP:-15}" >"$rep.txt" 2>&1
head -45 "$rep.txt" | cut -c1-170
[ "${KEEP:-0}" = 1 ] || rm -f "$rep.ncu-rep"
