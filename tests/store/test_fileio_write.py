"""The one atomic writer and the one YAML loader/dumper, on real files."""
from __future__ import annotations

import os

import pytest
import yaml

from driftwatch.errors import InputError
from driftwatch.fileio import dump_yaml, load_yaml_text, read_yaml, write_atomic, write_new


def test_write_atomic_replaces_and_creates_directories(tmp_path):
    target = tmp_path / "a" / "b" / "out.txt"
    write_atomic(target, "one\n")
    write_atomic(target, "two\n", mode=0o600)
    assert target.read_text() == "two\n"
    assert target.stat().st_mode & 0o777 == 0o600
    assert os.listdir(target.parent) == ["out.txt"]


def test_write_atomic_failure_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"
    target.write_text("old\n")

    def full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(InputError, match=rf"^{target}: cannot write: No space left"):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.txt"]  # the temp file is gone too


def test_write_new_never_overwrites(tmp_path):
    target = tmp_path / "baseline.yaml"
    write_new(target, "first\n")
    with pytest.raises(InputError, match="already exists"):
        write_new(target, "second\n")
    assert target.read_text() == "first\n"
    write_new(target, "forced\n", force=True)
    assert target.read_text() == "forced\n"
    assert os.listdir(tmp_path) == ["baseline.yaml"]


def test_write_where_no_directory_can_be(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match=rf"^{blocker / 'x.txt'}: cannot write"):
        write_atomic(blocker / "x.txt", "x")


def test_read_yaml_names_file_and_line(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("a: 1\nb: [\n  - x\nc: : d\n")
    with pytest.raises(InputError) as e:
        read_yaml(p, "rules file")
    message = str(e.value)
    assert message.startswith(f"{p}:") and "invalid YAML in rules file" in message and "line " in message
    assert "\n" not in message
    (tmp_path / "empty.yaml").write_text("")
    assert read_yaml(tmp_path / "empty.yaml", "x") is None
    with pytest.raises(InputError, match="too large"):
        read_yaml(p, "x", limit=4)


def test_load_yaml_text_is_safe():
    with pytest.raises(InputError, match="invalid YAML in inventory"):
        load_yaml_text("!!python/object/apply:os.system ['true']\n", "inv.yaml", "inventory")


def test_dump_yaml_round_trips_and_keeps_unit_text_readable():
    data = {"unit_text": "[Service]\nExecStart=/bin/true\n", "trailing": "a \nb\n", "tab": "a\tb\nc",
            "n": 1, "list": ["x", None]}
    text = dump_yaml(data)
    assert "unit_text: |\n  [Service]\n  ExecStart=/bin/true\n" in text
    assert yaml.safe_load(text) == data
    assert list(yaml.safe_load(text)) == list(data)  # key order kept
