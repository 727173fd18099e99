"""Issue 33 on an NVIDIA GPU, with the wheel installed and no Go:

    PYTHONPATH=/tmp/site python3 python/gpu_tests/check_reads.py [--out DIR]

(gpu/verify.sh run reads). Three checks, fresh random inputs (the seed is
printed), every result compared, a final PASS or FAIL line, exit 1 on FAIL:

  fits      the sandwich-style table rel[q - kv + 8191] of 16384 entries at
            S = 8192 (where every read is inside) against a float64
            reference written here in torch, outputs' memory poisoned with
            NaN beforehand (relative error < 1e-2, LSE too);
  refused   the same block at S = 16384 (reads -8192..24574) raises
            MaskcError naming the read before anything runs: no CUDA kernel
            in the profiler's trace of the call, the poisoned block the
            output would take still all NaN afterwards, no memory kept;
  flag      tab[idx[kv]] (an index from buffer values, tab: f32[16]) under
            causal: ids inside 0..15 leave status() 0 and match the
            reference; ids up to 19 set read_out_of_range (2) in status(),
            and the result is the reference with those reads as 0.0, the
            documented value.
"""
import torch

from maskc.diagnostics import MaskcError

import flexcheck
from flexcheck import poison, rel_err

TOL = 1e-2

FLEX = """buffer rel: f32[16384]
buffer idx: i32[KV]
buffer tab: f32[16]

mask causal(b, h, q, kv) = q >= kv
score sandwich(score, b, h, q, kv) = score + rel[q - kv + 8191]
score from_index(score, b, h, q, kv) = score + tab[idx[kv]]

attention sandwich_layer {
    score = sandwich
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention index_layer {
    mask = causal
    score = from_index
    layout = bshd
    dtype = bf16
    head_dim = 128
}
"""


def reference(q, k, v, bias, causal):
    """float64 attention of bshd q, k, v with bias(h, rows, cols) added to
    the scaled scores (and the causal mask): (out [B, S, H, D], lse [B, H, S]),
    row chunks so that S = 8192 fits."""
    B, S, H, D = q.shape
    Skv = k.shape[1]
    out = torch.empty(B, S, H, D, dtype=torch.float64, device=q.device)
    lse = torch.empty(B, H, S, dtype=torch.float64, device=q.device)
    cols = torch.arange(Skv, device=q.device)
    for b in range(B):
        for h in range(H):
            kh, vh = k[b, :, h].double(), v[b, :, h].double()
            for r0 in range(0, S, 1024):
                rows = torch.arange(r0, min(S, r0 + 1024), device=q.device)
                s = q[b, rows, h].double() @ kh.T / D ** 0.5 + bias(h, rows[:, None], cols[None, :])
                if causal:
                    s = s.masked_fill(rows[:, None] < cols[None, :], float("-inf"))
                m = torch.logsumexp(s, dim=1)
                out[b, rows, h] = torch.exp(s - m[:, None]) @ vh
                lse[b, h, rows] = m
    return out, lse






def qkv(B, S, H, D, gen):
    return [(torch.randn(B, S, H, D, generator=gen, device="cuda")).to(torch.bfloat16) for _ in range(3)]


def check_fits(prog, gen, log):
    attn = prog.attention("sandwich_layer")
    B, S, H, D = 1, 8192, 2, 128
    q, k, v = qkv(B, S, H, D, gen)
    rel = torch.randn(16384, generator=gen, device="cuda")
    poison(q.numel() * 2)
    poison(B * H * S * 4)
    out, lse = attn(q, k, v, buffers={"rel": rel}, return_lse=True, backend="generated")
    torch.cuda.synchronize()
    ref, ref_lse = reference(q, k, v, lambda h, r, c: rel.double()[r - c + 8191], causal=False)
    e, el = rel_err(out, ref), rel_err(lse, ref_lse)
    log("fits: sandwich rel[q - kv + 8191] of 16384 at S = %d: rel err %.2e, lse %.2e" % (S, e, el))
    return e < TOL and el < TOL


def check_refused(prog, gen, log):
    attn = prog.attention("sandwich_layer")
    B, S, H, D = 1, 16384, 2, 128
    q, k, v = qkv(B, S, H, D, gen)
    rel = torch.randn(16384, generator=gen, device="cuda")
    torch.cuda.synchronize()
    nbytes = q.numel() * 2
    poison(nbytes)
    before = torch.cuda.memory_allocated()
    err = None

    def call():
        nonlocal err
        try:
            attn(q, k, v, buffers={"rel": rel}, backend="generated")
        except MaskcError as e:
            err = str(e)
        torch.cuda.synchronize()

    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            call()
        kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    except Exception as e:  # no CUPTI here: the memory checks below still stand
        log("refused: profiler unavailable (%s); checking memory only" % e)
        kernels = []
        if err is None:
            call()
    after = torch.cuda.memory_allocated()
    probe = torch.empty(nbytes // 2 + 8, dtype=torch.float16, device="cuda")  # the poisoned block
    untouched = bool(torch.isnan(probe).all())
    want = "rel[q - kv + 8191] reads rel outside its extents: index -8192..24574 at B=1 H=2 HKV=2 Q=16384 KV=16384"
    log("refused: %r" % err)
    log("refused: %d CUDA kernels in the call %s, memory %d -> %d bytes, poisoned block untouched: %s" %
        (len(kernels), kernels[:4], before, after, untouched))
    return err is not None and want in err and not kernels and after == before and untouched


def check_flag(prog, gen, log):
    attn = prog.attention("index_layer")
    B, S, H, D = 2, 1000, 4, 128
    q, k, v = qkv(B, S, H, D, gen)
    tab = torch.randn(16, generator=gen, device="cuda")
    ok = True
    for name, hi, want_bit in (("inside", 16, 0), ("outside", 20, 2)):
        idx = torch.randint(0, hi, (S,), generator=gen, device="cuda", dtype=torch.int32)
        if hi > 16:
            idx[S // 2] = 19  # at least one
        attn.reset_status()
        poison(q.numel() * 2)
        out = attn(q, k, v, buffers={"idx": idx, "tab": tab}, backend="generated")
        torch.cuda.synchronize()
        st = attn.status()
        padded = torch.cat([tab.double(), torch.zeros(8, dtype=torch.float64, device="cuda")])  # outside: 0.0
        ref, _ = reference(q, k, v, lambda h, r, c: padded[idx.long()[c]].expand(r.shape[0], -1), causal=True)
        e = rel_err(out, ref)
        good = st == want_bit and e < TOL
        log("flag %s: ids 0..%d, status %d (want %d), rel err %.2e: %s" % (name, hi - 1, st, want_bit, e,
                                                                            "ok" if good else "WRONG"))
        ok = ok and good
    return ok



if __name__ == "__main__":
    flexcheck.main("reads.flex", FLEX, (("fits", check_fits), ("refused", check_refused), ("flag", check_flag)), "check_reads.txt")
