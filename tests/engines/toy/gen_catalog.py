"""Write catalogs/toy-<VERSION>.json from the toy server's real parser, with the generic argparse
dump of tools/catalog/ (the same code that dumps SGLang's parser). Run from the repository root:

    python tests/engines/toy/gen_catalog.py            # rewrite the catalog
    python tests/engines/toy/gen_catalog.py --check    # exit 1 when the committed file is stale
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def catalog_text() -> str:
    for path in (str(REPO), str(HERE.parent)):
        if path not in sys.path:
            sys.path.insert(0, path)
    from tools.catalog import argparse_dump as ad
    from toy.server import VERSION, build_parser

    options, positionals, settings = ad.dump_parser(build_parser())
    doc = ad.catalog("toy", VERSION, "tests/engines/toy/gen_catalog.py", [rec for _, rec in options],
                     python="any", positionals=[rec for _, rec in positionals], settings=settings)
    return ad.render(doc)


def catalog_path() -> Path:
    from toy.server import VERSION
    return HERE / "catalogs" / f"toy-{VERSION}.json"


def main(argv: list[str]) -> int:
    text = catalog_text()
    path = catalog_path()
    if "--check" in argv:
        same = path.is_file() and path.read_text(encoding="utf-8") == text
        print(f"{path}: {'up to date' if same else 'stale: rerun without --check'}")
        return 0 if same else 1
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
