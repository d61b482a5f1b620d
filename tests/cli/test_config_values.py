"""Config values mean what the options mean (issue 32, item 6), option by option, generated from the click
definitions: for every command and every option the config file feeds, a value written in the file and the
same value typed on the command line reach the option as the same thing. Paths in the file are relative to
the file (typed ones to the working directory: the runs here start in the file's directory); sentinel words
(`ssh_config: none`, `-`) are the option's words, not files; yes/no, on/off, true/false read as a flag reads
its environment variable.

The real group runs (config lookup, default_map, click's type conversion); only each command's body and
each option's callback are replaced by recorders, so nothing is read or contacted."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
import pytest

from driftwatch.cli import cli, config as cfg
from driftwatch.config import COMMAND_PATH_KEYS, PATH_SENTINELS, load_report_settings
from driftwatch.errors import InputError

PATH_KEYS = COMMAND_PATH_KEYS | {"inventory", "baselines_dir"}
FED = [(path, key, option) for path, command in cfg._commands(cli) for key, option in cfg._keyed_options(path[-1],
                                                                                                          command)]

pytestmark = pytest.mark.skipif(os.path.exists("/etc/driftwatch/config.yaml"),
                                reason="/etc/driftwatch/config.yaml exists and would be read by every run")


def samples(key: str, option: click.Option) -> list[tuple[str, list[str]]]:
    """(the value as YAML text in the file, the same value typed after the option) for this option's type."""
    flag = option.opts[-1] if len(option.opts) == 1 else max(option.opts, key=len)
    if option.is_flag:
        yes = [(text, [flag]) for text in ("true", "yes", '"yes"', '"on"', '"True"', "1")]
        return yes + [(text, []) for text in ("false", "no", '"no"', '"off"', "0")]
    if isinstance(option.type, click.Choice):
        return [(str(choice), [flag, str(choice)]) for choice in option.type.choices]
    if isinstance(option.type, click.IntRange) or option.type is click.INT:
        low = option.type.min if isinstance(option.type, click.IntRange) and option.type.min is not None else 0
        return [(str(low + 1), [flag, str(low + 1)]), (f'"{low + 2}"', [flag, str(low + 2)])]
    if isinstance(option.type, click.types.FloatParamType):  # FLOAT and the finite ranges of cli/params.py
        return [("2.5", [flag, "2.5"]), ('"7"', [flag, "7"])]
    if option.multiple:
        return [("[one, sub/two]", [flag, "one", flag, "sub/two"]), ("single", [flag, "single"])]
    if key in PATH_KEYS:
        out = [("sub/file.x", [flag, "sub/file.x"]), ("plain", [flag, "plain"]), ('"-"', [flag, "-"]),
               ("/abs/file.x", [flag, "/abs/file.x"])]
        out += [(f'"{word}"', [flag, word]) for word in PATH_SENTINELS.get(key, ())]
        out += [('"NONE"', [flag, "NONE"])] if key in PATH_SENTINELS else []
        if key == "store":
            out.append(("postgresql://dw@db/driftwatch", [flag, "postgresql://dw@db/driftwatch"]))
        return out
    if key == "baseline":
        return [("70toks", [flag, "70toks"]), ("b/base.yaml", [flag, "b/base.yaml"])]
    if key == "shard":
        return [('"0/4"', [flag, "0/4"])]
    return [('"gpu:!canary"', [flag, "gpu:!canary"]), ("0.5.12", [flag, "0.5.12"])]


def meaning(key: str, value):
    """What a value names: a path (relative ones against the working directory) or the value itself."""
    if isinstance(value, (list, tuple)):
        return [meaning(key, v) for v in value]
    if isinstance(value, str) and (key in PATH_KEYS or (key == "baseline" and "/" in value)) and \
            "://" not in value and value.strip().lower() not in {"-", *PATH_SENTINELS.get(key, ())}:
        return os.path.abspath(value)
    return value


class Recorder:
    """Every keyed option's value as click hands it to the option's callback; command bodies do nothing."""

    def __init__(self, monkeypatch):
        self.seen: dict[str, object] = {}
        for path, command in cfg._commands(cli):
            monkeypatch.setattr(command, "callback", lambda **kw: None)
            for _, option in cfg._keyed_options(path[-1], command):
                monkeypatch.setattr(option, "callback", self.record)

    def record(self, ctx, param, value):
        self.seen[param.name] = value
        return value

    def run(self, args: list[str]):
        self.seen.clear()
        cli.main(args=args, prog_name="driftwatch", standalone_mode=False)
        return dict(self.seen)


