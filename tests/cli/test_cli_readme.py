"""Item 18: README commands work pasted in order. Static checks that keep the walk-through honest
(the commands themselves were run in order in a fresh clone + venv; see the README's walk-through):
it never writes into the shipped baselines/, documents every config-file key settings.py reads,
shell completion, and the SSH tests' network namespaces."""

from __future__ import annotations

import re
from pathlib import Path

from driftwatch.notify import settings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
SH = [re.sub(r"\\\n\s*", " ", b) for b in re.findall(r"^```sh\n(.*?)^```", README, re.S | re.M)]
LINES = [l.split("#")[0].strip() for b in SH for l in b.splitlines() if l.split("#")[0].strip()]


def test_walk_through_never_overwrites_a_shipped_baseline():
    saves = [l for l in LINES if re.search(r"\bbaseline (save|accept)\b", l)]
    assert saves
    for line in saves:
        assert "--baselines-dir" in line and "--force" not in line, line


def test_commands_use_the_venv():
    first = next(i for i, l in enumerate(LINES) if re.match(r"(\S+/)?driftwatch ", l) and not l.startswith(".venv/"))
    assert any(l.startswith(". .venv/bin/activate") for l in LINES[:first]), LINES[first]


def test_config_file_keys_are_documented():
    block = README[README.index("### The config file"):]
    block = block[:block.index("```\n", block.index("```yaml") + 7)]
    for key in list(settings._TOP_KEYS) + [f"  {k}:" for k in settings._SMTP_KEYS]:
        assert re.search(rf"^{re.escape(key) if key.startswith(' ') else re.escape(key) + ':'}", block, re.M), key


def test_completion_and_netns_are_documented():
    assert "_DRIFTWATCH_COMPLETE=bash_source" in README
    assert "network namespaces" in README.lower() or "network\nnamespaces" in README.lower()
    assert "ip netns" in README


def test_the_model_aware_example_prints_what_the_readme_shows(dw):
    """The README's "Explanations that know the model and the GPU" command, run from the repository
    root: the figures its sample output quotes are the ones the CLI prints today."""
    import shlex
    section = README[README.index("## Explanations that know the model and the GPU"):]
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
