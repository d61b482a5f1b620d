"""`report.cells.fast_table` writes exactly what tabulate writes (it only skips typing and wrapping that
cannot change the text), on random tables of every kind of cell tabulate treats apart, and it is what
lets `show` print a 20 000-key JSON value's table."""
from __future__ import annotations

import random

import pytest
from tabulate import tabulate

from driftwatch.report.cells import fast_table

CELLS = ["", " ", "x", "explicit", "--speculative-config", "/m", "speculative_config.k0", "True", "False",
         "true", "1", "-2", "+3", "1.50", "1e5", "1e400", "inf", "-Infinity", "nan", "1_000", "1,234", "1,234.5",
         "0x1F", "0b101", "٣", "١٢.٥", " 12", "12 ", "a b", "a  b", " lead", "trail ", "a\nb", "a\n\nb", "tab\there",
         "\x1b[31m42\x1b[0m", "\x1b[1mbold\x1b[0m", "é", "ünïcode wörds", "long " * 12, "w" * 45, "-" * 30,
         "a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-q-r-s-t", "12345678901234567890123456789012345678901234567890",
         None, 7, 2.5, True, False, 10 ** 30, -0.0]
HEADERS = ["field", "concept", "flag", "value", "source", "note"]


def _table(rng: random.Random):
    cols = rng.randint(1, 6)
    rows = rng.randint(0, 12)
    # columns drawn from a few cells each (so all-numeric, all-empty and all-boolean columns occur too)
    pools = [rng.sample(CELLS, rng.randint(1, 4)) for _ in range(cols)]
    data = [[rng.choice(pools[c]) for c in range(cols)] for _ in range(rows)]
    caps = [rng.choice([None, None, 1, 5, 10, 20, 40]) for _ in range(cols)] if rng.random() < 0.8 else None
    return data, HEADERS[:cols], caps


@pytest.mark.parametrize("seed", range(8))
def test_the_same_text_as_tabulate(seed):
    rng = random.Random(seed)
    for _ in range(400):
        data, headers, caps = _table(rng)
        extra = rng.choice([{}, {"tablefmt": "simple"}, {"disable_numparse": True}])
        try:
            expected = tabulate(data, headers=headers, maxcolwidths=caps, **extra)
        except ValueError:  # tabulate's wrapping casts "1,234.5" with float(): fast_table may do better
            try:
                fast_table(data, headers, caps, **extra)
            except ValueError:
                pass
            continue
        assert fast_table(data, headers, caps, **extra) == expected, (data, headers, caps, extra)


def test_show_of_a_table_tabulate_would_type_cell_by_cell_in_full():
    rows = [[f"speculative_config.k{i}", "", "--speculative-config", str(i), "explicit", ""] for i in range(2000)]
    rows.insert(0, ["model", "model.path", "MODEL (positional)", "/m", "explicit", ""])
    caps = [None, None, None, 40, None, 50]
    assert fast_table(rows, HEADERS, caps) == tabulate(rows, headers=HEADERS, maxcolwidths=caps)
