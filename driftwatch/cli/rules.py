"""`rules list | show`: the rules that classify differences, as a table, JSON or one rule's page."""
from __future__ import annotations

import json
import sys

import click

from ..errors import EXIT_OK


@click.group("rules")
def rules_group():
    """List and document the rules that classify differences."""


@rules_group.command("list")
@click.option("--rules", "rules_dir", type=str, help="Extra rules directory to merge.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a table; json: every field, for scripts (driftwatch.rules/v1).")
def rules_list(rules_dir, fmt):
    """List the rules: the shipped ones, merged with --rules.

    One row per rule: id, name, severity, dimension, model, the concepts and keys it matches."""
    from tabulate import tabulate

    from ..findings.rulebook import UNKNOWN_RULE, load_rules
    every = load_rules(rules_dir) + [UNKNOWN_RULE]
    if fmt == "json":
        click.echo(json.dumps({"schema": "driftwatch.rules/v1", "rules": [
            {"id": r.id, "name": r.name, "severity": r.severity, "dimension": r.dimension, "model": r.model,
             "concepts": list(r.concepts), "keys": list(r.keys), "when": r.when, "origin": r.origin,
             "shipped": r.shipped, "reference": r.reference, "explanation": r.explanation} for r in every]},
            indent=2))
        sys.exit(EXIT_OK)

    def cut(items: list[str], width: int = 40) -> str:
        text = ", ".join(items)
        return text if len(text) <= width else text[:width - 1] + "…"

    rows = [[r.id, r.name, r.severity, r.dimension, r.model, cut(r.concepts), cut(r.keys)] for r in every]
    click.echo(tabulate(rows, headers=["id", "name", "severity", "dimension", "model", "concepts", "keys"]))
    sys.exit(EXIT_OK)


@rules_group.command("show")
@click.argument("rule_id")
@click.option("--rules", "rules_dir", type=str, help="Extra rules directory to merge.")
def rules_show(rule_id, rules_dir):
    """Document one rule: what it matches, its model, its explanation.

    Each concept it matches is named with every engine's native field for it."""
    import fnmatch

    from ..concepts import CONCEPTS
    from ..engines.registry import ENGINES
    from ..findings.rulebook import get_rule, load_rules
    r = get_rule(load_rules(rules_dir), rule_id)
    click.echo(f"{r.id} {r.name}\n  severity:  {r.severity}\n  dimension: {r.dimension}\n  model:     {r.model}")
    # concept -> "SGLang: tp_size" for every registered engine that binds a native field to it
    native: dict[str, list[str]] = {}
    for engine in ENGINES.values():
        for field_name, binding in engine.concept_bindings().items():
            native.setdefault(binding.concept, []).append(
                f"{engine.label or engine.name}: {'not ' if binding.invert else ''}{field_name}")
    first = True
    for pattern in r.concepts:
        for name in [n for n in CONCEPTS if fnmatch.fnmatchcase(n, pattern)]:
            fields = "; ".join(native.get(name, []))
            shown = name if name == pattern else f"{name} (via {pattern})"
            click.echo(f"  {'concepts:' if first else '':<10} {shown}: {CONCEPTS[name]}"
                       + (f" [{fields}]" if fields else ""))
            first = False
    click.echo(f"  keys:      {', '.join(r.keys) or '-'}\n  when:      {r.when}\n  from:      {r.origin}")
    if r.reference:
        click.echo(f"  reference: {r.reference}")
    click.echo(f"\n{r.explanation}")
    sys.exit(EXIT_OK)
