"""Context parallelism for maskc's generated kernels: a ring over ranks that
each hold a chunk of the sequence (python/maskc/README_CP.md).

A rank holds the query rows and the keys/values of its chunks of the global
sequence; the key/value chunks travel around the ring, and at every step the
rank computes its queries against the chunk it holds with one generated
kernel call per (query chunk, key chunk) pair, placed in the global
attention by a Frame (the mask and score see global positions, and the
kernel still skips the tiles masked in the pair). The partial outputs are
merged exactly through their log-sum-exps (merge_partials); the backward
calls the generated backward per pair with the merged output and LSE (and
the LSE's gradient), which gives each pair's exact share of dQ, dK and dV.

Layouts of the sequence over n ranks (chunk_layout):

- "contiguous": rank r holds positions [r*S/n, (r+1)*S/n);
- "zigzag": the sequence is cut into 2n equal chunks and rank r holds
  chunks r and 2n-1-r, which balances causal-like masks (Megatron's and
  TransformerEngine's load balancing); each chunk is contiguous, so a pair
  needs only scalar offsets.

This module's planning (Frame, chunk_layout, ring_schedule, pair frames) and
the merge arithmetic (merge_math) import no torch; the torch parts
(ring_attention, ring_attention_simulated, the torch.distributed ring)
import it when called.
"""
from .diagnostics import MaskcError

__all__ = ["Frame", "LAYOUTS", "chunk_layout", "ring_schedule", "pair_frames", "merge_math", "PyScalarOps",
           "merge_partials", "split_sequence", "gather_sequence", "ring_attention_simulated", "ring_attention",
           "SimulatedRing", "DistributedRing", "ulysses_attention"]

#: How a sequence is laid out over the ranks.
LAYOUTS = ("contiguous", "zigzag")


