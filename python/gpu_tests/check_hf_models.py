"""Hugging Face models with attn_implementation="maskc" (maskc.transformers), on the GPU.

    PYTHONPATH=/tmp/site python3 python/gpu_tests/check_hf_models.py [--models llama,gemma2,...]
        [--steps 100] [--batch 4] [--seq 512] [--gen-tokens 64] [--speed-steps 20] [--no-speed] [--no-gen]
        [--out DIR]

For each model (tiny configs: 2 layers, hidden 256, random initialisation,
nothing downloaded), built once from a seed:

- train: the same initial weights trained --steps AdamW steps twice, on the
  same batches, with maskc and with transformers' eager attention (the
  reference: eager reads the same masks transformers builds, and runs
  softcap and sinks as the model defines them). Decoders get packed
  sequences (position_ids restarting at each document, so transformers
  asks for a document mask); ModernBERT a masked-LM batch. Every step
  |loss_maskc - loss_eager| <= 0.05 and the mean over the last 20 <= 0.02.
- speed: tokens/s of training steps with maskc, sdpa and flex_attention
  (after warm-up steps; an implementation the model refuses is reported).
- generate (decoders): the eager-trained weights generate --gen-tokens
  tokens greedily from two left-padded prompts of different lengths, with
  eager and with maskc, once with the default DynamicCache and once with
  StaticCache. The tokens must be the same; a first divergence passes
  only where the eager logits' top-two gap at that step is within bf16
  resolution of the top logit (one bf16 ulp), and is reported.

Every mask maskc builds is also checked, pair by pair, against the
installed transformers' own mask function (checking_mask_interface): a
mismatch fails the model's first check that builds it.

A model whose class the installed transformers lacks is reported (SKIP),
not failed. Prints a JSON line per check and a PASS/FAIL table last; exits
1 when any check failed. Writes DIR/check_hf_models.jsonl.
"""
import argparse
import copy
import json
import math
import os
import sys
import time
import traceback

import torch

TOL_STEP = 0.05
TOL_TAIL = 0.02
VOCAB = 512
COMMON = dict(vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
              attention_dropout=0.0, tie_word_embeddings=False)
WINDOW = 128  # sliding windows, shorter than --seq so that they matter

# name: (config class, model class, extra config, decoder?)
MODELS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}, True),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}, True),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {}, True),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(sliding_window=WINDOW), True),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM",
               dict(sliding_window=WINDOW, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                    query_pre_attn_scalar=64, layer_types=["sliding_attention", "full_attention"]), True),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM",
               dict(sliding_window=WINDOW, query_pre_attn_scalar=64,
                    layer_types=["sliding_attention", "full_attention"]), True),
    "gpt_oss": ("GptOssConfig", "GptOssForCausalLM",
                dict(sliding_window=WINDOW, num_local_experts=4, num_experts_per_tok=2,
                     layer_types=["sliding_attention", "full_attention"]), True),
    "modernbert": ("ModernBertConfig", "ModernBertForMaskedLM",
                   dict(local_attention=2 * WINDOW, global_attn_every_n_layers=2, attention_dropout=0.0,
                        embedding_dropout=0.0, mlp_dropout=0.0, pad_token_id=0, mask_token_id=1,
                        reference_compile=False), False),
}
MODERNBERT_DROP = ("num_key_value_heads", "head_dim", "attention_dropout", "tie_word_embeddings")


VERIFIED = {}  # mask expression -> times checked against transformers' own mask function


def _indices(B, Q, KV, q0, kv0, device):
    """(b, h, q, kv) index tensors broadcast over [B, 1, Q, KV] at the
    global positions, as transformers' SDPA mask builds them."""
    return (torch.arange(B, device=device)[:, None, None, None],
            torch.zeros(1, 1, 1, 1, dtype=torch.long, device=device),
            (torch.arange(Q, device=device) + q0)[None, None, :, None],
            (torch.arange(KV, device=device) + kv0)[None, None, None, :])


def _eval_expr(expr, buffers, idx, kv_total):
    """The keep mask of a maskc.transformers expression at the index tensors
    idx, evaluated by Python (the .flex subset it writes has Python's
    meaning), its buffers sized as the launcher sizes them."""
    import maskc.transformers as mtf
    b, h, q, kv = idx
    if expr is None:
        return torch.ones((), dtype=torch.bool, device=q.device)
    call = type("C", (), {"buffers": buffers, "kv_total": kv_total})()
    env = dict(mtf._buffer_tensors(call), b=b, h=h, q=q, kv=kv, abs=torch.abs)
    return eval(expr, {"__builtins__": {}}, env)


