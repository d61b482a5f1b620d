"""Issue 32 item 7: collect/ names no engine. The engines declare their markers (process words, entry
points, packages, journal lines) and the collectors use what the registry lists: a third engine
registered from tests/ (the toy in tests/engines/toy/) is found on a host without editing collect/.

The script runs here with /bin/sh against a fake `systemctl` (cat: the unit; show: nothing, as on a
host where systemd cannot say which process is the unit's) and a fake `journalctl`, as
test_collect_commands.py does; the process it finds is a real one started by the test."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
from toy.engine import ToyEngine  # `toy` is the package ToyEngine.package names (tests/engines is on pythonpath)

from driftwatch.collect.commands import build_command, is_engine_argv, parse_journal, parse_output
from driftwatch.engines import registry
from driftwatch.engines.markers import EngineMarkers
from driftwatch.errors import DriftwatchError
from driftwatch.snapshots.reader import EngineReader

ENGINES_DIR = Path(__file__).resolve().parents[1] / "engines"

COLLECT = Path(__file__).resolve().parents[2] / "driftwatch" / "collect"


@pytest.fixture
def toy(monkeypatch):
    engine = ToyEngine()
    monkeypatch.setitem(registry.ENGINES, engine.name, engine)
    return engine


def test_collect_names_no_engine():
    """Not even in a comment: what collect/ knows of an engine comes from the engine."""
    named = []
    for path in sorted(COLLECT.glob("*.py")):
        if path.name in ("inventory.py", "install.py"):  # other helpers' files (examples of inventories)
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "sglang" in line.lower() or "vllm" in line.lower():
                named.append(f"{path.name}:{n}: {line.strip()}")
    assert not named, "\n".join(named)


def test_the_registry_lists_every_engines_markers_in_order(toy):
    markers = registry.engine_markers()
    assert [m.dists for m in markers] == [("sglang",), ("vllm",), ("toy",)]
    assert EngineReader().engine_markers == markers


def test_an_engine_without_markers_is_parsed_but_not_looked_for(monkeypatch):
    class Bare(ToyEngine):
        name = "bare"
        markers = EngineMarkers()

    monkeypatch.setitem(registry.ENGINES, "bare", Bare())
    script = build_command("x.service", engines=registry.engine_markers()).script
    assert "toyserv" not in script and "bare" not in script


@pytest.mark.parametrize("bad", [
    dict(process_words=("a.b",)), dict(process_words=("x'y",)), dict(dists=("a b",)), dict(modules=("$(id)",)),
    dict(commands=("",)), dict(journal_markers=("it's",)), dict(journal_markers=("",)),
    dict(config_flags=("--c onfig",)), dict(model_flags=("--model'",)), dict(model_after=("a\\b",)),
])
def test_markers_that_could_change_the_remote_shell_are_refused(bad):
    with pytest.raises(DriftwatchError):
        EngineMarkers(**bad)


def test_process_matching_and_journal_lines_come_from_the_markers(toy):
    markers = registry.engine_markers()
    assert is_engine_argv(["/opt/toy/bin/python", "-m", "toy.server", "--port", "1"], markers)
    assert is_engine_argv(["/usr/bin/python3", "/opt/toy/bin/toyserve", "--port", "1"], markers)
    assert not is_engine_argv(["/usr/bin/toyserve-ctl", "status"], markers)
    assert not is_engine_argv(["/opt/toy/bin/python", "-m", "toy.server"], registry.engine_markers()[:2])
    lines = "accept len: 3.20, gen throughput (token/s): 70.1\ntoy decode speed: 42.5 tok/s\n"
    assert parse_journal(lines, markers) == {"accept_length": 3.2, "throughput": 42.5}
    assert parse_journal(lines, markers[:2]) == {"accept_length": 3.2, "throughput": 70.1}


def _host(tmp_path: Path, unit_text: str, journal: str) -> tuple[Path, Path]:
    """A fake `systemctl` (cat: the unit; show: nothing) and `journalctl` (the lines), and a
    directory standing for /run/systemd/system."""
    fake = tmp_path / "bin"
    fake.mkdir()
    unit = tmp_path / "unit.txt"
    unit.write_text(unit_text)
    lines = tmp_path / "journal.txt"
    lines.write_text(journal)
    (fake / "systemctl").write_text(f"#!/bin/sh\nfor a in \"$@\"; do case $a in cat) cat {unit}; exit 0 ;; "
                                    f"show) exit 0 ;; esac; done\nexit 1\n")
    (fake / "journalctl").write_text(f"#!/bin/sh\ncat {lines}\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    booted = tmp_path / "run-systemd-system"
    booted.mkdir()
    return fake, booted


def _collect(unit: str, fake: Path, booted: Path, engines: tuple[EngineMarkers, ...] | None = None):
    reader = EngineReader()
    cmd = build_command(unit, gpus=False, deadline=30, markers=reader.startup_markers,
                        engines=reader.engine_markers if engines is None else engines)
    script = cmd.script.replace("PATH=/usr/local/sbin:", f"PATH={fake}:/usr/local/sbin:")
    script = script.replace("/run/systemd/system", str(booted))
    out = subprocess.run(["/bin/sh", "-s"], input=script.encode(), capture_output=True, timeout=60).stdout
    return parse_output("h", cmd.unit, cmd.nonce, out, reader=reader)


def test_a_registered_engine_is_found_on_a_host_without_editing_collect(toy, tmp_path, monkeypatch):
    """The toy's process (a real one), its package's version beside the unit's interpreter and its
    journal's figures are read; unregistered, the same host gives none of them."""
    venv = tmp_path / "toyenv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python3"
    python.symlink_to(sys.executable)
    site = venv / "lib" / f"python{sysconfig.get_python_version()}" / "site-packages" / "toy-1.3.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: toy\nVersion: 1.3\n")
    script = venv / "bin" / "toyserve"
    script.write_text("import time\ntime.sleep(60)\n")
    argv = [str(python), str(script), "--port", "31999"]
    unit_text = f"# /etc/systemd/system/toy.service\n[Service]\nExecStart={' '.join(argv)}\n"
    fake, booted = _host(tmp_path, unit_text, "noise\ntoy decode speed: 42.5 tok/s\n")
    proc = subprocess.Popen(argv)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the process's argv is in /proc once it has exec'd
            with open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
                if b"toyserve" in fh.read():
                    break
            time.sleep(0.05)
        raw = _collect("toy.service", fake, booted)
        assert raw.status == "ok", raw.error
        assert raw.running_argv == argv
        assert raw.engine_version == "1.3"
        assert raw.measured == {"throughput": 42.5}

        monkeypatch.delitem(registry.ENGINES, "toy")
        raw = _collect("toy.service", fake, booted)
        assert raw.status == "ok", raw.error
        assert (raw.running_argv, raw.engine_version, raw.measured) == (None, None, {})
    finally:
        proc.kill()
        proc.wait()
    assert os.path.exists(script)


