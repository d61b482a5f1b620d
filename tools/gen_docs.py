"""Generate the reference parts of docs/ from their sources, so they cannot drift from the code.

    python -m tools.gen_docs rules          # docs/rules.md: every rule, from rules/*.yaml
    python -m tools.gen_docs cli            # docs/cli.md: every command's --help
    python -m tools.gen_docs all [--check]  # both; --check writes nothing, exit 1 when a page is stale

A page keeps its hand-written text; only what stands between its `<!-- generated: NAME -->` and
`<!-- /generated: NAME -->` markers is replaced. tests/tools/test_gen_docs.py fails when a page is
not what this script writes today.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
RULES_DIR = REPO / "rules"
# --help as a terminal of this width prints it (click caps the text at the group's max_content_width).
HELP_COLUMNS = 100


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- generated: {name} (python -m tools.gen_docs {name}; do not edit by hand) -->", \
        f"<!-- /generated: {name} -->"


# --------------------------------------------------------------------------- rules


def _file_comment(path: Path) -> str:
    """The comment block a rules file opens with, as one paragraph."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(ln for ln in lines if ln)


def _native_fields() -> dict[str, list[str]]:
    """concept -> ["SGLang `tp_size`", …] for every registered engine (as `driftwatch rules show`)."""
    from driftwatch.engines.registry import ENGINES
    native: dict[str, list[str]] = {}
    for engine in ENGINES.values():
        for field_name, binding in sorted(engine.concept_bindings().items()):
            native.setdefault(binding.concept, []).append(
                f"{engine.label or engine.name} {'not ' if binding.invert else ''}`{field_name}`")
    return native


def _anchor(rule) -> str:
    return f"{rule.id}-{rule.name}".lower()


def render_rules() -> str:
    import fnmatch

    from driftwatch.concepts import CONCEPTS
    from driftwatch.findings.rulebook import UNKNOWN_RULE, load_rules_dir

    native = _native_fields()
    shipped = load_rules_dir(RULES_DIR)  # validated by the loader driftwatch itself uses
    by_file = [(path, [r for r in shipped if Path(r.origin).name == path.name])
               for path in RULES_DIR.glob("*.yaml")]
    by_file = sorted((f for f in by_file if f[1]), key=lambda f: min(r.id for r in f[1]))  # by their lowest id
    every = sorted((r for _, rules in by_file for r in rules), key=lambda r: r.id) + [UNKNOWN_RULE]
    out = [f"{len(every)} rules: {len(every) - 1} shipped in `rules/*.yaml`, and DW999, built in.", "",
           "| id | name | severity | dimension | model |", "|---|---|---|---|---|"]
    out += [f"| [{r.id}](#{_anchor(r)}) | {r.name} | {r.severity} | {r.dimension} | `{r.model}` |" for r in every]

    def rule_block(r, origin: str) -> list[str]:
        facts = [f"severity **{r.severity}**", f"dimension {r.dimension}", f"model `{r.model}`"]
        if r.when != "any":
            facts.append(f"only when the setting is {r.when}")
        if r.version_added:
            facts.append(f"since {r.version_added}")
        if origin:
            facts.append(origin)
        block = ["", f"#### {r.id} {r.name}", "", "- " + ", ".join(facts)]
        for pattern in r.concepts:
            for name in [n for n in CONCEPTS if fnmatch.fnmatchcase(n, pattern)]:
                shown = f"`{name}`" if name == pattern else f"`{name}` (via `{pattern}`)"
                fields = "; ".join(native.get(name, []))
                block.append(f"- concept {shown}: {CONCEPTS[name]}" + (f" ({fields})" if fields else ""))
        if r.keys:
            block.append("- keys: " + ", ".join(f"`{k}`" for k in r.keys))
        if r.params:
            block.append("- params: " + ", ".join(f"`{k}: {v}`" for k, v in sorted(r.params.items())))
        if r.reference:
            block.append(f"- reference: <{r.reference}>")
        block += ["", "> " + " ".join(r.explanation.split())]
        return block

    for path, rules in by_file:
        out += ["", f"### `rules/{path.name}`", ""]
        comment = _file_comment(path)
        if comment:
            out.append(comment)
        for r in rules:
            out += rule_block(r, "")
    out += ["", "### Built in"]
    out += rule_block(UNKNOWN_RULE, "built in: matches every difference no other rule matches")
    return "\n".join(out)


# --------------------------------------------------------------------------- cli


def _commands(group, path=()):
    """(path, command) for the group and every command under it, in --help's order."""
    import click
    yield path, group
    if isinstance(group, click.Group):
        ctx = click.Context(group, info_name="driftwatch")
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if command is not None and not command.hidden:
                yield from _commands(command, path + (name,))


def help_text(path: tuple[str, ...]) -> str:
    """What `driftwatch PATH --help` prints in a terminal HELP_COLUMNS wide (click's CliRunner would
    force 80 columns, so the command runs here with stdout captured)."""
    import contextlib
    import io
    import os

    from driftwatch.cli import cli
    out, columns = io.StringIO(), os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_COLUMNS)
    try:
        with contextlib.redirect_stdout(out):
            code = cli.main([*path, "--help"], prog_name="driftwatch", standalone_mode=False)
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    if code:
        raise SystemExit(f"driftwatch {' '.join(path)} --help failed ({code}): {out.getvalue()}")
    return out.getvalue().rstrip()


def render_cli() -> str:
    from driftwatch.cli import cli
    out = [f"As `driftwatch COMMAND --help` prints it ({HELP_COLUMNS} columns)."]
    for path, _ in _commands(cli):
        out += ["", f"### driftwatch {' '.join(path)}".rstrip(), "", "```text", help_text(path), "```"]
    return "\n".join(out)


# --------------------------------------------------------------------------- pages

PAGES = {"rules": (DOCS / "rules.md", render_rules), "cli": (DOCS / "cli.md", render_cli)}


def split(text: str, name: str, where: str = "") -> tuple[str, str, str]:
    """(before, generated, after) of a page."""
    start, end = _markers(name)
    if start not in text or end not in text:
        raise SystemExit(f"{where or name}: no {start} … {end} markers")
    head, rest = text.split(start, 1)
    body, tail = rest.split(end, 1)
    return head, body.strip("\n"), tail


def page_text(name: str) -> tuple[str, str]:
    """(the page as it is, the page as it should be)."""
    path, render = PAGES[name]
    text = path.read_text(encoding="utf-8")
    head, _, tail = split(text, name, str(path))
    start, end = _markers(name)
    return text, f"{head}{start}\n{render()}\n{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.gen_docs", description=__doc__.split("\n\n")[0])
    ap.add_argument("page", choices=[*PAGES, "all"])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is stale")
    args = ap.parse_args(argv)
    stale = []
    for name in PAGES if args.page == "all" else [args.page]:
        now, want = page_text(name)
        if now == want:
            continue
        path = PAGES[name][0]
        stale.append(str(path.relative_to(REPO)))
        if not args.check:
            path.write_text(want, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO)}")
    if args.check and stale:
        print(f"stale: {', '.join(stale)} (run python -m tools.gen_docs all)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
