"""One config file for every command (issue 22 item 6): its keys are the options' names, relative
paths are relative to the file, and command line > environment > config file > defaults.

Every run is the real console script in a subprocess with HOME and XDG_CONFIG_HOME in tmp_path
(no config file of this machine is read)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
UNIT40 = REPO / "examples" / "sglang-qwen-40toks.service"
TOKEN_UNIT = ("[Service]\nEnvironment=HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123\n"
              "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m --port 30000\n")


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    (h / ".config").mkdir(parents=True)
    return h


@pytest.fixture
def run(dw, home, tmp_path):
    def go(*args, env=None, cwd=None):
        full = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "DRIFTWATCH_CONFIG": ""}
        full.update(env or {})
        return dw(*args, env=full, cwd=cwd or tmp_path)
    return go


def baseline_copy(directory: Path, host: str) -> Path:
    """baselines/70toks.yaml, recorded as saved on `host` (so the output says which copy was read)."""
    directory.mkdir(parents=True, exist_ok=True)
    doc = yaml.safe_load((REPO / "baselines" / "70toks.yaml").read_text())
    doc["host"] = host
    path = directory / "70toks.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def write_config(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def one_error_line(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_compare_finds_the_baselines_the_default_config_names(run, home, tmp_path):
    """`compare --baseline NAME` run anywhere: the default config file's baselines_dir (relative to it)."""
    baseline_copy(home / ".config" / "driftwatch" / "known-good", "from-config")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run("compare", "--baseline", "70toks", "--unit-file", UNIT40, cwd=elsewhere)
    assert "unknown baseline" in one_error_line(r)
    write_config(home / ".config" / "driftwatch" / "config.yaml", "baselines_dir: known-good\n")
    r = run("compare", "--baseline", "70toks", "--unit-file", UNIT40, cwd=elsewhere)
    assert r.code == 1, r.stderr
    assert "on from-config" in r.stdout.splitlines()[0]


def test_precedence_command_line_environment_config(run, tmp_path):
    for name in ("conf", "env", "cli"):
        baseline_copy(tmp_path / name, f"from-{name}")
    cfg = write_config(tmp_path / "config.yaml", "baselines_dir: conf\n")
    args = ["compare", "--baseline", "70toks", "--unit-file", UNIT40, "--config", cfg]

    def host_read(*extra, env=None):
        r = run(*args, *extra, env=env)
        assert r.code == 1, r.stderr
        return re.search(r"on (from-\w+)", r.stdout.splitlines()[0]).group(1)

    assert host_read() == "from-conf"
    assert host_read(env={"DRIFTWATCH_BASELINES": str(tmp_path / "env")}) == "from-env"
    assert host_read("--baselines-dir", tmp_path / "cli", env={"DRIFTWATCH_BASELINES": str(tmp_path / "env")}) \
        == "from-cli"


def test_config_before_after_or_in_the_environment(run, tmp_path):
    baseline_copy(tmp_path / "a", "from-a")
    baseline_copy(tmp_path / "b", "from-b")
    a = write_config(tmp_path / "a.yaml", "baselines_dir: a\n")
    b = write_config(tmp_path / "b.yaml", "baselines_dir: b\n")
    cmd = ["compare", "--baseline", "70toks", "--unit-file", UNIT40]

    def host_read(r):
        assert r.code == 1, r.stderr
        return re.search(r"on (from-\w+)", r.stdout.splitlines()[0]).group(1)

    assert host_read(run("--config", a, *cmd)) == "from-a"
    assert host_read(run(*cmd, "--config", b)) == "from-b"
    assert host_read(run("--config", a, *cmd, "--config", b)) == "from-b"  # the one after the command wins
    assert host_read(run(*cmd, env={"DRIFTWATCH_CONFIG": str(a)})) == "from-a"
    assert host_read(run(*cmd, "--config", b, env={"DRIFTWATCH_CONFIG": str(a)})) == "from-b"


@pytest.mark.parametrize("where", ["option", "environment"])
def test_a_missing_named_config_is_one_line_exit_2(run, tmp_path, where):
    missing = tmp_path / "nope.yaml"
    if where == "option":
        r = run("show", "--unit-file", UNIT40, "--config", missing)
    else:
        r = run("show", "--unit-file", UNIT40, env={"DRIFTWATCH_CONFIG": str(missing)})
    line = one_error_line(r)
    assert str(missing) in line and "no such config file" in line and r.stdout == ""


@pytest.mark.parametrize("text, words", [
    ("baselines_dri: x\n", ["unknown setting(s) baselines_dri", "baselines_dir"]),
    ("host: h2\n", ["unknown setting(s) host"]),          # what one run names is not a setting
    ("yes: true\n", ["unknown setting(s)"]),              # nor what one run does (restore --yes)
    ("parallel: many\n", ["parallel", "not a valid integer"]),
    ("probe: sometimes\n", ["probe must be true or false"]),
    ("ignore: {a: b}\n", ["ignore"]),
])
def test_bad_config_is_one_line_naming_the_file(run, tmp_path, text, words):
    cfg = write_config(tmp_path / "config.yaml", text)
    line = one_error_line(run("snapshot", "--unit-file", UNIT40, "--config", cfg))
    assert line.startswith(f"driftwatch: {cfg}: ")
    for word in words:
        assert word in line


