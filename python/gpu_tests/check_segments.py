"""Issue 32 on an NVIDIA GPU: document ids in any order give the mask as written.

    pip install --no-index --no-deps --target /tmp/site dist/maskc-*.whl
    PYTHONPATH=/tmp/site python3 python/gpu_tests/check_segments.py [--out LOG.jsonl] [--seqs 8192,32768]
    python3 python/gpu_tests/check_segments.py --self-test   # on the host (CPU torch): the reference's math

Through the package (maskc.torch, backend="generated"), for B=2, H=16, D=128
(gpu/bwd_bench.py's shape) at each --seqs length, with document ids that are
sorted, restarting (counting from 0 again halfway), padded (-1 runs between
and after documents), shuffled (documents in a random order) and reused (two
ids alternating over separate documents) in examples/document_causal.flex's
`doc: i32[KV]`, and restarting per row of a `doc: i32[B, KV]` buffer (rows):
forward and backward (atomic dQ) with fresh random inputs and the outputs'
memory poisoned with NaN beforehand, against a float64 reference of the mask
as written (two (b, h) slices, every row and key) and against
torch.compile(flex_attention) with a BlockMask of the same mask_mod (every
head). Relative errors (norm of the difference over the norm of the
reference) must stay below 1e-2; the kernel's status() must report
segments_unsorted exactly for the orders that are not sorted per row. Each
case also times maskc and FlexAttention, forward and forward + backward
(CUDA events, median of 10): sorted ids are the run-22 document case.
Prints one line per case and a final PASS or FAIL line; exits 1 on FAIL.
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOL = 1e-2
B, H, D = 2, 16, 128
ROWS_FLEX = """buffer doc: i32[B, KV]
mask same_row_doc(b, h, q, kv) = (q >= kv) & (doc[b, q] == doc[b, kv])
attention rows_layer {
    mask = same_row_doc
    layout = bshd
    dtype = bf16
    head_dim = 128
}
"""
ORDERS = ("sorted", "restarting", "padded", "shuffled", "reused", "rows")


def doc_lengths(n, gen, lo=64, hi=2048):
    lens, rem = [], n
    while rem > 0:
        l = min(rem, int(torch.randint(lo, hi, (1,), generator=gen)))
        lens.append(l)
        rem -= l
    return lens


def ids_for(order, n, gen, lo=64, hi=2048):
    """The ids of one row of n tokens in order (see the module doc), of
    documents lo to hi tokens long."""
    lens = doc_lengths(n, gen, lo, hi)
    k = len(lens)
    if order in ("sorted", "rows"):
        ids = list(range(k))
    elif order == "restarting":
        ids = [i % max(1, (k + 1) // 2) for i in range(k)]
    elif order == "padded":  # documents alternate with -1 runs; the last run is padding too
        ids = [-1 if i % 2 == 1 or i == k - 1 else i for i in range(k)]
    elif order == "shuffled":
        ids = torch.randperm(k, generator=gen).tolist()
        if k > 1 and ids == sorted(ids):
            ids = ids[::-1]
    elif order == "reused":
        ids = [i % 2 for i in range(k)]
    else:
        raise ValueError(order)
    return torch.repeat_interleave(torch.tensor(ids), torch.tensor(lens)).to(torch.int32)


def sorted_rows(doc):
    d = doc.reshape(-1, doc.shape[-1])
    return bool((d[:, 1:] >= d[:, :-1]).all())


def keep_rows(doc, b, q0, q1, S):
    """The mask as written for rows q0..q1-1 of batch b: kv <= q and equal ids."""
    d = doc[b] if doc.dim() == 2 else doc
    q = torch.arange(q0, q1, device=d.device)[:, None]
    kv = torch.arange(S, device=d.device)[None, :]
    return (kv <= q) & (d[q0:q1, None] == d[None, :])


def reference(q, k, v, do, doc, b, h, scale, chunk=1024):
    """float64 (o, lse, dq, dk, dv) of one (b, h) slice (q, k, v, do: [S, D]),
    computed q rows in chunks (no S x S matrix at once): o = P v, dV = P^T dO,
    dS = P * (dO V^T - rowsum(dO * O)), dQ = dS K scale, dK = dS^T Q scale."""
    q, k, v, do = (x.double() for x in (q, k, v, do))
    S = q.shape[0]
    o, lse, dq = torch.empty_like(q), torch.empty(S, dtype=torch.float64, device=q.device), torch.empty_like(q)
    dk, dv = torch.zeros_like(k), torch.zeros_like(v)
    for q0 in range(0, S, chunk):
        q1 = min(S, q0 + chunk)
        keep = keep_rows(doc, b, q0, q1, S)
        s = (q[q0:q1] @ k.T) * scale
        s = s.masked_fill(~keep, float("-inf"))
        l = torch.logsumexp(s, -1)  # every row keeps its own key
        p = torch.exp(s - l[:, None])
        oc = p @ v
        o[q0:q1], lse[q0:q1] = oc, l
        dp = do[q0:q1] @ v.T
        ds = p * (dp - (do[q0:q1] * oc).sum(-1, keepdim=True))
        dq[q0:q1] = (ds @ k) * scale
        dk += (ds.T @ q[q0:q1]) * scale
        dv += p.T @ do[q0:q1]
    return o, lse, dq, dk, dv


def rel(a, b):
    a, b = a.double(), b.double()
    if not torch.isfinite(a).all():
        return float("inf")
    d = b.norm().item()
    return (a - b).norm().item() / d if d > 0 else (a - b).norm().item()


def self_test():
    """The chunked reference against float64 autograd of a dense softmax
    attention, on the CPU, for every order (small sizes)."""
    gen = torch.Generator().manual_seed(3)
    worst = 0.0
    for order in ORDERS:
        S = 300
        rows = [ids_for(order, S, gen, 5, 60) for _ in range(2)]
        doc = torch.stack(rows) if order == "rows" else rows[0]
        if sorted_rows(doc) != (order in ("sorted", "rows")):
            print("FAIL: %s ids came out %s" % (order, "sorted" if sorted_rows(doc) else "unsorted"))
            return 1
        for b in range(2):
            q, k, v, do = (torch.randn(S, 16, generator=gen, dtype=torch.float64) for _ in range(4))
            qa, ka, va = (x.clone().requires_grad_() for x in (q, k, v))
            keep = keep_rows(doc, b, 0, S, S)
            s = (qa @ ka.T * 0.25).masked_fill(~keep, float("-inf"))
            o = torch.softmax(s, -1) @ va
            (o * do).sum().backward()
            got = reference(q, k, v, do, doc, b, 0, 0.25, chunk=64)
            want = (o.detach(), torch.logsumexp(s.detach(), -1), qa.grad, ka.grad, va.grad)
            worst = max(worst, max(rel(x, y) for x, y in zip(got, want)))
        print("self-test %-10s sorted=%s" % (order, sorted_rows(doc)))
    ok = worst < 1e-10
    print("%s: chunked reference vs dense autograd, worst relative error %.2e" % ("PASS" if ok else "FAIL", worst))
    return 0 if ok else 1


def poison(nbytes_list):
    """Fill soon-to-be-reused allocator blocks with NaN bytes: outputs that a
    kernel fails to write show up as NaN."""
    ts = [torch.full((n // 2 + 8,), float("nan"), dtype=torch.float16, device="cuda") for n in nbytes_list]
    del ts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="check_segments.jsonl")
    ap.add_argument("--seqs", default="8192,32768")
    ap.add_argument("--orders", default=",".join(ORDERS))
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()

    import maskc.torch as mt
    # the GPU scripts' timer (gpu/harness.py: tooling beside the scripts, not in the wheel)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "gpu"))
    from harness import time_ms
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    log = open(a.out, "w")

    def emit(**kw):
        log.write(json.dumps(kw) + "\n")
        log.flush()

    emit(kind="env", torch=torch.__version__, gpu=torch.cuda.get_device_name())
    docs_attn = mt.load(os.path.join(REPO, "examples", "document_causal.flex")).attention("packed_layer")
    tmp = tempfile.mkdtemp()
    with open(os.path.join(tmp, "rows.flex"), "w") as f:
        f.write(ROWS_FLEX)
    rows_attn = mt.load(os.path.join(tmp, "rows.flex")).attention("rows_layer")
    unsorted_bit = docs_attn.generated().man.status_bits["segments_unsorted"]
    torch._dynamo.config.cache_size_limit = max(64, torch._dynamo.config.cache_size_limit)
    fa = torch.compile(flex_attention)
    mods = {}

    def flex_mods(S, rank):
        """(mask_mod, the ids tensor it reads) for ids of rank 1 ([S]) or 2 ([B, S])."""
        if (S, rank) not in mods:
            held = torch.zeros((S,) if rank == 1 else (B, S), dtype=torch.int32, device="cuda")
            if rank == 1:
                mm = lambda bb, hh, qi, ki: (qi >= ki) & (held[qi] == held[ki])
            else:
                mm = lambda bb, hh, qi, ki: (qi >= ki) & (held[bb, qi] == held[bb, ki])
            mods[S, rank] = (mm, held)
        return mods[S, rank]
    scale = 1.0 / math.sqrt(D)
    gen = torch.Generator().manual_seed(32)
    failed = 0
    print("%-6s %-10s %9s %9s %9s %9s %9s %9s %7s %7s %7s %7s" % (
        "S", "ids", "o~f64", "dq~f64", "dk~f64", "dv~f64", "o~flex", "dq~flex", "fwd_ms", "flexfwd", "fb_ms", "flexfb"))
    for S in [int(x) for x in a.seqs.split(",")]:
        for order in a.orders.split(","):
            t0 = time.time()
            attn = rows_attn if order == "rows" else docs_attn
            rows = [ids_for(order, S, gen) for _ in range(B)]
            doc = (torch.stack(rows) if order == "rows" else rows[0]).cuda()
            q, k, v, do = (torch.randn(B, S, H, D, generator=gen).to(torch.bfloat16).cuda() for _ in range(4))
            res = dict(kind="case", S=S, ids=order, sorted=sorted_rows(doc))
            ok = res["sorted"] == (order in ("sorted", "rows"))  # the case tests what it says
            try:
                qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
                attn.reset_status()
                poison([q.numel() * 2] * 4)
                out = attn(qg, kg, vg, buffers={"doc": doc}, backend="generated")
                out.backward(do)
                torch.cuda.synchronize()
                st = attn.status()
                res["status"] = st
                if bool(st & unsorted_bit) == res["sorted"]:
                    res["status_error"] = "segments_unsorted %s for %s ids" % (bool(st & unsorted_bit), order)
                    ok = False
                got = {"o": out.detach(), "dq": qg.grad, "dk": kg.grad, "dv": vg.grad}
                # float64 reference of the mask as written on two (b, h) slices
                errs = {n: 0.0 for n in got}
                for b, h in ((0, 0), (B - 1, H - 1)):
                    ref = reference(q[b, :, h], k[b, :, h], v[b, :, h], do[b, :, h], doc, b, h, scale)
                    for n, r in zip(("o", "lse", "dq", "dk", "dv"), ref):
                        if n in got:
                            errs[n] = max(errs[n], rel(got[n][b, :, h], r))
                res["f64_rel_err"] = errs
                ok = ok and all(e < TOL for e in errs.values())
                # FlexAttention with the same mask_mod, every head (one mask_mod per
                # buffer shape and length, reading a persistent tensor: no recompiles)
                mm, held = flex_mods(S, doc.dim())
                held.copy_(doc)
                bm = create_block_mask(mm, B if doc.dim() == 2 else None, None, S, S, device="cuda")
                fq, fk, fv = (x.transpose(1, 2).clone().requires_grad_() for x in (q, k, v))
                fo = fa(fq, fk, fv, block_mask=bm, scale=scale)
                fo.backward(do.transpose(1, 2))
                flex = {"o": fo.detach().transpose(1, 2), "dq": fq.grad.transpose(1, 2),
                        "dk": fk.grad.transpose(1, 2), "dv": fv.grad.transpose(1, 2)}
                res["flex_rel_err"] = {n: rel(got[n], flex[n]) for n in got}
                ok = ok and all(e < TOL for e in res["flex_rel_err"].values())
                # timings: maskc (the segments check included) and FlexAttention
                fwd = lambda: attn(q, k, v, buffers={"doc": doc}, backend="generated")

                def fb():
                    o2 = attn(qg, kg, vg, buffers={"doc": doc}, backend="generated")
                    o2.backward(do)

                def ffb():
                    o2 = fa(fq, fk, fv, block_mask=bm, scale=scale)
                    o2.backward(do.transpose(1, 2))
                with torch.no_grad():
                    res["maskc_fwd_ms"] = time_ms(fwd, iters=10, warmup=1)
                    res["flex_fwd_ms"] = time_ms(lambda: fa(fq, fk, fv, block_mask=bm, scale=scale), iters=10, warmup=1)
                res["maskc_fwdbwd_ms"], res["flex_fwdbwd_ms"] = time_ms(fb, iters=10, warmup=1), time_ms(ffb, iters=10, warmup=1)
                res["ratio_fwd"] = round(res["flex_fwd_ms"] / res["maskc_fwd_ms"], 3)
                res["ratio_fwdbwd"] = round(res["flex_fwdbwd_ms"] / res["maskc_fwdbwd_ms"], 3)
            except Exception as e:  # reported, counted, the next case runs
                res["error"] = repr(e)[:800]
                ok = False
            res["ok"], res["s"] = ok, round(time.time() - t0, 1)
            failed += not ok
            emit(**res)
            fe, xe = res.get("f64_rel_err", {}), res.get("flex_rel_err", {})
            print("%-6d %-10s %9.2e %9.2e %9.2e %9.2e %9.2e %9.2e %7.3f %7.3f %7.3f %7.3f %s%s" % (
                S, order, fe.get("o", math.inf), fe.get("dq", math.inf), fe.get("dk", math.inf), fe.get("dv", math.inf),
                xe.get("o", math.inf), xe.get("dq", math.inf), res.get("maskc_fwd_ms", math.nan),
                res.get("flex_fwd_ms", math.nan), res.get("maskc_fwdbwd_ms", math.nan),
                res.get("flex_fwdbwd_ms", math.nan), "ok" if ok else "FAIL",
                (" " + res.get("error", res.get("status_error", ""))) if not ok else ""), flush=True)
    print("%s: %d case(s) failed" % ("PASS" if failed == 0 else "FAIL", failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
