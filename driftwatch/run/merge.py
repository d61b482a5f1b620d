"""`report --merge A.json B.json …`: one fleet report from the shards' JSON reports.

Each shard (`report --shard I/N --format json -o shard-I.json`) judged its own hosts; the fleet's
report is their entries put together, with what depends on the whole fleet recomputed over all of
them: the counts, the drift groups (a finding shared across shards is one group), the ignores that
matched nothing on any shard. Then it is written, shown and mailed as one run's report is
(`fleet.publish`), with one run's exit code.

Refused with one line (exit 2, nothing written or mailed): a file that is not a `driftwatch.report/v1`
document, files of different schemas, and shards that overlap (a report without `--shard`, slices
of different N, the same slice twice, or one host/unit in two files). Slices missing from an
otherwise sound set are a warning and exit 2: the report goes out, saying which hosts it lacks.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import InputError
from .fleet import FleetReport, publish
from .shard import parse_shard
from .voice import Voice

if TYPE_CHECKING:
    from ..report.document import BaselineRef, FleetReportDoc, HostEntry

# A shard's report of 25 000 hosts with findings is a few hundred MB of JSON: bounds well above that,
# still refusing a file that is not a report before it fills the memory.
MAX_REPORT_BYTES = 1 << 30
MAX_REPORT_VALUES = 64_000_000


def merge_reports(paths: list[str] | tuple[str, ...], options: dict, *, config_path: str | None, fmt: str,
                  output: str | None, prometheus_file: str | None, always: bool, voice: Voice,
                  show: Callable[[FleetReportDoc], None] | None = None) -> FleetReport:
    """Read, check and merge the shards' reports; write, show and mail the fleet's. `options`: the
    command line's report settings (e-mail, SMTP, state), laid over the config file's."""
    from ..config import load_report_settings, merge
    settings = merge(options, load_report_settings(config_path, os.environ))
    if settings.get("only_changes") and not settings.get("state"):
        raise InputError("--only-changes needs --state FILE (where the last report's fingerprint is kept)")
    docs = [(path, read_report(path)) for path in paths]
    missing = check_shards(docs)
    doc = merged_document(docs)
    for message in doc.get("warnings", []):
        voice.aside(f"warning: {message}")
    trouble = False
    if missing:
        warning = (f"merged {len(docs)} of {len(docs) + len(missing)} shards: {', '.join(missing)} missing "
                   f"(their hosts are not in this report)")
        doc.setdefault("warnings", []).append(warning)
        doc["missing_shards"] = missing  # the text report and its mail say it under the counts
        voice.say(warning)
        trouble = True
    return FleetReport(doc, publish(doc, settings, fmt=fmt, output=output, prometheus_file=prometheus_file,
                                    always=always, voice=voice, show=show) or trouble)


def read_report(path: str) -> FleetReportDoc:
    """One shard's `driftwatch.report/v1` document (InputError naming the file when it is not one)."""
    from ..fileio import read_json
    from ..report.data import REPORT_SCHEMA
    doc = read_json(path, "shard report", limit=MAX_REPORT_BYTES, max_nodes=MAX_REPORT_VALUES)
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if not isinstance(schema, str) or not schema.startswith("driftwatch."):
        raise InputError(f"{path}: not a driftwatch report (write one with `report --format json -o FILE`)")
    if schema != REPORT_SCHEMA:
        raise InputError(f"{path}: a {schema} document, not {REPORT_SCHEMA}: --merge takes fleet reports "
                         f"(`report --format json -o FILE`) written by this release")
    hosts, summary = doc.get("hosts"), doc.get("summary")
    if not isinstance(hosts, list) or not isinstance(summary, dict) or \
            not all(isinstance(h, dict) and isinstance(h.get("host"), str) and isinstance(h.get("status"), str)
                    for h in hosts):
        raise InputError(f"{path}: not a whole {REPORT_SCHEMA} document (its hosts or summary are missing)")
    return doc


