"""Decode attention today: one new query row per sequence against a long KV cache.

    PYTHONPATH=/tmp/site python3 python/gpu_tests/bench_decode.py [--lens 4096,32768,131072]
        [--batches 1,8,32] [--masks causal,sliding] [--flex] [--out DIR]

What maskc.transformers runs for a generate() step: the generated forward
kernel with the position frame (query at q_offset = L - 1, keys 0..L-1),
head dim 128, 32 query heads over 4 KV heads (GQA 8:1), bf16, causal or a
4096-token sliding window; against SDPA's flash and cuDNN back ends
(enable_gqa; the sliding window as a boolean mask where a back end takes
one) and, with --flex, flex_attention's decoding (torch.compile, a block
mask at the query's offset; compiles per shape). Each case: median of CUDA
event timings, the keys it must read (L, or the window), HBM bandwidth
reached (q, the kept K and V, out) and its share of the H200's 4.8 TB/s.

Each maskc output is first checked against a float64 reference on the
first batch row (max abs error <= 2e-2, NaN fails), so a fast wrong kernel
cannot pass. There is no split-KV decode kernel yet: this
table is the baseline it has to beat (issue 29 asks >= 70% of HBM
bandwidth at >= 32k cached tokens). Prints a table; exits 1 when a check
fails.
"""
import argparse
import json
import os
import sys

import torch

import maskc.torch as mt
from maskc.transformers import block_text

H, HKV, D = 32, 4, 128
WINDOW = 4096
HBM = 4.8e12  # bytes/s, H200 HBM3e
EXPR = {"causal": "(kv <= q)", "sliding": "((kv <= q) & (kv > q - %d))" % WINDOW}


def timed(fn, iters=20):
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def reference(q, k, v, mask_name, L):
    """float64 attention of batch row 0's single query at position L - 1."""
    q0, k0, v0 = q[0, :, 0].double(), k[0].double(), v[0].double()   # [H, D], [HKV, L, D]
    k0 = k0.repeat_interleave(H // HKV, 0)
    v0 = v0.repeat_interleave(H // HKV, 0)
    s = torch.einsum("hd,hld->hl", q0, k0) / D ** 0.5
    pos = torch.arange(L, device=q.device)
    keep = pos <= L - 1
    if mask_name == "sliding":
        keep &= pos > L - 1 - WINDOW
    s = s.masked_fill(~keep, float("-inf"))
    return torch.einsum("hl,hld->hd", torch.softmax(s, -1), v0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lens", default="4096,32768,131072")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--masks", default="causal,sliding")
    ap.add_argument("--flex", action="store_true", help="also flex_attention (compiles per shape: slow)")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    a = ap.parse_args()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    d = os.path.join(a.out, "bench_decode_flex")
    os.makedirs(d, exist_ok=True)
    attns = {}
    for m in a.masks.split(","):
        p = os.path.join(d, m + ".flex")
        with open(p, "w") as f:
            f.write(block_text(EXPR[m], [], D, "bf16", comment="decode " + m))
        attns[m] = mt.load(p).attention("layer")
    rows, fails = [], 0
    log = open(os.path.join(a.out, "bench_decode.jsonl"), "w")
    for L in map(int, a.lens.split(",")):
        for B in map(int, a.batches.split(",")):
            g = torch.Generator(device="cuda").manual_seed(L * 100 + B)
            q = torch.randn(B, H, 1, D, device="cuda", dtype=torch.bfloat16, generator=g)
            k = torch.randn(B, HKV, L, D, device="cuda", dtype=torch.bfloat16, generator=g)
            v = torch.randn(B, HKV, L, D, device="cuda", dtype=torch.bfloat16, generator=g)
            for m in a.masks.split(","):
                kept = L if m == "causal" else min(L, WINDOW)
                nbytes = (2 * B * H * D + 2 * B * HKV * kept * D) * 2
                frame = [L - 1, 0, 0, L, L, 0]
                res = dict(L=L, B=B, mask=m, kept_keys=kept)
                out = attns[m](q, k, v, layout="bhsd", frame=frame)
                err = float((out[0, :, 0].double() - reference(q, k, v, m, L)).abs().max())
                res["maskc_max_err"] = err
                ok = err <= 2e-2  # False for NaN too
                fails += not ok
                times = {"maskc": timed(lambda: attns[m](q, k, v, layout="bhsd", frame=frame))}
                amask = None
                if m == "sliding":
                    pos = torch.arange(L, device="cuda")
                    amask = (pos > L - 1 - WINDOW)[None, None, None, :]
                for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                    try:
                        with sdpa_kernel([be]):
                            fn = (lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=amask, enable_gqa=True))
                            times[name] = timed(fn)
                    except Exception as e:  # a back end that refuses this case
                        times[name] = "n/a (%s)" % str(e).split("\n")[0][:60]
                if a.flex:
                    try:
                        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
                        flex = torch.compile(flex_attention)
                        off = L - 1
                        if m == "causal":
                            def mm(b, h, qi, kv):
                                return kv <= qi + off
                        else:
                            def mm(b, h, qi, kv):
                                return (kv <= qi + off) & (kv > qi + off - WINDOW)
                        bm = create_block_mask(mm, None, None, 1, L, device="cuda")
                        times["flex"] = timed(lambda: flex(q, k, v, block_mask=bm, enable_gqa=True))
                    except Exception as e:
                        times["flex"] = "n/a (%s)" % str(e).split("\n")[0][:60]
                res["seconds"] = times
                res["hbm_fraction"] = {n: nbytes / t / HBM for n, t in times.items() if isinstance(t, float)}
                log.write(json.dumps(res) + "\n")
                log.flush()
                rows.append((L, B, m, ok, err, times, res["hbm_fraction"]))
                print(json.dumps(res), flush=True)
            del q, k, v
            torch.cuda.empty_cache()
    impls = ["maskc", "flash", "cudnn"] + (["flex"] if a.flex else [])
    print("\n%7s %3s %-8s %-5s " % ("L", "B", "mask", "check") +
          " ".join("%-22s" % (n + " us (HBM%)") for n in impls))
    for L, B, m, ok, err, times, frac in rows:
        cells = []
        for n in impls:
            t = times.get(n)
            cells.append("%-22s" % ("%.1f (%.0f%%)" % (t * 1e6, 100 * frac[n]) if isinstance(t, float)
                                    else (t or "-")[:22]))
        print("%7d %3d %-8s %-5s " % (L, B, m, "ok" if ok else "FAIL") + " ".join(cells))
    print("FAILED %d" % fails if fails else "ALL CHECKS PASS (timings above are the baseline, not a target met)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
