"""A toy third engine, registered from tests/ only (issue 8: an engine is one folder + one registry line).

- `server.py`: the toy server's real argparse parser and its entry points (`toyserve …`,
  `python -m toy.server …`);
- `catalogs/toy-1.0.json`: that parser dumped by `gen_catalog.py` (never hand-typed);
- `concepts.yaml`, `runtime_defaults.yaml`: its concept map and start-up-computed fields;
- `engine.py`: `ToyEngine(ArgparseEngine)`;
- `rules/`: a rule of its own that matches a concept (passed with `--rules`).
"""
