"""Issue 34 item 2: `store import` trusts nothing it reads. Each document is checked by the loader
the store's own reads use, redacted on the way in as `snapshot` redacts (a secret value or an unknown
`secret:` key is never stored, so never exported), and a file or folder that is a symlink out of the
imported tree is refused; each refusal is one warning with its reason, and the exit code is 1."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml
from cli_helpers import run_in_process
from test_store_db import UNIT, at, snap, story

from driftwatch.snapshots.snapshot import snapshot_to_dict
from driftwatch.snapshots.store import FileStore, SnapshotStore

DW = Path(sys.executable).with_name("driftwatch")
TOKEN = "hf_" + "Qx7Lm2Pz9Rt4Vb8Nc3Kd6Wj1Yh5Gf0Se"  # a Hugging Face token's shape
WORD = "hunter2-plain-in-yaml"


def _dw(*args):
    return run_in_process(*args, env={k: None for k in os.environ if k.startswith("DRIFTWATCH_")})


def _hostile_tree(tmp_path: Path) -> tuple[Path, Path]:
    old, outside = tmp_path / "old", tmp_path / "outside"
    story(FileStore(old))  # 5 good snapshots of ct129 and 4 unchanged runs
    unit_dir = old / "ct129" / UNIT
    # a YAML mapping that is no snapshot, holding a secret
    (unit_dir / "20261101T230000Z-00.yaml").write_text(f"secret: {WORD}\nhost: ct129\n")
    # a snapshot with a token in clear in its environment and an unknown `secret:` key
    doc = snapshot_to_dict(snap(3, at=at(20)))
    doc["environment"] = dict(doc.get("environment") or {}, HF_TOKEN=TOKEN)
    doc["secret"] = WORD
    (unit_dir / "20261101T220000Z-00.yaml").write_text(yaml.safe_dump(doc))
    # a file symlinked out of the tree, and a host folder symlinked out of the tree
    outside.mkdir()
    (outside / "stolen.yaml").write_text(yaml.safe_dump(snapshot_to_dict(snap(2, at=at(21)))))
    (unit_dir / "20261101T210000Z-00.yaml").symlink_to(outside / "stolen.yaml")
    FileStore(outside / "store").save(snap(1, host="elsewhere", at=at(22)))
    (old / "elsewhere").symlink_to(outside / "store" / "elsewhere", target_is_directory=True)
    return old, outside


def test_import_refuses_non_snapshots_and_symlinks_out_and_redacts_on_the_way_in(tmp_path):
    old, _ = _hostile_tree(tmp_path)
    r = _dw("store", "import", old, "--store", tmp_path / "db")
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    warnings = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    refused = [ln for ln in warnings if "not imported" in ln]
    assert len(refused) == 3, warnings  # the non-snapshot, the file symlink, the folder symlink
    assert any("20261101T230000Z-00.yaml: not imported: not a driftwatch snapshot" in ln for ln in refused)
    assert any("20261101T210000Z-00.yaml: not imported: " in ln and "symlink out of" in ln for ln in refused)
    assert any(ln.split("warning: ")[1].startswith(f"{old / 'elsewhere'}: not imported: a symlink out of")
               for ln in refused)
    assert any("20261101T220000Z-00.yaml: imported as this release saves it" in ln and "secret" in ln
               for ln in warnings)
    assert "imported 6 snapshots and 4 unchanged runs" in r.stderr and "3 refused, not imported" in r.stderr
    assert WORD not in r.stderr and TOKEN not in r.stderr
    store = SnapshotStore(tmp_path / "db")
    assert sorted(store.groups()) == [("ct129", "other.service"), ("ct129", UNIT)]
    everything = "".join(repr(data) for _, data, _ in store.documents())
    assert WORD not in everything and TOKEN not in everything
    assert "HF_TOKEN" in everything  # the variable is kept, its value is not
    imported = store.latest("ct129", UNIT).read()
    assert imported.environment["HF_TOKEN"] != TOKEN
    r = _dw("store", "export", "--store", tmp_path / "db", "-o", tmp_path / "out")
    assert r.returncode == 0
    exported = "".join(p.read_text() for p in (tmp_path / "out").rglob("*.yaml"))
    assert WORD not in exported and TOKEN not in exported and "HF_TOKEN" in exported
    r = _dw("store", "check", "--store", tmp_path / "db")
    assert r.returncode == 0, r.stdout  # nothing unreadable was let in


def test_a_clean_tree_imports_with_exit_0_and_its_documents_unchanged(tmp_path):
    old = tmp_path / "old"
    story(FileStore(old))
    (old / "ct129" / UNIT / "inner-link").mkdir()  # stray folder: ignored as before
    r = _dw("store", "import", old, "--store", tmp_path / "db")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    files = {rec.read().collected_at: rec.content_hash() for rec in FileStore(old).records()}
    store = SnapshotStore(tmp_path / "db")
    stored = {rec.read().collected_at: rec.content_hash() for rec in store.records()}
    assert stored == files  # hashes unchanged: baselines made from these files still protect them
