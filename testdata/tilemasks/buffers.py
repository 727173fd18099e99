"""Realistic, deterministic buffer contents of the tile-map corpus
(testdata/tilemasks/*.flex), in pure Python.

Usage: python3 buffers.py [--files DIR] H S [MASK...]
prints one line per buffer, `MASK NAME=v0,v1,...` (MASK the .flex file's
base name), for heads H and sequence length S (Q = KV = S); the values
after the mask's name are what `maskc classify --buffer` takes. With
--files, the values go to DIR/MASK.NAME.txt and the line is `MASK
NAME=@DIR/MASK.NAME.txt` (for sizes past the command line's limit).

The pinned files (cmd/maskc's TestCorpusTileMaps, TestLaunchAllMatchesPairs)
are, with M="moba moba_k8 moba_k16_shared nsa_shared nsa_per_head bigbird
multimodal multimodal_spans moba_3d":
    for S in 8192 32768; do python3 buffers.py 2 $S $M | gzip -9n > buffers_2x$S.txt.gz; done
    python3 buffers.py 3 640 $M > buffers_3x640.txt
"""
import os
import random
import sys

# mask: (buffer, blocks chosen per query block, block size, entries per
# head as declared, shared by every head)
DECLARED = {
    "moba": ("sel", 4, 128, 1024, False),
    "moba_k8": ("sel", 8, 128, 2048, False),
    "moba_k16_shared": ("sel", 16, 128, 4096, True),
    "nsa_shared": ("sel", 8, 64, 4096, True),
    "nsa_per_head": ("sel", 8, 64, 4096, False),
    "bigbird": ("rnd", 3, 64, 1536, False),
    "moba_3d": ("sel", 4, 128, 1024, False),
}

# masks that spell another's selection differently and draw its contents
# (moba_3d reads moba's [H, 1024] as [H, 256, 4]: the same values in the
# same row-major order)
SAME = {"moba_3d": "moba"}

# masks whose selection is declared 3-D, [heads, query blocks, k], instead
# of [heads, query blocks * k]
SPLIT = {"moba_3d"}


def extents(mask, H, S):
    """The declared extents of each buffer of mask for heads H and length S
    (what the values of buffers() fill, row-major)."""
    if mask in DECLARED:
        name, k, _, width, shared = DECLARED[mask]
        dims = [] if shared else [H]
        return {name: dims + ([width // k, k] if mask in SPLIT else [width])}
    return {name: [S] for name in buffers(mask, H, S)}


def selection(rnd, blocks, k, width):
    """k distinct earlier blocks per query block (fewer where fewer exist),
    padded with -1 to width entries."""
    out = []
    for qb in range(width // k):
        picks = rnd.sample(range(qb), min(k, qb)) if qb < blocks else []
        out += picks + [-1] * (k - len(picks))
    return out


def segments(rnd, n):
    """Document ids of n packed tokens, lengths drawn from [256, 2048), and
    image span numbers (-1 for text): about a third of each document in
    spans of 64 to 576 tokens; and position numbers: one per text token,
    one per image span, in order."""
    doc, img, run, d, span = [], [], [], 0, 0
    while len(doc) < n:
        length = min(n - len(doc), rnd.randrange(256, 2048))
        pos = 0
        while pos < length:
            if rnd.random() < 0.35:
                w = min(length - pos, rnd.randrange(64, 576))
                img += [span] * w
                span += 1
                run += [run[-1] + 1 if run else 0] * w
            else:
                w = min(length - pos, rnd.randrange(32, 512))
                img += [-1] * w
                run += [(run[-1] + 1 if run else 0) + i for i in range(w)]
            pos += w
        doc += [d] * length
        d += 1
    return doc, img, run


def buffers(mask, H, S):
    rnd = random.Random(SAME.get(mask, mask))
    if mask in DECLARED:
        name, k, block, width, shared = DECLARED[mask]
        heads = 1 if shared else H
        blocks = (S + block - 1) // block
        return {name: sum((selection(rnd, blocks, k, width) for _ in range(heads)), [])}
    if mask == "multimodal":
        doc, img, _ = segments(rnd, S)
        return {"doc": doc, "img": img}
    if mask == "multimodal_spans":
        doc, img, run = segments(rnd, S)
        return {"doc": doc, "span": run}
    return {}


def main():
    args = sys.argv[1:]
    out = None
    if args[:1] == ["--files"]:  # --files DIR: values into DIR/MASK.NAME.txt
        out, args = args[1], args[2:]
    H, S = int(args[0]), int(args[1])
    for mask in args[2:]:
        for name, vals in buffers(mask, H, S).items():
            text = ",".join(map(str, vals))
            if out is None:
                print(f"{mask} {name}={text}")
                continue
            path = os.path.join(out, f"{mask}.{name}.txt")
            with open(path, "w") as f:
                f.write(text + "\n")
            print(f"{mask} {name}=@{path}")


if __name__ == "__main__":
    main()
