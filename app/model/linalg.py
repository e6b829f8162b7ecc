"""Tiny dense linear algebra for the estimators (pure Python; matrices of a few columns).

Only what the calibrated models need: least squares on a handful of features and the
Lawson-Hanson non-negative least squares (NNLS) algorithm (Lawson & Hanson, "Solving Least
Squares Problems", 1974, ch. 23), which keeps every time component of the throughput model
physically meaningful (no negative seconds per FLOP).
"""

from __future__ import annotations

from collections.abc import Sequence

Matrix = list[list[float]]


def solve(a: Matrix, b: list[float]) -> list[float]:
    """Solve ``a x = b`` for square ``a`` by Gaussian elimination with partial pivoting.

    Raises:
        ValueError: ``a`` is singular (to working precision).
    """
    n = len(a)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-300:
            raise ValueError("singular matrix")
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            if f:
                for c in range(col, n + 1):
                    m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def lstsq(x: Sequence[Sequence[float]], y: Sequence[float], ridge: float = 1e-12) -> list[float]:
    """Least squares ``min |X b - y|²`` via the (slightly ridged) normal equations."""
    k = len(x[0])
    ata = [[sum(row[i] * row[j] for row in x) for j in range(k)] for i in range(k)]
    for i in range(k):
        ata[i][i] += ridge * (ata[i][i] or 1.0)
    aty = [sum(row[i] * yi for row, yi in zip(x, y, strict=True)) for i in range(k)]
    return solve(ata, aty)


def nnls(x: Sequence[Sequence[float]], y: Sequence[float], max_iter: int = 100) -> list[float]:
    """Non-negative least squares ``min |X b - y|²`` subject to ``b ≥ 0`` (Lawson-Hanson).

    Columns should be scaled to similar magnitudes by the caller.
    """
    k = len(x[0])
    b = [0.0] * k
    passive: list[int] = []

    def gradient(coef: list[float]) -> list[float]:
        resid = [yi - sum(row[j] * coef[j] for j in range(k)) for row, yi in zip(x, y, strict=True)]
        return [sum(row[j] * r for row, r in zip(x, resid, strict=True)) for j in range(k)]

    for _ in range(max_iter):
        w = gradient(b)
        candidates = [j for j in range(k) if j not in passive and w[j] > 1e-12]
        if not candidates:
            break
        passive.append(max(candidates, key=lambda j: w[j]))
        while True:
            sub = [[row[j] for j in passive] for row in x]
            try:
                z_sub = lstsq(sub, y)
            except ValueError:
                passive.pop()
                break
            if all(v > 0 for v in z_sub):
                for j in range(k):
                    b[j] = 0.0
                for j, v in zip(passive, z_sub, strict=True):
                    b[j] = v
                break
            alpha = min(b[j] / (b[j] - v) for j, v in zip(passive, z_sub, strict=True) if v <= 0)
            for idx, j in enumerate(passive):
                b[j] += alpha * (z_sub[idx] - b[j])
            passive = [j for j in passive if b[j] > 1e-15]
            for j in range(k):
                if j not in passive:
                    b[j] = 0.0
    return b
