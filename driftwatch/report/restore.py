"""`driftwatch restore`: the words of a restore plan: the drop-in's comments, the text and JSON
read-outs, and why something is not restored."""
from __future__ import annotations

import json
from collections.abc import Iterable

from ..findings.compare import Finding
from ..findings.restore import RestorePlan, dropin_body
from ..redact import fingerprint
from .wording import clean, finding_pair

RESTORE_SCHEMA = "driftwatch.restore/v1"

REASONS = {
    "secret": "a secret: driftwatch never writes one from a redacted value; set it by hand",
    "kept": "kept as it is (--keep)",
    "release": "the installed engine release: reinstall it, a drop-in cannot change it",
    "gpus": "the host's GPUs: not a setting of the unit",
    "runtime": "what the running server reports: restart it after the drop-in is installed",
    "unrestorable": "not expressible in a drop-in over this unit",
    "env-file": "set by an EnvironmentFile= (which overrides Environment=): change it in that file",
    "remove-by-hand": "the baseline leaves it unset and systemd refuses an empty value: remove it from the unit "
                      "by hand",
    "still-differs": "still differs with the drop-in installed",
    "dependency": "a dependency the baseline does not have: systemd cannot remove one in a drop-in; remove it "
                  "from the unit by hand",
}

PROBLEMS = {
    "no-tail": "the engine's arguments are not the end of ExecStart's command line (nor of its `bash -c` "
               "script): the command line cannot be rewritten in the unit's own spelling",
    "secret-in-launcher": "the baseline's launcher holds a secret recorded redacted: write its ExecStart= by hand",
    "secret-in-command": "the baseline's command line holds a secret recorded redacted that this unit does not "
                         "hold: write its ExecStart= by hand",
    "refused": "systemd would refuse the unit with the drop-in",
    "engine": "the engine would refuse to start with the drop-in",
    "still": "still differs from the baseline with the drop-in installed",
    "engine-change": "the baseline runs another server (a restore is a revert, not a migration; "
                     "--allow-engine-change writes it anyway)",
    "overridden": "a drop-in applied after the restore drop-in would override it; remove or rename that file",
    "unsafe": "a value that cannot be written as one assignment (a control character or a trailing backslash)",
    "unplanned": "the drop-in would set a key the restore did not mean to write",
    "unchecked": "the baseline does not record this key, so its value cannot be checked",
    "script-variables": "the `bash -c` script holds ${VAR} references systemd expands: rewriting it would "
                        "inline their values",
    "shell-meaning": "a word of the `bash -c` script whose shell meaning quoting would change",
    "variables": "a $VAR of the command line expands to several words: it cannot be kept as written",
}


def _finding_phrase(f: Finding) -> str:
    d = f.difference
    doc = {"label": d.label, "baseline": d.baseline, "current": d.current, "secret": d.secret,
           "baseline_source": d.baseline_source, "current_source": d.current_source}
    base, cur = finding_pair(doc)
    return clean(f"{f.rule.id} {d.label}: {cur} -> {base}")


def problem_text(code: str) -> str:
    kind, _, detail = code.partition(":")
    if kind == "engine-change":
        return clean(f"engine change ({detail}): {PROBLEMS[kind]}")
    words = PROBLEMS.get(kind, kind)
    return clean(f"{words}: {detail}" if detail else words)


def dropin_text(plan: RestorePlan) -> str:
    """The drop-in file: a comment naming the baseline and each finding it undoes (and what it
    leaves), then the [Service] lines. Holds clear values the unit itself holds (see `shown`)."""
    lines = [f"# Written by `driftwatch restore`: brings {clean(plan.unit)} back to baseline {clean(plan.baseline)}.",
             "# Remove this file and run `systemctl daemon-reload` to undo it."]
    for f in plan.undoes:
        lines.append(f"# undoes {_finding_phrase(f)}")
    for left in plan.left:
        if left.reason in ("secret", "kept", "remove-by-hand", "env-file", "dependency"):
            lines.append(f"# left alone: {clean(left.label)} ({REASONS[left.reason]})")
    return "\n".join(lines + dropin_body(plan)) + "\n"


