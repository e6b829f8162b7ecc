"""One workload's ranking figures per hardware configuration of a catalog snapshot, as arrays.

A ranking needs, of every distinct configuration of the matching offers (the snapshot's
``configs``: ~840 for 100,000 offers), the throughput's (samples/s, low, high) and the OOM
risk band. They are kept per workload with the snapshot (kind ``configs`` of
:meth:`app.services.snapshot.OfferSnapshot.cached`) so that the workload's next ranking of
the same version makes none again. Kept as Python tuples they took ~200 KiB per workload (a
tuple of four tuples per configuration); as these columns, 26 bytes per configuration
(~22 KiB), so the cache is bounded by bytes (:attr:`ConfigTable.nbytes`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.model.types import OomRisk

#: the risk bands in the order :attr:`ConfigTable.risk` codes them
RISKS: tuple[OomRisk, ...] = tuple(OomRisk)
_CODES = {risk: code for code, risk in enumerate(RISKS)}
#: one configuration's figures: (samples/s, low, high) and the OOM risk band
Made = tuple[Sequence[float], OomRisk]
#: :attr:`ConfigTable.state` of a configuration: not made yet, made, made but not
#: estimable (its GPU is not in the catalog)
MISSING, MADE, UNKNOWN_GPU = 0, 1, 2


class ConfigTable:
    """Per configuration index: ``rates`` (samples/s, low, high; zeros where not estimable),
    ``risk`` (index into :data:`RISKS`) and ``state`` (:data:`MISSING`, :data:`MADE`,
    :data:`UNKNOWN_GPU`). Two threads filling the same index write the same values; a
    configuration's state is written after its figures."""

    __slots__ = ("rates", "risk", "state")

    def __init__(self, size: int):
        self.rates = np.zeros((size, 3), dtype=np.float64)
        self.risk = np.zeros(size, dtype=np.int8)
        self.state = np.zeros(size, dtype=np.int8)

    def __len__(self) -> int:
        return len(self.state)

    @property
    def nbytes(self) -> int:
        """Bytes of the three columns."""
        return int(self.rates.nbytes + self.risk.nbytes + self.state.nbytes)

    def missing(self, used: np.ndarray) -> list[int]:
        """The configuration indices of ``used`` not made yet."""
        return used[self.state[used] == MISSING].tolist()  # type: ignore[no-any-return]

    def put(self, index: Sequence[int], made: Sequence[Made | None]) -> None:
        """Keep each configuration ``index[k]``'s (rates, risk) ``made[k]``, or ``None``: not
        estimable (in three array assignments: one per configuration took ~9 µs)."""
        at = np.array(index, dtype=np.intp).reshape(-1)
        self.rates[at] = np.array(
            [m[0] if m is not None else (0.0, 0.0, 0.0) for m in made], dtype=np.float64
        ).reshape(-1, 3)
        self.risk[at] = [_CODES[m[1]] if m is not None else 0 for m in made]
        self.state[at] = [MADE if m is not None else UNKNOWN_GPU for m in made]

    def known(self, used: np.ndarray) -> np.ndarray:
        """Whether each configuration of ``used`` is estimable."""
        out: np.ndarray = self.state[used] == MADE
        return out

    def oom_high(self, used: np.ndarray) -> np.ndarray:
        """Whether each configuration of ``used`` has a high OOM risk (never where not
        estimable)."""
        out: np.ndarray = (self.state[used] == MADE) & (self.risk[used] == _CODES[OomRisk.HIGH])
        return out

    def risk_of(self, i: int) -> OomRisk:
        """The OOM risk band of configuration ``i`` (made and estimable)."""
        return RISKS[int(self.risk[i])]

    def extended(self, size: int) -> ConfigTable:
        """A copy for a snapshot of ``size`` (≥ this one's) configurations whose first ones are
        this snapshot's: the configurations made stay made."""
        if size < len(self):
            raise ValueError("a table only extends to more configurations")
        out = ConfigTable(size)
        n = len(self)
        state = self.state.copy()  # first: a slot being filled now is left to make again
        out.rates[:n] = self.rates
        out.risk[:n] = self.risk
        out.state[:n] = state
        return out
