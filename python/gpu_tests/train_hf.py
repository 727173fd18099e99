"""A real client: a Hugging Face transformers Llama trained with maskc attention.

    PYTHONPATH=/tmp/site python3 python/gpu_tests/train_hf.py [--steps 200] [--out DIR]

A LlamaConfig model (random init, nothing downloaded) with maskc registered
through transformers' AttentionInterface as "maskc", trained with AdamW on
packed documents (document-causal: python/gpu_tests/train/doc_causal.flex)
and on a sliding window with learned per-head sinks (swa_sink.flex). Each
variant is trained twice from the same initial weights, seed and batches:
once with maskc (the generated forward and backward kernels through
maskc::attn_fwd / attn_bwd), once with a torch reference registered the same
way ("ref"): torch.compile(flex_attention) with the equivalent block mask,
the sink applied exactly through FlexAttention's LSE (O * sigmoid(LSE -
sink)). Mixed precision: fp32 master weights, attention in bf16.

The loss curves must agree within bf16 noise: every step's |loss_maskc -
loss_ref| <= TOL_STEP and the mean over the last 20 steps within TOL_TAIL.
Writes DIR/train_hf.jsonl (per step losses, per run tokens/s) and prints a
summary; exits 1 when a curve disagrees.

The data: each sequence packs documents of 64..1024 tokens, each a random
pattern of 8..64 tokens repeated, so the loss falls as the model learns to
copy within a document (and only within it, under the document mask).
"""
import argparse
import copy
import json
import math
import os
import sys
import time

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import maskc.torch as mt

HERE = os.path.dirname(os.path.abspath(__file__))
TOL_STEP = 0.05  # nats, any single step
TOL_TAIL = 0.02  # nats, mean |difference| over the last 20 steps
WINDOW = 256

B, S, VOCAB = 4, 2048, 1024
CONFIG = dict(vocab_size=VOCAB, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
              num_attention_heads=4, num_key_value_heads=2, head_dim=128, max_position_embeddings=S,
              rms_norm_eps=1e-5, tie_word_embeddings=False)

STATE = {}  # the current step's document ids, read by both attention functions
_flex = torch.compile(flex_attention)
try:  # torch >= 2.9 returns the LSE through AuxRequest
    from torch.nn.attention.flex_attention import AuxRequest
except ImportError:
    AuxRequest = None
DOC = None  # the reference's document ids: one tensor updated in place, so that its mask_mod stays one function


def _doc_mask(b, h, q, kv):
    return (DOC[q] == DOC[kv]) & (q >= kv)


def _swa_mask(b, h, q, kv):
    return (q >= kv) & (q - kv < WINDOW)


