"""Item 18: README and docs/ commands work pasted in order. Static checks that keep the README and
the manual in docs/ honest (the commands themselves were run in order in a fresh clone + venv; see
docs/walkthrough.md): they never write into the shipped baselines/, each page activates the venv
before its first bare `driftwatch`, every option a documented command uses exists, docs/reports.md
documents every config-file key driftwatch/config.py reads, docs/cli.md shell completion and
docs/development.md the SSH tests' network namespaces."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click

from driftwatch import config
from driftwatch.cli import cli

REPO = Path(__file__).resolve().parents[2]
PAGES = {str(p.relative_to(REPO)): p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]}


def _lines(text: str) -> list[str]:
    """The command lines of a page's ```sh blocks, continuations joined, comments cut."""
    sh = [re.sub(r"\\\n\s*", " ", b) for b in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)]
    return [ln.split("#")[0].strip() for b in sh for ln in b.splitlines() if ln.split("#")[0].strip()]


LINES = [ln for text in PAGES.values() for ln in _lines(text)]


def test_walk_through_never_overwrites_a_shipped_baseline():
    saves = [ln for ln in LINES if re.search(r"\bbaseline (save|accept)\b", ln)]
    assert saves
    for line in saves:
        assert "--baselines-dir" in line and "--force" not in line, line


def test_commands_use_the_venv():
    checked = 0
    for page, text in PAGES.items():
        lines = _lines(text)
        first = next((i for i, ln in enumerate(lines) if re.match(r"(\S+/)?driftwatch ", ln) and not ln.startswith(".venv/")),
                     None)
        if first is None:
            continue
        checked += 1
        assert any(ln.startswith(". .venv/bin/activate") for ln in lines[:first]), (page, lines[first])
    assert checked >= 5


def _options(command: click.Command) -> set[str]:
    # A context under the group's own, so the help option is the one users get (click caches it per command).
    root = click.Context(cli, info_name="driftwatch", **cli.context_settings)
    context = root if command is cli else click.Context(command, parent=root)
    return {o for p in command.get_params(context) for o in p.opts + p.secondary_opts}


def test_documented_commands_use_existing_options():
    """Every `driftwatch …` line of the README and docs/ names a command that exists, with options it has."""
    commands = [seg.strip() for ln in LINES for seg in re.split(r"&&|\|", ln)
                if re.match(r"(\S+/)?driftwatch ", seg.strip())]
    assert len(commands) >= 30
    for line in commands:
        words, command = shlex.split(line)[1:], cli
        while isinstance(command, click.Group):
            while words and words[0].startswith("-"):  # the group's own options (--engine-config FILE)
                word = words.pop(0)
                assert word.split("=")[0] in _options(command), (line, word)
                option = next(p for p in command.params if word.split("=")[0] in p.opts)
                if not option.is_flag and "=" not in word:
                    words.pop(0)
            assert words and command.get_command(click.Context(command), words[0]), line
            command = command.get_command(click.Context(command), words.pop(0))
        for word in words:
            if re.match(r"--?[A-Za-z]", word):
                assert word.split("=")[0] in _options(command), (line, word)


def test_config_file_keys_are_documented():
    reports = PAGES["docs/reports.md"]
    block = reports[reports.index("### The config file"):]
    block = block[:block.index("```\n", block.index("```yaml") + 7)]
    for key in list(config._TOP_KEYS) + [f"  {k}:" for k in config._SMTP_KEYS]:
        assert re.search(rf"^{re.escape(key) if key.startswith(' ') else re.escape(key) + ':'}", block, re.M), key


def test_completion_and_netns_are_documented():
    assert "_DRIFTWATCH_COMPLETE=bash_source" in PAGES["docs/cli.md"]
    development = PAGES["docs/development.md"]
    assert "network namespaces" in development.lower() or "network\nnamespaces" in development.lower()
    assert "ip netns" in development


def test_the_model_aware_example_prints_what_the_readme_shows(dw):
    """docs/impact.md's "Explanations that know the model and the GPU" command, run from the repository
    root: the figures its sample output quotes are the ones the CLI prints today."""
    impact = PAGES["docs/impact.md"]
    section = impact[impact.index("## Explanations that know the model and the GPU"):]
    section = section[:section.index("\n## ")]
    shell = re.search(r"```sh\n(.*?)```\n", section, re.S)
    command = re.sub(r"\\\n\s*", " ", shell.group(1)).strip()
    sample = " ".join(re.search(r"```\n(.*?)```", section[shell.end():], re.S).group(1).split())
    assert "tok/s" in sample
    argv = shlex.split(command)
    assert argv[0] == "driftwatch"
    run = dw(*argv[1:], "--baselines-dir", "baselines", cwd=Path(__file__).resolve().parents[2])
    assert run.code == 1, run
    printed = " ".join(run.stdout.split())
    figures = re.findall(r"×\d\.\d\d|\d+\.\d ms|\d+\.\d →|\d+\.\d\d tokens|\d+\.\d tok/s", sample)
    assert len(figures) >= 5, figures
    for figure in figures:
        assert figure in printed, (figure, printed)


def test_the_first_example_prints_what_the_readme_shows(dw):
    """The README's first screen: its install-and-run command ends with a `driftwatch compare`, and
    the output it shows under "70 → 40 tok/s, explained" is what that command prints today, line
    for line (as a pipe gets it: no terminal, no COLUMNS)."""
    readme = PAGES["README.md"]
    first = re.search(r"```sh\n(.*?)```", readme, re.S).group(1)
    command = first.split("&&")[-1].strip()
    argv = shlex.split(command)
    assert argv[0].endswith("driftwatch") and argv[1] == "compare", argv
    section = readme[readme.index("## 70 → 40 tok/s, explained"):]
    sample = re.search(r"```\n(.*?)```", section, re.S).group(1)
    run = dw(*argv[1:], cwd=REPO)
    assert run.code == 1, run
    assert run.stdout == sample, "the README's first example is stale: paste the command's output"


def test_the_readme_is_a_door():
    """README ≤ 8 KB: what it is, the two commands, the first example, a fleet in five steps, links;
    the manual is docs/ (every page it links exists)."""
    readme = PAGES["README.md"]
    assert len(readme.encode("utf-8")) <= 8 * 1024
    links = re.findall(r"\]\((docs/[^)#]+\.md)", readme)
    assert len(links) >= 10 and all((REPO / link).is_file() for link in links), links
