"""SGLang's own argparse type converters, named by the catalog's `type_name`."""
from __future__ import annotations

import re
from decimal import Decimal

from ...fileio import loads_json


def human_readable_int(text: str) -> int:
    """SGLang's human_readable_int (0.5.12+): 4k = 4000, 1Ki = 1024; plain integers as int()."""
    text = text.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", text)
    if not match:
        return int(text)
    number, suffix = match.groups()
    if suffix.endswith("i"):
        if "." in number:
            raise ValueError(text)
        return int(number) * {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[suffix]
    return int(Decimal(number) * {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[suffix])


def nullable_str(text: str):
    return None if not text or text == "None" else text


CONVERTERS = {"human_readable_int": human_readable_int, "json_list_type": loads_json,
              "nullable_str": nullable_str}
