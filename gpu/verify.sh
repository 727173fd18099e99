#!/usr/bin/env bash
# One device call that checks a build of main end to end: the regression run
# a session makes before it calls a kernel-touching issue resolved.
#
#   gpu/verify.sh gen   (where Go is) builds maskc's wheel into
#       .devbin/v and generates the kernels of gpu/generated.sh,
#       gpu/bwd.sh, gpu/bench_ext.sh (also with CORPUS=1, the tile-map
#       corpus) and gpu/dense.sh (.devbin/gen, .devbin/bwd-gen,
#       .devbin/bwd-genbench, .devbin/ext, .devbin/extc, .devbin/dense).
#   gpu/verify.sh run [STEP ...]   (on the GPU machine, those carried) runs,
#       in order, each under its own time limit, logs under $OUT:
#         fwd    gpu/check.py on every example (float64 reference, Flex)
#         extfwd gpu/check.py on the extended benchmark's masks (.devbin/ext)
#         bwd    gpu/bwd_check.py on every example up to 1000 tokens
#         torch  python/gpu_tests/check_torch.py with the wheel installed
#         ext    gpu/bench_ext.py (ratios against Flex, 2x16x8192)
#         bwdb   gpu/bwd_bench.py on the eight baseline cases
#         extc   gpu/bench_ext.py on every case with the corpus (.devbin/extc:
#                the baseline, extended and tile-map masks, forward over Flex)
#         bwdbx  gpu/bwd_bench.py --ext-buffers on the same 40 cases (forward
#                + backward over Flex, atomic and deterministic; BWDB_ARGS
#                appended too)
#         dense  gpu/dense.sh run: issue 15's dense table (full and causal,
#                head dims 64/128/256, S 2048/8192/32768, forward and
#                forward + backward against cuDNN and Flex; .devbin/dense)
#         seg    python/gpu_tests/check_segments.py (issue 32: document ids
#                sorted, restarting, padded, shuffled, reused and restarting per
#                row, forward and backward at S 8192 and 32768 against float64
#                and FlexAttention, status bits, timings)
#         san    gpu/bwd_sanitize.py: compute-sanitizer memcheck and racecheck
#                on the backward of three masks with buffers
#         hf     python/gpu_tests/train_hf.py (a Hugging Face Llama trained
#                200 steps through the wheel against FlexAttention)
#         hfm    python/gpu_tests/check_hf_models.py: Llama, Qwen2/3, Mistral,
#                Gemma 2/3, gpt-oss, ModernBERT (tiny configs) trained with
#                attn_implementation="maskc" against eager, and generate()
#                against eager (HFM_ARGS appended, e.g. "--models llama
#                --no-speed")
#         dec    python/gpu_tests/check_decode.py (issue 29's split-KV decode
#                kernel: Sq 1/4/16, GQA 1/4/8, head dims 64/128, causal,
#                sliding, document ids, soft-cap, O and LSE against float64,
#                a CUDA graph of a decode step), then
#                python/gpu_tests/bench_decode.py: one query row against
#                4k..128k cached keys, the decode kernel and the forward
#                kernel against SDPA flash and cuDNN, each output checked
#                against float64, HBM bandwidth (DEC_ARGS appended)
#         dropin python/gpu_tests/check_dropin.py (maskc.torch.flex_attention
#                on Python mods against torch's flex_attention and float64)
#                and python/gpu_tests/readme_flex_example.py (issue 28)
#         cp     python/gpu_tests/check_cp.py (maskc.cp's ring over 2 and 4
#                simulated ranks against the unsplit call; issue 16)
#         go     the Go path: the runtime's and the compiler's GPU tests
#                (test binaries built by gen, without cgo) and `maskc run
#                --check`, forward and --backward (atomic, deterministic,
#                dLSE, GQA), on five examples against the Go float64
#                reference, through NVRTC and the driver over purego
#         nccl   python/gpu_tests/check_cp_nccl.py: maskc.cp's ring and
#                all-to-all over torch.distributed with NCCL, one process
#                per GPU, against the unsplit call, and the ring's
#                throughput against one GPU (needs 2+ GPUs: nvidia-h200-x2)
#         reads  python/gpu_tests/check_reads.py (issue 33): a call whose
#                buffer read would fall outside is refused before any kernel
#                runs, the sandwich table at a size that fits against a
#                float64 reference, the status word's read_out_of_range bit
#         forms  python/gpu_tests/check_buffer_forms.py (issue 27 item 2): a
#                0-d buffer and floor-divided extents, forward and backward
#                against float64, a floor extent's partial block refused
#         meg    python/gpu_tests/train_megatron.py (a tiny Megatron-core GPT,
#                local attention vs maskc's core attention vs CP=2 simulated);
#                needs Megatron-LM's megatron/ package carried (never
#                committed) under $MEGATRON_SRC, default .devbin/megatron_src
#       Steps joined by + (fwd+bwd+torch) run at the same time, each with
#       its own maskc cache directory, their summaries printed in order
#       when all have ended: for correctness checks only, never for the
#       benchmarks, whose timings need the GPU to themselves.
#       EXT_ARGS and BWDB_ARGS are appended to the two benchmarks' command
#       lines (e.g. EXT_ARGS="--alt NAME=DIR@CASE+CASE": another build timed
#       against the same FlexAttention figures).
#       Default: the first six. Exit status: the number of steps that failed.
#       VERIFY_PACK=1 packs everything the steps wrote under $OUT into one
#       $OUT/logs.tgz when they have ended: the device call brings back at
#       most 8 files (two folders down), and the steps write dozens.
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
gen)
	set -e
	bash gpu/generated.sh gen
	bash gpu/bwd.sh gen
	bash gpu/bench_ext.sh gen >/dev/null
	CORPUS=1 EXT_DIR=.devbin/extc bash gpu/bench_ext.sh gen >/dev/null
	rm -rf .devbin/v
	mkdir -p .devbin/v
	bash gpu/dense.sh gen
	# The binary travels inside the wheel only: the carried folders must
	# stay under the device's 64 MiB.
	bin=$(mktemp -d)
	CGO_ENABLED=0 go build -o "$bin/maskc" ./cmd/maskc
	python3 python/build_wheel.py -o .devbin/v --binary "$bin/maskc"
	# The Go GPU tests (step go), stripped and packed: the carry limit.
	CGO_ENABLED=0 go test -c -ldflags="-s -w" -o "$bin/runtime.test" ./runtime
	CGO_ENABLED=0 go test -c -ldflags="-s -w" -o "$bin/compiler.test" ./compiler
	tar czf .devbin/v/gotests.tgz -C "$bin" runtime.test compiler.test
	rm -rf "$bin"
	git rev-parse HEAD >.devbin/v/commit
	;;
