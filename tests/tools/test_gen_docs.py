"""The generated reference pages of docs/ are current: docs/rules.md is what rules/*.yaml say today and
docs/cli.md is every command's --help today (tools/gen_docs.py writes both; run
`python -m tools.gen_docs all` after changing a rule, a command or an option)."""
from __future__ import annotations

import re

import pytest
import yaml

from tools import gen_docs


@pytest.mark.parametrize("page", sorted(gen_docs.PAGES))
def test_the_generated_page_is_current(page):
    now, want = gen_docs.page_text(page)
    assert now == want, f"docs/{page}.md is stale: run python -m tools.gen_docs {page}"


def test_the_rules_page_has_every_shipped_rule():
    text = (gen_docs.DOCS / "rules.md").read_text(encoding="utf-8")
    shipped = [rule for path in gen_docs.RULES_DIR.glob("*.yaml")
               for rule in yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]]
    assert len(shipped) >= 40
    for rule in shipped:
        assert f"\n#### {rule['id']} {rule['name']}\n" in text, rule["id"]
    assert "\n#### DW999 unknown-setting\n" in text


def test_the_cli_page_has_every_command_and_option():
    from driftwatch.cli import cli
    text = (gen_docs.DOCS / "cli.md").read_text(encoding="utf-8")
    for path, command in gen_docs._commands(cli):
        heading = f"\n### driftwatch {' '.join(path)}".rstrip() + "\n"
        assert heading in text, path
        section = text.split(heading, 1)[1].split("\n### ", 1)[0]
        for param in command.params:
            for opt in param.opts + param.secondary_opts:
                if opt.startswith("-") and not param.hidden:
                    assert re.search(rf"(^|[\s,/]){re.escape(opt)}([\s,=\[]|$)", section, re.M), (path, opt)