def checking_mask_interface(batch_size, q_length, kv_length, q_offset=0, kv_offset=0, mask_function=None,
                            attention_mask=None, **kwargs):
    """maskc.transformers.mask_interface, then the MaskInfo checked pair by
    pair against transformers' own mask function (its index-broadcast
    evaluation, as its SDPA mask builds it, padding included): the lowering
    is checked against the installed transformers, not only against the
    host tests' stand-ins."""
    import maskc.transformers as mtf
    info = mtf.mask_interface(batch_size, q_length, kv_length, q_offset, kv_offset, mask_function, attention_mask,
                              **kwargs)
    q0, kv0 = info.q_offset, info.kv_offset
    shape = (batch_size, 1, q_length, kv_length)
    idx = _indices(batch_size, q_length, kv_length, q0, kv0, kwargs.get("device") or "cuda")
    want = mask_function(*idx)
    if attention_mask is not None:
        pad = attention_mask.bool()
        if pad.shape[-1] < kv0 + kv_length:
            pad = torch.nn.functional.pad(pad, (0, kv0 + kv_length - pad.shape[-1]))
        want = want & pad[idx[0], idx[3]]
    want = want.expand(shape)
    got = _eval_expr(info.expr, info.buffers, idx, kv0 + kv_length).expand(shape)
    if not bool((want == got).all()):
        bad = (want != got).nonzero()[0].tolist()
        raise AssertionError("maskc.transformers lowered %s to %s, which differs from transformers' mask at "
                             "(b, _, q, kv) = %s (offsets %s, %s)" % (info.source, info.expr, bad, q0, kv0))
    VERIFIED[info.expr] = VERIFIED.get(info.expr, 0) + 1
    return info


def build(name, seed):
    """(model in fp32 on the GPU, decoder?) or raises LookupError when the
    installed transformers lacks the classes."""
    import transformers
    cfg_name, model_name, extra, decoder = MODELS[name]
    if not hasattr(transformers, cfg_name) or not hasattr(transformers, model_name):
        raise LookupError("transformers %s has no %s/%s" % (transformers.__version__, cfg_name, model_name))
    kw = dict(COMMON)
    if name == "modernbert":
        for k in MODERNBERT_DROP:
            kw.pop(k)
    kw.update(extra)
    cfg = getattr(transformers, cfg_name)(**kw)
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(cfg)
    return model.cuda(), decoder


def set_impl(model, impl):
    try:
        model.set_attn_implementation(impl)
    except AttributeError:  # older transformers
        model.config._attn_implementation = impl
    assert model.config._attn_implementation == impl, (model.config._attn_implementation, impl)