class Frame:
    """Where one attention call lies in a larger attention: its query rows
    start at global position q_offset, its keys at kv_offset, its query
    heads at h_offset, in an attention of q_total x kv_total positions and
    h_total query heads (0: offset plus the call's own size). The mask and
    the score see the global positions, heads and sizes; buffers are the
    global ones. The values are the kernel ABI's position frame
    (MaskcBuffers, hipsrc/frame.h) in abi.FRAME_FIELDS order."""

    __slots__ = ("q_offset", "kv_offset", "h_offset", "q_total", "kv_total", "h_total")

    def __init__(self, q_offset=0, kv_offset=0, h_offset=0, q_total=0, kv_total=0, h_total=0):
        for name, v in zip(self.__slots__, (q_offset, kv_offset, h_offset, q_total, kv_total, h_total)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise MaskcError("Frame.%s = %r: want an int >= 0" % (name, v))
            setattr(self, name, v)

    def values(self):
        """The six ints in the ABI's order."""
        return [getattr(self, n) for n in self.__slots__]

    def __eq__(self, other):
        return isinstance(other, Frame) and self.values() == other.values()

    def __repr__(self):
        return "Frame(%s)" % ", ".join("%s=%d" % (n, getattr(self, n)) for n in self.__slots__)


def chunk_layout(seq_len, world, layout="contiguous"):
    """The chunks of the global sequence each rank holds: a list over ranks
    of lists of (global start, length), in the order the rank stores them
    (its local sequence is their concatenation). seq_len must divide evenly
    (by world, or by 2*world for zigzag): MaskcError otherwise."""
    if layout not in LAYOUTS:
        raise MaskcError("layout %r: want one of %s" % (layout, ", ".join(LAYOUTS)))
    if not isinstance(world, int) or world < 1:
        raise MaskcError("world size %r: want an int >= 1" % (world,))
    parts = world if layout == "contiguous" else 2 * world
    if seq_len < parts or seq_len % parts:
        raise MaskcError("sequence length %d does not split into %d equal %s chunks over %d ranks" %
                         (seq_len, parts, layout, world))
    c = seq_len // parts
    if layout == "contiguous":
        return [[(r * c, c)] for r in range(world)]
    return [[(r * c, c), ((parts - 1 - r) * c, c)] for r in range(world)]


def ring_schedule(world):
    """The ring's steps: for step i, rank r holds the keys/values of rank
    (r - i) mod world (step 0 its own); a list over steps of lists over
    ranks. Every rank sees every key chunk exactly once."""
    return [[(r - i) % world for r in range(world)] for i in range(world)]


def pair_frames(seq_len, world, layout, rank, owner, h_offset=0, h_total=0):
    """The kernel calls rank makes against owner's keys: a list of
    (q slice, kv slice, Frame) where the slices are (start, stop) in the
    rank's and the owner's local sequence and the Frame places the pair in
    the global attention of seq_len x seq_len positions (h_offset/h_total:
    the rank's heads, when heads are sharded too)."""
    chunks = chunk_layout(seq_len, world, layout)
    out = []
    qpos = 0
    for qs, ql in chunks[rank]:
        kpos = 0
        for ks, kl in chunks[owner]:
            out.append(((qpos, qpos + ql), (kpos, kpos + kl),
                        Frame(q_offset=qs, kv_offset=ks, h_offset=h_offset, q_total=seq_len, kv_total=seq_len,
                              h_total=h_total)))
            kpos += kl
        qpos += ql
    return out


class PyScalarOps:
    """merge_math's operations on Python floats (float64): the reference
    the tests check the merge against, and the definition of its rules at
    -inf."""

    @staticmethod
    def maximum(a, b):
        return a if a >= b else b

    @staticmethod
    def where(c, a, b):
        return a if c else b

    @staticmethod
    def isfinite(a):
        return a not in (float("inf"), float("-inf")) and a == a

    @staticmethod
    def exp(a):
        import math
        return 0.0 if a == float("-inf") else math.exp(a)

    @staticmethod
    def log(a):
        import math
        return float("-inf") if a == 0 else math.log(a)

    @staticmethod
    def zeros_like(a):
        return 0.0

    @staticmethod
    def ones_like(a):
        return 1.0


def merge_math(lses, outs, ops, expand=lambda w: w):
    """The exact merge of partial attention results over disjoint key sets:
    (lse, out) with lse = log(sum_i exp(lse_i)) and out = sum_i exp(lse_i -
    lse) * out_i. A partial whose keys are all masked has lse_i = -inf and
    weighs nothing (its out_i, even NaN, is not read); a row masked in every
    partial gets lse = -inf and out = 0, as the kernel writes such a row.
    ops: the elementwise operations (PyScalarOps, or torch's through
    merge_partials); expand maps a weight (lse-shaped) onto an output's
    shape. Computed with the maximum subtracted, so no exp overflows."""
    if not lses or len(lses) != len(outs):
        raise MaskcError("merge: %d LSEs and %d outputs; want the same number, at least one" %
                         (len(lses), len(outs)))
    m = lses[0]
    for x in lses[1:]:
        m = ops.maximum(m, x)
    fin = ops.isfinite(m)
    m = ops.where(fin, m, ops.zeros_like(m))  # every partial -inf: weights exp(-inf) = 0
    ws = [ops.exp(x - m) for x in lses]
    s = ws[0]
    for w in ws[1:]:
        s = s + w
    lse = m + ops.log(s)
    s_safe = ops.where(s > 0, s, ops.ones_like(s))
    out = None
    for w, o in zip(ws, outs):
        we = expand(w / s_safe)
        term = ops.where(we > 0, we * o, ops.zeros_like(we))
        out = term if out is None else out + term
    return lse, out


def merge_partials(parts, layout="bshd", out_dtype=None):
    """Merges partial (out, lse) pairs of the same query rows over disjoint
    key sets (torch tensors: out [B, S, H, D] for bshd or [B, H, S, D] for
    bhsd, lse [B, H, S] float32), in float32; returns (out in out_dtype,
    default the first out's dtype; lse float32)."""
    import torch

    class _TorchOps:
        maximum, where, isfinite, exp, log = torch.maximum, torch.where, torch.isfinite, torch.exp, torch.log
        zeros_like, ones_like = torch.zeros_like, torch.ones_like

    if layout == "bshd":
        expand = lambda w: w.transpose(1, 2).unsqueeze(-1)
    elif layout == "bhsd":
        expand = lambda w: w.unsqueeze(-1)
    else:
        raise MaskcError("layout=%r: want bshd or bhsd" % (layout,))
    lses = [l.float() for _, l in parts]
    outs = [o.float() for o, _ in parts]
    lse, out = merge_math(lses, outs, _TorchOps, expand)
    return out.to(out_dtype or parts[0][0].dtype), lse


def _seq_dim(layout):
    if layout not in ("bshd", "bhsd"):
        raise MaskcError("layout=%r: want bshd or bhsd" % (layout,))
    return 1 if layout == "bshd" else 2


def split_sequence(x, world, layout="contiguous", tensor_layout="bshd", dim=None):
    """The local tensors of every rank: x's global sequence (dimension dim,
    default the sequence dimension of tensor_layout; an LSE [B, H, S] uses
    dim=2) cut into the ranks' chunks, each rank's chunks concatenated."""
    import torch
    d = _seq_dim(tensor_layout) if dim is None else dim
    return [torch.cat([x.narrow(d, s, n) for s, n in chunks], dim=d)
            for chunks in chunk_layout(x.shape[d], world, layout)]


def gather_sequence(parts, layout="contiguous", tensor_layout="bshd", dim=None):
    """The inverse of split_sequence: the global tensor from every rank's local one."""
    import torch
    d = _seq_dim(tensor_layout) if dim is None else dim
    world = len(parts)
    seq = sum(p.shape[d] for p in parts)
    pieces = []
    for r, chunks in enumerate(chunk_layout(seq, world, layout)):
        pos = 0
        for s, n in chunks:
            pieces.append((s, parts[r].narrow(d, pos, n)))
            pos += n
    return torch.cat([p for _, p in sorted(pieces, key=lambda t: t[0])], dim=d)


def _pair_slices(t, sl, layout):
    return t.narrow(_seq_dim(layout), sl[0], sl[1] - sl[0])


def _local_forward(gen, q, kv_of, seq_len, world, layout, rank, steps, buffers, sink, tensor_layout, heads):
    """One rank's forward over the ring: (out, lse) merged over every step's
    pairs. kv_of(step) gives (owner, k, v) for that step."""
    import torch
    sd = _seq_dim(tensor_layout)
    h0, ht = heads
    parts_by_q = {}
    for i in range(steps):
        owner, k, v = kv_of(i)
        for qsl, ksl, fr in pair_frames(seq_len, world, layout, rank, owner, h0, ht):
            qc = _pair_slices(q, qsl, tensor_layout).contiguous()
            kc = _pair_slices(k, ksl, tensor_layout).contiguous()
            vc = _pair_slices(v, ksl, tensor_layout).contiguous()
            o, lse = gen.forward(qc, kc, vc, buffers, sink, tensor_layout, fr.values())
            parts_by_q.setdefault(qsl, []).append((o, lse))
    outs, lses = [], []
    for qsl in sorted(parts_by_q):
        o, l = merge_partials(parts_by_q[qsl], tensor_layout)
        outs.append(o)
        lses.append(l)
    return torch.cat(outs, dim=sd), torch.cat(lses, dim=2)


def _local_backward(gen, q, out, lse, dout, dlse, kv_of, seq_len, world, layout, rank, steps, buffers, sink,
                    tensor_layout, heads, deterministic, want):
    """One rank's backward over the ring: dq, and per step (owner, dk, dv)
    through add_dkv, and the buffer gradients summed over pairs."""
    import torch
    h0, ht = heads
    dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
    gsum = None
    contribs = []
    for i in range(steps):
        owner, k, v = kv_of(i)
        dk = torch.zeros(k.shape, dtype=torch.float32, device=k.device)
        dv = torch.zeros(v.shape, dtype=torch.float32, device=v.device)
        for qsl, ksl, fr in pair_frames(seq_len, world, layout, rank, owner, h0, ht):
            sl = lambda t, s: _pair_slices(t, s, tensor_layout).contiguous()
            dl = None if dlse is None else dlse.narrow(2, qsl[0], qsl[1] - qsl[0]).contiguous()
            gq, gk, gv, grads = gen.backward(sl(dout, qsl), dl, sl(q, qsl), sl(k, ksl), sl(v, ksl), sl(out, qsl),
                                             lse.narrow(2, qsl[0], qsl[1] - qsl[0]).contiguous(), buffers, sink,
                                             tensor_layout, deterministic, want, fr.values())
            _pair_slices(dq, qsl, tensor_layout).add_(gq.float())
            _pair_slices(dk, ksl, tensor_layout).add_(gk.float())
            _pair_slices(dv, ksl, tensor_layout).add_(gv.float())
            gf = [g.float() for g in grads]
            gsum = gf if gsum is None else [a + b for a, b in zip(gsum, gf)]
        contribs.append((owner, dk, dv))
    return dq, contribs, gsum


class SimulatedRing:
    """Every rank's keys/values in one process: step i of rank r reads the
    chunk of rank (r - i) mod n, and gradients land on their owner."""

    def __init__(self, ks, vs):
        self.ks, self.vs = list(ks), list(vs)
        self.world = len(self.ks)

    def kv_of(self, rank):
        sched = ring_schedule(self.world)
        return lambda i: (sched[i][rank], self.ks[sched[i][rank]], self.vs[sched[i][rank]])


class _RingFn:
    """The autograd Function of ring_attention_simulated (built lazily so
    that importing maskc.cp needs no torch)."""
    fn = None

    @classmethod
    def get(cls):
        if cls.fn is not None:
            return cls.fn
        import torch

        class RingFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, meta, *tensors):
                gen, world, layout, seq_len, nbuf, tensor_layout, deterministic, heads = meta
                qs, ks, vs = tensors[:world], tensors[world:2 * world], tensors[2 * world:3 * world]
                rest = tensors[3 * world:]
                buffers, sink = list(rest[:nbuf]), (rest[nbuf] if len(rest) > nbuf else None)
                ring = SimulatedRing(ks, vs)
                outs, lses = [], []
                for r in range(world):
                    o, l = _local_forward(gen, qs[r], ring.kv_of(r), seq_len, world, layout, r, world, buffers, sink,
                                          tensor_layout, heads)
                    outs.append(o)
                    lses.append(l)
                ctx.meta = meta
                ctx.save_for_backward(*tensors, *outs, *lses)
                ctx.want = 0
                for i, b in enumerate(buffers):
                    if b.requires_grad and b.dtype.is_floating_point:
                        ctx.want |= 1 << i
                ctx.has_sink = sink is not None
                return tuple(outs) + tuple(lses)

            @staticmethod
            def backward(ctx, *grads):
                gen, world, layout, seq_len, nbuf, tensor_layout, deterministic, heads = ctx.meta
                saved = ctx.saved_tensors
                n_in = len(saved) - 2 * world
                tensors, outs, lses = saved[:n_in], saved[n_in:n_in + world], saved[n_in + world:]
                qs, ks, vs = tensors[:world], tensors[world:2 * world], tensors[2 * world:3 * world]
                rest = tensors[3 * world:]
                buffers, sink = list(rest[:nbuf]), (rest[nbuf] if len(rest) > nbuf else None)
                douts, dlses = grads[:world], grads[world:]
                ring = SimulatedRing(ks, vs)
                dqs = []
                dks = [torch.zeros(k.shape, dtype=torch.float32, device=k.device) for k in ks]
                dvs = [torch.zeros(v.shape, dtype=torch.float32, device=v.device) for v in vs]
                gtot = None
                for r in range(world):
                    dout = douts[r] if douts[r] is not None else torch.zeros_like(outs[r])
                    dq, contribs, gsum = _local_backward(gen, qs[r], outs[r], lses[r], dout, dlses[r],
                                                         ring.kv_of(r), seq_len, world, layout, r, world, buffers,
                                                         sink, tensor_layout, heads, deterministic, ctx.want)
                    dqs.append(dq.to(qs[r].dtype))
                    for owner, dk, dv in contribs:
                        dks[owner] += dk
                        dvs[owner] += dv
                    gtot = gsum if gtot is None else [a + b for a, b in zip(gtot, gsum)]
                dbufs = [g.to(b.dtype) if ctx.want >> i & 1 else None for i, (g, b) in enumerate(zip(gtot, buffers))]
                dsink = None
                if ctx.has_sink:
                    raise MaskcError("ring attention: a sink's gradient is not summed over the ring yet")
                return (None, *dqs, *[d.to(k.dtype) for d, k in zip(dks, ks)],
                        *[d.to(v.dtype) for d, v in zip(dvs, vs)], *dbufs) + ((dsink,) if ctx.has_sink else ())

        cls.fn = RingFn
        return RingFn


