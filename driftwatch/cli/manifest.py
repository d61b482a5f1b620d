"""`--manifest FILE` and `--container NAME`: a Kubernetes manifest or Compose file as the unit a
command reads (collect/manifest.py; docs/engines.md, "Containers and Kubernetes")."""
from __future__ import annotations

import click


def manifest_options(func):
    """--manifest (repeatable; `-` standard input; a directory is rendered with `kubectl kustomize`)
    and --container, passed to the command as `manifests` and `container`."""
    func = click.option("--container", "container", metavar="NAME",
                        help="The engine container of --manifest, when several run an engine (a container name, "
                             "or KIND/NAME/CONTAINER); with --host: a running container, read with `podman inspect` "
                             "(else `docker inspect`) over SSH.")(func)
    return click.option("--manifest", "manifests", multiple=True, metavar="FILE",
                        help="A Kubernetes manifest (multi-document; `helm template` output), a kustomize directory "
                             "(rendered with `kubectl kustomize`) or a Compose file; `-`: standard input "
                             "(repeatable: an InferenceService and its ServingRuntime).")(func)


def restore_manifests(manifests, container, baseline_spec, unit_named, apply, keep, write_dir, fmt, judging,
                      allow_engine_change: bool = False) -> None:
    """`restore --manifest`: print (or --write) the checked patch; exits with its code."""
    import sys

    from ..errors import InputError
    from ..report.manifest_restore import render_manifest_restore
    from ..run.manifest_restore import ManifestRestoreRequest, run_manifest_restore
    from .options import emit, voice
    if not manifests:
        raise InputError("--container chooses among a manifest's containers: give --manifest FILE")
    if unit_named:
        raise InputError("give one of --manifest or --unit-file/--host/--unit")
    if not baseline_spec:
        raise InputError("restore --manifest needs --baseline NAME (the baseline the container is brought back to)")
    if apply:
        raise InputError("--apply is not offered for --manifest: apply the patch from git (kustomize, Helm values, "
                         "Compose override; GitOps), or write it with --write DIR")
    rules_dir, ignores, ignore_file, baselines_dir = judging
    doc, code = run_manifest_restore(ManifestRestoreRequest(tuple(manifests), container, baseline_spec, baselines_dir,
                                                            tuple(keep), rules_dir, tuple(ignores), ignore_file,
                                                            write_dir, allow_engine_change), voice())
    emit(render_manifest_restore(doc, fmt))
    sys.exit(code)