@pytest.mark.parametrize("spelling", ["{flag} {path}", "{flag}={path}"])
def test_the_files_a_unit_names_are_read_by_the_engines_flags(tmp_path, spelling):
    """Which words name a config file or the model is the engines' (config_flags, model_flags,
    model_after); a flag no engine declares names nothing, however the unit spells it."""
    model = tmp_path / "weights"
    model.mkdir()
    (model / "config.json").write_text('{"num_hidden_layers": 2}')
    cfg = tmp_path / "settings.yaml"
    cfg.write_text("seed: 1\n")
    words = " ".join([spelling.format(flag="--weights", path=model), spelling.format(flag="--settings", path=cfg)])
    fake, booted = _host(tmp_path, f"# /etc/systemd/system/w.service\n[Service]\nExecStart=/bin/w {words}\n", "")
    declared = EngineMarkers(config_flags=("--settings",), model_flags=("--weights",))
    raw = _collect("w.service", fake, booted, (declared,))
    assert raw.status == "ok", raw.error
    assert raw.model_configs == {str(model): '{"num_hidden_layers": 2}'}
    assert raw.engine_files == {str(cfg): "seed: 1\n"}
    raw = _collect("w.service", fake, booted, registry.engine_markers())  # SGLang's and vLLM's flags
    assert (raw.model_configs, raw.engine_files) == ({}, {})


def test_a_positional_model_follows_the_engines_words(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    unit = f"# /etc/systemd/system/w.service\n[Service]\nExecStart=/bin/w run {model} --port 1\n"
    fake, booted = _host(tmp_path, unit, "")
    assert _collect("w.service", fake, booted, (EngineMarkers(model_after=("run",)),)).model_configs == {
        str(model): "{}"}
    assert _collect("w.service", fake, booted, (EngineMarkers(model_after=("serve",)),)).model_configs == {}
