"""maskc.cp over torch.distributed with NCCL, one process per GPU (issue 16).

Spawns one process per visible GPU (at least two) in one NCCL group and, for
every block of cp.flex (causal, document-causal, a sliding window, ALiBi with
its global per-head slope table), runs ring_attention (p2p, contiguous and
zigzag) and ulysses_attention (all-to-all over heads, both layouts) on this
rank's chunks of fresh random global inputs (the same seed on every rank),
takes the gradients of one loss of O and LSE (so dLSE is exercised) with
respect to q, k, v and the slopes (each rank's slope share summed over the
group with all_reduce, as a data-parallel gradient would be), and compares
its rows with the unsplit generated kernel's on the same inputs. Then the
throughput: ring forward + backward over all GPUs against the unsplit call
on one GPU, for causal and document-causal at a long sequence. Writes
$OUT/cp_nccl.json; exits 1 if any case is outside check_cp.py's tolerances.

    python3 python/gpu_tests/check_cp_nccl.py [--seq 2048] [--bench-seq 32768] [--out DIR]
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import maskc.cp as cp
import maskc.torch as mt

from check_cp import HERE, TOL, docs, rel  # the single-process check's tolerances and inputs

BLOCKS = ("causal_layer", "doc_layer", "window_layer", "alibi_layer")


def inputs(block, B, S, H, HKV, D, g):
    """Global inputs on the GPU, the same on every rank (same generator)."""
    t = {n: torch.randn(B, S, h, D, generator=g).to("cuda", torch.bfloat16)
         for n, h in (("q", H), ("k", HKV), ("v", HKV))}
    buffers = {}
    if block == "doc_layer":
        buffers["doc"] = docs(S, g)
    if block == "alibi_layer":
        buffers["slopes"] = (torch.rand(H, generator=g) * 0.05).cuda()
    t["go"] = torch.randn(B, S, H, D, generator=g).cuda()
    t["gl"] = torch.randn(B, H, S, generator=g).cuda()
    return t, buffers


def run_case(attn, block, method, layout, world, rank, B, S, H, HKV, D, g):
    t, buffers = inputs(block, B, S, H, HKV, D, g)
    # the unsplit call's rows, gradients, and the slopes' gradient
    q, k, v = (t[n].clone().requires_grad_() for n in ("q", "k", "v"))
    bref = dict(buffers)
    leaves = [q, k, v]
    if "slopes" in bref:
        bref["slopes"] = bref["slopes"].clone().requires_grad_()
        leaves.append(bref["slopes"])
    o_ref, l_ref = attn(q, k, v, buffers=bref, return_lse=True, backend="generated")
    g_ref = torch.autograd.grad((o_ref.float() * t["go"]).sum() + (l_ref * t["gl"]).sum(), leaves)

    def mine(x, dim=1):
        return cp.split_sequence(x.detach(), world, layout, dim=dim)[rank].contiguous()

    ql, kl, vl = (mine(t[n]).requires_grad_() for n in ("q", "k", "v"))
    bl = dict(buffers)
    loc = [ql, kl, vl]
    if "slopes" in bl:
        bl["slopes"] = bl["slopes"].clone().requires_grad_()
        loc.append(bl["slopes"])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    run = cp.ring_attention if method == "ring" else cp.ulysses_attention
    o, l = run(attn, ql, kl, vl, layout=layout, buffers=bl, tensor_layout="bshd")
    grads = list(torch.autograd.grad((o.float() * mine(t["go"])).sum() + (l * mine(t["gl"], 2)).sum(), loc))
    if len(grads) == 4:
        dist.all_reduce(grads[3])  # every rank's share of the slopes' gradient
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    errs = torch.tensor([rel(o, mine(o_ref)), float((l - mine(l_ref, 2)).abs().max()),
                         rel(grads[0], mine(g_ref[0])), rel(grads[1], mine(g_ref[1])), rel(grads[2], mine(g_ref[2])),
                         rel(grads[3], g_ref[3]) if len(grads) == 4 else 0.0,
                         float(torch.isnan(o).any() or torch.isnan(l).any())], device="cuda", dtype=torch.float64)
    dist.all_reduce(errs, op=dist.ReduceOp.MAX)  # the worst rank's rows
    e = errs.tolist()
    r = {"block": block, "method": method, "layout": layout, "world": world, "out": e[0], "lse": e[1], "dq": e[2],
         "dk": e[3], "dv": e[4], "nan": bool(e[6]), "ms_fwd_bwd_first": ms}
    if block == "alibi_layer":
        r["dslopes"] = e[5]
    r["ok"] = not r["nan"] and r["out"] < TOL["out"] and r["lse"] < TOL["lse"] and \
        max(r["dq"], r["dk"], r["dv"], r.get("dslopes", 0.0)) < TOL["grad"]
    return r


def timed(fn, iters):
    fn()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / iters


def bench(attn, block, world, rank, S, g, iters=5):
    """Ring forward + backward over the group against the unsplit call on
    rank 0's GPU alone (the other ranks wait), B=1, H=16, D=128, zigzag."""
    B, H, HKV, D = 1, 16, 16, 128
    t, buffers = inputs(block, B, S, H, HKV, D, g)
    ql, kl, vl = (cp.split_sequence(t[n], world, "zigzag", dim=1)[rank].contiguous().requires_grad_()
                  for n in ("q", "k", "v"))
    gol = cp.split_sequence(t["go"], world, "zigzag", dim=1)[rank].contiguous()

    def ring():
        o, _ = cp.ring_attention(attn, ql, kl, vl, layout="zigzag", buffers=buffers, tensor_layout="bshd")
        torch.autograd.grad((o.float() * gol).sum(), [ql, kl, vl])
    ms_ring = timed(ring, iters)
    ms_one = None
    if rank == 0:
        q, k, v = (t[n].requires_grad_() for n in ("q", "k", "v"))

        def one():
            o = attn(q, k, v, buffers=buffers, backend="generated")
            torch.autograd.grad((o.float() * t["go"]).sum(), [q, k, v])
        one()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            one()
        torch.cuda.synchronize()
        ms_one = (time.perf_counter() - t0) * 1e3 / iters
    dist.barrier()
    return {"block": block, "seq": S, "world": world, "ring_ms": ms_ring, "one_gpu_ms": ms_one}


