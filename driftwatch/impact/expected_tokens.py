"""The expected-tokens model of speculative decoding and its step cost (pure math).

E(k) = (1 − α^(k+1)) / (1 − α)  (Leviathan et al., ICML 2023): expected tokens produced per target
step with k chain-drafted tokens and per-token acceptance α. With tree drafting (topk > 1) each
position offers topk candidates: α_eff = 1 − (1 − α)^(topk^tree_exp); tree_exp 1 is independent
candidates (optimistic: the default of these functions), the speculative model passes its calibrated
exponent (calibration.TREE_EXPONENT: correlated candidates gain less).
Optional decay: α_i = α · decay^(i−1) at draft position i.

Step cost in units of one target forward at batch 1 (weight-load time):
    cost(k, b) = 1 + d·k + t·b / N
d = one draft pass, t = tokens verified per request (k + 1 with topk 1, else draft tokens),
b = running batch, N = roofline knee (KNEE_TOKENS). Speculation off is k = 0, t = 1.
Throughput per stream ∝ E / cost.
"""
from __future__ import annotations


def widen_alpha(a: float, topk: int, tree_exp: float) -> float:
    """α of a position that offers topk candidates."""
    return 1.0 - (1.0 - a) ** (topk ** max(0.0, tree_exp)) if topk > 1 else a


def expected_tokens(alpha: float, k: int, decay: float = 1.0, topk: int = 1, tree_exp: float = 1.0) -> float:
    """E(k): expected tokens per target step (accepted drafts + the bonus token)."""
    if k <= 0:
        return 1.0
    a = widen_alpha(min(max(float(alpha), 0.0), 1.0), topk, tree_exp)
    if decay == 1.0:
        return float(k + 1) if a == 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)
    total, prod = 1.0, 1.0
    for i in range(1, k + 1):
        prod *= min(a * decay ** (i - 1), 1.0)
        total += prod
    return total


def expected_tokens_by_position(alphas: list[float], decay: float = 1.0, topk: int = 1,
                                tree_exp: float = 1.0) -> float:
    """E with its own acceptance at each draft position: 1 + Σ_i Π_{j≤i} α_j. Each α is widened for
    topk, then decayed by its position and capped at 1, exactly as expected_tokens does, so equal α
    everywhere gives expected_tokens' value. Used where the first positions were measured and the
    deeper ones were not."""
    total, prod = 1.0, 1.0
    for i, alpha in enumerate(alphas):
        a = widen_alpha(min(max(float(alpha), 0.0), 1.0), topk, tree_exp)
        prod *= min(a * decay ** i, 1.0)
        total += prod
    return total


def alpha_from_accept_length(length: float, k: int, decay: float = 1.0, topk: int = 1,
                             tol: float = 1e-9, tree_exp: float = 1.0) -> float:
    """Solve E(k; α) = length for α by bisection (E is increasing in α). Clamped to [0, 1]."""
    if k <= 0 or length <= 1.0:
        return 0.0
    if length >= expected_tokens(1.0, k, decay, topk, tree_exp):
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if expected_tokens(mid, k, decay, topk, tree_exp) < length:
            lo = mid
        else:
            hi = mid
        if hi - lo < tol:
            break
    return (lo + hi) / 2


def step_cost(k: int, batch: float, tokens_verified: float, draft_cost: float, knee: float) -> float:
    """Cost of one (speculative) decode step, in weight-load units; k = 0 is plain decoding."""
    return 1.0 + draft_cost * max(k, 0) + tokens_verified * max(batch, 1.0) / knee