def check_shards(docs: list[tuple[str, FleetReportDoc]]) -> list[str]:
    """InputError when the files overlap; else the slices of their N that no file holds."""
    if not docs:
        raise InputError("--merge needs the shards' reports: report --merge A.json B.json …")
    seen_files: dict[str, str] = {}
    slices: dict[int, str] = {}
    count = None
    for path, doc in docs:
        real = os.path.realpath(path)
        if real in seen_files:
            raise InputError(f"{path}: the same file as {seen_files[real]}: the shards overlap")
        seen_files[real] = path
        text = doc.get("shard")
        try:
            shard = parse_shard(str(text)) if text else None
        except InputError:
            raise InputError(f"{path}: its shard {text!r} is not I/N") from None
        if shard is None:  # no shard, or a blank one
            raise InputError(f"{path}: a report of the whole fleet (made without --shard): it overlaps every "
                             f"other; merge the reports of `report --shard I/N`")
        if count is None:
            count = shard.count
        elif shard.count != count:
            raise InputError(f"{path}: slice {shard} of a fleet cut in {shard.count}, the others in {count}: "
                             f"slices of different N overlap")
        if shard.index in slices:
            raise InputError(f"{path}: slice {shard} again ({slices[shard.index]} holds it): the shards overlap")
        slices[shard.index] = path
    owner: dict[tuple, str] = {}
    for path, doc in docs:
        for entry in doc["hosts"]:
            key = (entry.get("host"), entry.get("unit"))
            if owner.setdefault(key, path) != path:
                raise InputError(f"{path}: {key[0]} {key[1]} is also in {owner[key]}: the shards overlap")
    return [f"{i}/{count}" for i in range(count or 0) if i not in slices]


def _slice_index(doc: FleetReportDoc) -> int:
    """The slice a report of `check_shards`'s holds (it has refused every report without one)."""
    shard = parse_shard(str(doc["shard"]))
    if shard is None:
        raise InputError("a report without a shard cannot be merged")
    return shard.index


def merged_document(docs: list[tuple[str, FleetReportDoc]]) -> FleetReportDoc:
    """The fleet's `driftwatch.report/v1`: the entries of every shard (in the inventory's order when
    the inventory can be read here, else slice by slice), counts and drift groups recomputed."""
    from ..report.data import assemble_report
    ordered = sorted(docs, key=lambda d: _slice_index(d[1]))
    entries = [entry for _, doc in ordered for entry in doc["hosts"]]
    for entry in entries:  # each shard numbered its own groups: numbers of the fleet's are given anew
        for f in (c.get("findings") or [] if (c := entry.get("comparison")) else []):
            if isinstance(f, dict):
                f.pop("group", None)
    inventory = next((d.get("inventory") for _, d in ordered if d.get("inventory")), None)
    entries = _in_inventory_order(entries, inventory)
    known: dict[str, BaselineRef] = {}
    for _, doc in ordered:
        for b in doc.get("baselines") or []:
            if isinstance(b, dict) and b.get("name") is not None:
                known.setdefault(b["name"], b)
    used = []
    for e in entries:
        name = b.get("name") if (c := e.get("comparison")) and (b := c.get("baseline")) else None
        if name in known and known[name] not in used:
            used.append(known[name])
    defaults = [d.get("baseline") for _, d in ordered]
    one = used[0] if len(used) == 1 else (defaults[0] if not used and all(x == defaults[0] for x in defaults)
                                          else None)
    stamps = sorted(str(d["generated_at"]) for _, d in ordered if d.get("generated_at"))
    doc = assemble_report(one, used, entries, inventory, generated_at=stamps[0] if stamps else None)
    judged = [d["warnings"] for _, d in ordered if isinstance(d.get("warnings"), list)]
    if judged:  # an ignore unused on the whole fleet is one no shard used
        doc["warnings"] = [w for w in judged[0] if all(w in other for other in judged[1:])]
    histories = [d["history"] for _, d in ordered if isinstance(d.get("history"), dict)]
    if histories:
        problems = []
        for h in histories:
            problems += [p for p in h.get("problems") or [] if p not in problems]
        doc["history"] = {"store": histories[0].get("store"), "problems": problems}
    doc["merged"] = [str(d["shard"]) for _, d in ordered]
    return doc


def _in_inventory_order(entries: list[HostEntry], inventory: str | None) -> list[HostEntry]:
    """Local files first, then hosts as the inventory lists them (a host's units keep their order);
    entries as given when the inventory cannot be read here."""
    position: dict[str | None, int] = {}
    if inventory:
        from ..collect.inventory import load_inventory
        try:
            for i, target in enumerate(load_inventory(inventory)):
                position.setdefault(target.name, i)
        except InputError:
            position = {}
    last = len(position)
    return sorted(entries, key=lambda e: -1 if e.get("file") else position.get(e.get("host"), last))


__all__ = ["MAX_REPORT_BYTES", "check_shards", "merge_reports", "merged_document", "read_report"]