run)
	shift
	steps=${*:-fwd extfwd bwd torch ext bwdb}
	OUT=${OUT:-/tmp/maskc-verify}
	mkdir -p "$OUT"
	nvidia-smi -L
	echo "commit $(cat .devbin/v/commit 2>/dev/null)"
	step() { # name limit command...
		local name=$1 limit=$2
		shift 2
		local t0=$SECONDS
		timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
		local rc=$?
		echo "== $name exit $rc ($((SECONDS - t0)) s)"
		[ $rc -eq 0 ] || failed=$((failed + 1))
	}
	install_wheel() {
		[ -d /tmp/site/maskc ] && return
		pip install -q --no-index --no-deps --target /tmp/site .devbin/v/maskc-*.whl >"$OUT/pip.txt" 2>&1 || echo "pip failed"
	}
	rm -rf /tmp/site
	one() { # step name; prints its summary, returns 1 if it failed
		local s=$1 failed=0
		export MASKC_CACHE_DIR=/tmp/maskc-cache-$s
		case $s in
		fwd)
			step fwd "${FWD_TIMEOUT:-150}" python3 gpu/check.py --generated .devbin/gen --out "$OUT/check.jsonl"
			tail -6 "$OUT/fwd.txt"
			;;
		extfwd)
			step extfwd "${FWD_TIMEOUT:-150}" python3 gpu/check.py --generated .devbin/ext/gen --out "$OUT/check_ext.jsonl"
			tail -3 "$OUT/extfwd.txt"
			;;
		bwd)
			step bwd "${BWD_TIMEOUT:-150}" python3 gpu/bwd_check.py --generated .devbin/bwd-gen --max-len 1000 --out "$OUT/bwd_check.jsonl"
			grep -E "FAIL|COMPILE|passed" "$OUT/bwd.txt" | tail -12
			;;
		torch)
			install_wheel
			step torch "${TORCH_TIMEOUT:-200}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/check_torch.py --out "$OUT/check_torch.jsonl"
			tail -4 "$OUT/torch.txt" | cut -c1-400
			;;
		ext)
			step ext "${EXT_TIMEOUT:-150}" python3 gpu/bench_ext.py --generated .devbin/ext/gen --buffers .devbin/ext/buffers.json \
				--tiles .devbin/ext/tiles.jsonl --out "$OUT/bench_ext.jsonl" ${EXT_ARGS:-}
			tail -32 "$OUT/ext.txt"
			;;
		hf)
			install_wheel
			step hf "${HF_TIMEOUT:-200}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/train_hf.py --out "$OUT"
			tail -6 "$OUT/hf.txt" | cut -c1-400
			;;
		hfm)
			install_wheel
			step hfm "${HFM_TIMEOUT:-540}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/check_hf_models.py --out "$OUT" ${HFM_ARGS:-}
			sed -n '/^model  /,$p' "$OUT/hfm.txt" | cut -c1-300
			;;
		dec)
			install_wheel
			step decc "${DEC_TIMEOUT:-300}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/check_decode.py --out "$OUT/check_decode.jsonl"
			grep -E "^FAIL|poisoned|^PASS" "$OUT/decc.txt" | tail -8 | cut -c1-400
			step dec "${DEC_TIMEOUT:-300}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/bench_decode.py --out "$OUT" ${DEC_ARGS:-}
			sed -n '/^      L /,$p' "$OUT/dec.txt" | cut -c1-300
			;;
		dropin)
			install_wheel
			step dropin "${DROPIN_TIMEOUT:-400}" bash -c 'PYTHONPATH=/tmp/site python3 python/gpu_tests/check_dropin.py --out "$0"; r=$?
				PYTHONPATH=/tmp/site python3 python/gpu_tests/readme_flex_example.py || r=1; exit $r' "$OUT"
			grep -E "PASS|FAIL|Error|error" "$OUT/dropin.txt" | tail -26 | cut -c1-300
			;;
		cp)
			install_wheel
			step cp "${CP_TIMEOUT:-120}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/check_cp.py --seq 1024 --out "$OUT"
			tail -19 "$OUT/cp.txt" | cut -c1-300
			;;
		nccl)
			install_wheel
			step nccl "${NCCL_TIMEOUT:-240}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/check_cp_nccl.py --out "$OUT"
			tail -20 "$OUT/nccl.txt" | cut -c1-300
			;;
		reads)
			install_wheel
			step reads "${READS_TIMEOUT:-150}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/check_reads.py --out "$OUT"
			tail -8 "$OUT/reads.txt" | cut -c1-400
			;;
		forms)
			install_wheel
			step forms "${FORMS_TIMEOUT:-150}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/check_buffer_forms.py --out "$OUT"
			tail -12 "$OUT/forms.txt" | cut -c1-300
			;;
		meg)
			install_wheel
			step meg "${MEG_TIMEOUT:-150}" env PYTHONPATH="/tmp/site:${MEGATRON_SRC:-.devbin/megatron_src}" \
				python3 python/gpu_tests/train_megatron.py --out "$OUT"
			grep -v -i warn "$OUT/meg.txt" | tail -8 | cut -c1-300
			;;
		go)
			install_wheel
			step go "${GO_TIMEOUT:-300}" bash gpu/verify_go.sh /tmp/site/maskc/bin/maskc .devbin/v/gotests.tgz
			grep -E "^(--- |ok|FAIL|PASS|==)" "$OUT/go.txt" | tail -24
			;;
		dense)
			step dense "${DENSE_TIMEOUT:-160}" env OUT="$OUT/dense" bash gpu/dense.sh run
			tail -40 "$OUT/dense.txt"
			;;
		seg)
			install_wheel
			step seg "${SEG_TIMEOUT:-330}" env PYTHONPATH=/tmp/site python3 python/gpu_tests/check_segments.py --out "$OUT/check_segments.jsonl"
			tail -15 "$OUT/seg.txt" | cut -c1-300
			;;
		san)
			step san "${SAN_TIMEOUT:-120}" python3 gpu/bwd_sanitize.py --generated .devbin/bwd-gen \
				--cases head_scaled,biased_layer,bias_window --out "$OUT"
			tail -4 "$OUT/san.txt"
			;;
		bwdb)
			step bwdb "${BWDB_TIMEOUT:-150}" python3 gpu/bwd_bench.py --generated .devbin/bwd-genbench --out "$OUT/bwd_bench.jsonl" ${BWDB_ARGS:-}
			tail -14 "$OUT/bwdb.txt"
			;;
		extc)
			step extc "${EXT_TIMEOUT:-150}" python3 gpu/bench_ext.py --generated .devbin/extc/gen --buffers .devbin/extc/buffers.json \
				--tiles .devbin/extc/tiles.jsonl --out "$OUT/bench_extc.jsonl" ${EXT_ARGS:-}
			tail -45 "$OUT/extc.txt"
			;;
		bwdbx)
			step bwdbx "${BWDBX_TIMEOUT:-330}" python3 gpu/bwd_bench.py --generated .devbin/extc/gen \
				--ext-buffers .devbin/extc/buffers.json --out "$OUT/bwd_bench_ext.jsonl" ${BWDB_ARGS:-}
			grep -E " atomic | det " "$OUT/bwdbx.txt" | awk '{print $1, $2, $3, $9}' | tail -80
			;;
		*)
			echo "unknown step $s" >&2
			failed=$((failed + 1))
			;;
		esac
		return $failed
	}
	failed=0
	for group in $steps; do
		if [ "${group#*+}" = "$group" ]; then
			one "$group" || failed=$((failed + 1))
			continue
		fi
		install_wheel # once, before the steps that share it start
		pids=()
		for s in ${group//+/ }; do
			one "$s" >"$OUT/summary-$s.txt" 2>&1 &
			pids+=("$!")
		done
		i=0
		for s in ${group//+/ }; do
			wait "${pids[$i]}" || failed=$((failed + 1))
			cat "$OUT/summary-$s.txt"
			i=$((i + 1))
		done
	done
	if [ "${VERIFY_PACK:-0}" = 1 ]; then
		(cd "$OUT" && files=$(ls -A | grep -v -x logs.tgz) && tar czf logs.tgz --remove-files $files) ||
			echo "packing $OUT failed" >&2
	fi
	exit $failed
	;;
*)
	echo "usage: gpu/verify.sh gen | run [fwd|extfwd|bwd|torch|ext|bwdb|hf|hfm|dec|cp|reads|forms|meg|san|dense|go|nccl ...]" >&2
	exit 2
	;;
esac
