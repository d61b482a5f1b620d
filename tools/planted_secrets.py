"""The 52 places a unit can hold a secret, each a unit (or a collected RawUnit's extra fields) with `{S}`
where the secret goes: planted by benchmarks/plant_secrets.py (every CLI output) and by
tests/hardening/test_redaction_default.py (every API output)."""
from __future__ import annotations

from dataclasses import dataclass, field

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
    Case("docker -e", _svc("ExecStart=/usr/bin/docker run -e HF_TOKEN={S} img python3 -m sglang.launch_server "
                           "--model-path /m")),
    Case("docker --env=", _svc("ExecStart=/usr/bin/docker run --env=CUSTOM={S} img python3 -m "
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
    # issue 34 item 6: where the rule now shows plain words, the secrets beside them
    Case("swallowed NAME=value, secret name", _svc(f"ExecStart={PY} \\\nDB_PASS={{S}}")),
    Case("swallowed NAME=value, unknown name", _svc(f"ExecStart={PY} \\\nWEIRD={{S}}")),
    Case("env after a reference", _svc(f"Environment=MY_CONN=${{BASE}}{{S}}\nExecStart={PY}")),
    Case("env reference-looking secret name", _svc(f"Environment=DB_PASS=${{S}}\nExecStart={PY}")),
    Case("LoadCredential= random path segment", _svc(f"LoadCredential=hf:/etc/creds/{{S}}\nExecStart={PY}")),
    Case("docker -e unknown name", _svc("ExecStart=/usr/bin/docker run -e S3_ID={S} img python3 -m "
                                        "sglang.launch_server --model-path /m")),
    Case("stray word of a typed line", _svc(f"ExecStart={PY} {{S}}")),
    Case("running process argv", _svc(f"ExecStart={PY}"),
         raw={"running_argv": PY.split() + ["--api-k", "{S}"]}),
    Case("systemd loaded ExecStart", _svc(f"ExecStart={PY}"),
         raw={"loaded_exec_start": "{ path=/root/ml-env/bin/python3 ; argv[]=" + PY + " --api-key {S} ; "
                                   "ignore_errors=no ; start_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }"}),
]


def secret_for(i: int) -> str:
    return f"Zq{i:02d}xPLANTEDv8kW3"
