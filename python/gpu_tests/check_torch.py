"""maskc.torch on an NVIDIA GPU, with the wheel installed and no Go.

    pip install --no-index --no-deps --target /tmp/site dist/maskc-*.whl
    PYTHONPATH=/tmp/site python3 python/gpu_tests/check_torch.py [--out LOG.jsonl]

Per case (an example .flex block, its buffers drawn fresh, its reference
written here in torch): dispatch as the plan says, output and LSE against a
float64 reference (relative error < 1e-2, outputs' memory poisoned with NaN
beforehand); torch.library.opcheck on maskc::attn_fwd; torch.compile(
fullgraph=True) of a module calling the block vs eager (bitwise);
CUDA-graph capture and replay vs eager (bitwise); and backward: against a
float64 autograd reference where the block runs SDPA, and for generated
blocks either against the reference (when the backward kernel exists) or
the NotImplementedError naming the missing kernel. Exits 1 if any check fails.
"""
import argparse
import json
import math
import os
import sys
import time
import traceback

import torch

import maskc
import maskc.torch as mt

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(REPO, "examples")
TOL = 1e-2

ODD_FLEX = """buffer tab: i64[B, KV]
mask odd(b, h, q, kv) = (q * kv + h + tab[b, kv]) % 7 != 3 and q >= kv
attention odd_layer {
    mask = odd
    layout = bhsd
    dtype = fp16
    head_dim = 128
}
"""


def doc_ids(n, gen, dev):
    lens, rem = [], n
    while rem > 0:
        l = min(rem, int(torch.randint(64, 400, (1,), generator=gen)))
        lens.append(l)
        rem -= l
    return torch.repeat_interleave(torch.arange(len(lens)), torch.tensor(lens)).to(torch.int32).to(dev)


# name: (file, block, B, H, HKV, Sq, Skv, D, dtype, make(B, H, Sq, Skv, gen) -> (buffers, mask, score, sink))
def _none(B, H, Sq, Skv, gen, dev):
    return {}, None, None, None


def _causal(B, H, Sq, Skv, gen, dev):
    return {}, (lambda b, h, q, kv: q >= kv), None, None


def _alibi(B, H, Sq, Skv, gen, dev):
    slopes = torch.exp2(-8.0 * (torch.arange(H) + 1) / H).float().to(dev)
    return ({"slopes": slopes}, (lambda b, h, q, kv: q >= kv),
            (lambda s, b, h, q, kv: s + slopes[h] * (kv - q)), None)


def _dilated(B, H, Sq, Skv, gen, dev):
    return {}, (lambda b, h, q, kv: (q >= kv) & ((q - kv).abs() <= 2048) & ((q - kv) % 2 == 0)), None, None


def _document(B, H, Sq, Skv, gen, dev):
    doc = doc_ids(Skv, gen, dev)
    return {"doc": doc}, (lambda b, h, q, kv: (doc[q] == doc[kv]) & (q >= kv)), None, None


def _relbias(B, H, Sq, Skv, gen, dev):
    bias = torch.randn(H, Sq + Skv - 1, generator=gen).to(dev)
    return ({"bias": bias}, (lambda b, h, q, kv: q >= kv),
            (lambda s, b, h, q, kv: s + bias[h, q - kv + Skv - 1]), None)


def _sink_window(B, H, Sq, Skv, gen, dev):
    sinks = torch.randn(H, generator=gen).to(dev)
    return {"sinks": sinks}, (lambda b, h, q, kv: (q >= kv) & (q - kv < 128)), None, sinks


def _prefix(B, H, Sq, Skv, gen, dev):
    pl = torch.randint(0, Skv, (B,), generator=gen).to(torch.int32).to(dev)
    return {"prefix_len": pl}, (lambda b, h, q, kv: (kv < pl[b]) | (q >= kv)), None, None


def _odd(B, H, Sq, Skv, gen, dev):
    tab = torch.randint(0, 100, (B, Skv), generator=gen).to(dev)
    return {"tab": tab}, (lambda b, h, q, kv: ((q * kv + h + tab[b, kv]) % 7 != 3) & (q >= kv)), None, None


