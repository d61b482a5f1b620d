"""Plant a secret in every place a unit can hold one and look for it in every output driftwatch writes.

    python benchmarks/plant_secrets.py            # summary: cases, output checks, leaks
    python benchmarks/plant_secrets.py -v         # every leak: case and output
    python benchmarks/plant_secrets.py --json     # machine-readable

Each case is a unit (or a collected RawUnit, for what only a live host supplies: EnvironmentFile=
contents, the running process, systemd's loaded ExecStart) holding one planted secret. It goes
through the CLI in-process (click's CliRunner: stdout and stderr) and the Python API:

- `show` (text, JSON --all), `check` (text, JSON);
- `compare` with the planted unit as the current side (text, JSON, Markdown, HTML) and as the
  baseline (text, JSON);
- `report --unit-file` (text, JSON, HTML) and the mail built from that report (all parts);
- `snapshot --unit-file` (every file written under --store, every row of its database, `store export`),
  `history` (text, JSON), `baseline save` (the YAML) and `baseline show` (text, JSON);
- error paths: a unit systemd would refuse, whose message must not echo the secret.

A leak is one (case, output) pair where the secret, or any 8-character piece of it, appears.
Exit status 0 when nothing leaked, 1 otherwise. The figures go in benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.planted_secrets import CASES, CLEAN, Case, secret_for  # noqa: E402
from tools.secret_outputs import api_outputs, cli_outputs, leaked, refused_outputs  # noqa: E402


def run_case(i: int, case: Case, work: Path) -> dict[str, str]:
    """Every output for case i (tools/secret_outputs.py): the error of each command for a unit systemd
    refuses (and its API outputs), the API outputs for what only a live host supplies, else every CLI output."""
    secret = secret_for(i)
    text = case.unit.replace("{S}", secret)
    d = work / f"case{i:02d}"
    d.mkdir()
    unit = d / "planted.service"
    unit.write_text(text)
    clean = d / "clean.service"
    clean.write_text(CLEAN)
    if case.raw:
        return api_outputs(case.raw, text, CLEAN, secret)
    if case.refused:
        return {**refused_outputs(unit, clean, d), **api_outputs({}, text, CLEAN, secret)}
    return cli_outputs(unit, clean, d)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-k", help="only cases whose name contains this")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="dw-plant-") as tmp:
        for i, case in enumerate(CASES):
            if args.k and args.k not in case.name:
                continue
            outputs = run_case(i, case, Path(tmp))
            secret = secret_for(i)
            leaks = sorted(name for name, text in outputs.items() if leaked(text, secret))
            results.append({"case": case.name, "checks": len(outputs), "leaks": leaks})
    cases_leaking = sum(1 for r in results if r["leaks"])
    checks = sum(r["checks"] for r in results)
    leaks = sum(len(r["leaks"]) for r in results)
    if args.json:
        print(json.dumps({"cases": len(results), "cases_leaking": cases_leaking, "checks": checks, "leaks": leaks,
                          "results": results}, indent=2))
    else:
        for r in results:
            if r["leaks"]:
                print(f"LEAK {r['case']}: {len(r['leaks'])} of {r['checks']} outputs"
                      + (": " + ", ".join(r["leaks"]) if args.verbose else ""))
        print(f"{len(results)} cases, {checks} output checks: {cases_leaking} cases leak, {leaks} leaks")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
