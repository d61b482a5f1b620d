"""The secrets corpus of docs/secrets.md: one planted secret per class, one harmless value per class,
and every output driftwatch writes.

    PYTHONPATH=. .venv/bin/python tests/secrets/secrets_corpus.py      # figures: planted x outputs, leaks, hidden

A secret case is a unit (plus, for what only a live host supplies, RawUnit fields: start-up lines,
probe answers, engine config files) holding one planted secret; a leak is an (output, case) pair
where the secret, or any 8-character piece of it, appears (a secret under 8 characters: as a word).
A harmless case holds one value an operator needs; it is hidden when an output that shows its
setting does not show the value.
"""
from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tools.secret_outputs import api_outputs, cli_outputs, leaked

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
    secret: str = ""  # secret cases with a secret of their own shape (a word, a JWT…); default secret_for(i)


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
    # tricky secrets (issue 34 item 6): plain words under secret names, real shapes under any name
    Case("short word password under DB_PASS", f"Environment=DB_PASS={{S}}\nExecStart={PY}", secret="hunter2"),
    Case("short word password under MYSQL_PWD", f"Environment=MYSQL_PWD={{S}}\nExecStart={PY}", secret="letmein1"),
    Case("word password under a glued name", f"Environment=REDISPASSWORD={{S}}\nExecStart={PY}", secret="swordfish"),
    Case("password after a reference", f"Environment=DB_PASS=${{PREFIX}}{{S}}\nExecStart={PY}", secret="hunter3"),
    Case("password starting with $", f"Environment=DB_PASSWORD={{S}}\nExecStart={PY}", secret="$ecret99x"),
    Case("punctuated password under an unknown name", f"Environment=LOGIN={{S}}\nExecStart={PY}",
         secret="Summer2024!"),
    Case("generated lower-case password under an unknown name", f"Environment=MY_CONN={{S}}\nExecStart={PY}",
         secret="x7k2m9p4q8w1"),
    Case("leet password under an unknown name", f"Environment=DB_LOGIN={{S}}\nExecStart={PY}", secret="P4ssw0rd9"),
    Case("HF_TOKEN real shape", f"Environment=HF_TOKEN={{S}}\nExecStart={PY}",
         secret="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"),
    Case("hf_ token under an unknown name", f"Environment=HUB=hf_{{S}}\nExecStart={PY}"),
    Case("JWT under an unknown name", f"Environment=UPSTREAM_HEADER={{S}}\nExecStart={PY}",
         secret="eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcHMiLCJleHAiOjE5MDAwMDAwMDB9.Qk3vT9xR2mLp8sNw4ZyH6jDcFa1uBe7oGi5KtXqWr0s"),
    Case("key in a URL query", f"Environment=MODEL_URL=https://models.example/w?key={{S}}&rev=main\nExecStart={PY}",
         secret="k3yV4lu3inUrl"),
    Case("key in a URL path", f"Environment=ENDPOINT=https://api.example/v1/key/{{S}}/models\nExecStart={PY}",
         secret="abcdefgh12"),
    Case("AWS secret key in docker run -e",
         "ExecStart=/usr/bin/docker run --rm --gpus all -e AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE "
         "-e AWS_SECRET_ACCESS_KEY={S} vllm/vllm-openai:v0.11.0 --model Qwen/Qwen3-8B",
         secret="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    Case("AWS access key id under an unknown docker -e name",
         "ExecStart=/usr/bin/docker run --rm -e S3_ID={S} vllm/vllm-openai:v0.11.0 --model Qwen/Qwen3-8B",
         secret="AKIAJ7Q3EXAMPLEZ2XYQ"),
    Case("word password in docker run -e", "ExecStart=/usr/bin/docker run --rm -e ADMIN_PASSWORD={S} "
                                           "vllm/vllm-openai:v0.11.0 --model Qwen/Qwen3-8B", secret="hunter4"),
    Case("LoadCredential= with a random source", f"LoadCredential=hf:{{S}}\nExecStart={PY}"),
    Case("LoadCredential= path with a random segment", f"LoadCredential=hf:/etc/creds/{{S}}\nExecStart={PY}"),
    Case("secret JSON key beside cache_key",
         VLLM.join(["ExecStart=", " --kv-transfer-config '{{\"kv_connector\": \"LMCacheConnectorV1\", "
                                   "\"kv_connector_extra_config\": {{\"cache_key\": \"sha256\", "
                                   "\"api_key\": \"{S}\"}}}}'"]), clean=CLEAN_VLLM, secret="hunter5"),
    Case("stray word of a typed line that is a key", f"ExecStart={PY} {{S}}"),
    Case("word password swallowed by a continuation line", f"ExecStart={PY} \\\nDB_PASS={{S}}",
         secret="hunter6"),
]

