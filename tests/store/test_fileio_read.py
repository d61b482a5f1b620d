from __future__ import annotations

import os

import pytest

from driftwatch.errors import InputError
from driftwatch.fileio import MAX_TEXT_BYTES as MAX_UNIT_BYTES, read_text_file


def test_ok(tmp_path):
    p = tmp_path / "a.service"
    p.write_text("[Service]\nExecStart=/bin/true\n", encoding="utf-8")
    assert read_text_file(p).startswith("[Service]")
    assert read_text_file(str(p), what="environment file").endswith("\n")


def test_missing(tmp_path):
    with pytest.raises(InputError, match=r"nope\.service: no such file"):
        read_text_file(tmp_path / "nope.service")


def test_directory(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        read_text_file(tmp_path)


def test_binary(tmp_path):
    p = tmp_path / "b.service"
    p.write_bytes(b"[Service]\n\x00\x01\x02")
    with pytest.raises(InputError, match=r"b\.service: unit file is binary \(NUL byte at offset 10\)"):
        read_text_file(p)


def test_not_utf8(tmp_path):
    p = tmp_path / "l.service"
    p.write_bytes(b"[Service]\nDescription=caf" + b"\xe9\n")
    with pytest.raises(InputError, match=r"not valid UTF-8 \(byte 0xe9 at offset 25\)"):
        read_text_file(p)


@pytest.mark.parametrize("content", [b"", b"  \n\t\n"])
def test_empty(tmp_path, content):
    p = tmp_path / "e.service"
    p.write_bytes(content)
    with pytest.raises(InputError, match=r"e\.service: file is empty"):
        read_text_file(p)
    assert read_text_file(p, allow_empty=True) == content.decode()


def test_huge_file_refused_by_size(tmp_path, monkeypatch):
    p = tmp_path / "big.service"
    with open(p, "wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # sparse: no 50 MB written
    real_open = open
    reads = []

    def spy_open(*a, **kw):
        reads.append(a)
        return real_open(*a, **kw)

    monkeypatch.setattr("builtins.open", spy_open)
    with pytest.raises(InputError, match=r"too large \(52428800 bytes; the limit is 1000000 bytes\)"):
        read_text_file(p)
    assert reads == []  # refused from stat(), never opened


def test_limit_holds_for_fifos(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    pid = os.fork()
    if pid == 0:  # child: write more than the limit, then exit
        try:
            with open(p, "wb") as fh:
                fh.write(b"x" * (MAX_UNIT_BYTES + 10))
        except BrokenPipeError:
            pass
        os._exit(0)
    try:
        with pytest.raises(InputError, match="too large"):
            read_text_file(p)
    finally:
        os.waitpid(pid, 0)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read anything")
def test_unreadable(tmp_path):
    p = tmp_path / "u.service"
    p.write_text("[Service]\n")
    p.chmod(0)
    with pytest.raises(InputError, match="permission denied"):
        read_text_file(p)
