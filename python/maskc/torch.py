"""maskc in PyTorch: load a .flex file once, call its attention blocks in a training step.

    import maskc.torch as mt
    prog = mt.load("model.flex", defines={"WINDOW": 2048})   # runs maskc once, cached on disk
    attn = prog.attention("doc_layer")
    out = attn(q, k, v, layout="bshd", buffers={"doc": doc})

Each call dispatches by the block's plan (maskc.plan.choose): the plan's
Primus-Turbo entry when primus_turbo imports and the plan's preconditions
hold for this call's shapes, torch's SDPA (cuDNN first) where that is exact,
else maskc's generated kernel through the custom ops maskc::attn_fwd and
maskc::attn_bwd (registered with fake and autograd implementations, so
torch.compile(fullgraph=True) traces through them). When a better kernel
cannot run a call exactly the generated kernel runs and a warning says why,
once per reason; backend="turbo" or "sdpa" raises instead.

This module is the public import path; the code lives in maskc.api (load,
Program, Attention), maskc.dispatch (the choice of kernel, the SDPA and
Turbo adapters), maskc.launcher (the generated-kernel launcher) and
maskc.ops (the custom ops and their autograd).
"""
from .api import Attention, Program, load
from .diagnostics import MaskcError
from .dispatch import cu_seqlens_from_segments
from .launcher import TileMap, dtype_name
from .ops import attn_bwd, attn_fwd  # noqa: F401  (torch.ops.maskc.*, registered on import)

__all__ = ["load", "Program", "Attention", "TileMap", "MaskcError", "dtype_name", "cu_seqlens_from_segments"]


# FlexAttention's API over the user's own Python mods (maskc.flex reads their
# source and closures into a .flex text and runs it through load/Attention).
from .flex import (AuxOutput, AuxRequest, BlockMask, and_masks, create_block_mask, flex_attention,  # noqa: E402
                   noop_mask, or_masks)

__all__ += ["flex_attention", "create_block_mask", "BlockMask", "and_masks", "or_masks", "noop_mask", "AuxRequest",
            "AuxOutput"]