def _generated_of(attn):
    """The generated-kernel launcher of a maskc.torch Attention."""
    gen = attn.generated()
    return gen


def _check_ring_call(attn, buffers, sink_name=None):
    gen = _generated_of(attn)
    if gen.spec.sink:
        raise MaskcError("block %s has a sink: ring attention does not merge sink terms yet (the sink adds to "
                         "every row's normaliser once, not once per key chunk)" % attn.name)
    unknown = sorted(set(buffers) - gen.known)
    missing = sorted(gen.known - set(buffers))
    if unknown or missing:
        raise MaskcError("block %s reads buffers %s; got %s" % (attn.name, ", ".join(sorted(gen.known)) or "none",
                                                                ", ".join(sorted(buffers)) or "none"))
    return gen


def ring_attention_simulated(attn, qs, ks, vs, layout="contiguous", buffers=None, tensor_layout=None,
                             deterministic=False, heads=(0, 0)):
    """Ring attention over len(qs) simulated ranks in this process: qs[r],
    ks[r], vs[r] are rank r's local tensors (split_sequence of the global
    ones with the same layout); buffers are the global captured tensors
    (the whole doc-id vector, the whole slope table). Returns (outs, lses):
    every rank's output and LSE [B, H, S_local], differentiable with respect
    to qs, ks, vs and the float buffers the score reads. heads: (h_offset,
    h_total) when the ranks' q and k hold a slice of the heads."""
    world = len(qs)
    if not (len(ks) == len(vs) == world) or world < 1:
        raise MaskcError("ring: %d q, %d k and %d v chunks; want one of each per rank" % (len(qs), len(ks), len(vs)))
    buffers = dict(buffers or {})
    gen = _check_ring_call(attn, buffers)
    tensor_layout = tensor_layout or attn.layout
    sd = _seq_dim(tensor_layout)
    seq_len = sum(q.shape[sd] for q in qs)
    if sum(k.shape[sd] for k in ks) != seq_len:
        raise MaskcError("ring: q chunks hold %d positions and k chunks %d; context parallelism splits one "
                         "sequence (self-attention)" % (seq_len, sum(k.shape[sd] for k in ks)))
    chunks = chunk_layout(seq_len, world, layout)
    for r in range(world):
        want = sum(n for _, n in chunks[r])
        if qs[r].shape[sd] != want or ks[r].shape[sd] != want:
            raise MaskcError("ring: rank %d holds %d queries and %d keys; the %s layout gives it %d" %
                             (r, qs[r].shape[sd], ks[r].shape[sd], layout, want))
    blist = [buffers[b.name] for b in gen.spec.buffers]
    meta = (gen, world, layout, seq_len, len(blist), tensor_layout, deterministic, tuple(heads))
    res = _RingFn.get().apply(meta, *qs, *ks, *vs, *blist)
    return list(res[:world]), list(res[world:])


