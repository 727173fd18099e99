"""gpu/corpus_buffers.py: the tile-map corpus's kernels get buffers.py's
realistic contents with out-of-range block numbers mixed in, and a
reference mask over those buffers; other kernels are left as they are."""
import math
import os

import torch

import corpus_buffers
import harness
from conftest import EXAMPLES, REPO
from maskc import cache

CORPUS = os.path.join(REPO, "testdata", "tilemasks")


def case_of(maskc_bin, path):
    e = cache.compile_flex(path, binary=maskc_bin)
    _, kernels = harness.load_manifest(e.directory)
    (entry,) = kernels
    entry = dict(entry, flex=os.path.relpath(path, REPO))  # as genkernels names it, run from the repository
    return harness.GeneratedCase(entry)


def test_selection_buffers_and_reference(maskc_bin):
    case = corpus_buffers.wrap(case_of(maskc_bin, os.path.join(CORPUS, "moba.flex")))
    assert corpus_buffers.corpus_mask(case) == "moba"
    B, H, S = 1, 2, 640
    (sel,), mask, _ = case.build(B, H, H, S, S, "cpu", torch.Generator().manual_seed(3))
    blocks = S // 128
    vals = sel.flatten().tolist()
    out = [v for v in vals if v < -1 or v >= blocks]
    assert set(out) <= {-7, blocks, 2 ** 31 - 1} and len(out) > len(vals) // 16  # 1 in 8 replaced
    assert any(0 <= v < blocks for v in vals)  # realistic selections remain
    q = torch.arange(S).view(1, 1, -1, 1)
    kv = torch.arange(S).view(1, 1, 1, -1)
    got = mask(torch.zeros(1, 1, 1, 1, dtype=torch.long), torch.arange(H).view(1, -1, 1, 1), q, kv)
    for h in range(H):
        for qi in range(0, S, 37):
            chosen = set(sel[h, (qi // 128) * 4:(qi // 128) * 4 + 4].tolist())
            for k in range(0, S, 11):
                want = k <= qi and (qi // 128 == k // 128 or k // 128 in chosen)
                assert bool(got[0, h, qi, k]) == want, (h, qi, k)


def test_documents_and_spans(maskc_bin):
    case = corpus_buffers.wrap(case_of(maskc_bin, os.path.join(CORPUS, "multimodal_spans.flex")))
    (doc, span), _, _ = case.build(1, 2, 2, 3000, 3000, "cpu", torch.Generator().manual_seed(1))
    assert (doc[1:] >= doc[:-1]).all() and (span[1:] >= span[:-1]).all() and int(doc.max()) > 0
    assert (span[1:] - span[:-1]).max() == 1 and (span[1:] == span[:-1]).any()  # text tokens and image spans


def test_other_kernels_unchanged(maskc_bin):
    case = case_of(maskc_bin, os.path.join(EXAMPLES, "alibi.flex"))
    make = case.make
    assert corpus_buffers.wrap(case) is case and case.make is make


def test_3d_selection_matches_its_flat_spelling(maskc_bin):
    # moba_3d reads moba's selection as sel[H, 256, 4] (issue 27): the same
    # realistic contents (buffers.py SAME), the same out-of-range entries
    # from the same generator, and the same reference mask.
    flat = corpus_buffers.wrap(case_of(maskc_bin, os.path.join(CORPUS, "moba.flex")))
    nd = corpus_buffers.wrap(case_of(maskc_bin, os.path.join(CORPUS, "moba_3d.flex")))
    assert corpus_buffers.corpus_mask(nd) == "moba_3d"
    B, H, S = 1, 2, 640
    (sel2,), mask2, _ = flat.build(B, H, H, S, S, "cpu", torch.Generator().manual_seed(3))
    (sel3,), mask3, _ = nd.build(B, H, H, S, S, "cpu", torch.Generator().manual_seed(3))
    assert list(sel3.shape) == [H, 256, 4] and torch.equal(sel3.reshape(H, 1024), sel2)
    blocks = S // 128
    assert any(v < -1 or v >= blocks for v in sel3.flatten().tolist())  # out-of-range block numbers mixed in
    b = torch.zeros(1, 1, 1, 1, dtype=torch.long)
    h = torch.arange(H).view(1, -1, 1, 1)
    q = torch.arange(S).view(1, 1, -1, 1)
    kv = torch.arange(S).view(1, 1, 1, -1)
    m2, m3 = mask2(b, h, q, kv), mask3(b, h, q, kv)
    assert torch.equal(m2, m3) and bool(m3.any()) and not bool(m3.all())


def test_extents_are_the_declared_ones():
    # buffers.py's extents (what gpu/bench_ext_buffers.py gives a benchmark
    # launch) are every corpus buffer's declared extents, 3-D ones included,
    # and its values fill them.
    import glob
    import re
    H, S = 3, 1024
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.flex"))):
        mask = os.path.basename(path)[:-len(".flex")]
        decl = dict(re.findall(r"^buffer (\w+): \w+\[([^\]]*)\]", open(path).read(), re.M))
        ext, vals = corpus_buffers.buffers_py.extents(mask, H, S), corpus_buffers.buffers_py.buffers(mask, H, S)
        assert set(ext) == set(vals) and set(vals) <= set(decl), mask
        for name, dims in ext.items():
            want = [eval(d, {"B": 1, "H": H, "HKV": H, "Q": S, "KV": S}) for d in decl[name].split(",")]
            assert dims == want and len(vals[name]) == math.prod(dims), (mask, name, dims, want)