def make_batch(gen, dev):
    """(tokens [B, S], doc [S] int32): documents shared by the batch rows
    (maskc's doc buffer is declared [KV]), a fresh pattern per row."""
    lens, rem = [], S
    while rem > 0:
        n = min(rem, int(torch.randint(64, 1025, (1,), generator=gen)))
        lens.append(n)
        rem -= n
    doc = torch.repeat_interleave(torch.arange(len(lens)), torch.tensor(lens)).to(torch.int32)
    rows = []
    for _ in range(B):
        parts = []
        for n in lens:
            p = int(torch.randint(8, 65, (1,), generator=gen))
            pat = torch.randint(0, VOCAB, (p,), generator=gen)
            parts.append(pat.repeat(n // p + 1)[:n])
        rows.append(torch.cat(parts))
    return torch.stack(rows).to(dev), doc.to(dev)


def maskc_attention(prog_attn, variant):
    def fn(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        assert scaling is None or abs(scaling - query.shape[-1] ** -0.5) < 1e-9, scaling
        q, k, v = query.to(torch.bfloat16), key.to(torch.bfloat16), value.to(torch.bfloat16)
        bufs = {"doc": STATE["doc"]} if variant == "doc" else {"sinks": module.sinks}
        out = prog_attn(q, k, v, layout="bhsd", buffers=bufs)
        return out.transpose(1, 2), None
    return fn


def ref_attention(variant):
    def fn(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        q, k, v = query.to(torch.bfloat16), key.to(torch.bfloat16), value.to(torch.bfloat16)
        if variant == "doc":
            out = _flex(q, k, v, block_mask=STATE["block_mask"], enable_gqa=True, scale=scaling)
        else:
            if AuxRequest is not None:
                out, aux = _flex(q, k, v, block_mask=STATE["block_mask"], enable_gqa=True, scale=scaling,
                                 return_aux=AuxRequest(lse=True))
                lse = aux.lse
            else:
                out, lse = _flex(q, k, v, block_mask=STATE["block_mask"], enable_gqa=True, scale=scaling,
                                 return_lse=True)
            # the sink joins the softmax's denominator: O * Z / (Z + e^sink)
            w = torch.sigmoid(lse - module.sinks.float()[None, :, None])
            out = (out.float() * w[..., None]).to(out.dtype)
        return out.transpose(1, 2), None
    return fn


def build(seed):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(**CONFIG)
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg)
    for layer in model.model.layers:  # per-head sink logits (used by the sink variant only)
        layer.self_attn.sinks = torch.nn.Parameter(torch.zeros(CONFIG["num_attention_heads"]))
    return model


def train(model, impl, variant, steps, seed, dev):
    global DOC
    model = model.to(dev)
    try:
        model.set_attn_implementation(impl)
    except AttributeError:  # transformers before set_attn_implementation
        model.config._attn_implementation = impl
    assert model.config._attn_implementation == impl
    DOC = torch.zeros(S, dtype=torch.int32, device=dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(seed)
    pos = torch.arange(S, device=dev)[None].expand(B, S)
    losses, t_start, tokens = [], None, 0
    if variant == "swa":
        STATE["block_mask"] = create_block_mask(_swa_mask, None, None, S, S, device=dev)
    for step in range(steps):
        if step == 10:  # the first steps compile (flex) and build kernels: time the rest
            torch.cuda.synchronize()
            t_start = time.time()
            tokens = 0
        ids, doc = make_batch(gen, dev)
        STATE["doc"] = doc
        if variant == "doc" and impl == "ref":
            DOC.copy_(doc)
            STATE["block_mask"] = create_block_mask(_doc_mask, None, None, S, S, device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=ids, position_ids=pos, labels=ids, use_cache=False)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(out.loss.item())
        tokens += B * S
    torch.cuda.synchronize()
    tps = tokens / (time.time() - t_start)
    return losses, tps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", default="doc,swa")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    a = ap.parse_args()
    import transformers
    from transformers import AttentionInterface
    dev = torch.device("cuda")
    print("torch", torch.__version__, "transformers", transformers.__version__, torch.cuda.get_device_name(),
          flush=True)
    progs = {"doc": mt.load(os.path.join(HERE, "train", "doc_causal.flex")).prepare().attention("doc_layer"),
             "swa": mt.load(os.path.join(HERE, "train", "swa_sink.flex"),
                            defines={"WINDOW": WINDOW}).prepare().attention("swa_layer")}
    try:  # custom names get no mask of their own: both functions build theirs
        from transformers import AttentionMaskInterface
        AttentionMaskInterface.register("maskc", lambda *args, **kw: None)
        AttentionMaskInterface.register("ref", lambda *args, **kw: None)
    except ImportError:
        pass
    log = open(os.path.join(a.out, "train_hf.jsonl"), "w")
    fails = 0
    base = build(a.seed)
    for variant in a.variants.split(","):
        AttentionInterface.register("maskc", maskc_attention(progs[variant], variant))
        AttentionInterface.register("ref", ref_attention(variant))
        res = {}
        for impl in ("maskc", "ref"):
            losses, tps = train(copy.deepcopy(base), impl, variant, a.steps, a.seed + 1, dev)
            res[impl] = (losses, tps)
            log.write(json.dumps(dict(variant=variant, impl=impl, tokens_per_s=tps, losses=losses)) + "\n")
            log.flush()
        lm, lr = res["maskc"][0], res["ref"][0]
        diff = [abs(x - y) for x, y in zip(lm, lr)]
        tail = sum(diff[-20:]) / len(diff[-20:])
        ok = all(math.isfinite(x) for x in lm) and max(diff) <= TOL_STEP and tail <= TOL_TAIL
        fails += not ok
        pts = sorted({0, 1, 10, 50, 100, 150, len(lm) - 1})
        summary = dict(variant=variant, ok=ok, max_abs_diff=max(diff), tail_mean_abs_diff=tail,
                       tokens_per_s_maskc=res["maskc"][1], tokens_per_s_ref=res["ref"][1],
                       speed_ratio=res["maskc"][1] / res["ref"][1],
                       curve={i: (round(lm[i], 4), round(lr[i], 4)) for i in pts if i < len(lm)})
        print(json.dumps(summary), flush=True)
        log.write(json.dumps(summary) + "\n")
    print("FAILED %d" % fails if fails else "ALL PASS", flush=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
