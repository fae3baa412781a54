"""Which forward op an op that activation checkpointing runs again inside backward repeats.

``torch.utils.checkpoint`` drops a block's activations in forward and runs the block again in
backward (reentrant: inside its own node's backward, then a nested backward through the re-run;
non-reentrant: at the first unpack of a dropped tensor). The op tracker (``operations.py``) sees
the block's module entered while an autograd node runs; the k-th op of a name it runs there
repeats the k-th forward op of that name in that module instance, whose record takes its time
as backward time. Without this a reentrant block's re-run went to its output's op and its
nested backward to root-level node names (BENCHMARKS.md, session 36).
"""

from __future__ import annotations

from typing import Any


class Reruns:
    """Matches re-run ops to the forward records of ``records`` (the tracker's own list, read
    as it grows; records whose ``phase`` is ``forward`` count)."""

    def __init__(self, records: list[Any], forward: str) -> None:
        self._records, self._forward = records, forward
        self._forward_of: dict[tuple[str, str], list[Any]] = {}  # (module, name): records
        self._indexed = 0  # records already in _forward_of (read at the first re-run)
        self._count: dict[tuple[str, str], int] = {}

    def repeated(self, module: str, name: str) -> Any | None:
        """The forward record the next re-run of ``name`` in ``module`` repeats, or None when
        it ran fewer times in forward (an op only the re-run makes)."""
        for record in self._records[self._indexed:]:
            if record.phase == self._forward:
                self._forward_of.setdefault((record.module, record.name), []).append(record)
        self._indexed = len(self._records)
        key = (module, name)
        k = self._count.get(key, 0)
        self._count[key] = k + 1
        ran = self._forward_of.get(key, [])
        return ran[k] if k < len(ran) else None
