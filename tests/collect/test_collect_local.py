import os

import pytest
from unit_tree import read_unit_tree

from driftwatch.collect.interface import Where, collector_for
from driftwatch.collect.local import UnitFileCollector, render_unit_text
from driftwatch.errors import InputError

UNIT = "sglang-qwen.service"


def write(root, path, text):
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_render_like_systemctl_cat():
    assert render_unit_text([("/a", "x\ny"), ("/b", "z\n")]) == "# /a\nx\ny\n\n# /b\nz\n"
    assert render_unit_text([("/a", "")]) == "# /a\n"


def test_tree_order_masking(tmp_path):
    write(tmp_path, f"/lib/systemd/system/{UNIT}", "[Service]\nExecStart=/vendor\n")
    write(tmp_path, f"/run/systemd/system/{UNIT}", "[Service]\nExecStart=/run\n")
    write(tmp_path, f"/lib/systemd/system/{UNIT}.d/10-a.conf", "lib-a\n")
    write(tmp_path, f"/etc/systemd/system/{UNIT}.d/10-a.conf", "etc-a\n")
    write(tmp_path, f"/lib/systemd/system/{UNIT}.d/05-b.conf", "lib-b\n")
    write(tmp_path, "/usr/lib/systemd/system/sglang-.service.d/50-c.conf", "prefix-c\n")
    write(tmp_path, f"/etc/systemd/system/{UNIT}.d/readme", "ignored\n")
    masked = tmp_path / f"etc/systemd/system/{UNIT}.d/20-m.conf"
    write(tmp_path, f"/usr/lib/systemd/system/{UNIT}.d/20-m.conf", "never\n")
    os.symlink("/dev/null", masked)
    text, paths = read_unit_tree(str(tmp_path), UNIT)
    assert paths == [f"/run/systemd/system/{UNIT}", f"/lib/systemd/system/{UNIT}.d/05-b.conf",
                     f"/etc/systemd/system/{UNIT}.d/10-a.conf", f"/etc/systemd/system/{UNIT}.d/20-m.conf",
                     "/usr/lib/systemd/system/sglang-.service.d/50-c.conf"]
    assert "never" not in text and "lib-a" not in text and "/vendor" not in text
    assert f"# /etc/systemd/system/{UNIT}.d/20-m.conf\n\n# /usr" in text


def test_tree_without_the_unit(tmp_path):
    assert read_unit_tree(str(tmp_path), "nothing") == (None, [])


def unit_file(path, host=None):
    """The unit-file collector as a run gets it: from the registry, by the target's kind."""
    return collector_for("unit-file").open(Where("unit-file", host=host, path=str(path)))


def test_unit_file_collector_brings_back_the_text_only(tmp_path):
    p = write(tmp_path, "/x/my.service", "[Service]\nExecStart=/bin/true\n")
    raw = unit_file(p).collect("")
    assert (raw.source, raw.unit, raw.paths, raw.status, raw.host) == ("file", "", [str(p)], "ok", "")
    assert raw.text == p.read_text() and raw.collected_at
    # the name is the parser's to find; a typed --unit is validated and kept
    assert unit_file(p, host="ct129").collect("my-copy").unit == "my-copy.service"
    with pytest.raises(InputError):
        unit_file(p).collect("../etc/passwd")


def test_saved_systemctl_cat_output_is_named_by_its_header_when_built(tmp_path):
    from driftwatch.snapshots.snapshot import build_snapshot
    text = "# /etc/systemd/system/a-b.service\n[Service]\nExecStart=/bin/true\n"
    p = write(tmp_path, "/saved.txt", text)
    raw = unit_file(p, host="ct129").collect("")
    assert (raw.text, raw.host) == (text, "ct129")
    assert build_snapshot(raw).unit == "a-b.service"


@pytest.mark.parametrize("content,msg", [(b"\0\1\2", "binary"), (b"\xff\xfe[", "not valid UTF-8"),
                                         (b"a" * ((1 << 20) + 1), "too large"), (b"  \n", "empty")])
def test_unit_file_collector_rejects(tmp_path, content, msg):
    p = tmp_path / "u.service"
    p.write_bytes(content)
    with pytest.raises(InputError, match=msg):
        UnitFileCollector(str(p)).collect()
    with pytest.raises(InputError, match="no such file"):
        UnitFileCollector(str(tmp_path / "missing.service")).collect()
    with pytest.raises(InputError, match="is a directory"):
        UnitFileCollector(str(tmp_path)).collect()
