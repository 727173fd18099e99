"""Buffer contents of the extended benchmark (gpu/bench_ext.py), in pure
Python (no torch), so that the host's exact tile counts
(cmd/tilecount) and the GPU run read the same values.

Usage (where Go is): python3 gpu/bench_ext_buffers.py B,H,S OUT.json FLEX:ATTENTION...
writes {"FLEX:ATTENTION": {buffer: {"dims": [...], "data": [...]}}} for the
cases named (FLEX the .flex file's base name; cases without buffers get {}).
"""
import importlib.util
import json
import os
import random
import sys


def doc_ids(n, rnd):
    """Document ids of n packed tokens, lengths drawn from [256, 2048) (as
    flex_baseline.py's document case)."""
    out, d = [], 0
    while len(out) < n:
        out += [d] * min(n - len(out), rnd.randrange(256, 2048))
        d += 1
    return out


def image_groups(n, rnd):
    """Gemma's image_group_ids of n tokens: images of 256 soft tokens (its
    tokens_per_image) numbered from 0, separated by 128 to 2048 text tokens
    (-1)."""
    out, g = [], 0
    while len(out) < n:
        out += [-1] * min(n - len(out), rnd.randrange(128, 2048))
        w = min(n - len(out), 256)
        out += [g] * w
        g += 1
    return out


def modality_rows(n, rnd, rows=8):
    """Transfusion's modality table of one sequence of n tokens: rows of
    (type, offset, length), images of 256, 576 or 1024 tokens separated by
    100 to 700 text tokens, padded with zero rows (length 0: no span)."""
    out, t = [], rnd.randrange(100, 700)
    for _ in range(rows):
        length = rnd.choice([256, 576, 1024])
        if t + length > n:
            break
        out += [1, t, length]
        t += length + rnd.randrange(100, 700)
    return out + [0] * (3 * rows - len(out))


def corpus_buffers(mask, H, S):
    """The tile-map corpus's realistic contents (testdata/tilemasks/buffers.py)
    of mask, by name: (dims, flat values); None for a mask not in it."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testdata", "tilemasks")
    if not os.path.exists(os.path.join(path, mask + ".flex")):
        return None
    # by path, under its own name: gpu/buffers.py is another module `buffers`
    spec = importlib.util.spec_from_file_location("tilemask_buffers", os.path.join(path, "buffers.py"))
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    dims = corpus.extents(mask, H, S)
    return {name: (dims[name], vals) for name, vals in corpus.buffers(mask, H, S).items()}


def buffers(case, B, H, S):
    """The buffers of one benchmark case (FLEX:ATTENTION), by name: (dims,
    flat values)."""
    kernel = case.split(":")[-1]
    corpus = corpus_buffers(case.split(":")[0], H, S)
    if corpus is not None:
        return corpus
    rnd = random.Random(case)  # str seeds are deterministic across runs
    if kernel in ("document", "document_sliding"):
        return {"doc": ([S], doc_ids(S, random.Random(1)))}
    if kernel == "longformer":  # 16 global tokens, the first one among them
        g = [0] * S
        for i in [0] + rnd.sample(range(1, S), 15):
            g[i] = 1
        return {"is_global": ([S], g)}
    if kernel == "prefix_layer":  # prefix_lm_per_batch (prefix_lm.flex has none)
        return {"prefix_len": ([B], [1024 + 2048 * (b % 3) for b in range(B)])}
    if kernel == "biased_layer":  # relative_bias.flex
        return {"bias": ([H, 2 * S - 1], [round(rnd.gauss(0, 1), 3) for _ in range(H * (2 * S - 1))])}
    if kernel == "t5_encoder":
        return {"relative_attention_bias": ([H, 32], [round(rnd.gauss(0, 1), 3) for _ in range(H * 32)])}
    if case == "transfusion:transfusion_layer":  # testdata/ported: up to 8 (type, offset, length) spans a sequence
        return {"modalities": ([B, 8, 3], sum((modality_rows(S, random.Random(100 + b)) for b in range(B)), []))}
    if case == "gemma4_sliding:sliding_layer":  # testdata/ported: Gemma 4's vision groups, per sequence
        return {"image_group_ids": ([B, S], sum((image_groups(S, random.Random(b)) for b in range(B)), []))}
    if kernel == "causal_alibi":  # flex_baseline.py's slopes
        return {"slopes": ([H], [2.0 ** (-8.0 * (h + 1) / H) for h in range(H)])}
    return {}


def main():
    B, H, S = map(int, sys.argv[1].split(","))
    out = {}
    for k in sys.argv[3:]:
        out[k] = {name: {"dims": dims, "data": data} for name, (dims, data) in buffers(k, B, H, S).items()}
    json.dump(out, open(sys.argv[2], "w"))


if __name__ == "__main__":
    main()