class DistributedRing:
    """The ring over torch.distributed point-to-point: every step sends the
    keys/values held to rank + 1 and receives rank - 1's (batch_isend_irecv,
    so NCCL overlaps the transfer with nothing here but orders it safely).
    kv_of(i) follows ring_schedule: after i rotations a rank holds the
    chunk of rank (r - i) mod n."""

    def __init__(self, group=None):
        import torch.distributed as dist
        self.dist, self.group = dist, group
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)

    def _peer(self, delta):
        r = (self.rank + delta) % self.world
        return self.dist.get_global_rank(self.group, r) if self.group is not None else r

    def rotate(self, tensors):
        """Sends tensors to the next rank and returns the previous rank's."""
        import torch
        recv = [torch.empty_like(t) for t in tensors]
        ops = [self.dist.P2POp(self.dist.isend, t.contiguous(), self._peer(1), self.group) for t in tensors]
        ops += [self.dist.P2POp(self.dist.irecv, t, self._peer(-1), self.group) for t in recv]
        for req in self.dist.batch_isend_irecv(ops):
            req.wait()
        return recv

    def kv_iter(self, k, v):
        """kv_of for this rank: rotates once per step after the first."""
        sched = ring_schedule(self.world)
        state = {"i": 0, "kv": (k, v)}

        def kv_of(i):
            while state["i"] < i:
                state["kv"] = tuple(self.rotate(list(state["kv"])))
                state["i"] += 1
            return sched[i][self.rank], state["kv"][0], state["kv"][1]
        return kv_of


