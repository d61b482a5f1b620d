import os

import pytest

from driftwatch.collect.local import LocalCollector, read_unit_tree, render_unit_text
from driftwatch.errors import InputError
from driftwatch.snapshots.reader import EngineReader

READER = EngineReader()  # reads command lines for the collectors, as driftwatch's runs do

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


def test_collector_not_found(tmp_path):
    raw = LocalCollector(str(tmp_path), host="box", reader=READER).collect("nothing")
    assert raw.status == "unit not found" and raw.unit == "nothing.service" and raw.host == "box"


def test_from_unit_file(tmp_path):
    p = write(tmp_path, "/x/my.service", "[Service]\nExecStart=/bin/true\n")
    raw = LocalCollector.from_unit_file(p)
    assert (raw.source, raw.unit, raw.paths, raw.status) == ("file", "my.service", [str(p)], "ok")
    assert raw.text == p.read_text()


def test_from_saved_systemctl_cat_output(tmp_path):
    text = "# /etc/systemd/system/a-b.service\n[Service]\nExecStart=/bin/true\n"
    p = write(tmp_path, "/saved.txt", text)
    raw = LocalCollector.from_unit_file(str(p), host="ct129")
    assert (raw.text, raw.unit, raw.host) == (text, "a-b.service", "ct129")


@pytest.mark.parametrize("content,msg", [(b"\0\1\2", "binary"), (b"\xff\xfe[", "not UTF-8"),
                                         (b"a" * (1 << 20 + 1), "larger than")])
def test_from_unit_file_rejects(tmp_path, content, msg):
    p = tmp_path / "u.service"
    p.write_bytes(content)
    with pytest.raises(InputError, match=msg):
        LocalCollector.from_unit_file(p)
    with pytest.raises(InputError, match="no such file"):
        LocalCollector.from_unit_file(tmp_path / "missing.service")