# torch.compile and opcheck cost seconds each: run them on these cases (one
# per dispatch path and kernel kind), the cheap checks on all.
HEAVY = {"causal", "document", "gpt_oss_sink", "prepass_fp16_bhsd"}

CASES = [
    ("full", "full.flex", "encoder", 2, 8, 8, 300, 500, 128, torch.bfloat16, "bshd", _none),
    ("causal", "causal.flex", "decoder", 2, 8, 2, 1000, 1000, 128, torch.bfloat16, "bshd", _causal),
    ("causal_sq!=skv", "causal.flex", "decoder", 2, 8, 2, 200, 1000, 128, torch.bfloat16, "bshd", _causal),
    ("alibi", "alibi.flex", "alibi_layer", 2, 8, 2, 1000, 1000, 128, torch.bfloat16, "bshd", _alibi),
    ("dilated", "dilated_window.flex", "dilated_layer", 2, 8, 2, 1000, 1000, 128, torch.bfloat16, "bshd", _dilated),
    ("document", "document_causal.flex", "packed_layer", 2, 8, 2, 1000, 1000, 128, torch.bfloat16, "bshd",
     _document),
    ("relative_bias", "relative_bias.flex", "biased_layer", 2, 8, 2, 127, 1000, 128, torch.bfloat16, "bshd",
     _relbias),
    ("gpt_oss_sink", "gpt_oss.flex", "layer_0", 2, 8, 2, 1000, 1000, 64, torch.bfloat16, "bshd", _sink_window),
    ("prefix_per_batch", "prefix_lm_per_batch.flex", "prefix_layer", 2, 8, 8, 1000, 1000, 128, torch.bfloat16,
     "bshd", _prefix),
    ("prepass_fp16_bhsd", None, "odd_layer", 2, 8, 2, 300, 300, 128, torch.float16, "bhsd", _odd),
]


