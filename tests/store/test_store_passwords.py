"""Issue 34 item 1: a PostgreSQL store's password, however it is given (``user:PW@``, ``?password=``,
PGPASSWORD, a pg_service.conf service, a passfile), is never printed: not by `snapshot`, `history`
("store:"), `report --format json` ("store"), nor by any connection error, psycopg's included (a
malformed URL's message quotes the whole URI). Run on the real PostgreSQL server of conftest.py with
a role that has a password."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from driftwatch.snapshots.store_sql import redact_url, scrub_message

ROOT = Path(__file__).resolve().parents[2]
DW = Path(sys.executable).with_name("driftwatch")
U70 = ROOT / "examples" / "sglang-qwen-70toks.service"
BASELINE = ROOT / "baselines" / "70toks.yaml"


@pytest.fixture(scope="module")
def role(pg):
    """A role with a password and a database it owns: (user, password, port, database)."""
    import psycopg
    password = "Pw" + secrets.token_hex(8) + "z"
    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE dwpw LOGIN PASSWORD '{password}'")
        conn.execute('CREATE DATABASE "dwpw_db" OWNER dwpw')
    return "dwpw", password, pg.port, "dwpw_db"


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DRIFTWATCH_", "PG"))}
    env.update(extra)
    return env


def _dw(env, *args):
    return subprocess.run([str(DW), *map(str, args)], capture_output=True, text=True, timeout=120, env=env)


def _forms(role, tmp_path):
    """(name, store URL, environment) for each way of giving the password."""
    user, password, port, db = role
    service = tmp_path / "pg_service.conf"
    service.write_text(f"[dw]\nhost=127.0.0.1\nport={port}\nuser={user}\ndbname={db}\npassword={password}\n")
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{port}:{db}:{user}:{password}\n")
    passfile.chmod(0o600)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    base = f"postgresql://{user}@127.0.0.1:{port}/{db}"
    return [
        ("userinfo", f"postgresql://{user}:{password}@127.0.0.1:{port}/{db}", _env(HOME=str(home))),
        ("query password=", f"{base}?password={password}&connect_timeout=5", _env(HOME=str(home))),
        ("PGPASSWORD", base, _env(HOME=str(home), PGPASSWORD=password)),
        ("service file", "postgresql://?service=dw", _env(HOME=str(home), PGSERVICEFILE=str(service))),
        ("passfile=", f"{base}?passfile={passfile}", _env(HOME=str(home))),
        ("PGPASSFILE", base, _env(HOME=str(home), PGPASSFILE=str(passfile))),
    ]


def test_no_output_of_any_command_shows_the_password_in_any_form(role, tmp_path):
    password = role[1]
    forms = _forms(role, tmp_path)
    for i, (name, url, env) in enumerate(forms):
        outputs = []
        r = _dw(env, "snapshot", "--unit-file", U70, "--store", url, "--host-name", f"pw-form-{i}")
        assert r.returncode == 0, (name, r.stderr)
        outputs.append(r)
        r = _dw(env, "history", "--store", url)
        assert r.returncode in (0, 1) and "store:" in r.stdout, (name, r.stdout, r.stderr)
        outputs.append(r)
        r = _dw(env, "history", "--store", url, "--format", "json")
        assert r.returncode in (0, 1), (name, r.stderr)
        outputs.append(r)
        r = _dw(env, "report", "--unit-file", U70, "--baseline", BASELINE, "--store", url, "--format", "json")
        assert r.returncode in (0, 1), (name, r.stderr)
        assert "history" in json.loads(r.stdout) and json.loads(r.stdout)["history"]["store"], name
        outputs.append(r)
        for r in outputs:
            assert password not in r.stdout + r.stderr, (name, r.args)
            assert "Traceback" not in r.stderr
    # every save reached the role's database, whichever way the password came
    import psycopg
    user, _, port, db = role
    with psycopg.connect(f"postgresql://{user}:{password}@127.0.0.1:{port}/{db}") as conn:
        hosts = {row[0] for row in conn.execute("SELECT DISTINCT host FROM snapshots")}
    assert {f"pw-form-{i}" for i in range(len(forms))} <= hosts, hosts


@pytest.mark.parametrize("shape", [
    "postgresql://{u}:{pw}@[127.0.0.1:{port}/{db}",          # unclosed [: psycopg quotes the whole URI
    "postgresql://{u}@[::1:{port}/{db}?password={pw}",
    "postgresql://{u}:{pw}@127.0.0.1:{port}/{db}?bogus_option=1",
    "postgresql://{u}@127.0.0.1:{port}/{db}?password={pw}&sslmode=nonsense",
    "postgresql://{u}:{pw}@127.0.0.1:{port}/no_such_db",    # the server's own refusal
    "postgresql://{u}@127.0.0.1:{port}/{db}?password={pw}x",  # a wrong password in the query
    "postgresql://{u}:{pw}@127.0.0.1:notaport/{db}",
    "postgresql://{u}:{pw}%@127.0.0.1:{port}/{db}",          # a bad percent-escape in the password
])
def test_every_connection_error_is_one_line_without_the_password(role, tmp_path, shape):
    user, password, port, db = role
    url = shape.format(u=user, pw=password, port=port, db=db)
    for command in (["history", "--store", url], ["snapshot", "--unit-file", U70, "--store", url]):
        r = _dw(_env(HOME=str(tmp_path)), *command)
        assert r.returncode == 2, (url, r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("driftwatch: ") and "Traceback" not in r.stderr
        assert password not in r.stdout + r.stderr, r.stderr


def test_a_wrong_pgpassword_or_service_password_is_not_echoed(role, tmp_path):
    user, password, port, db = role
    wrong = password[::-1]
    r = _dw(_env(HOME=str(tmp_path), PGPASSWORD=wrong), "history", "--store",
            f"postgresql://{user}@127.0.0.1:{port}/{db}")
    assert r.returncode == 2 and wrong not in r.stderr and "Traceback" not in r.stderr
    service = tmp_path / "svc.conf"
    service.write_text(f"[bad]\nhost=127.0.0.1\nport={port}\nuser={user}\ndbname=nodb\npassword={password}\n")
    r = _dw(_env(HOME=str(tmp_path), PGSERVICEFILE=str(service)), "history", "--store", "postgresql://?service=bad")
    assert r.returncode == 2 and password not in r.stderr and "Traceback" not in r.stderr


def test_redact_url_masks_every_credential_and_keeps_the_rest():
    assert redact_url("postgresql://u:p%40ss@h/db") == "postgresql://u:***@h/db"
    assert redact_url("postgresql://h/db") == "postgresql://h/db"
    assert redact_url("postgresql://u@h/db?password=s3&sslmode=require") == \
        "postgresql://u@h/db?password=***&sslmode=require"
    assert redact_url("postgresql://u@h/db?sslpassword=k&passfile=/p&PASSWORD=x") == \
        "postgresql://u@h/db?sslpassword=***&passfile=***&PASSWORD=***"
    assert redact_url("postgres://u:pw@[::1/db") == "postgres://u:***@[::1/db"
    assert redact_url("postgresql://u:pa/ss@h/db") == "postgresql://u:***@h/db"  # an unencoded / masks more
    assert redact_url("postgresql://u:p?x@h/db?password=y") == "postgresql://u:***@h/db?password=***"
    assert scrub_message('missing "=" after "password" in connection info string password=abc host=\'x\'') \
        .endswith("password=*** host='x'")
    assert "hunter22" not in scrub_message('URI: "postgresql://u:hunter22@[::1/db"', "postgresql://u:hunter22@[::1/db")
