"""The expected-tokens math: E(k), α inversion, step cost."""
import pytest

from driftwatch.impact.expected_tokens import (
    alpha_from_accept_length,
    expected_tokens,
    expected_tokens_by_position,
    step_cost,
)


@pytest.mark.parametrize("alpha,k,want", [
    (0.75, 1, 1.75),
    (0.75, 3, 2.734375),          # 1 + .75 + .5625 + .421875
    (0.8, 2, 2.44),
    (0.85, 2, 2.5725),
    (0.5, 4, 1.9375),
    (1.0, 3, 4.0),                # every draft accepted
    (0.0, 3, 1.0),                # nothing accepted: the bonus token only
    (0.9, 0, 1.0),                # no drafting
])
def test_expected_tokens_closed_form(alpha, k, want):
    assert expected_tokens(alpha, k) == pytest.approx(want, rel=1e-12)


def test_closed_form_equals_the_sum_with_unit_decay():
    for alpha in (0.3, 0.75, 0.95):
        for k in range(1, 8):
            direct = sum(alpha ** j for j in range(k + 1))
            assert expected_tokens(alpha, k) == pytest.approx(direct)
            # decay path with decay 1.0 + tiny epsilon is continuous with the closed form
            assert expected_tokens(alpha, k, decay=0.999999) == pytest.approx(direct, rel=1e-4)


def test_monotonic_in_alpha_and_k():
    alphas = [i / 20 for i in range(21)]
    for k in (1, 2, 3, 5):
        values = [expected_tokens(a, k) for a in alphas]
        assert all(b > a for a, b in zip(values, values[1:], strict=False))
    for a in (0.5, 0.85):
        values = [expected_tokens(a, k) for k in range(0, 8)]
        assert all(b > a_ for a_, b in zip(values, values[1:], strict=False))


def test_decay_lowers_deep_positions_only():
    assert expected_tokens(0.8, 1, decay=0.9) == pytest.approx(1.8)
    assert expected_tokens(0.8, 3, decay=0.9) == pytest.approx(1 + 0.8 + 0.8 * 0.72 + 0.8 * 0.72 * 0.648)
    assert expected_tokens(0.8, 3, decay=0.9) < expected_tokens(0.8, 3)


def test_tree_drafting_raises_effective_acceptance():
    # topk 2: α_eff = 1 − 0.25² = 0.9375
    assert expected_tokens(0.75, 1, topk=2) == pytest.approx(1.9375)


@pytest.mark.parametrize("alpha", [0.05, 0.5, 0.75, 0.85, 0.97])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_alpha_inversion_round_trip(alpha, k):
    assert alpha_from_accept_length(expected_tokens(alpha, k), k) == pytest.approx(alpha, abs=1e-6)
    assert alpha_from_accept_length(expected_tokens(alpha, k, decay=0.9), k, decay=0.9) == pytest.approx(alpha, abs=1e-6)


def test_alpha_from_seed_000_accept_length():
    assert alpha_from_accept_length(1.75, 1) == pytest.approx(0.75, abs=1e-9)
    # 3.1 tokens at 3 steps ⇒ α ≈ 0.832
    assert alpha_from_accept_length(3.1, 3) == pytest.approx(0.832, abs=0.002)


def test_alpha_inversion_clamps():
    assert alpha_from_accept_length(1.0, 3) == 0.0
    assert alpha_from_accept_length(0.5, 3) == 0.0
    assert alpha_from_accept_length(9.0, 3) == 1.0
    assert alpha_from_accept_length(2.0, 0) == 0.0


def test_step_cost_grows_with_k_and_batch():
    assert step_cost(0, 1, 1, 0.0, 256) == pytest.approx(1 + 1 / 256)
    assert step_cost(3, 1, 4, 0.02, 256) == pytest.approx(1.06 + 4 / 256)
    assert step_cost(2, 64, 3, 0.02, 256) > step_cost(1, 64, 2, 0.02, 256) > step_cost(1, 1, 2, 0.02, 256)


@pytest.mark.parametrize("topk", [1, 2, 4])
@pytest.mark.parametrize("decay", [0.8, 1.0, 1.2])
@pytest.mark.parametrize("alpha,k", [(0.7, 4), (0.85, 3), (0.5, 1), (0.97, 6)])
def test_by_position_with_one_alpha_is_expected_tokens(alpha, k, decay, topk):
    # widened for topk, decayed by position, capped at 1: the same E either way
    assert expected_tokens_by_position([alpha] * k, decay, topk) == pytest.approx(expected_tokens(alpha, k, decay, topk))


def test_by_position_measured_first_prior_deeper():
    # seed 000: position 1 measured at 0.75, positions 2-3 at a prior of 0.9
    assert expected_tokens_by_position([0.75, 0.9, 0.9]) == pytest.approx(1 + 0.75 + 0.75 * 0.9 + 0.75 * 0.81)
    assert expected_tokens_by_position([]) == 1.0  # no drafting: the bonus token only
    # a better deeper prior never lowers E, and E never exceeds k + 1
    assert expected_tokens_by_position([0.75, 0.95, 0.95]) > expected_tokens_by_position([0.75, 0.9, 0.9])
    assert expected_tokens_by_position([1.5, 2.0], 1.3, 3) == 3.0


from hypothesis import given, settings, strategies as st  # noqa: E402

_alphas = st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=0, max_size=8)


@settings(max_examples=300, deadline=None)
@given(_alphas, st.integers(min_value=0, max_value=7), st.floats(min_value=0.0, max_value=1.0),
       st.sampled_from([0.8, 1.0, 1.2]), st.integers(min_value=1, max_value=4))
def test_by_position_is_bounded_and_never_falls_when_one_position_accepts_more(alphas, i, bump, decay, topk):
    e = expected_tokens_by_position(alphas, decay, topk)
    assert 1.0 <= e <= len(alphas) + 1 + 1e-12
    if alphas:
        j = i % len(alphas)
        more = list(alphas)
        more[j] = max(more[j], bump)
        assert expected_tokens_by_position(more, decay, topk) >= e - 1e-12