def test_snapshot_store_is_relative_to_the_config_file(run, tmp_path):
    cfg = write_config(tmp_path / "etc" / "config.yaml", "store: state/store\nparallel: 2\nconnect_timeout: 3\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run("snapshot", "--unit-file", UNIT40, "--host-name", "ct140", "--config", cfg, cwd=elsewhere)
    assert r.code == 0, r.stderr
    r = run("history", "ct140", "--config", cfg, cwd=elsewhere)
    assert r.code == 0 and "ct140" in r.stdout, r.stderr
    assert (tmp_path / "etc" / "state" / "store").is_dir() and not (elsewhere / "state").exists()


def test_environment_variable_of_a_keyed_option_beats_the_config(run, tmp_path):
    write_config(tmp_path / "config.yaml", "store: from-config\n")
    r = run("snapshot", "--unit-file", UNIT40, "--host-name", "ct1", "--config", tmp_path / "config.yaml",
            env={"DRIFTWATCH_STORE": str(tmp_path / "from-env")})
    assert r.code == 0, r.stderr
    assert (tmp_path / "from-env").is_dir() and not (tmp_path / "from-config").exists()


def _key_id(baseline: Path) -> str:
    return re.search(r"<redacted:([0-9a-f]{6})\.", baseline.read_text()).group(1)


def test_fingerprint_key_file_from_the_config_below_the_environment(run, tmp_path):
    unit = tmp_path / "tok.service"
    unit.write_text(TOKEN_UNIT)
    for name, key in (("k1", "a" * 40), ("k2", "b" * 40)):
        (tmp_path / "keys").mkdir(exist_ok=True)
        (tmp_path / "keys" / name).write_text(key + "\n")
        os.chmod(tmp_path / "keys" / name, 0o600)
    cfg = write_config(tmp_path / "config.yaml", "fingerprint_key_file: keys/k1\n")

    def saved_with(name, env=None, config=True):
        args = ["baseline", "save", name, "--unit-file", unit, "--baselines-dir", tmp_path / "b"]
        r = run(*args, *(["--config", cfg] if config else []), env=env)
        assert r.code == 0, r.stderr
        return _key_id(tmp_path / "b" / f"{name}.yaml")

    by_config = saved_with("c")
    by_env_file = saved_with("c2", config=False, env={"DRIFTWATCH_FINGERPRINT_KEY_FILE": str(tmp_path / "keys/k1")})
    assert by_config == by_env_file                                   # the config feeds the same key
    assert saved_with("e", env={"DRIFTWATCH_FINGERPRINT_KEY_FILE": str(tmp_path / "keys/k2")}) != by_config
    assert saved_with("e2", env={"DRIFTWATCH_FINGERPRINT_KEY": "c" * 40}) not in (by_config,)
    default = saved_with("d", config=False)                           # the installation's own key
    assert default != by_config
    os.chmod(tmp_path / "keys" / "k1", 0o644)
    r = run("baseline", "save", "x", "--unit-file", unit, "--baselines-dir", tmp_path / "b", "--config", cfg)
    assert "readable by others" in one_error_line(r)


def test_report_reads_its_own_keys_and_the_shared_ones(run, tmp_path):
    """report's mail keys stay as they were; the shared keys (store, parallel, …) no longer refused."""
    baseline_copy(tmp_path / "bl", "from-conf")
    cfg = write_config(tmp_path / "config.yaml", "baselines_dir: bl\nbaseline: 70toks\nsubject_prefix: '[x]'\n"
                                                  "store: st\nparallel: 2\nconnect_timeout: 3\n")
    r = run("report", "--unit-file", UNIT40, "--config", cfg, "--format", "json")
    assert r.code == 1, r.stderr
    doc = r.json()
    assert doc["summary"]["drifted"] == 1
    assert doc["history"]["store"] == str(tmp_path / "st")  # "since" read from the store the config names


def test_every_key_is_documented_and_names_an_option():
    """docs/config.md shows every key; each command key is an option of some command (or the group's)."""
    import click

    from driftwatch.cli import cli
    from driftwatch.cli.config import key_of
    from driftwatch.config import COMMAND_KEYS, REPORT_KEYS
    example = (REPO / "docs" / "config.md").read_text().split("```yaml", 1)[1].split("```", 1)[0]
    documented = set(yaml.safe_load(example))
    assert COMMAND_KEYS <= documented and documented <= COMMAND_KEYS | REPORT_KEYS

    def options(group):
        for command in group.commands.values():
            yield from options(command) if isinstance(command, click.Group) else ()
            yield from (key_of(p) for p in command.params if isinstance(p, click.Option))
    known = set(options(cli)) | {key_of(p) for p in cli.params if isinstance(p, click.Option)}
    assert COMMAND_KEYS - {"fingerprint_key_file"} <= known
