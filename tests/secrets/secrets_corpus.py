"""The secrets corpus of docs/secrets.md: one planted secret per class, one harmless value per class,
and every output driftwatch writes.

    .venv/bin/python tests/secrets/secrets_corpus.py      # figures: planted x outputs, leaks, hidden

A secret case is a unit (plus, for what only a live host supplies, RawUnit fields: start-up lines,
probe answers, engine config files) holding one planted secret; a leak is an (output, case) pair
where the secret, or any 8-character piece of it, appears. A harmless case holds one value an
operator needs; it is hidden when an output that shows its setting does not show the value.
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from driftwatch.cli import cli  # noqa: E402

PY = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/Qwen3.6-27B --tp-size 2"
VLLM = "/opt/venv/bin/vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2"
CLEAN = f"[Unit]\nDescription=clean\n\n[Service]\nExecStart={PY}\n"
CLEAN_VLLM = f"[Unit]\nDescription=clean\n\n[Service]\nExecStart={VLLM}\n"


@dataclass
class Case:
    name: str
    body: str  # [Service] lines; {S} is the planted secret (or {H} the harmless value)
    raw: dict = field(default_factory=dict)  # RawUnit fields only a live host supplies ({S} replaced)
    clean: str = CLEAN
    value: str = ""  # harmless cases: the value that must be readable (a regular expression)
    shown_in: tuple = ()  # harmless cases: the outputs that show it (default SHOWS_VALUES)


def _svc(body: str, description: str = "planted") -> str:
    return f"[Unit]\nDescription={description}\n\n[Service]\n{body}\n"


def secret_for(i: int) -> str:
    """Random-looking, as real keys are (26 characters: upper, lower, digits)."""
    return f"Zq{i:02d}xPLANTEDv8kW3Rt7Ys2Np"


# -- every class of the issue, each in the place it was found
SECRETS = [
    # names with a secret word glued in
    Case("env glued S3SECRETKEY", f"Environment=SGLANG_S3SECRETKEY={{S}}\nExecStart={PY}"),
    Case("env glued PRIVATEKEY", f"Environment=VLLM_PRIVATEKEY={{S}}\nExecStart={PY}"),
    Case("env glued DBPASS", f"Environment=NCCL_DBPASS={{S}}\nExecStart={PY}"),
    Case("env AUTHKEY", f"Environment=SERVICE_AUTHKEY={{S}}\nExecStart={PY}"),
    Case("env short pw", f"Environment=PW={{S}}\nExecStart={PY}"),
    Case("env known numeric name, not a number", f"Environment=SGLANG_INIT_NEW_TOKEN_RATIO={{S}}\nExecStart={PY}"),
    # URLs
    Case("URL path token (chat webhook)",
         f"Environment=NOTIFY_URL=https://hooks.slack.com/services/T0A1B2C3D/B0E4F5G6H/{{S}}\nExecStart={PY}"),
    Case("URL path token (discord webhook)",
         f"Environment=ALERTS=https://discord.com/api/webhooks/123456789012/{{S}}\nExecStart={PY}"),
    Case("URL bot token", f"Environment=BOT_URL=https://api.telegram.org/bot123456789:{{S}}/sendMessage\n"
                          f"ExecStart={PY}"),
    Case("URL camelCase query key", f"Environment=MODEL_URL=https://m.example/w?apiToken={{S}}&rev=main\n"
                                    f"ExecStart={PY}"),
    Case("URL fragment token", f"Environment=CALLBACK=https://app.example/cb#access_token={{S}}&state=1\n"
                               f"ExecStart={PY}"),
    Case("URL query in a flag", "ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path "
                                "https://m.example/w?authToken={S}"),
    # base64 taken for a path
    Case("base64 starting with /", "ExecStart=/usr/local/bin/agent --data /{S}==\nUser=svc"),
    Case("base64 starting with / in env", f"Environment=BLOB=/{{S}}==\nExecStart={PY}"),
    # scripts
    Case("bash -c curl -u", f"ExecStart=/bin/bash -c 'curl -u admin:{{S}} http://10.0.0.1/ready; exec {PY}'"),
    Case("bash -c PRIVATE-TOKEN header",
         f"ExecStart=/bin/bash -c 'curl -H \"PRIVATE-TOKEN: {{S}}\" http://gitlab.example/api; exec {PY}'"),
    Case("bash -c redis-cli -a", f"ExecStart=/bin/bash -c 'redis-cli -a {{S}} ping && exec {PY}'"),
    Case("bash -c mysql -p", f"ExecStart=/bin/bash -c 'mysql -uroot -p{{S}} -e \"select 1\"; exec {PY}'"),
    Case("ExecStartPre curl -u", f"ExecStartPre=/usr/bin/curl -u ops:{{S}} http://10.0.0.1/\nExecStart={PY}"),
    Case("ExecStartPre redis-cli -a", f"ExecStartPre=/usr/bin/redis-cli -a {{S}} ping\nExecStart={PY}"),
    Case("ExecStartPre mysql -p", f"ExecStartPre=/usr/bin/mysql -p{{S}} -e ping\nExecStart={PY}"),
    # JSON
    Case("JSON Authorization Bearer in a flag",
         f"ExecStart={PY} --json-model-override-args '{{\"Authorization\": \"Bearer {{S}}\"}}'"),
    Case("JSON short key pw", f"ExecStart={PY} --json-model-override-args '{{\"pw\": \"{{S}}\"}}'"),
    Case("JSON unterminated", f"ExecStartPre=/usr/bin/logger '{{\"password\": \"{{S}}'\nExecStart={PY}"),
    Case("JSON in a vLLM --config file", "ExecStart=/opt/venv/bin/vllm serve --config /etc/vllm/q.yaml",
         raw={"engine_files": {"/etc/vllm/q.yaml": "model: Qwen/Qwen3-8B\nhf-overrides: '{\"Authorization\": "
                                                   "\"Bearer {S}\"}'\napi-key: {S}\n"}}, clean=CLEAN_VLLM),
    Case("start-up log line", f"ExecStart={PY} --api-key {{S}}",
         raw={"startup_lines": ["[2026-12-01 10:00:00] server_args=ServerArgs(model_path='/root/models/Qwen3.6-27B', "
                                "tp_size=2, api_key='{S}', headers='{\"Authorization\": \"Bearer {S}\"}')"]}),
    Case("probe answer", f"ExecStart={PY}",
         raw={"probe": {"/server_info": '{"model_path": "/root/models/Qwen3.6-27B", "tp_size": 2, '
                                        '"api_key": "{S}", "webhook_url": "https://x.example/h/{S}"}'}}),
    # connection strings
    Case("AccountKey= connection string",
         "ExecStartPre=/usr/bin/az storage blob download --connection-string "
         "\"DefaultEndpointsProtocol=https;AccountName=acc;AccountKey={S}==;EndpointSuffix=core.windows.net\"\n"
         f"ExecStart={PY}"),
    # command lines
    Case("--api-key value starting with -", f"ExecStart={PY} --api-key -{{S}}"),
    Case("--api-key= value starting with -", f"ExecStart={PY} --api-key=-{{S}}"),
    Case("non-engine --masterauth", "ExecStart=/usr/bin/redis-server --port 6379 --masterauth {S}"),
    Case("non-engine --authkey", "ExecStart=/usr/local/bin/agent --authkey {S} --port 9100"),
    Case("non-engine positional token", "ExecStart=/usr/local/bin/agent register {S}"),
    Case("hook positional token", f"ExecStart={PY}\nExecStartPost=/usr/local/bin/notify {{S}}"),
    # unit file
    Case("misspelled Enviroment= secret name", f"Enviroment=DB_PASSWORD={{S}}\nExecStart={PY}"),
    Case("misspelled Enviroment= other name", f"Enviroment=OTHER={{S}}\nExecStart={PY}"),
]

# -- values an operator needs: each must stay readable
HARMLESS = [
    Case("known float with TOKEN", f"Environment=SGLANG_INIT_NEW_TOKEN_RATIO=0.35\nExecStart={PY}", value="0.35"),
    Case("known int with TOKEN", f"Environment=VLLM_MULTI_STREAM_GEMM_TOKEN_THRESHOLD=4096\nExecStart={PY}",
         value="4096"),
    Case("MODEL_NAME", f"Environment=MODEL_NAME=Qwen/Qwen3-8B\nExecStart={PY}", value="Qwen/Qwen3-8B"),
    Case("LOG_LEVEL", f"Environment=LOG_LEVEL=debug\nExecStart={PY}", value=r"LOG_LEVEL[\s\S]{1,300}?\bdebug\b"),
    Case("TOKENIZERS_PARALLELISM", f"Environment=TOKENIZERS_PARALLELISM=false\nExecStart={PY}",
         value=r"TOKENIZERS_PARALLELISM[\s\S]{1,300}?\bfalse\b"),
    Case("engine str variable", f"Environment=VLLM_LOGGING_LEVEL=WARNING\nExecStart={PY}", value="WARNING"),
    Case("key_prefix in --kv-transfer-config",
         VLLM.join(["ExecStart=", " --kv-transfer-config '{\"kv_connector\": \"LMCacheConnectorV1\", "
                                   "\"kv_role\": \"kv_both\", \"kv_connector_extra_config\": "
                                   "{\"key_prefix\": \"kvprod-eu\"}}'"]), value="kvprod-eu", clean=CLEAN_VLLM),
    # (compare: a flag no catalog knows is compared by its spelling in the other half of issue 21)
    Case("value after an unknown flag", f"ExecStart={PY} --speculative-ddtree-mode wide-tree", value="wide-tree",
         shown_in=("show text", "show json", "store file snapshot", "baseline file")),
    Case("model id in a URL", f"Environment=MODEL_URL=https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json"
                              f"\nExecStart={PY}", value="huggingface.co/Qwen/Qwen3-8B/resolve/main"),
    Case("served model name", f"ExecStart={PY} --served-model-name qwen3-prod-eu", value="qwen3-prod-eu"),
    Case("HF snapshot path", f"Environment=MODEL_DIR=/data/hf/models--Qwen--Qwen3-8B/snapshots/"
                             f"9c925d64d72725edaf899c6cb9c377fd0709d9c5\nExecStart={PY}",
         value="9c925d64d72725edaf899c6cb9c377fd0709d9c5"),
    Case("ExecStartPre= arguments", f"ExecStartPre=/usr/bin/mkdir -p /run/sglang-cache\nExecStart={PY}",
         value="mkdir -p /run/sglang-cache", shown_in=("store file snapshot", "baseline file")),
    Case("typed flag with a hash", f"ExecStart={PY} --revision 9c925d64d72725edaf899c6cb9c377fd0709d9c5",
         value="9c925d64d72725edaf899c6cb9c377fd0709d9c5"),
    Case("model name in Description=", f"ExecStart={PY}", value="Qwen2-7B-Instruct on RTX 4090s",
         shown_in=("store file snapshot", "baseline file")),
    Case("host address", f"Environment=VLLM_HOST_IP=10.0.0.5\nExecStart={PY}", value="10.0.0.5"),
    Case("query without credentials", f"Environment=MODEL_URL=https://m.example/w?model=qwen&revision=main\n"
                                      f"ExecStart={PY}", value="revision=main"),
]

# outputs that show an environment variable or a flag's value (harmless values must be there)
SHOWS_VALUES = ("show text", "show json", "store file snapshot", "baseline file", "compare (current) json")


def leaked(text: str, secret: str) -> bool:
    return any(secret[j:j + 8] in text for j in range(len(secret) - 7))


def _invoke(args: list, cwd: Path) -> str:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=True)
    finally:
        os.chdir(old)
    out = result.stdout + result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        out += f"\n{type(result.exception).__name__}: {result.exception}"
    return out


def _api_outputs(case: Case, text: str, secret: str) -> dict[str, str]:
    """Cases with what only a live host supplies: build the snapshot through the API, then every output."""
    from driftwatch.collect.raw import RawUnit
    from driftwatch.fileio import dump_yaml
    from driftwatch.findings.compare import compare
    from driftwatch.findings.rulebook import load_rules
    from driftwatch.report import get_format
    from driftwatch.report.data import comparison_to_dict
    from driftwatch.report.show import render_show
    from driftwatch.snapshots.baseline import Baseline, baseline_to_dict
    from driftwatch.snapshots.snapshot import build_snapshot, snapshot_to_dict

    extra = json.loads(json.dumps(case.raw).replace("{S}", secret))
    if "probe" in extra:
        extra["probe"] = {k: v.encode() for k, v in extra["probe"].items()}
    raw = RawUnit(host="h1", unit="planted.service", text=text, source="systemctl cat", **extra)
    out: dict[str, str] = {}
    try:
        snap = build_snapshot(raw)
    except Exception as exc:  # noqa: BLE001 - an error message is an output too
        return {"api build_snapshot error": f"{type(exc).__name__}: {exc}"}
    out["store file snapshot"] = dump_yaml(snapshot_to_dict(snap))
    out["show text"] = render_show(snap, "text", True)
    out["show json"] = render_show(snap, "json", True)
    clean = build_snapshot(RawUnit(host="h0", unit="planted.service", text=case.clean, source="file"))
    rules = load_rules(None)
    for label, base, cur in (("current", clean, snap), ("baseline", snap, clean)):
        doc = comparison_to_dict(compare(Baseline(name="b", snapshot=base), cur, rules))
        for fmt in ("text", "json", "markdown", "html"):
            out[f"compare ({label}) {fmt}"] = get_format(fmt).render_comparison(doc)
    out["baseline file"] = dump_yaml(baseline_to_dict(Baseline(name="b", snapshot=snap)))
    return out


def outputs(case: Case, text: str, secret: str, work: Path) -> dict[str, str]:
    """Every output for one unit: show, check, compare (both sides, every format), report (every
    format) and its mail, the snapshot store, a saved baseline and `baseline show`, history."""
    if case.raw:
        return _api_outputs(case, text, secret)
    work.mkdir(parents=True)
    unit = work / "planted.service"
    unit.write_text(text)
    (work / "clean").mkdir()
    clean = work / "clean" / "planted.service"
    clean.write_text(case.clean)
    out: dict[str, str] = {}
    out["show text"] = _invoke(["show", "--unit-file", unit, "--all"], work)
    out["show json"] = _invoke(["show", "--unit-file", unit, "--all", "--format", "json"], work)
    out["check"] = _invoke(["check", "--unit-file", unit, "--format", "json"], work)
    for fmt in ("text", "json", "markdown", "html"):
        out[f"compare (current) {fmt}"] = _invoke(["compare", "--baseline", clean, "--unit-file", unit,
                                                   "--format", fmt], work)
    for fmt in ("text", "json"):
        out[f"compare (baseline) {fmt}"] = _invoke(["compare", "--baseline", unit, "--unit-file", clean,
                                                    "--format", fmt], work)
    for fmt in ("text", "json", "html"):
        out[f"report {fmt}"] = _invoke(["report", "--baseline", clean, "--unit-file", unit, "--format", fmt], work)
    try:
        from driftwatch.findings.rulebook import load_rules
        from driftwatch.notify.email import build_message
        from driftwatch.report.data import build_report, file_entry
        from driftwatch.run.targets import snapshot_from_unit_file
        from driftwatch.snapshots.baseline import Baseline
        base = Baseline(name="clean", snapshot=snapshot_from_unit_file(str(clean)))
        doc = build_report(base, [file_entry(str(unit), base, snapshot_from_unit_file, load_rules(None), [], None,
                                             None)])
        msg = build_message(doc, "dw@example.com", ["oncall@example.com"])
        out["mail"] = "\n".join(part.get_content() for part in msg.walk() if not part.is_multipart()) \
            + str(msg["Subject"])
    except Exception as exc:  # noqa: BLE001
        out["mail"] = f"{type(exc).__name__}: {exc}"
    store = work / "store"
    out["snapshot stdout"] = _invoke(["snapshot", "--unit-file", clean, "--store", store], work)
    out["snapshot stdout"] += _invoke(["snapshot", "--unit-file", unit, "--store", store], work)
    exported = work / "exported"  # the store is a database: what it holds, written out as YAML files
    out["snapshot stdout"] += _invoke(["store", "export", "--store", store, "-o", exported], work)
    files = [p for p in sorted(exported.rglob("*.yaml")) if p.is_file()] if exported.exists() else []
    out["store file snapshot"] = "\n".join(p.read_text(errors="replace") for p in files)
    for fmt in ("text", "json"):
        out[f"history {fmt}"] = _invoke(["history", "--store", store, "--format", fmt], work)
    bl = work / "bl"
    out["baseline save"] = _invoke(["baseline", "save", "p", "--unit-file", unit, "--baselines-dir", bl], work)
    out["baseline file"] = (bl / "p.yaml").read_text() if (bl / "p.yaml").exists() else ""
    out["baseline show text"] = _invoke(["baseline", "show", "p", "--baselines-dir", bl], work)
    out["baseline show json"] = _invoke(["baseline", "show", "p", "--baselines-dir", bl, "--format", "json"], work)
    return out


def run_secret(i: int, work: Path) -> tuple[int, list[str]]:
    """(outputs checked, outputs that leak) for secret case i."""
    case, secret = SECRETS[i], secret_for(i)
    text = _svc(case.body.replace("{S}", secret))
    outs = outputs(case, text, secret, work / f"s{i:02d}")
    return len(outs), sorted(name for name, body in outs.items() if leaked(body, secret))


def run_harmless(i: int, work: Path) -> tuple[int, list[str]]:
    """(outputs checked, outputs that hide the value) for harmless case i."""
    case = HARMLESS[i]
    description = "Qwen2-7B-Instruct on RTX 4090s" if "Description" in case.name else "planted"
    outs = outputs(case, _svc(case.body, description), "", work / f"h{i:02d}")
    shown = {name: body for name, body in outs.items() if name in (case.shown_in or SHOWS_VALUES)}
    pattern = re.compile(case.value if case.value.startswith(("(", "LOG", "TOK")) else re.escape(case.value))
    return len(shown), sorted(name for name, body in shown.items() if not pattern.search(body))


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dw-secrets-") as tmp:
        checks = leaks = 0
        for i, case in enumerate(SECRETS):
            n, bad = run_secret(i, Path(tmp))
            checks += n
            leaks += len(bad)
            if bad:
                print(f"LEAK {case.name}: {', '.join(bad)}")
        shown = hidden = 0
        for i, case in enumerate(HARMLESS):
            n, bad = run_harmless(i, Path(tmp))
            shown += n
            hidden += bool(bad)
            if bad:
                print(f"HIDDEN {case.name}: {', '.join(bad)}")
    print(f"{len(SECRETS)} secret classes, {checks} (class, output) checks: {leaks} leaks; "
          f"{len(HARMLESS)} harmless values, {shown} (value, output) checks: {hidden} hidden")
    return 1 if leaks or hidden else 0


if __name__ == "__main__":
    sys.exit(main())