def ring_attention(attn, q, k, v, group=None, layout="zigzag", buffers=None, tensor_layout=None,
                   deterministic=False, heads=(0, 0)):
    """Ring attention of this rank's q, k, v (its chunks of the sequence in
    layout) over the torch.distributed group: returns (out, lse) for its
    rows, differentiable. The backward rotates the keys/values again and
    sends each chunk's dK/dV contributions around the ring with it, so
    every rank ends with the gradients of its own chunk. A float buffer's
    gradient (a slope table) is this rank's share: sum it over the group,
    as for any parameter replicated over it. Checked on the CPU with gloo
    and on two GPUs with NCCL (README_CP.md)."""
    import torch
    buffers = dict(buffers or {})
    gen = _check_ring_call(attn, buffers)
    tensor_layout = tensor_layout or attn.layout
    ring = DistributedRing(group)
    sd = _seq_dim(tensor_layout)
    seq_len = q.shape[sd] * ring.world
    blist = [buffers[b.name] for b in gen.spec.buffers]
    world, rank = ring.world, ring.rank

    class DistFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, *bl):
            o, l = _local_forward(gen, q, ring.kv_iter(k, v), seq_len, world, layout, rank, world, list(bl), None,
                                  tensor_layout, heads)
            ctx.save_for_backward(q, k, v, o, l, *bl)
            ctx.want = sum(1 << i for i, b in enumerate(bl) if b.requires_grad and b.dtype.is_floating_point)
            return o, l

        @staticmethod
        def backward(ctx, dout, dlse):
            q, k, v, o, l, *bl = ctx.saved_tensors
            dout = dout if dout is not None else torch.zeros_like(o)
            # dK/dV of the chunk held travel with it: after the last step one
            # more rotation brings every accumulator home.
            acc = {"dk": torch.zeros(k.shape, dtype=torch.float32, device=k.device),
                   "dv": torch.zeros(v.shape, dtype=torch.float32, device=v.device), "i": 0}
            state = {"kv": (k, v)}

            def kv_of(i):
                while acc["i"] < i:
                    state["kv"] = tuple(ring.rotate(list(state["kv"])))
                    acc["dk"], acc["dv"] = ring.rotate([acc["dk"], acc["dv"]])
                    acc["i"] += 1
                return ring_schedule(world)[i][rank], state["kv"][0], state["kv"][1]

            dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
            gsum = None
            for i in range(world):
                owner, kk, vv = kv_of(i)
                for qsl, ksl, fr in pair_frames(seq_len, world, layout, rank, owner, heads[0], heads[1]):
                    sl = lambda t, s: _pair_slices(t, s, tensor_layout).contiguous()
                    dl = None if dlse is None else dlse.narrow(2, qsl[0], qsl[1] - qsl[0]).contiguous()
                    gq, gk, gv, grads = gen.backward(sl(dout, qsl), dl, sl(q, qsl), sl(kk, ksl), sl(vv, ksl),
                                                     sl(o, qsl), l.narrow(2, qsl[0], qsl[1] - qsl[0]).contiguous(),
                                                     list(bl), None, tensor_layout, deterministic, ctx.want,
                                                     fr.values())
                    _pair_slices(dq, qsl, tensor_layout).add_(gq.float())
                    _pair_slices(acc["dk"], ksl, tensor_layout).add_(gk.float())
                    _pair_slices(acc["dv"], ksl, tensor_layout).add_(gv.float())
                    gf = [g.float() for g in grads]
                    gsum = gf if gsum is None else [a + b for a, b in zip(gsum, gf)]
            dk, dv = ring.rotate([acc["dk"], acc["dv"]])  # home: world rotations in all
            # this rank's share of a buffer's gradient (its rows against every key): the
            # shares add up over the group, as a replicated parameter's do (Megatron's
            # gradient all-reduce over data x context parallel ranks sums them)
            dbufs = [gsum[i].to(b.dtype) if ctx.want >> i & 1 else None for i, b in enumerate(bl)]
            return (dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), *dbufs)

    return DistFn.apply(q, k, v, *blist)


