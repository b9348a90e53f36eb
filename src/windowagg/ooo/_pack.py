"""Bottom-up packing of sorted entries into B-tree levels, shared by BTree and FiBA.

>>> class N:
...     def __init__(self, times, vals, kids, parent):
...         self.times, self.vals, self.kids, self.parent = times, vals, kids, parent
>>> root, levels = pack_levels(N, list(range(7)), list("abcdefg"), 3)
>>> root.times, [[n.times for n in level] for level in levels]
([3], [[[0, 1, 2], [4, 5, 6]]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["pack_levels"]


def pack_levels(
    make: Callable[[list[Any], list[Any], Any, Any], Any],
    times: list[Any],
    vals: list[Any],
    maxk: int,
) -> tuple[Any, list[list[Any]]]:
    """Pack strictly increasing entries into nodes of at most *maxk* entries, bottom-up.

    Each level takes as few nodes as fit (``maxk`` entries plus one separator each),
    with the entries spread evenly over them; the separators move up to the next level. ``make(times, vals, kids, parent)`` builds a node; kids'
    ``parent`` pointers are set here. Returns the root and the levels below it, leaves
    first (aggregates are the caller's: it fixes them bottom-up). O(n), C-level slicing.
    """
    kids: list[Any] | None = None
    levels: list[list[Any]] = []
    while True:
        n = len(times)
        if n <= maxk:
            root = make(times, vals, kids, None)
            if kids is not None:
                for c in kids:
                    c.parent = root
            return root, levels
        g = -(-(n + 1) // (maxk + 1))  # node count: each takes up to maxk entries + 1 sep
        base, extra = divmod(n - g + 1, g)
        nodes: list[Any] = []
        up_t: list[Any] = []
        up_v: list[Any] = []
        pos = kpos = 0
        for j in range(g):
            e = base + 1 if j < extra else base
            node = make(times[pos : pos + e], vals[pos : pos + e], None, None)
            if kids is not None:
                ks = kids[kpos : kpos + e + 1]
                for c in ks:
                    c.parent = node
                node.kids = ks
                kpos += e + 1
            nodes.append(node)
            pos += e
            if j < g - 1:
                up_t.append(times[pos])
                up_v.append(vals[pos])
                pos += 1
        levels.append(nodes)
        kids, times, vals = nodes, up_t, up_v
