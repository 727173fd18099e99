"""maskc.cp's ring logic on the CPU against a float64 reference kernel.

RefGen computes what a generated kernel computes (forward: O and LSE;
backward: the flash formulas with the given, possibly merged, O and LSE and
dLSE) in float64 for four masks/scores with the position frame's semantics
(global positions, heads and buffers). The script runs
ring_attention_simulated (N = 2, 4; contiguous, zigzag) against the unsplit
reference with autograd, and ring_attention and ulysses_attention (the
all-to-all over heads) over torch.distributed with gloo, one CPU process
per rank, against the same: O, LSE, dQ, dK, dV and the slope gradient. It checks the schedule, merge, backward accumulation and
p2p rotation, not the GPU kernels (check_cp.py does that). Exits 1 on an
error above 1e-4.

    python3 python/gpu_tests/check_cp_reference.py
"""
import math
import os
import sys
import types

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import maskc.cp as cp


class Spec:
    """The part of a kernel's manifest entry that maskc.cp reads."""

    def __init__(self, bufs):
        self.buffers = [types.SimpleNamespace(name=b) for b in bufs]
        self.sink = None


class Gen:
    """A float64 reference of a generated kernel's launcher (forward and
    backward) for one of four masks/scores, with the position frame."""

    def __init__(self, kind):
        self.kind = kind
        self.spec = Spec({"doc": ["doc"], "alibi": ["slopes"]}.get(kind, []))
        self.known = {b.name for b in self.spec.buffers}

    def scores(self, q, k, buffers, frame):
        q0, k0, h0, _, _, _ = frame or [0] * 6
        B, Sq, H, D = q.shape
        Skv, HKV = k.shape[1], k.shape[2]
        kk = k.repeat_interleave(H // HKV, dim=2)
        s = torch.einsum("bqhd,bkhd->bhqk", q.double(), kk.double()) / math.sqrt(D)
        qi = torch.arange(Sq)[:, None] + q0  # global positions
        ki = torch.arange(Skv)[None, :] + k0
        if self.kind == "causal":
            keep = qi >= ki
        elif self.kind == "doc":
            d = buffers[0]  # the global document ids
            keep = (qi >= ki) & (d[qi] == d[ki])
        elif self.kind == "window":
            keep = (qi - ki >= 0) & (qi - ki <= 300)
        elif self.kind == "alibi":
            keep = qi >= ki
            sl = buffers[0].double()[h0:h0 + H]
            s = s + sl[None, :, None, None] * (ki - qi).double()[None, None]
        keep = keep[None, None].expand_as(s)
        return s, keep, (ki - qi).double()

    def forward(self, q, k, v, buffers, sink, layout, frame=None):
        s, keep, _ = self.scores(q, k, buffers, frame)
        s = s.masked_fill(~keep, float("-inf"))
        lse = torch.logsumexp(s, -1)
        p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
        H = q.shape[2]
        vv = v.repeat_interleave(H // v.shape[2], dim=2).double()
        o = torch.einsum("bhqk,bkhd->bqhd", p, vv)
        return o.to(q.dtype), lse.float()

    def backward(self, dout, dlse, q, k, v, out, lse, buffers, sink, layout, det, want, frame=None):
        s, keep, rel = self.scores(q, k, buffers, frame)
        H, HKV, D = q.shape[2], k.shape[2], q.shape[3]
        p = torch.where(keep, torch.exp(s - lse.double()[..., None]), torch.zeros_like(s))
        vv = v.repeat_interleave(H // HKV, dim=2).double()
        kk = k.repeat_interleave(H // HKV, dim=2).double()
        do = dout.double()
        dp = torch.einsum("bqhd,bkhd->bhqk", do, vv)
        delta = (do * out.double()).sum(-1).transpose(1, 2)
        if dlse is not None:
            delta = delta - dlse.double()
        ds = p * (dp - delta[..., None])
        dq = torch.einsum("bhqk,bkhd->bqhd", ds, kk) / math.sqrt(D)
        dk = torch.einsum("bhqk,bqhd->bkhd", ds, q.double()) / math.sqrt(D)
        dv = torch.einsum("bhqk,bqhd->bkhd", p, do)
        B, Skv = k.shape[0], k.shape[1]
        dk = dk.reshape(B, Skv, HKV, H // HKV, D).sum(3)  # GQA: summed over the heads sharing a kv head
        dv = dv.reshape(B, Skv, HKV, H // HKV, D).sum(3)
        grads = [torch.zeros_like(b) for b in buffers]
        if self.kind == "alibi" and want & 1:
            h0 = (frame or [0] * 6)[2]
            g = torch.zeros(buffers[0].shape, dtype=torch.float64)
            g[h0:h0 + H] = (ds * rel[None, None]).sum((0, 2, 3))
            grads[0] = g.to(buffers[0].dtype)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), grads


class Attn:
    """The part of maskc.torch's Attention that maskc.cp reads."""

    def __init__(self, kind):
        self.g, self.layout, self.name = Gen(kind), "bshd", kind

    def generated(self):
        return self.g


def simulated():
    torch.manual_seed(0)
    B, S, H, HKV, D = 1, 64, 4, 2, 8
    worst = 0.0
    for kind in ("causal", "doc", "window", "alibi"):
        for world in (2, 4):
            for layout in ("contiguous", "zigzag"):
                attn = Attn(kind)
                q = torch.randn(B, S, H, D, dtype=torch.float64, requires_grad=True)
                k = torch.randn(B, S, HKV, D, dtype=torch.float64, requires_grad=True)
                v = torch.randn(B, S, HKV, D, dtype=torch.float64, requires_grad=True)
                bufs, leaves = {}, [q, k, v]
                if kind == "doc": bufs["doc"] = torch.tensor([i // 13 for i in range(S)], dtype=torch.int32)
                if kind == "alibi":
                    sl = (torch.rand(H, dtype=torch.float64) * 0.1).requires_grad_(); bufs["slopes"] = sl; leaves.append(sl)
                blist = [bufs[b.name] for b in attn.g.spec.buffers]
                go = torch.randn(B, S, H, D, dtype=torch.float64); gl = torch.randn(B, H, S, dtype=torch.float64)
                # reference: autograd through the unsplit float64 forward
                o_ref, l_ref = attn.g.forward(q, k, v, blist, None, "bshd")  # float64 torch ops: autograd is the reference
                loss_ref = (o_ref * go).sum() + (l_ref.double() * gl).sum()
                g_ref = torch.autograd.grad(loss_ref, leaves, allow_unused=True)
                qs, ks, vs = (cp.split_sequence(t, world, layout, "bshd") for t in (q, k, v))
                outs, lses = cp.ring_attention_simulated(attn, qs, ks, vs, layout, bufs, "bshd")
                o = cp.gather_sequence(outs, layout, "bshd"); l = cp.gather_sequence(lses, layout, dim=2)
                loss = (o * go).sum() + (l.double() * gl).sum()
                gr = torch.autograd.grad(loss, leaves)
                errs = [float((o - o_ref).abs().max()), float((l - l_ref).abs().max())] + [float((a - b).abs().max()) for a, b in zip(gr, g_ref)]
                worst = max(worst, max(errs))
                print(kind, world, layout, ["%.1e" % e for e in errs])
    return worst


def worker(rank, world, layout, kind, port, q, mode="ring"):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    attn = Attn(kind)
    g = torch.Generator().manual_seed(7)
    B, S, H, HKV, D = 1, 64, 8, 4, 8
    Q = torch.randn(B, S, H, D, dtype=torch.float64, generator=g)
    K = torch.randn(B, S, HKV, D, dtype=torch.float64, generator=g)
    V = torch.randn(B, S, HKV, D, dtype=torch.float64, generator=g)
    go = torch.randn(B, S, H, D, dtype=torch.float64, generator=g); gl = torch.randn(B, H, S, dtype=torch.float64, generator=g)
    bufs = {}
    if kind == "doc": bufs["doc"] = torch.tensor([i // 13 for i in range(S)], dtype=torch.int32)
    if kind == "alibi": bufs["slopes"] = (torch.rand(H, dtype=torch.float64, generator=g) * 0.1).requires_grad_()
    qs, ks, vs = (cp.split_sequence(t, world, layout, "bshd")[rank].clone().requires_grad_() for t in (Q, K, V))
    run = cp.ring_attention if mode == "ring" else cp.ulysses_attention
    o, l = run(attn, qs, ks, vs, group=None, layout=layout, buffers=bufs, tensor_layout="bshd")
    gos, gls = cp.split_sequence(go, world, layout, "bshd")[rank], cp.split_sequence(gl, world, layout, dim=2)[rank]
    loss = (o * gos).sum() + (l.double() * gls).sum()
    loss.backward()
    if kind == "alibi":  # each rank's share, summed as a data-parallel gradient all-reduce would
        dist.all_reduce(bufs["slopes"].grad)
    res = [o.detach(), l.detach(), qs.grad, ks.grad, vs.grad] + ([bufs["slopes"].grad] if kind == "alibi" else [])
    outs = [[torch.zeros_like(t) for _ in range(world)] for t in res]
    for t, o_ in zip(res, outs): dist.all_gather(o_, t.contiguous())
    if rank == 0:
        glob = [cp.gather_sequence(o_, layout, "bshd") if i in (0, 2, 3, 4) else (cp.gather_sequence(o_, layout, dim=2) if i == 1 else o_[0]) for i, o_ in enumerate(outs)]
        # reference: unsplit via simulated ring with world 1
        Qr, Kr, Vr = (t.clone().requires_grad_() for t in (Q, K, V))
        bufr = dict(bufs)
        if kind == "alibi": bufr["slopes"] = bufs["slopes"].detach().clone().requires_grad_()
        (orr,), (lrr,) = cp.ring_attention_simulated(attn, [Qr], [Kr], [Vr], layout, bufr, "bshd")
        ((orr * go).sum() + (lrr.double() * gl).sum()).backward()
        ref = [orr, lrr, Qr.grad, Kr.grad, Vr.grad] + ([bufr["slopes"].grad] if kind == "alibi" else [])
        errs = [float((a.double() - b.double()).abs().max()) for a, b in zip(glob, ref)]
        q.put((kind, world, layout, errs))
    dist.destroy_process_group()



def distributed():
    ctx = mp.get_context("spawn")
    port, worst = 29600, 0.0
    for mode, kind, world, layout in [(m, kd, w, lay) for m in ("ring", "a2a") for kd in ("causal", "doc", "alibi")
                                      for w in (2, 4) for lay in ("contiguous", "zigzag")]:
        q = ctx.Queue()
        port += 1
        ps = [ctx.Process(target=worker, args=(r, world, layout, kind, port, q, mode)) for r in range(world)]
        for p in ps:
            p.start()
        res = q.get(timeout=120)
        for p in ps:
            p.join(60)
        print("dist", mode, res[0], res[1], res[2], ["%.1e" % e for e in res[3]])
        worst = max(worst, max(res[3]))
    return worst


if __name__ == "__main__":
    w1 = simulated()
    w2 = distributed()
    print("worst error: simulated %.2e, torch.distributed (gloo) %.2e" % (w1, w2))
    sys.exit(0 if max(w1, w2) < 1e-4 else 1)