# outputs that show the unit's keys (Service.Environment, LoadCredential=): `show` text lists flags and
# the environment the server sees, not the keys of the unit
UNIT_KEYS = ("show json", "store file snapshot", "baseline file", "compare (current) json")


def _env(name: str, value: str) -> str:
    """The value shown under its name (a short word also appears elsewhere: the name pins it down)."""
    return re.escape(name) + r"[\s\S]{1,300}?\b" + re.escape(value) + r"\b"


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
    # issue 34 item 6: the values an operator needs that were hidden
    Case("ATTENTION_BACKEND", f"Environment=ATTENTION_BACKEND=flashinfer\nExecStart={PY}",
         value=_env("ATTENTION_BACKEND", "flashinfer")),
    Case("KV_CACHE_DTYPE", f"Environment=KV_CACHE_DTYPE=fp8_e5m2\nExecStart={PY}", value="fp8_e5m2"),
    Case("TRANSFORMERS_VERBOSITY", f"Environment=TRANSFORMERS_VERBOSITY=info\nExecStart={PY}",
         value=_env("TRANSFORMERS_VERBOSITY", "info")),
    Case("TIKTOKEN_CACHE_DIR", f"Environment=TIKTOKEN_CACHE_DIR=/srv/tiktoken-cache\nExecStart={PY}",
         value="/srv/tiktoken-cache"),
    Case("NVIDIA_DRIVER_CAPABILITIES", f"Environment=NVIDIA_DRIVER_CAPABILITIES=all,video\nExecStart={PY}",
         value="all,video"),
    Case("DEPLOY_ENV", f"Environment=DEPLOY_ENV=staging\nExecStart={PY}", value=_env("DEPLOY_ENV", "staging")),
    Case("LoadCredential= path", f"LoadCredential=hf:/etc/credstore/hf-token\nExecStart={PY}",
         value="hf:/etc/credstore/hf-token", shown_in=UNIT_KEYS),
    Case("cache_key in an engine JSON flag",
         VLLM.join(["ExecStart=", " --kv-transfer-config '{\"kv_connector\": \"LMCacheConnectorV1\", "
                                   "\"kv_role\": \"kv_both\", \"kv_connector_extra_config\": "
                                   "{\"cache_key\": \"sha256\"}}'"]), value=r"cache_key[\\\"': ]{1,8}sha256",
         clean=CLEAN_VLLM),
    # issue 34 item 6: public units
    Case("docker run image from ${IMAGE}", "Environment=IMAGE=vllm/vllm-openai:v0.11.0\n"
         "ExecStart=/usr/bin/docker run --rm --gpus all ${IMAGE} --model Qwen/Qwen3-8B",
         value="IMAGE=vllm/vllm-openai:v0.11.0", clean=CLEAN_VLLM, shown_in=UNIT_KEYS),
    Case("a reference, not a value", "Environment=VLLM_USE_FLASHINFER_MOE_FP8=${VLLM_USE_FLASHINFER_MOE_FP8}\n"
         f"ExecStart={VLLM}", value=re.escape("${VLLM_USE_FLASHINFER_MOE_FP8}"), clean=CLEAN_VLLM),
    # a backslash and a space at the end of a line: not a continuation, a word of its own
    Case("a stray backslash", f"ExecStart={PY} \\ \n  --port 30000", value=r'(?m)"\\\\"|^\s*- \'?\\\'?$',
         shown_in=("show json", "store file snapshot", "baseline file")),
    Case("Restart= swallowed by a continuation line", f"ExecStart={PY} \\\nRestart=on-failure",
         value="Restart=on-failure", shown_in=("show text", "show json", "store file snapshot", "baseline file")),
    # more values found in real units
    Case("LMCACHE_REMOTE_SERDE", f"Environment=LMCACHE_REMOTE_SERDE=naive\nExecStart={PY}",
         value=_env("LMCACHE_REMOTE_SERDE", "naive")),
    Case("UVICORN_LOG_LEVEL", f"Environment=UVICORN_LOG_LEVEL=warning\nExecStart={PY}",
         value=_env("UVICORN_LOG_LEVEL", "warning")),
    Case("OTEL_SERVICE_NAME", f"Environment=OTEL_SERVICE_NAME=vllm-prod-eu\nExecStart={PY}", value="vllm-prod-eu"),
    Case("DEPLOY_REGION", f"Environment=DEPLOY_REGION=eu-west-1\nExecStart={PY}", value="eu-west-1"),
    Case("GPU_TYPE", f"Environment=GPU_TYPE=H100\nExecStart={PY}", value=_env("GPU_TYPE", "H100")),
    Case("MODEL_REVISION", f"Environment=MODEL_REVISION=main\nExecStart={PY}", value=_env("MODEL_REVISION", "main")),
    Case("NVIDIA_REQUIRE_CUDA", f"Environment=\"NVIDIA_REQUIRE_CUDA=cuda>=12.4\"\nExecStart={PY}",
         value="cuda>=12.4"),
    Case("TOKENIZER_MODE", f"Environment=TOKENIZER_MODE=slow\nExecStart={PY}", value=_env("TOKENIZER_MODE", "slow")),
    Case("a home-relative reference", f"Environment=MODEL_CACHE=${{HOME}}/models\nExecStart={PY}",
         value=re.escape("${HOME}/models")),
    Case("a container name", "ExecStart=/usr/bin/docker run --rm --name vllm-qwen3 -e VLLM_LOGGING_LEVEL=INFO "
         "vllm/vllm-openai:v0.11.0 --model Qwen/Qwen3-8B", value="vllm-qwen3", clean=CLEAN_VLLM,
         shown_in=("show text", "show json", "store file snapshot", "baseline file")),
    Case("a word value of an unknown flag of a program", "ExecStartPre=/usr/local/bin/warmup --mode eager\n"
         f"ExecStart={PY}", value="--mode eager", shown_in=("store file snapshot", "baseline file")),
    Case("a vendor X- key", f"X-Deploy-Env=canary\nExecStart={PY}", value=_env("X-Deploy-Env", "canary"),
         shown_in=UNIT_KEYS),
    Case("an e-mail address", f"Environment=ALERT_TO=ops@example.com\nExecStart={PY}", value="ops@example.com"),
]