def _all_to_all(group, outs, ins):
    """torch.distributed's all_to_all with autograd (its backward is the
    reverse exchange)."""
    from torch.distributed.nn.functional import all_to_all
    return all_to_all(outs, ins, group=group)


def ulysses_attention(attn, q, k, v, group=None, layout="contiguous", buffers=None, tensor_layout=None,
                      deterministic=False):
    """All-to-all context parallelism over heads (DeepSpeed Ulysses,
    Megatron's cp_comm_type "a2a"): this rank holds its chunks of the
    sequence (layout) for every head; one all-to-all gives it the whole
    sequence for H / n query heads (and HKV / n kv heads), the attention runs
    there with a head frame (h_offset = rank * H / n into the global head
    table: slopes[h] reads the global head's slope), and one all-to-all
    brings the output back. Returns (out, lse) for this rank's rows,
    differentiable; a float buffer's gradient is this rank's share (its
    heads), summed over the group as in ring_attention. H and HKV must
    divide by the group's size. Checked on
    the CPU with gloo (python/gpu_tests/check_cp_reference.py) and on two
    GPUs with NCCL (python/gpu_tests/check_cp_nccl.py)."""
    import torch
    import torch.distributed as dist
    buffers = dict(buffers or {})
    _check_ring_call(attn, buffers)
    tensor_layout = tensor_layout or attn.layout
    if tensor_layout != "bshd":
        raise MaskcError("ulysses_attention takes bshd tensors; got %r" % (tensor_layout,))
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    H, HKV = q.shape[2], k.shape[2]
    if H % world or HKV % world:
        raise MaskcError("all-to-all over %d ranks needs query heads (%d) and kv heads (%d) divisible by %d; "
                         "use the ring" % (world, H, HKV, world))

    def seq_to_heads(x):  # [B, s, Hx, D] (my chunks, all heads) -> [B, S, Hx / n, D] (all positions, my heads)
        ins = [c.contiguous() for c in x.chunk(world, dim=2)]
        outs = [torch.empty_like(ins[0]) for _ in range(world)]
        return gather_sequence(list(_all_to_all(group, outs, ins)), layout, "bshd")

    def heads_to_seq(y, dim_seq, dim_head):  # the inverse, for out (1, 2) and lse [B, H/n, S] (2, 1)
        ins = [p.contiguous() for p in split_sequence(y, world, layout, dim=dim_seq)]
        outs = [torch.empty_like(ins[0]) for _ in range(world)]
        return torch.cat(list(_all_to_all(group, outs, ins)), dim=dim_head)

    qh, kh, vh = seq_to_heads(q), seq_to_heads(k), seq_to_heads(v)
    (o,), (l,) = ring_attention_simulated(attn, [qh], [kh], [vh], "contiguous", buffers, "bshd", deterministic,
                                          heads=(rank * (H // world), H))
    return heads_to_seq(o, 1, 2), heads_to_seq(l, 2, 1)
