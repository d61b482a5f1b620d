"""`_changed` answers as DeepDiff does on normalised values (its fast path for scalars included)."""
from __future__ import annotations

from deepdiff import DeepDiff
from hypothesis import given, settings, strategies as st

from driftwatch.engines.values import _changed, _norm

# Numbers as settings are written (0.88, 131072, 1e-3, nan): not DeepDiff's rounding quirks on 1e-165.
_number = st.floats(allow_nan=True).filter(lambda x: x != x or x == 0 or 1e-9 < abs(x) < 1e15)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 20, 10 ** 20), _number,
                    st.sampled_from(["1", "1.0", "0.80", "true", "True", "/x/", "/x", "nan", "inf", "[1]", " a"]),
                    st.text(max_size=8))
_value = st.one_of(_scalar, st.lists(_scalar, max_size=3), st.dictionaries(st.text(max_size=3), _scalar, max_size=2))


def _deepdiff_changed(a, b) -> bool:
    return bool(DeepDiff(_norm(a), _norm(b), ignore_numeric_type_changes=True, ignore_order=False))


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(a=_value, b=_value)
def test_changed_is_deepdiffs_answer(a, b):
    assert _changed(a, b) == _deepdiff_changed(a, b)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(a=_value)
def test_a_value_never_differs_from_itself(a):
    assert _changed(a, a) is False


_nested = st.recursive(_scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(st.text(max_size=3), inner, max_size=3)),
                       max_leaves=12)


def _respelled(value):
    """The same value built again, numbers of another type where they can be (1 -> 1.0, True stays)."""
    if isinstance(value, dict):
        return {key: _respelled(item) for key, item in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_respelled(item) for item in value]
    if type(value) is int and abs(value) < 2 ** 53:
        return float(value)
    return value


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(a=_nested)
def test_equal_nested_values_built_twice_are_deepdiffs_answer_too(a):
    """Equal containers of the same types all the way down skip DeepDiff (`_identical`): built again,
    in another key order, with other numeric types or a nan inside, the answer is still DeepDiff's."""
    for b in (_respelled(a), [a], {"k": a}):
        assert _changed(a, b) == _deepdiff_changed(a, b)
        assert _changed(b, b) == _deepdiff_changed(b, b)
