"""One exception family; the CLI turns each into one stderr line and an exit code.

Exit codes follow diff(1): 0 no drift, 1 drift found, 2 trouble.
"""

EXIT_OK = 0
EXIT_DRIFT = 1
EXIT_TROUBLE = 2


class DriftwatchError(Exception):
    """Base of every error driftwatch raises on purpose. Message = the one line shown."""

    exit_code = EXIT_TROUBLE


class InputError(DriftwatchError):
    """A file or argument the user gave cannot be used (missing, binary, too big, malformed)."""


class UnitError(InputError):
    """A unit systemd itself would refuse (no ExecStart, unbalanced quotes, ...)."""


class CatalogError(DriftwatchError):
    """A flag catalog is missing or does not match the expected schema."""


class BaselineError(InputError):
    """A baseline cannot be found, read, or written."""


class CollectError(DriftwatchError):
    """A host or unit could not be read."""


class NotifyError(DriftwatchError):
    """A report could not be delivered (SMTP refused, TLS or auth failure, ...)."""