def make_batch(gen, B, S, decoder):
    """A batch on the GPU: copy-task tokens (each document a random pattern
    of 4..32 tokens repeated), and for decoders position_ids restarting at
    each document (packed sequences); for the masked LM, labels at 30% of
    the positions, those replaced by the mask token."""
    ids, pos = [], []
    for _ in range(B):
        row, prow = [], []
        while len(row) < S:
            n = min(S - len(row), int(torch.randint(48, 257, (1,), generator=gen)))
            p = int(torch.randint(4, 33, (1,), generator=gen))
            pat = torch.randint(2, VOCAB, (p,), generator=gen)
            row += pat.repeat(n // p + 1)[:n].tolist()
            prow += list(range(n))
        ids.append(row)
        pos.append(prow)
    ids = torch.tensor(ids, device="cuda")
    pos = torch.tensor(pos, device="cuda")
    if decoder:
        return dict(input_ids=ids, position_ids=pos, labels=ids)
    sel = torch.rand(ids.shape, generator=gen).cuda() < 0.3
    labels = torch.where(sel, ids, torch.full_like(ids, -100))
    inp = torch.where(sel, torch.ones_like(ids), ids)  # mask_token_id 1
    return dict(input_ids=inp, attention_mask=torch.ones_like(ids), labels=labels)


def train(model, impl, steps, seed, B, S, decoder, time_from=None, lr=5e-4):
    """Trains model in place: the losses of `steps` AdamW steps (bf16
    autocast, fp32 master weights) and tokens/s over the steps from
    time_from on."""
    set_impl(model, impl)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(seed)
    losses, t0, tokens = [], None, 0
    for step in range(steps):
        if step == time_from:
            torch.cuda.synchronize()
            t0, tokens = time.time(), 0
        batch = make_batch(gen, B, S, decoder)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(**batch, use_cache=False) if decoder else model(**batch)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(out.loss.item())
        tokens += B * S
    torch.cuda.synchronize()
    tps = tokens / (time.time() - t0) if t0 is not None else None
    return losses, tps


def bf16_ulp(x):
    """One bf16 unit in the last place at |x| (8 significant bits)."""
    x = abs(float(x))
    if x == 0 or not math.isfinite(x):
        return 0.0
    return 2.0 ** (math.floor(math.log2(x)) - 7)


def prompts(gen, lengths):
    """Left-padded prompts (pad id 0) of the given lengths, each a repeated pattern."""
    L = max(lengths)
    ids = torch.zeros(len(lengths), L, dtype=torch.long)
    mask = torch.zeros(len(lengths), L, dtype=torch.long)
    for i, n in enumerate(lengths):
        p = int(torch.randint(4, 17, (1,), generator=gen))
        pat = torch.randint(2, VOCAB, (p,), generator=gen)
        ids[i, L - n:] = pat.repeat(n // p + 1)[:n]
        mask[i, L - n:] = 1
    return ids.cuda(), mask.cuda()


def generate(model, impl, ids, mask, n, cache):
    set_impl(model, impl)
    model.eval()
    model.generation_config.disable_compile = True  # compare the attention, not torch.compile's graph of it
    kw = dict(max_new_tokens=n, min_new_tokens=n, do_sample=False, return_dict_in_generate=True,
              output_logits=True, pad_token_id=0)
    if cache == "static":
        # StaticCache allocates its keys and values in the model's dtype:
        # under autocast the fp32 master weights would give an fp32 cache that
        # bf16 key states cannot be copied into, so the static runs generate
        # with bf16 weights (the same copy for eager and maskc).
        kw["cache_implementation"] = "static"
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, **kw)
    else:
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            out = model.generate(input_ids=ids, attention_mask=mask, **kw)
    new = out.sequences[:, ids.shape[1]:]
    return new, torch.stack(out.logits, 1).float()  # [B, n, V]


def compare_generation(model, ids, mask, n, cache):
    """One generate() comparison: dict with ok, and the first divergence per
    sequence (step, tokens, eager top-two gap, bf16 ulp)."""
    if cache == "static":
        model = copy.deepcopy(model).to(torch.bfloat16)
    ref, logits = generate(model, "eager", ids, mask, n, cache)
    got, _ = generate(model, "maskc", ids, mask, n, cache)
    res = dict(cache=cache, ok=True, divergences=[])
    for i in range(ref.shape[0]):
        diff = (ref[i] != got[i]).nonzero()
        if len(diff) == 0:
            continue
        t = int(diff[0])
        top2 = logits[i, t].topk(2).values
        gap, ulp = float(top2[0] - top2[1]), bf16_ulp(top2[0])
        tie = gap <= ulp
        res["divergences"].append(dict(seq=i, step=t, eager=int(ref[i, t]), maskc=int(got[i, t]), gap=gap, ulp=ulp,
                                       accepted=tie))
        res["ok"] = res["ok"] and tie
    res["same_tokens"] = not res["divergences"]
    return res


def check_model(name, a, log):
    """Runs one model's checks; returns rows (model, check, status, detail)."""
    rows = []

    def emit(check, status, detail, **extra):
        rows.append((name, check, status, detail))
        rec = dict(model=name, check=check, status=status, detail=detail)
        rec.update(extra)
        line = json.dumps(rec)
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    try:
        base, decoder = build(name, a.seed)
    except LookupError as e:
        emit("build", "SKIP", str(e))
        return rows
    except Exception as e:
        emit("build", "FAIL", "%s: %s" % (type(e).__name__, e))
        return rows
    res, trained = {}, {"eager": base}
    for impl in ("maskc", "eager") if a.train else ():
        try:
            trained[impl] = copy.deepcopy(base)
            res[impl] = train(trained[impl], impl, a.steps, a.seed + 1, a.batch, a.seq, decoder, lr=a.lr)
        except Exception as e:
            traceback.print_exc()
            emit("train", "FAIL", "%s on %s: %s: %s" % (impl, name, type(e).__name__, str(e)[:300]))
            return rows
    if a.train:
        lm, le = res["maskc"][0], res["eager"][0]
        diff = [abs(x - y) for x, y in zip(lm, le)]
        tail = sum(diff[-20:]) / len(diff[-20:])
        ok = all(math.isfinite(x) for x in lm) and max(diff) <= TOL_STEP and tail <= TOL_TAIL
        emit("train", "PASS" if ok else "FAIL", "max step diff %.4f (<= %.2f), last-20 mean %.4f (<= %.2f), loss "
             "%.3f -> %.3f" % (max(diff), TOL_STEP, tail, TOL_TAIL, le[0], le[-1]), losses_maskc=lm, losses_eager=le)
    if a.speed:
        tps = {}
        for impl in a.speed_impls.split(","):
            try:
                _, tps[impl] = train(copy.deepcopy(base), impl, a.speed_steps + 5, a.seed + 2, a.batch, a.seq,
                                     decoder, time_from=5)
            except Exception as e:
                tps[impl] = "%s: %s" % (type(e).__name__, str(e)[:120])
        emit("speed", "INFO", "tokens/s " + ", ".join("%s %s" % (k, "%.0f" % v if isinstance(v, float) else v)
                                                     for k, v in tps.items()), tokens_per_s=tps)
    if a.gen and decoder:
        model = trained["eager"]  # the reference's trained weights: peaked logits on the copy task
        gen = torch.Generator().manual_seed(a.seed + 3)
        ids, mask = prompts(gen, [a.prompt, a.prompt // 2 + 3])
        for cache in ("dynamic", "static"):
            try:
                r = compare_generation(model, ids, mask, a.gen_tokens, cache)
            except Exception as e:
                traceback.print_exc()
                emit("generate-" + cache, "FAIL", "%s: %s" % (type(e).__name__, str(e)[:300]))
                continue
            if r["same_tokens"]:
                detail = "%d tokens x %d sequences identical" % (a.gen_tokens, ids.shape[0])
            else:
                detail = "; ".join("seq %d step %d: eager %d maskc %d, eager top-two gap %.3g %s bf16 ulp %.3g" % (
                    d["seq"], d["step"], d["eager"], d["maskc"], d["gap"], "<=" if d["accepted"] else ">", d["ulp"])
                    for d in r["divergences"])
            emit("generate-" + cache, "PASS" if r["ok"] else "FAIL", detail, divergences=r["divergences"])
    elif a.gen:
        emit("generate", "N/A", "an encoder (masked LM): no generate()")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, of: " + ", ".join(MODELS))
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--lr", type=float, default=5e-4,
                    help="AdamW learning rate of the training comparison (at 2e-3 the tiny gpt-oss and "
                         "ModernBERT configs diverge on eager too, and any two runs drift apart)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=40, help="the longer prompt's length")
    ap.add_argument("--speed-steps", type=int, default=20)
    ap.add_argument("--speed-impls", default="maskc,sdpa,flex_attention",
                    help="implementations timed (flex_attention compiles: about a minute per model)")
    ap.add_argument("--no-speed", dest="speed", action="store_false")
    ap.add_argument("--no-gen", dest="gen", action="store_false")
    ap.add_argument("--no-train", dest="train", action="store_false",
                    help="skip the training comparison (speed and generate() only; generate() then runs the "
                         "untrained weights)")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    a = ap.parse_args()
    names = [m for m in a.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        ap.error("unknown model %s (have: %s)" % (", ".join(unknown), ", ".join(MODELS)))
    if a.steps < 20:
        ap.error("--steps must be at least 20 (the last-20 mean)")
    import transformers
    import maskc.transformers as mtf
    mtf.register()
    try:  # every mask maskc builds is checked against transformers' own (checking_mask_interface)
        from transformers import AttentionMaskInterface
    except ImportError:
        from transformers.masking_utils import AttentionMaskInterface
    AttentionMaskInterface.register("maskc", checking_mask_interface)
    print("torch", torch.__version__, "transformers", transformers.__version__,
          torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU", flush=True)
    rows = []
    with open(os.path.join(a.out, "check_hf_models.jsonl"), "w") as log:
        for name in names:
            t0 = time.time()
            rows += check_model(name, a, log)
            print("# %s: %.0f s" % (name, time.time() - t0), flush=True)
    print("# masks checked against transformers' mask functions: %s" % json.dumps(VERIFIED), flush=True)
    fails = sum(r[2] == "FAIL" for r in rows)
    passed, skipped = sum(r[2] == "PASS" for r in rows), sum(r[2] == "SKIP" for r in rows)
    print("\n%-11s %-17s %-6s %s" % ("model", "check", "status", "detail"))
    for r in rows:
        print("%-11s %-17s %-6s %s" % r)
    if fails or not (passed or not a.train):
        print("FAILED %d (%d passed, %d models skipped)" % (fails, passed, skipped), flush=True)
        return 1
    print("ALL PASS (%d checks passed, %d models skipped)" % (passed, skipped), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
