"""Random contents for the captured buffers of a GPU script's run: the one
Python definition, which every GPU script draws through (gpu/harness.py's
GeneratedCase, gpu/ported.py's draw_buffer, gpu/bench.py's documents).

random_buffer draws from the distribution that Go's harness.Buffer (the
default buffers of `maskc run`) draws from, and says it in the same words:

  - a `segments` buffer: per row (its last dimension) 1 + U{0..min(row, 6) - 1}
    documents, split at distinct cut points drawn uniformly from 1..row-1;
    ids count up from 0 in every row ("random documents");
  - another integer buffer: uniform in [0, min(KV, the type's max)]
    ("random in [0, TOP]"; lengths and positions);
  - a bool buffer: fair coins ("random bools");
  - a float buffer: standard normals ("random normal").

The two generators draw different numbers (torch's generator, Go's PCG);
what they share is the distribution, which harness/testdata/buffers.json
states case by case and both tests check their draws against
(gpu/tests/test_buffers.py, harness.TestBufferVectors).
"""
import torch

from maskc import dtypes as _dtypes

#: torch dtypes by maskc's element type name (maskc.dtypes, from buftype).
DTYPES = {name: getattr(torch, t) for name, t in _dtypes.TORCH.items()}

#: The most documents a `segments` row is split into (Go: harness.Buffer's 6).
MAX_DOCS = 6


def random_buffer(dtype, dims, segments, kv, gen):
    """(tensor of maskc element type dtype and extents dims, how it was
    drawn) on gen's device: the distribution above, with kv the call's KV."""
    n = 1
    for d in dims:
        n *= d
    dt = DTYPES[dtype]
    dev = gen.device
    if segments:
        row = dims[-1] if dims else 1
        t = torch.zeros(n, dtype=torch.int64, device=dev)
        for start in range(0, n, max(row, 1)):
            docs = 1 + int(torch.randint(0, min(row, MAX_DOCS), (1,), generator=gen, device=dev))
            cuts = torch.randperm(row - 1, generator=gen, device=dev)[:docs - 1] + 1  # document starts in 1..row-1
            starts = torch.zeros(row, dtype=torch.int64, device=dev)
            starts[cuts] = 1
            t[start:start + row] = torch.cumsum(starts, 0)
        how = "random documents"
    elif dt == torch.bool:
        t = torch.randint(0, 2, (n,), generator=gen, device=dev)
        how = "random bools"
    elif dt.is_floating_point:
        t = torch.randn(n, generator=gen, device=dev, dtype=torch.float64)
        how = "random normal"
    else:
        top = min(kv, torch.iinfo(dt).max)  # an i8 holds at most 127
        t = torch.randint(0, top + 1, (n,), generator=gen, device=dev)
        how = "random in [0, %d]" % top
    return t.to(dt).reshape(dims).contiguous(), how


def doc_ids(n, gen):
    """A benchmark's document ids for n positions: lengths uniform in
    [256, 2048) (the last one cut at n), ids 0, 1, ... in order. A fixed
    workload (gpu/bench.py's `document` case, whose figures gpu/NOTES.md
    records), not a buffer's default contents."""
    lens, rem = [], n
    while rem > 0:
        l = min(rem, int(torch.randint(256, 2048, (1,), generator=gen)))
        lens.append(l)
        rem -= l
    return torch.repeat_interleave(torch.arange(len(lens)), torch.tensor(lens))
