"""`restore --manifest`'s read-out: the patch, what it undoes, what is left and why (run/manifest_restore.py)."""
from __future__ import annotations

import json

_REASONS = {"launcher": "the container stays in its image (a manifest's launcher is not rewritten)",
            "set-at-start": "its value is set when the pod starts (a Secret, a ConfigMap, the downward API)",
            "referenced": "the container's command line refers to it ($(NAME)); removing it would change the argv",
            "secret": "a secret: set it by hand", "kept": "kept (--keep)", "release": "the image's release",
            "gpus": "the GPUs", "runtime": "what the running server reports"}
_FILES = {"strategic-merge": "patch.yaml", "json6902": "patch.yaml", "compose-override": "compose.override.yaml"}


def patch_file_name(doc: dict) -> str | None:
    return _FILES.get(doc.get("patch_kind", ""))


def render_manifest_restore(doc: dict, fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps({"schema": "driftwatch.restore-manifest/v1", **doc}, indent=2) + "\n"
    lines = []
    if not doc.get("patch"):
        lines.append(f"{doc['target']}: nothing to restore with a patch")
    else:
        how = {"strategic-merge": "a strategic-merge patch (kustomize `patches:` or `kubectl patch`)",
               "json6902": "a JSON 6902 patch (kustomize `patches:` with its target)",
               "compose-override": "a compose.override.yaml"}[doc["patch_kind"]]
        lines.append(f"# {doc['target']}: {how} undoing {', '.join(doc['undoes']) or 'nothing'}")
        if doc.get("checked_with"):
            still = doc.get("still_differs") or []
            lines.append(f"# checked with {doc['checked_with']}: " + (
                "no drift left" if not still else f"still differs: {', '.join(still)}"))
        lines.append(doc["patch"].rstrip("\n"))
    for left in doc.get("left") or []:
        lines.append(f"# left: {left['label']}: {_REASONS.get(left['reason'], left['reason'])}")
    for problem in doc.get("problems") or []:
        lines.append(f"# problem: {problem}")
    return "\n".join(lines) + "\n"
