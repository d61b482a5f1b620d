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
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.secret_outputs import api_outputs, cli_outputs, leaked, refused_outputs  # noqa: E402

PY = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/Qwen3.6-27B --tp-size 2"
CLEAN = f"[Unit]\nDescription=clean\n\n[Service]\nExecStart={PY}\n"


@dataclass
class Case:
    name: str
    unit: str  # {S} is replaced by the case's secret
    raw: dict = field(default_factory=dict)  # extra RawUnit fields (API-only cases); {S} replaced too
    refused: bool = False  # systemd refuses the unit: only the error path is checked


def _svc(body: str, head: str = "") -> str:
    return f"{head}[Unit]\nDescription=planted\n\n[Service]\n{body}\n"


CASES = [
    Case("env HF_TOKEN", _svc(f"Environment=HF_TOKEN={{S}}\nExecStart={PY}")),
    Case("env DB_PASS", _svc(f"Environment=DB_PASS={{S}}\nExecStart={PY}")),
    Case("env GH_PAT", _svc(f"Environment=GH_PAT={{S}}\nExecStart={PY}")),
    Case("env arbitrary name", _svc(f"Environment=MY_CONN={{S}}\nExecStart={PY}")),
    Case("env quoted with space", _svc(f'Environment="SERVICE_WORD=x {{S}}"\nExecStart={PY}')),
    Case("env escaped value", _svc(f"Environment=DB_PASS=\\x41{{S}}\nExecStart={PY}")),
    Case("env URL userinfo", _svc(f"Environment=HF_ENDPOINT=https://mirror:{{S}}@mirror.example/\nExecStart={PY}")),
    Case("env URL token query", _svc(f"Environment=MODEL_URL=https://m.example/w?token={{S}}\nExecStart={PY}")),
    Case("env URL sig query", _svc(f"Environment=BLOB=https://a.blob.example/c?sv=2020&sig={{S}}\nExecStart={PY}")),
    Case("env JSON secret key", _svc(f"Environment='CFG={{\"api_key\": \"{{S}}\"}}'\nExecStart={PY}")),
    Case("env via ${VAR} into --api-key", _svc(f"Environment=K={{S}}\nExecStart={PY} --api-key ${{K}}")),
    Case("--api-key", _svc(f"ExecStart={PY} --api-key {{S}}")),
    Case("--api-key=", _svc(f"ExecStart={PY} --api-key={{S}}")),
    Case("--api-k abbreviation", _svc(f"ExecStart={PY} --api-k {{S}}")),
    Case("--api\\x2dkey escape", _svc(f"ExecStart={PY} --api\\x2dkey {{S}}")),
    Case("--admin-api-key", _svc(f"ExecStart={PY} --admin-api-key {{S}}")),
    Case("--model-path hf://TOKEN@", _svc("ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server "
                                          "--model-path hf://{S}@org/model --tp-size 2")),
    Case("--model-path URL userinfo", _svc("ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server "
                                           "--model-path https://u:{S}@models.example/q --tp-size 2")),
    Case("--model-path ?access_token=", _svc("ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server "
                                             "--model-path https://models.example/q?access_token={S}")),
    Case("JSON flag hf_token", _svc(f"ExecStart={PY} --json-model-override-args '{{\"hf_token\": \"{{S}}\"}}'")),
    Case("JSON flag secret_key", _svc(f"ExecStart={PY} --json-model-override-args '{{\"secret_key\": \"{{S}}\"}}'")),
    Case("unknown flag value", _svc(f"ExecStart={PY} --apikey {{S}}")),
    Case("drop-in older abbreviation", "# /etc/systemd/system/planted.service\n" + _svc(f"ExecStart={PY}")
         + "\n# /etc/systemd/system/planted.service.d/override.conf\n[Service]\nExecStart=\n"
           f"ExecStart={PY} --api-ke {{S}}\n"),
    Case("drop-in overridden old key", "# /etc/systemd/system/planted.service\n"
         + _svc(f"ExecStart={PY} --api-key {{S}}")
         + "\n# /etc/systemd/system/planted.service.d/override.conf\n[Service]\nExecStart=\n"
           f"ExecStart={PY}\n"),
    Case("bash -c --api-key", _svc(f"ExecStart=/bin/bash -c 'exec {PY} --api-key {{S}}'")),
    Case("bash -c Authorization Bearer", _svc(
        "ExecStart=/bin/bash -c 'curl -s -H \"Authorization: Bearer {S}\" http://10.0.0.1/ping; "
        f"exec {PY}'")),
    Case("bash -c export", _svc(f"ExecStart=/bin/bash -c 'export DB_PASS={{S}}; exec {PY}'")),
    Case("env wrapper", _svc(f"ExecStart=/usr/bin/env WEIRD={{S}} {PY}")),
    Case("docker -e", _svc(f"ExecStart=/usr/bin/docker run -e HF_TOKEN={{S}} img python3 -m sglang.launch_server "
                           "--model-path /m")),
    Case("docker --env=", _svc(f"ExecStart=/usr/bin/docker run --env=CUSTOM={{S}} img python3 -m "
                               "sglang.launch_server --model-path /m")),
    Case("SetCredential=", _svc(f"SetCredential=hf:{{S}}\nExecStart={PY}")),
    Case("LoadCredential= contents", _svc(f"LoadCredential=hf:{{S}}\nExecStart={PY}")),
    Case("LogExtraFields=", _svc(f"LogExtraFields=DEPLOY_TOKEN={{S}}\nExecStart={PY}")),
    Case("ExecStartPre= header", _svc(f"ExecStartPre=/usr/bin/curl -H \"X-Api-Key: {{S}}\" http://10.0.0.1/\n"
                                      f"ExecStart={PY}")),
    Case("ExecStartPost= shell", _svc(f"ExecStart={PY}\nExecStartPost=/bin/sh -c 'echo {{S}} > /run/x'")),
    Case("unknown [Service] key", _svc(f"X-Deploy-Secret={{S}}\nExecStart={PY}")),
    Case("comment", _svc(f"# old key was {{S}}\nExecStart={PY}")),
    Case("engine none --requirepass", _svc("ExecStart=/usr/bin/redis-server --port 6379 --requirepass {S}")),
    Case("invalid Environment= syntax", _svc(f"Environment=\"DB_PASS={{S}}\nExecStart={PY}")),
    Case("invalid Environment= name", _svc(f"Environment=1BAD={{S}}\nExecStart={PY}")),
    Case("unbalanced quote (refused)", _svc(f"ExecStart={PY} --api-key \"{{S}}"), refused=True),
    Case("bad executable (refused)", _svc("ExecStart=/bin/x{S}\\a --tp 1"), refused=True),
    Case("EnvironmentFile= contents", _svc(f"EnvironmentFile=/etc/sglang.env\nExecStart={PY}"),
         raw={"environment_files": {"/etc/sglang.env": "DB_URL=postgres://app:{S}@db/x\nANY={S}x\n"}}),
    Case("running process argv", _svc(f"ExecStart={PY}"),
         raw={"running_argv": PY.split() + ["--api-k", "{S}"]}),
    Case("systemd loaded ExecStart", _svc(f"ExecStart={PY}"),
         raw={"loaded_exec_start": "{ path=/root/ml-env/bin/python3 ; argv[]=" + PY + " --api-key {S} ; "
                                   "ignore_errors=no ; start_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }"}),
]


def secret_for(i: int) -> str:
    return f"Zq{i:02d}xPLANTEDv8kW3"


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
