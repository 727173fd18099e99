"""Issue 29's split-KV decode kernel on an NVIDIA GPU, against float64.

    pip install --no-index --no-deps --target /tmp/site dist/maskc-*.whl
    PYTHONPATH=/tmp/site python3 python/gpu_tests/check_decode.py [--out LOG.jsonl]
    python3 python/gpu_tests/check_decode.py --self-test   # on the host (CPU torch): the reference's math

Through the package (maskc.torch, backend="generated", the position frame of
a decode step: the Sq query rows at positions L - Sq .. L - 1 of an attention
of L keys), for Sq in {1, 4, 16}, GQA 1, 4 and 8 (H = 8 over HKV = 8, 2, 1),
head dims 64 and 128, bf16, B = 2, cache lengths L = 300 (one split, a
ragged last tile) and 5000 (several splits), and the masks causal, a sliding
window of 256 keys, document ids (a `segments` buffer of random document
lengths: a query sees its own document's keys up to itself) and causal with
a tanh soft-cap score: the output and the LSE (return_lse) of the decode
kernel (maskc.decode: Sq <= 16) and of the forward kernel (MASKC_DECODE=0)
against a float64 reference of every batch row, head and query, with fresh
random inputs and the outputs' memory poisoned with NaN through torch's
caching allocator (a freed NaN block of the same size is what the call's
output takes next: the script checks the pointers and counts the cases that
were poisoned). Max abs error of O <= 2e-2, of the LSE <= 5e-3.
Then a CUDA graph of a decode step (causal, Sq = 1, B = 4, L = 20000, GQA 8,
D = 128, several splits) captured once and replayed on new contents of the
same q, k, v tensors: the replay against float64 and bitwise against an eager
call. Prints one line per case and a final PASS or FAIL line; exits 1 on FAIL.
"""
import argparse
import concurrent.futures
import json
import math
import os
import sys
import tempfile

import torch

B, H, W, CAP, STRIDE = 2, 8, 256, 20.0, 256
TOL_O, TOL_LSE = 2e-2, 5e-3
# strided: a remainder condition the decode walk filters per tile (MASKC_DEC_FILTER, issue 27).
MASKS = ("causal", "sliding", "document", "softcap", "strided")


def flex_text(mask, head_dim):
    """The .flex text of one block: bhsd, bf16, head_dim."""
    decl = {"causal": ("", "mask m(b, h, q, kv) = q >= kv\n"),
            "sliding": ("param W = %d\n" % W, "mask m(b, h, q, kv) = (q >= kv) & (q - kv < W)\n"),
            "document": ("buffer doc: i32[KV] segments\n", "mask m(b, h, q, kv) = (q >= kv) & (doc[q] == doc[kv])\n"),
            "softcap": ("param CAP = %r\n" % CAP,
                        "mask m(b, h, q, kv) = q >= kv\nscore s(score, b, h, q, kv) = CAP * tanh(score / CAP)\n"),
            "strided": ("param S = %d\n" % STRIDE,
                        "mask m(b, h, q, kv) = kv <= q and (q - kv < S or (q - kv) % S == 0)\n")}[mask]
    score = "    score = s\n" if mask == "softcap" else ""
    return ("# issue 29 decode check: %s\n%s%sattention layer {\n    mask = m\n%s    layout = bhsd\n    dtype = bf16\n"
            "    head_dim = %d\n}\n" % (mask, decl[0], decl[1], score, head_dim))


def reference(q, k, v, mask, L, doc=None):
    """float64 (O [B, H, Sq, D], LSE [B, H, Sq]) of queries at positions L - Sq ..
    L - 1 over keys 0 .. L - 1; q [B, H, Sq, D], k and v [B, HKV, L, D]."""
    Bn, Hn, Sq, D = q.shape
    HKV = k.shape[1]
    G = Hn // HKV
    qd = q.double().reshape(Bn, HKV, G, Sq, D)
    s = torch.einsum("bkgqd,bkld->bkgql", qd, k.double()) / math.sqrt(D)
    if mask == "softcap":
        s = CAP * torch.tanh(s / CAP)
    pq = torch.arange(L - Sq, L, device=q.device)[:, None]
    pk = torch.arange(L, device=q.device)[None, :]
    keep = pk <= pq
    if mask == "sliding":
        keep = keep & (pq - pk < W)
    if mask == "document":
        d = doc.long()
        keep = keep & (d[pq] == d[pk])
    if mask == "strided":
        keep = keep & ((pq - pk < STRIDE) | ((pq - pk) % STRIDE == 0))
    s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, -1)
    o = torch.einsum("bkgql,bkld->bkgqd", torch.softmax(s, -1), v.double())
    return o.reshape(Bn, Hn, Sq, D), lse.reshape(Bn, Hn, Sq)


