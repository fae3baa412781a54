"""``tensors_in`` finds what pytree's ``tree_leaves`` found, in the same order, for the values
dispatch hooks see (the trackers relied on pytree before)."""

from collections import OrderedDict, namedtuple

import torch
from torch.utils._pytree import tree_leaves

from skyline_nb.profiler.leaves import tensors_in

Pair = namedtuple("Pair", "first second")


def _tensors_by_pytree(value):
    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]


def test_same_tensors_in_the_same_order_as_pytree():
    a, b, c, d = (torch.full((2,), float(i)) for i in range(4))
    maxed = torch.max(torch.stack([a, b]), dim=0)  # a torch.return_types structseq
    values = [
        ((a, b, [1, 1], [0, 0], False, None, 1.5, torch.float32), {}),
        ((a,), {"weight": b, "bias": None, "out": [c, d]}),
        maxed,
        Pair(a, [b, (c, {"x": d})]),
        OrderedDict([("z", a), ("y", [b, c])]),
        [[], (), {}, [[a]]],
        {"step": torch.tensor(3.0), "exp_avg": b, "exp_avg_sq": c},
        a,
        7,
        None,
    ]
    for value in values:
        found, expected = tensors_in(value), _tensors_by_pytree(value)
        assert len(found) == len(expected)
        assert all(x is y for x, y in zip(found, expected, strict=True))


def test_a_tensor_subclass_is_one_tensor_not_a_container():
    p = torch.nn.Parameter(torch.ones(3))
    assert [id(t) for t in tensors_in(([p], {"p": p}))] == [id(p), id(p)]