def worker(rank, world, port, seed, args, q):
    # NVLink multicast stays off (the device machines' rule; inherited, and
    # set again in case a launcher dropped it)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    os.environ["MASKC_CACHE_DIR"] = os.path.join(os.environ.get("MASKC_CACHE_DIR", "/tmp/maskc-nccl"), str(rank))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    try:
        prog = mt.load(os.path.join(HERE, "cp.flex"))
        prog.prepare()
        g = torch.Generator().manual_seed(seed)
        res = []
        for block in BLOCKS:
            attn = prog.attention(block)
            for method in ("ring", "ulysses"):
                for layout in ("contiguous", "zigzag"):
                    res.append(run_case(attn, block, method, layout, world, rank, 2, args.seq, 4, 2, 128, g))
        perf = [bench(prog.attention(b), b, world, rank, args.bench_seq, g) for b in ("causal_layer", "doc_layer")]
        if rank == 0:
            q.put({"results": res, "bench": perf})
    except Exception as e:  # reported by rank, never a hang of the parent
        q.put({"error": "rank %d: %r" % (rank, e)})
        raise
    finally:
        dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--bench-seq", type=int, default=32768)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    world = torch.cuda.device_count()
    if world < 2:
        print("check_cp_nccl: %d GPU visible; NCCL context parallelism needs at least 2" % world)
        sys.exit(2)
    seed = int.from_bytes(os.urandom(4), "little")
    print("seed %d, %d x %s, NCCL %s" % (seed, world, torch.cuda.get_device_name(), torch.cuda.nccl.version()))
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    # daemonic: a rank left in a collective after another failed dies with
    # this process instead of keeping it alive
    ps = [ctx.Process(target=worker, args=(r, world, 29500 + os.getpid() % 1000, seed, args, q), daemon=True)
          for r in range(world)]
    for p in ps:
        p.start()
    out = q.get(timeout=600)
    for p in ps:
        p.join(120)
    if "error" in out:
        print("FAIL", out["error"])
        sys.exit(1)
    bad = 0
    for r in out["results"]:
        bad += not r["ok"]
        print("%-4s %-13s %-7s %-10s N=%d O %.2e LSE %.2e dQ %.2e dK %.2e dV %.2e%s" % (
            "ok" if r["ok"] else "FAIL", r["block"], r["method"], r["layout"], r["world"], r["out"], r["lse"],
            r["dq"], r["dk"], r["dv"], " dslopes %.2e" % r["dslopes"] if "dslopes" in r else ""))
    for b in out["bench"]:
        print("bench %-13s S=%d: ring over %d GPUs %.2f ms fwd+bwd, one GPU %.2f ms (%.2fx)" % (
            b["block"], b["seq"], b["world"], b["ring_ms"], b["one_gpu_ms"], b["one_gpu_ms"] / b["ring_ms"]))
    with open(os.path.join(args.out, "cp_nccl.json"), "w") as f:
        json.dump(dict(out, seed=seed, tol=TOL), f, indent=1)
    print("%d of %d cases within tolerance" % (len(out["results"]) - bad, len(out["results"])))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