def random_doc(L, g):
    """Document ids 0, 0, ..., 1, ... of random lengths 1..400 (non-decreasing)."""
    lens = torch.randint(1, 400, (L,), generator=g)
    ids = torch.repeat_interleave(torch.arange(L), lens)[:L]
    return ids.to(torch.int32)


def poisoned_call(fn, out_shape, lse_shape, dtype):
    """fn()'s (out, lse) with their memory NaN before the call, and whether the
    poison reached them (the caching allocator handed the freed NaN blocks back)."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    po = torch.full(out_shape, float("nan"), dtype=dtype, device="cuda")
    pl = torch.full(lse_shape, float("nan"), dtype=torch.float32, device="cuda")
    ptrs = (po.data_ptr(), pl.data_ptr())
    del po, pl
    out, lse = fn()
    torch.cuda.synchronize()
    return out, lse, (out.data_ptr(), lse.data_ptr()) == ptrs


def errors(out, lse, ref_o, ref_l):
    """Max abs errors of O and of the LSE (inf for NaN or a mismatched -inf)."""
    eo = (out.double() - ref_o).abs().max().item()
    finite = torch.isfinite(ref_l)
    if not torch.equal(torch.isfinite(lse), finite) or torch.isnan(lse).any():
        return (eo if eo == eo else math.inf), math.inf
    el = (lse.double() - ref_l)[finite].abs().max().item() if finite.any() else 0.0
    return (eo if eo == eo else math.inf), el


def self_test():
    """The reference against a direct per-row loop, on the CPU."""
    g = torch.Generator().manual_seed(3)
    Bn, Hn, HKV, Sq, L, D = 2, 4, 2, 3, 40, 8
    q, k, v = (torch.randn(Bn, n, s, D, generator=g) for n, s in ((Hn, Sq), (HKV, L), (HKV, L)))
    doc = random_doc(L, g)
    global W, STRIDE
    W, STRIDE = 7, 5
    for mask in MASKS:
        o, lse = reference(q, k, v, mask, L, doc)
        for b in range(Bn):
            for h in range(Hn):
                for i in range(Sq):
                    p = L - Sq + i
                    qq, kk, vv = q[b, h, i].double(), k[b, h // (Hn // HKV)].double(), v[b, h // (Hn // HKV)].double()
                    s = kk @ qq / math.sqrt(D)
                    if mask == "softcap":
                        s = CAP * torch.tanh(s / CAP)
                    keep = [kv <= p and (mask != "sliding" or p - kv < W) and
                            (mask != "document" or int(doc[kv]) == int(doc[p])) and
                            (mask != "strided" or p - kv < STRIDE or (p - kv) % STRIDE == 0) for kv in range(L)]
                    s = torch.where(torch.tensor(keep), s, torch.tensor(float("-inf"), dtype=torch.float64))
                    assert abs(torch.logsumexp(s, 0) - lse[b, h, i]) < 1e-12, (mask, b, h, i)
                    assert (torch.softmax(s, 0) @ vv - o[b, h, i]).abs().max() < 1e-12, (mask, b, h, i)
    assert torch.all(doc[1:] >= doc[:-1])
    print("PASS self-test (reference against a per-row loop, %d masks)" % len(MASKS))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "check_decode.jsonl"))
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    import maskc.torch as mt
    from maskc import decode
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    d = tempfile.mkdtemp(prefix="check_decode_")
    attns = {}
    for mask in MASKS:
        for D in (64, 128):
            p = os.path.join(d, "%s_%d.flex" % (mask, D))
            with open(p, "w") as f:
                f.write(flex_text(mask, D))
            attns[mask, D] = mt.load(p).attention("layer")
    # The eight forward sources compile with NVRTC in parallel (each call would compile its own lazily).
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        for f in [ex.submit(at.generated().compile_for, 0) for at in attns.values()]:
            f.result()
    log = open(a.out, "w")
    fails, poisoned, cases = 0, 0, 0
    g = torch.Generator(device="cuda").manual_seed(29)
    for D in (64, 128):
        for HKV in (8, 2, 1):
            for Sq in (1, 4, 16):
                for L in (300, 5000):
                    q = torch.randn(B, H, Sq, D, device="cuda", dtype=torch.bfloat16, generator=g)
                    k = torch.randn(B, HKV, L, D, device="cuda", dtype=torch.bfloat16, generator=g)
                    v = torch.randn(B, HKV, L, D, device="cuda", dtype=torch.bfloat16, generator=g)
                    doc = random_doc(L, torch.Generator().manual_seed(L + Sq)).cuda()
                    frame = [L - Sq, 0, 0, L, L, 0]
                    for mask in MASKS:
                        attn = attns[mask, D]
                        bufs = {"doc": doc} if mask == "document" else {}
                        ref_o, ref_l = reference(q, k, v, mask, L, doc)
                        res = dict(D=D, HKV=HKV, Sq=Sq, L=L, mask=mask,
                                   n_split=decode.split_plan(B, H, HKV, Sq, L, D, sms)[0])
                        ok = True
                        for path in ("decode", "forward"):
                            os.environ["MASKC_DECODE"] = "1" if path == "decode" else "0"
                            try:
                                out, lse, pois = poisoned_call(
                                    lambda: attn(q, k, v, layout="bhsd", buffers=bufs, return_lse=True,
                                                 backend="generated", frame=frame), q.shape, (B, H, Sq), q.dtype)
                                eo, el = errors(out, lse, ref_o, ref_l)
                                res[path] = dict(err_o=eo, err_lse=el, poisoned=pois)
                                poisoned += pois
                                cases += 1
                                ok = ok and eo <= TOL_O and el <= TOL_LSE
                            except Exception as e:  # a failed launch or a refusal is a failure of the case
                                res[path] = "FAIL: %s" % str(e)[:300]
                                ok = False
                        os.environ.pop("MASKC_DECODE", None)
                        res["ok"] = ok
                        fails += not ok
                        log.write(json.dumps(res) + "\n")
                        print(("ok  " if ok else "FAIL") + " " + json.dumps(res), flush=True)
    ok = graph_check(attns["causal", 128], sms)
    fails += not ok
    print("poisoned outputs: %d of %d calls" % (poisoned, cases))
    if poisoned == 0:
        print("FAIL: no output was poisoned (the caching allocator did not hand the NaN blocks back)")
        fails += 1
    print("PASS" if fails == 0 else "FAIL (%d)" % fails)
    return 0 if fails == 0 else 1


def graph_check(attn, sms):
    """A decode step captured in a CUDA graph, replayed on new inputs."""
    from maskc import decode
    Bn, HKV, Sq, L, D = 4, 1, 1, 20000, 128
    g = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn(Bn, H, Sq, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(Bn, HKV, L, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(Bn, HKV, L, D, device="cuda", dtype=torch.bfloat16, generator=g)
    frame = [L - Sq, 0, 0, L, L, 0]
    step = lambda: attn(q, k, v, layout="bhsd", return_lse=True, backend="generated", frame=frame)
    res = dict(case="cuda_graph", B=Bn, L=L, n_split=decode.split_plan(Bn, H, HKV, Sq, L, D, sms)[0])
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # modules, status words and workspace sizes settle on the capture stream
            step()
            step()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=s):
            gout, glse = step()
        for t in (q, k, v):  # new contents, same tensors
            t.copy_(torch.randn(t.shape, device="cuda", dtype=t.dtype, generator=g))
        gout.fill_(float("nan"))
        glse.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref_o, ref_l = reference(q, k, v, "causal", L)
        eo, el = errors(gout, glse, ref_o, ref_l)
        eout, else_ = step()
        res.update(err_o=eo, err_lse=el, bitwise_eager=bool(torch.equal(gout, eout) and torch.equal(glse, else_)))
        ok = eo <= TOL_O and el <= TOL_LSE and res["bitwise_eager"]
    except Exception as e:
        res["error"] = "FAIL: %s" % str(e)[:400]
        ok = False
    res["ok"] = ok
    print(("ok  " if ok else "FAIL") + " " + json.dumps(res), flush=True)
    return ok


if __name__ == "__main__":
    sys.exit(main())
