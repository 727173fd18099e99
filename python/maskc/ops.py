"""maskc's torch custom ops: maskc::attn_fwd and maskc::attn_bwd over the
generated-kernel launcher (maskc.launcher), with their fake implementations
(shapes only, for torch.compile and meta tensors) and the forward's autograd
registration, so that torch.compile(fullgraph=True) traces through a call.
Importing this module registers them (maskc.torch does).
"""
from typing import List, Optional, Tuple

import torch

from .launcher import _launcher, _out_lse_like


@torch.library.custom_op("maskc::attn_fwd", mutates_args=())
def attn_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, buffers: List[torch.Tensor],
             sink: Optional[torch.Tensor], kernel: str, layout: str, deterministic: bool,
             frame: Optional[List[int]], tile_flags: Optional[torch.Tensor]
             ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """maskc's generated attention forward: (out in q's layout, LSE [B, H, Sq],
    tile flags): the flags are the pre-pass's, uint8, empty where it ran
    none, or where tile_flags (a TileMap's, checked by the caller) were
    given and no pre-pass ran; the backward reads them (or tile_flags)
    instead of running the pre-pass again.
    kernel names a launcher of this process; buffers are in slot order;
    sink is the block's f32 [H] sink logits or None; frame the position
    frame's six ints (abi.FRAME_FIELDS) or None for the whole attention.
    frame and tile_flags have no default on purpose: torch's dispatcher
    drops an argument equal to its default before autograd, and the
    backward must return one gradient per argument it kept (device run 17
    cp)."""
    return _launcher(kernel).forward(q, k, v, buffers, sink, layout, frame, keep_flags=True, given_flags=tile_flags)


@attn_fwd.register_fake
def _attn_fwd_fake(q, k, v, buffers, sink, kernel, layout, deterministic, frame, tile_flags):
    out, lse = _out_lse_like(q, layout)
    n = 0 if tile_flags is not None else _launcher(kernel).flag_count(q, k, layout)
    return out, lse, q.new_empty((n,), dtype=torch.uint8)


@torch.library.custom_op("maskc::attn_bwd", mutates_args=())
def attn_bwd(dout: torch.Tensor, dlse: Optional[torch.Tensor], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             out: torch.Tensor, lse: torch.Tensor, buffers: List[torch.Tensor], sink: Optional[torch.Tensor],
             kernel: str, layout: str, deterministic: bool, want: int, frame: Optional[List[int]] = None,
             flags: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, List[torch.Tensor]]:
    """maskc's generated attention backward: (dq, dk, dv, grads) where grads
    holds one gradient per buffer (zeros for buffers that are not
    differentiable or not wanted), then dsink when there is a sink. want:
    bit i asks for buffer slot i's gradient, bit max_buffers for dsink;
    frame as in attn_fwd; flags the forward's tile flags (attn_fwd's third
    output; None or empty: the backward runs the pre-pass itself)."""
    return _launcher(kernel).backward(dout, dlse, q, k, v, out, lse, buffers, sink, layout, deterministic, want,
                                      frame, flags)


@attn_bwd.register_fake
def _attn_bwd_fake(dout, dlse, q, k, v, out, lse, buffers, sink, kernel, layout, deterministic, want, frame=None,
                   flags=None):
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            [b.new_empty(b.shape) for b in buffers] + ([] if sink is None else [sink.new_empty(sink.shape)]))


def _setup_context(ctx, inputs, output):
    q, k, v, buffers, sink, kernel, layout, deterministic, frame, tile_flags = inputs
    out, lse, flags = output
    if tile_flags is not None:  # no pre-pass ran: the backward reads the TileMap's flags
        flags = tile_flags
    ctx.save_for_backward(q, k, v, out, lse, sink, flags, *buffers)
    ctx.kernel, ctx.layout, ctx.deterministic, ctx.frame = kernel, layout, deterministic, frame
    want = 0
    for i, b in enumerate(buffers):
        if b.requires_grad:
            want |= 1 << i
    if sink is not None and sink.requires_grad:
        want |= 1 << _launcher(kernel).man.max_buffers
    ctx.want = want


def _backward(ctx, dout, dlse, dflags):
    q, k, v, out, lse, sink, flags, *buffers = ctx.saved_tensors
    dq, dk, dv, grads = attn_bwd(dout, dlse, q, k, v, out, lse, buffers, sink, ctx.kernel, ctx.layout,
                                 ctx.deterministic, ctx.want, ctx.frame, flags)
    dbufs = [g if b.dtype.is_floating_point and ctx.want >> i & 1 else None
             for i, (g, b) in enumerate(zip(grads, buffers))]
    dsink = grads[len(buffers)] if sink is not None else None
    return dq, dk, dv, dbufs, dsink, None, None, None, None, None


attn_fwd.register_autograd(_backward, setup_context=_setup_context)