def shown(plan: RestorePlan, text: str) -> str:
    """`text` with the clear secrets the drop-in copies from the unit masked (what is printed)."""
    return mask_secrets(text, plan.secrets)


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    """`text` with each of `secrets` (whole words) replaced by its fingerprint, line by line cleaned
    for a terminal: the one masking of every restore output (text, JSON, the confirmation diff)."""
    import re
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = re.sub(r"(?<![\w.-])" + re.escape(secret) + r"(?![\w.-])", fingerprint(secret), text)
    return "\n".join(clean(line) for line in text.split("\n"))


def where(plan: RestorePlan) -> str:
    return f"{plan.host}:{plan.unit}" if plan.host else plan.unit


def plan_status(plan: RestorePlan) -> str:
    if plan.problems:
        return "cannot-restore"
    if plan.empty:
        return "by-hand" if any(x.reason != "kept" for x in plan.left) else "nothing-to-restore"
    return "restorable"


def plan_doc(plan: RestorePlan, extra: dict | None = None) -> dict:
    doc = {"host": plan.host, "unit": plan.unit, "baseline": plan.baseline, "status": plan_status(plan),
           "path": plan.path, "state_hash": plan.state_hash,
           "undoes": [{"rule": f.rule.id, "key": f.key, "label": f.difference.label} for f in plan.undoes],
           "left": [{"label": clean(x.label), "key": x.key, "reason": x.reason, "why": REASONS.get(x.reason, x.reason)}
                    for x in plan.left],
           "problems": [problem_text(p) for p in plan.problems],
           "dropin": None if plan.empty else shown(plan, dropin_text(plan)),
           "drift_after": None if plan.after is None else [
               {"key": f.key, "label": f.difference.label} for f in plan.after.findings]}
    doc.update(extra or {})
    return doc


def render_plans(docs: list[dict], fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps({"schema": RESTORE_SCHEMA, "units": docs}, indent=2) + "\n"
    out: list[str] = []
    for doc in docs:
        name = clean(f"{doc['host']}:{doc['unit']}" if doc.get("host") else doc["unit"])
        status = doc["status"]
        if status == "no-baseline":
            out.append(f"{name}: not restored: {clean(doc.get('why', 'no baseline'))}")
            continue
        if status == "planned" or (doc.get("error") and status == "error"):
            if doc.get("error"):
                out.append(f"{name}: error: {clean(doc['error'])}")
            else:
                out.append(f"{name}: planned drop-in {doc.get('path')} (baseline {clean(doc.get('baseline'))})")
            for key in ("applied", "reload", "restarted", "after"):
                if doc.get(key):
                    out.append(f"  {key}: {clean(doc[key])}")
            continue
        if status == "nothing-to-restore":
            out.append(f"{name}: matches baseline {doc['baseline']}: nothing to restore")
        elif status == "by-hand":
            out.append(f"{name}: differs from baseline {doc['baseline']}, but nothing a drop-in can restore:")
        elif status == "cannot-restore":
            out.append(f"{name}: cannot restore to baseline {doc['baseline']}:")
            out.extend(f"  - {p}" for p in doc["problems"])
        else:
            out.append(f"{name}: drop-in {doc['path']} restores baseline {doc['baseline']} "
                       f"({len(doc['undoes'])} finding{'s' if len(doc['undoes']) != 1 else ''}):")
        for left in doc["left"]:
            out.append(f"  left: {left['label']}: {left['why']}")
        if doc.get("dropin") and status != "nothing-to-restore":
            out.append("")
            out.extend(doc["dropin"].rstrip("\n").split("\n"))
            out.append("")
        for key in ("written", "planned", "applied", "reload", "restarted", "after", "error"):
            if doc.get(key):
                out.append(f"  {key}: {clean(doc[key])}")
    return "\n".join(out) + "\n"


def diff_text(path: str, new: str, old: str | None) -> str:
    """What `--apply` will change on the host, as a unified diff of the drop-in (both texts masked)."""
    import difflib
    before = (old or "").splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, new.splitlines(keepends=True),
                                        f"{path} (now)" if old is not None else "/dev/null", f"{path} (restore)"))
