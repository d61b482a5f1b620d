"""One timestamp format: RFC 3339, UTC, 'Z', whole seconds; older stored forms still read."""
from __future__ import annotations

import datetime as dt
import re

import pytest

from driftwatch.timestamps import file_stamp, format_utc, parse_file_stamp, parse_utc, utc_now

RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
UTC = dt.timezone.utc


def test_utc_now_format():
    before = dt.datetime.now(UTC).replace(microsecond=0)
    stamp = utc_now()
    after = dt.datetime.now(UTC)
    assert RFC3339_Z.match(stamp), stamp
    assert before <= parse_utc(stamp) <= after


@pytest.mark.parametrize("text", [
    "2026-11-28T03:00:00Z",
    "2026-11-28T03:00:00+00:00",  # what the SSH collector stored before
    "2026-11-28T03:00:00.250+00:00",
    "2026-11-28T05:00:00+02:00",
    "2026-11-27T22:00:00-05:00",
    "2026-11-28t03:00:00z",
])
def test_parse_accepts_old_and_other_offsets(text):
    moment = parse_utc(text)
    assert moment.utcoffset() == dt.timedelta(0)
    assert format_utc(moment) == "2026-11-28T03:00:00Z"


@pytest.mark.parametrize("text", ["2026-11-28T03:00:00", "2026-11-28", "yesterday", "", None, 1764298800])
def test_parse_refuses_what_has_no_instant(text):
    with pytest.raises(ValueError):
        parse_utc(text)


def test_format_refuses_naive_datetimes():
    with pytest.raises(ValueError, match="naive"):
        format_utc(dt.datetime(2026, 11, 28, 3))


def test_file_stamps_are_fixed_width_and_read_back():
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC)
    assert file_stamp(moment) == "20260102T030405Z"
    assert parse_file_stamp("20260102T030405Z") == moment.replace(microsecond=0)
    assert parse_file_stamp("20260102T030405+0000") == moment.replace(microsecond=0)  # old SSH-collected names
    assert parse_file_stamp("20260102T050405+0200") == moment.replace(microsecond=0)
    for bad in ("20260102T030405", "2026-01-02T03:04:05Z", "20261302T030405Z"):
        with pytest.raises(ValueError):
            parse_file_stamp(bad)


def test_one_helper_for_every_stamp():
    import driftwatch.collect.local as local
    import driftwatch.collect.ssh as ssh
    import driftwatch.snapshots.snapshot as snapshot
    assert snapshot.now_utc is utc_now and ssh.utc_now is utc_now and local.utc_now is utc_now
