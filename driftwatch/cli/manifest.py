"""`--manifest FILE` and `--container NAME`: a Kubernetes manifest or Compose file as the unit a
command reads (collect/manifest.py; docs/engines.md, "Containers and Kubernetes")."""
from __future__ import annotations

import click


def manifest_options(func):
    """--manifest (repeatable; `-` standard input; a directory is rendered with `kubectl kustomize`)
    and --container, passed to the command as `manifests` and `container`."""
    func = click.option("--container", "container", metavar="NAME",
                        help="The engine container of --manifest, when several run an engine (a container name, "
                             "or KIND/NAME/CONTAINER).")(func)
    return click.option("--manifest", "manifests", multiple=True, metavar="FILE",
                        help="A Kubernetes manifest (multi-document; `helm template` output), a kustomize directory "
                             "(rendered with `kubectl kustomize`) or a Compose file; `-`: standard input "
                             "(repeatable: an InferenceService and its ServingRuntime).")(func)