# outputs that show an environment variable or a flag's value (harmless values must be there)
SHOWS_VALUES = ("show text", "show json", "store file snapshot", "baseline file", "compare (current) json")


def outputs(case: Case, text: str, secret: str, work: Path) -> dict[str, str]:
    """Every output for one unit (tools/secret_outputs.py): through the API for what only a live host
    supplies, else through the CLI (show, check, compare both ways, report and its mail, the store,
    history, baselines)."""
    if case.raw:
        return api_outputs(case.raw, text, case.clean, secret)
    work.mkdir(parents=True)
    unit = work / "planted.service"
    unit.write_text(text)
    (work / "clean").mkdir()
    clean = work / "clean" / "planted.service"
    clean.write_text(case.clean)
    return cli_outputs(unit, clean, work)


def run_secret(i: int, work: Path) -> tuple[int, list[str]]:
    """(outputs checked, outputs that leak) for secret case i."""
    case = SECRETS[i]
    secret = case.secret or secret_for(i)
    text = _svc(case.body.replace("{S}", secret))
    outs = outputs(case, text, secret, work / f"s{i:02d}")
    return len(outs), sorted(name for name, body in outs.items() if leaked(body, secret))


def run_harmless(i: int, work: Path) -> tuple[int, list[str]]:
    """(outputs checked, outputs that hide the value) for harmless case i."""
    case = HARMLESS[i]
    description = "Qwen2-7B-Instruct on RTX 4090s" if "Description" in case.name else "planted"
    outs = outputs(case, _svc(case.body, description), "", work / f"h{i:02d}")
    shown = {name: body for name, body in outs.items() if name in (case.shown_in or SHOWS_VALUES)}
    pattern = re.compile(case.value if case.value.startswith(("(", "LOG", "TOK")) or "\\" in case.value
                         else re.escape(case.value))
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