def required(path: tuple[str, ...], skip: str) -> list[str]:
    """Words a command needs to parse at all (its required arguments and options), not the one under test."""
    command: Any = cli
    for name in path:
        command = command.commands[name]
    words: list[str] = []
    for param in command.params:
        if not param.required or param.name == skip:
            continue
        words += ["x"] if isinstance(param, click.Argument) else [param.opts[0], "x"]
    return words


@pytest.fixture
def setup(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("DRIFTWATCH_") or name == "XDG_CONFIG_HOME":
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    folder = tmp_path / "etc-dw"
    folder.mkdir()
    monkeypatch.chdir(folder)  # typed relative paths are relative to here, the file's ones to its folder
    return folder / "config.yaml", Recorder(monkeypatch)


@pytest.mark.parametrize("path, key, option", FED, ids=[f"{' '.join(p)}:{k}" for p, k, _ in FED])
def test_a_config_value_means_what_the_typed_option_means(setup, path, key, option):
    config, recorder = setup
    needed = required(path, option.name)
    for text, typed in samples(key, option):
        config.write_text(f"{key}: {text}\n")
        from_file = recorder.run([*path, "--config", str(config), *needed])
        from_command_line = recorder.run([*path, *typed, *needed])
        assert option.name in from_file and option.name in from_command_line, (text, from_file)
        assert meaning(key, from_file[option.name]) == meaning(key, from_command_line[option.name]), \
            (key, text, typed, from_file[option.name], from_command_line[option.name])


def test_every_fed_key_was_tried():
    from driftwatch.config import COMMAND_KEYS
    tried = {key for _, key, _ in FED}
    assert {"ssh_config", "accept_new", "probe", "always", "no_store", "store", "prometheus", "inventory"} <= tried
    assert COMMAND_KEYS - tried <= {"engine_config", "fingerprint_key_file"}  # the group's own, below


def test_ssh_config_none_is_no_ssh_config_not_a_file_beside_the_config(setup):
    config, recorder = setup
    config.write_text("ssh_config: none\n")
    seen = recorder.run(["show", "--config", str(config)])
    assert seen["ssh_config"] == "none"  # as --ssh-config none: collect reads no ssh config at all
    config.write_text('ssh_config: ""\n')
    assert recorder.run(["show", "--config", str(config)])["ssh_config"] == ""  # not the config's folder
    config.write_text("ssh_config: none/config\n")  # a path that starts with the word is a path
    assert recorder.run(["show", "--config", str(config)])["ssh_config"] == str(config.parent / "none/config")


@pytest.mark.parametrize("text", ["no", "false", "off", "yes", "true"])
def test_yaml_booleans_where_a_path_or_value_is_wanted_are_one_clear_error(setup, text):
    config, recorder = setup
    for key in ("ssh_config", "limit"):
        config.write_text(f"{key}: {text}\n")
        with pytest.raises(InputError) as err:
            recorder.run(["report", "--config", str(config)])
        message = str(err.value)
        assert message.startswith(f"{config}: {key} takes a") and "true/false" in message and "\n" not in message


def test_a_flag_refuses_a_word_that_is_no_boolean(setup):
    config, recorder = setup
    config.write_text("accept_new: maybe\n")
    with pytest.raises(InputError, match=rf"^{config}: accept_new must be true or false .*'maybe'"):
        recorder.run(["show", "--config", str(config)])


@pytest.mark.parametrize("text, expected", [("yes", True), ('"yes"', True), ('"off"', False), ("0", False)])
def test_report_only_changes_reads_booleans_as_flags_do(tmp_path, text, expected):
    config = tmp_path / "config.yaml"
    config.write_text(f'only_changes: {text}\nstate: "-"\ninventory: inv.yaml\n')
    settings = load_report_settings(str(config), {})
    assert settings["only_changes"] is expected
    assert settings["state"] == "-" and settings["inventory"] == str(tmp_path / "inv.yaml")


def test_engine_config_and_key_file_keep_their_meaning(setup):
    """The group's own keys: relative FILEs are the file's; PATH= names a path on the server, kept."""
    config, recorder = setup
    config.write_text("engine_config: [/etc/vllm/q.yaml=q.yaml, plain.yaml]\n")
    seen = cfg.load(click.Context(cli, info_name="driftwatch"), cli, str(config))
    folder = Path(config).parent
    assert seen["engine_config"] == [f"/etc/vllm/q.yaml={folder / 'q.yaml'}", str(folder / "plain.yaml")]