def reference(q, k, v, scale, mask, score, sink, layout):
    """float64 attention (out in q's layout, lse [B, H, Sq]); fully masked rows give 0 and -inf."""
    if layout == "bshd":
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    B, H, Sq, D = q.shape
    HKV, Skv = k.shape[1], k.shape[2]
    k = k.double().repeat_interleave(H // HKV, 1)
    v = v.double().repeat_interleave(H // HKV, 1)
    s = (q.double() @ k.transpose(-1, -2)) * scale
    dev = q.device
    b = torch.arange(B, device=dev)[:, None, None, None]
    h = torch.arange(H, device=dev)[None, :, None, None]
    qi = torch.arange(Sq, device=dev)[None, None, :, None]
    ki = torch.arange(Skv, device=dev)[None, None, None, :]
    if score is not None:
        s = score(s, b, h, qi, ki).double()
    if mask is not None:
        s = s.masked_fill(~mask(b, h, qi, ki).expand(s.shape), float("-inf"))
    if sink is not None:
        lse = torch.logsumexp(torch.cat([s, sink.double()[None, :, None, None].expand(B, H, Sq, 1)], -1), -1)
    else:
        lse = torch.logsumexp(s, -1)
    p = torch.nan_to_num(torch.exp(s - lse[..., None]), nan=0.0)
    o = p @ v
    return (o.transpose(1, 2) if layout == "bshd" else o), lse


def rel(a, b):
    a, b = a.double(), b.double()
    if torch.isnan(a).any():
        return float("inf")
    fin = torch.isfinite(b)
    if not torch.equal(fin, torch.isfinite(a)):
        return float("inf")
    a, b = a[fin], b[fin]
    d = b.norm().item()
    return (a - b).norm().item() / d if d > 0 else (a - b).norm().item()


def make(case, gen):
    name, f, block, B, H, HKV, Sq, Skv, D, dt, layout, mk = case
    dev = "cuda"

    def t(heads, s):
        shape = (B, s, heads, D) if layout == "bshd" else (B, heads, s, D)
        return torch.randn(*shape, generator=gen).to(dt).to(dev)
    bufs, mask, score, sink = mk(B, H, Sq, Skv, gen, dev)
    return t(H, Sq), t(HKV, Skv), t(HKV, Skv), bufs, mask, score, sink


def poison(nbytes_list):
    """Fill soon-to-be-reused allocator blocks with NaN bytes: outputs that a
    kernel fails to write show up as NaN."""
    ts = [torch.full((n // 2 + 8,), float("nan"), dtype=torch.float16, device="cuda") for n in nbytes_list]
    del ts


def check_case(case, prog_cache, log, gen):
    name, f, block = case[0], case[1], case[2]
    layout = case[10]
    res = {"case": name}
    path = os.path.join(EX, f) if f else "/tmp/maskc_odd.flex"
    t0 = time.time()
    prog = prog_cache.get(path) or mt.load(path)
    prog_cache[path] = prog
    res["load_s"] = round(time.time() - t0, 3)
    attn = prog.attention(block)
    q, k, v, bufs, mask, score, sink = make(case, gen)
    D = q.shape[-1]
    kind = attn.choose(q, k, layout).kind
    res["dispatch"] = kind
    scale = 1 / math.sqrt(D)
    ref_o, ref_lse = reference(q, k, v, scale, mask, score, sink, layout)
    want_lse = kind == "generated"
    poison([q.numel() * 2, q.shape[0] * q.shape[1] * q.shape[2] * 4])
    got = attn(q, k, v, layout=layout, buffers=bufs, return_lse=want_lse)
    torch.cuda.synchronize()
    o = got[0] if want_lse else got
    res["out_rel_err"] = rel(o, ref_o)
    ok = res["out_rel_err"] < TOL
    if want_lse:
        res["lse_rel_err"] = rel(got[1], ref_lse)
        ok = ok and res["lse_rel_err"] < TOL

    def fn(q, k, v):
        return attn(q, k, v, layout=layout, buffers=bufs)

    with torch.no_grad():
        eager = fn(q, k, v)
        # opcheck on the custom op (generated blocks)
        if kind == "generated" and name in HEAVY:
            gen_ = attn.generated()
            blist = [bufs[b.name] for b in gen_.spec.buffers]
            sk = bufs[gen_.spec.sink].float() if gen_.spec.sink else None
            try:
                torch.library.opcheck(torch.ops.maskc.attn_fwd.default,
                                      (q, k, v, blist, sk, gen_.key, layout, False))
                res["opcheck"] = "pass"
            except Exception as e:
                res["opcheck"] = "FAIL: %s" % str(e)[:400]
                ok = False
        # torch.compile(fullgraph=True)
        try:
            if name not in HEAVY:
                raise StopIteration
            torch._dynamo.reset()
            cfn = torch.compile(fn, fullgraph=True)
            c = cfn(q, k, v)
            if kind == "generated":  # the same kernel: bitwise
                res["compile_equal"] = bool(torch.equal(c, eager))
                ok = ok and res["compile_equal"]
            else:  # the compiler may pick another fused SDPA kernel
                res["compile_rel_err"] = rel(c, eager)
                ok = ok and res["compile_rel_err"] < TOL
        except StopIteration:
            pass
        except Exception as e:
            res["compile_equal"] = "FAIL: %s" % str(e)[:400]
            ok = False
        # CUDA graph capture and replay
        try:
            sq, sk_, sv = q.clone(), k.clone(), v.clone()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    fn(sq, sk_, sv)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                gout = fn(sq, sk_, sv)
            q2, k2, v2, _, _, _, _ = make(case, gen)
            sq.copy_(q2)
            sk_.copy_(k2)
            sv.copy_(v2)
            g.replay()
            torch.cuda.synchronize()
            res["graph_equal"] = bool(torch.equal(gout, fn(q2, k2, v2)))
            ok = ok and res["graph_equal"]
        except Exception as e:
            res["graph_equal"] = "FAIL: %s" % str(e)[:400]
            ok = False
    # backward
    qg, kg, vg = (x.detach().clone().requires_grad_() for x in (q, k, v))
    try:
        out = attn(qg, kg, vg, layout=layout, buffers=bufs)
        do = torch.randn_like(out)
        out.backward(do)
        q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
        r, _ = reference(q64, k64, v64, scale, mask, score, sink, layout)
        r.backward(do.double())
        res["grad_rel_err"] = [rel(a.grad, b.grad) for a, b in ((qg, q64), (kg, k64), (vg, v64))]
        ok = ok and all(e < TOL for e in res["grad_rel_err"])
    except NotImplementedError as e:
        res["backward"] = "NotImplementedError: %s" % str(e)[:200]
        ok = ok and kind == "generated" and "attn_bwd" in str(e)
    res["ok"] = bool(ok)
    print(json.dumps(res), flush=True)
    log.write(json.dumps(res) + "\n")
    return ok


def check_errors(log):
    """Bad input raises MaskcError before a launch, with maskc's positions."""
    res = {"case": "errors"}
    ok = True
    bad = "/tmp/maskc_bad.flex"
    with open(bad, "w") as f:
        f.write("mask m(b, h, q, kv) = q >= kvv\nattention a {\n    mask = m\n}\n")
    try:
        mt.load(bad)
        ok = False
    except maskc.MaskcError as e:
        res["flex_error"] = str(e).splitlines()[1]
        ok = ok and e.diagnostics[0].line == 1 and e.diagnostics[0].code == "E020"
    attn = mt.load(os.path.join(EX, "document_causal.flex")).attention("packed_layer")
    q = torch.randn(1, 256, 4, 128, device="cuda", dtype=torch.bfloat16)
    for what, call in [
        ("missing buffer", lambda: attn(q, q, q)),
        ("wrong dtype", lambda: attn(q.half(), q.half(), q.half(), buffers={"doc": torch.zeros(256, dtype=torch.int32,
                                                                                              device="cuda")})),
        ("wrong extent", lambda: attn(q, q, q, buffers={"doc": torch.zeros(255, dtype=torch.int32, device="cuda")})),
        ("cpu tensor", lambda: attn(q.cpu(), q.cpu(), q.cpu(), buffers={"doc": torch.zeros(256, dtype=torch.int32)})),
    ]:
        try:
            call()
            res[what] = "no error"
            ok = False
        except maskc.MaskcError as e:
            res[what] = str(e)[:160]
    res["ok"] = ok
    print(json.dumps(res), flush=True)
    log.write(json.dumps(res) + "\n")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "check_torch.jsonl"))
    ap.add_argument("--cases", default="")
    a = ap.parse_args()
    print("torch", torch.__version__, torch.cuda.get_device_name(), "maskc", maskc.__file__, flush=True)
    gen = torch.Generator().manual_seed(int(time.time()))
    fails = 0
    cache = {}
    with open("/tmp/maskc_odd.flex", "w") as fh:
        fh.write(ODD_FLEX)
    t0 = time.time()
    paths = sorted({os.path.join(EX, c[1]) if c[1] else "/tmp/maskc_odd.flex" for c in CASES})
    for p in paths:
        cache[p] = mt.load(p)
    t1 = time.time()
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(len(paths)) as ex:
        list(ex.map(lambda p: cache[p].prepare(), paths))
    print(json.dumps({"load_s": round(t1 - t0, 2), "prepare_s": round(time.time() - t1, 2)}), flush=True)
    with open(a.out, "w") as log:
        for case in CASES:
            if a.cases and case[0] not in a.cases.split(","):
                continue
            try:
                fails += not check_case(case, cache, log, gen)
            except Exception:
                fails += 1
                tb = traceback.format_exc()
                print(json.dumps({"case": case[0], "ok": False, "error": tb[-1500:]}), flush=True)
                log.write(json.dumps({"case": case[0], "ok": False, "error": tb}) + "\n")
        try:
            fails += not check_errors(log)
        except Exception:
            fails += 1
            traceback.print_exc()
    print("FAILED %d" % fails if fails else "ALL PASS", flush=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
