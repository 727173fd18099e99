"""gpu/buffers.py's random_buffer draws from the distribution that Go's
harness.Buffer draws from: harness/testdata/buffers.json states it case by
case (harness.TestBufferVectors checks Go's draws against the same file)."""
import json
import os

import pytest
import torch

import buffers
from conftest import REPO

VECTORS = json.load(open(os.path.join(REPO, "harness", "testdata", "buffers.json")))


def check_distribution(what, vals, rng, inside, normal):
    """As harness_test.go's checkDistribution: a range's values all in it,
    its ends reached unless inside, the mean within 5% of the width of its
    middle; a normal's mean within 0.1 of 0, standard deviation of 1."""
    vals = vals.double()
    mean, std = vals.mean().item(), vals.std(unbiased=False).item()
    if normal:
        assert abs(mean) <= 0.1 and abs(std - 1) <= 0.1, (what, mean, std)
    if rng is None:
        return
    lo, hi = vals.min().item(), vals.max().item()
    assert rng[0] <= lo and hi <= rng[1], (what, lo, hi)
    if not inside:
        assert (lo, hi) == tuple(rng), (what, lo, hi)
    assert torch.equal(vals, vals.trunc()), what
    mid = (rng[0] + rng[1]) / 2
    assert abs(mean - mid) <= 0.05 * (rng[1] - rng[0]), (what, mean, mid)


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda c: "%s%s%s" % (c["dtype"], c["dims"],
                                                                            "seg" if c.get("segments") else ""))
def test_vectors(case):
    gen = torch.Generator().manual_seed(7)
    seg = bool(case.get("segments"))
    draws, docs = [], set()
    for _ in range(VECTORS["draws"]):
        t, how = buffers.random_buffer(case["dtype"], case["dims"], seg, case["kv"], gen)
        assert how == case["how"]
        assert list(t.shape) == case["dims"] and t.dtype == buffers.DTYPES[case["dtype"]] and t.is_contiguous()
        draws.append(t.reshape(-1).double())
        if seg:
            rows = t.reshape(-1, case["dims"][-1]).long()
            assert (rows[:, 0] == 0).all(), rows
            steps = rows[:, 1:] - rows[:, :-1]
            assert ((steps == 0) | (steps == 1)).all(), rows
            docs.update((rows[:, -1] + 1).tolist())
    check_distribution(case["how"], torch.cat(draws), case.get("range"), case.get("inside", False),
                       case.get("normal", False))
    if seg:
        lo, hi = case["docs"]
        assert docs == set(range(lo, hi + 1)), docs


def test_draws_on_the_generators_device_and_repeat_with_its_seed():
    a, _ = buffers.random_buffer("i32", [2, 50], True, 50, torch.Generator().manual_seed(3))
    b, _ = buffers.random_buffer("i32", [2, 50], True, 50, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and a.device.type == "cpu"


def test_doc_ids_cover_n_positions_in_order():
    ids = buffers.doc_ids(5000, torch.Generator().manual_seed(1))
    assert ids.shape == (5000,) and ids[0] == 0
    steps = ids[1:] - ids[:-1]
    assert ((steps == 0) | (steps == 1)).all()
    lens = torch.bincount(ids)
    assert (lens[:-1] >= 256).all() and (lens <= 2047).all()
