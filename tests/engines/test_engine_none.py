"""Units that run no known engine are read, shown, compared and reported (`engine: none`; issue 8).

Real-world units (nginx, a plain daemon, a `bash -c` script, `docker rm -f x || true`, `env FOO=1
app`) go through the installed `driftwatch` command as users run it. Their argv is checked against
what `systemd --test --user` prints (parse only, as uid 65534; tests/parse/dw_parse_oracle.py), and
only what systemd itself refuses (no ExecStart=, unbalanced quotes) is an error (exit 2, one line).
"""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from cli_helpers import Run, assert_one_line_error, run_in_process
from dw_parse_oracle import SystemdOracle, oracle_available, quote_command_line

NGINX = """\
[Unit]
Description=A high performance web server and a reverse proxy server
Documentation=man:nginx(8)
After=network.target nss-lookup.target

[Service]
Type=forking
PIDFile=/run/nginx.pid
ExecStartPre=/usr/sbin/nginx -t -q -g 'daemon on; master_process on;'
ExecStart=/usr/sbin/nginx -g 'daemon on; master_process on;'
ExecReload=/usr/sbin/nginx -g 'daemon on; master_process on;' -s reload
ExecStop=-/sbin/start-stop-daemon --quiet --stop --retry QUIT/5 --pidfile /run/nginx.pid
TimeoutStopSec=5
KillMode=mixed
User=www-data
Environment=NGINX_WORKERS=4

[Install]
WantedBy=multi-user.target
"""

REDIS = """\
[Unit]
Description=Advanced key-value store
After=network.target

[Service]
Type=notify
ExecStart=/usr/bin/redis-server /etc/redis.conf --port 6380
ExecStop=/bin/kill -s TERM $MAINPID
User=redis
Group=redis
RuntimeDirectory=redis
Environment=MALLOC_ARENA_MAX=2
LimitNOFILE=65535

[Install]
WantedBy=multi-user.target
"""

SCRIPT = """\
[Unit]
Description=A shell script service

[Service]
ExecStart=/bin/bash -c 'cd /srv && exec ./run.sh --x 1'
User=app
Environment=MODE=prod
Restart=on-failure
"""

DOCKER_RM = """\
[Unit]
Description=Remove a stale container

[Service]
Type=oneshot
ExecStart=-/bin/sh -c "docker rm -f x || true"
User=root
Environment=DOCKER_HOST=unix:///run/docker.sock
"""

ENV_APP = """\
[Unit]
Description=An app started through env

[Service]
Environment=LISTEN=:8080
ExecStart=/usr/bin/env FOO=1 /opt/app/bin/app serve --listen ${LISTEN}
User=app
"""

# name -> (unit text, ExecStart argv as written, argv after $VAR expansion)
UNITS = {
    "nginx.service": (NGINX, ["/usr/sbin/nginx", "-g", "daemon on; master_process on;"], None),
    "redis-server.service": (REDIS, ["/usr/bin/redis-server", "/etc/redis.conf", "--port", "6380"], None),
    "script.service": (SCRIPT, ["/bin/bash", "-c", "cd /srv && exec ./run.sh --x 1"], None),
    "docker-rm.service": (DOCKER_RM, ["/bin/sh", "-c", "docker rm -f x || true"], None),
    "env-app.service": (ENV_APP, ["/usr/bin/env", "FOO=1", "/opt/app/bin/app", "serve", "--listen", "${LISTEN}"],
                        ["/usr/bin/env", "FOO=1", "/opt/app/bin/app", "serve", "--listen", ":8080"]),
}

# name -> (text replaced, replacement, words each side of the exec.argv finding contains)
ARGUMENT_CHANGED = {
    "nginx.service": ("master_process on;'\nExecReload", "master_process off;'\nExecReload",
                      ("-g 'daemon on; master_process on;'", "-g 'daemon on; master_process off;'")),
    "redis-server.service": ("--port 6380", "--port 6381", ("/etc/redis.conf --port 6380",
                                                            "/etc/redis.conf --port 6381")),
    "script.service": ("--x 1", "--x 2", ("--x 1", "--x 2")),
    "env-app.service": ("serve --listen", "serve --debug --listen", ("serve --listen", "serve --debug --listen")),
}
# name -> (Environment= variable, new value line), (User= new value)
ENV_VAR = {"nginx.service": "NGINX_WORKERS", "redis-server.service": "MALLOC_ARENA_MAX",
           "script.service": "MODE", "docker-rm.service": "DOCKER_HOST", "env-app.service": "FOO"}

BAD_UNITS = {
    "no-exec-start.service": ("[Unit]\nDescription=nothing to run\n\n[Service]\nType=oneshot\nUser=app\n",
                              "no ExecStart"),
    "unbalanced.service": ("[Service]\nExecStart=/bin/sh -c \"echo hi\nUser=app\n", "Unbalanced quoting"),
}


@pytest.fixture
def dw(tmp_path):
    def run(*args) -> Run:
        return run_in_process(*args, cwd=tmp_path)

    return run


@pytest.fixture
def write(tmp_path):
    def put(name: str, text: str, folder: str = "units") -> Path:
        path = tmp_path / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return put


@pytest.fixture(scope="module")
def systemd_oracle():
    reason = oracle_available()
    if reason:
        pytest.skip(f"systemd oracle unavailable: {reason}")
    return SystemdOracle()


def keys(doc: dict) -> dict:
    return {f["key"]: f for f in doc["findings"]}


def with_env(text: str, var: str, value: str) -> str:
    """The unit with Environment=VAR=… (or `env VAR=…` in ExecStart) set to value."""
    lines = []
    for line in text.splitlines():
        if line.startswith(f"Environment={var}="):
            line = f"Environment={var}={value}"
        elif line.startswith("ExecStart=") and f" {var}=" in line:
            line = " ".join(f"{var}={value}" if w.startswith(f"{var}=") else w for w in line.split(" "))
        lines.append(line)
    return "\n".join(lines) + "\n"


def with_user(text: str, user: str) -> str:
    return "\n".join(f"User={user}" if line.startswith("User=") else line for line in text.splitlines()) + "\n"


# --------------------------------------------------------------------------- show

@pytest.mark.parametrize("name", list(UNITS))
def test_show_text_engine_none(dw, write, name):
    text, argv, expanded = UNITS[name]
    run = dw("show", "--unit-file", write(name, text))
    assert run.code == 0, run
    out = run.stdout
    assert "engine:      none" in out
    assert f"argv:        {shlex.join(argv)}\n" in out
    if expanded:
        assert f"expanded:    {shlex.join(expanded)}\n" in out
    else:
        assert "expanded:" not in out
    assert "arguments:   " in out
    assert "Service.User" in out  # unit keys are shown when there are no engine flags
    assert "findings:" not in out and "Traceback" not in run.stderr


@pytest.mark.parametrize("name", list(UNITS))
def test_show_json_engine_none(dw, write, name):
    text, argv, expanded = UNITS[name]
    run = dw("show", "--unit-file", write(name, text), "--format", "json")
    assert run.code == 0, run
    doc = run.json()
    assert doc["engine"]["name"] == "none"
    assert doc["engine"]["flags"] == {}
    assert doc["launcher"]["engine"] == "none"
    assert doc["exec_start"]["argv"] == argv
    assert doc["exec_start"]["expanded_argv"] == (expanded or argv)
    assert doc["findings"] == []
    assert doc["unit_keys"]["Service.User"]


def test_show_launcher_details(dw, write):
    """What the engine-neutral wrapper layer makes of each command."""
    def launcher(name):
        return dw("show", "--unit-file", write(name, UNITS[name][0]), "--format", "json").json()["launcher"]

    nginx = launcher("nginx.service")
    assert (nginx["entry"], nginx["wrappers"], nginx["engine_argv"]) == (
        "/usr/sbin/nginx", [], ["-g", "daemon on; master_process on;"])
    redis = launcher("redis-server.service")
    assert (redis["entry"], redis["engine_argv"]) == ("/usr/bin/redis-server", ["/etc/redis.conf", "--port", "6380"])
    script = launcher("script.service")
    assert (script["entry"], script["wrappers"], script["engine_argv"]) == ("./run.sh", ["bash -c"], ["--x", "1"])
    assert launcher("docker-rm.service")["wrappers"] == ["sh -c"]
    app = launcher("env-app.service")
    assert (app["entry"], app["wrappers"], app["env"]) == ("/opt/app/bin/app", ["env"], {"FOO": "1"})
    assert app["engine_argv"] == ["serve", "--listen", ":8080"]


def test_show_prefix_and_environment(dw, write):
    doc = dw("show", "--unit-file", write("docker-rm.service", DOCKER_RM), "--format", "json").json()
    assert doc["exec_start"]["prefixes"] == "-"
    assert doc["environment"] == {"DOCKER_HOST": "unix:///run/docker.sock"}
    doc = dw("show", "--unit-file", write("env-app.service", ENV_APP), "--format", "json").json()
    assert doc["environment"] == {"LISTEN": ":8080", "FOO": "1"}  # the unit's and the `env` wrapper's


# --------------------------------------------------------------------------- systemd --test agrees

@pytest.mark.parametrize("name", list(UNITS))
def test_argv_equals_systemd_test(dw, write, systemd_oracle, name):
    text, argv, _ = UNITS[name]
    res = systemd_oracle.run(name, [(name, text)])
    assert res.load_state == "loaded", res.stderr
    doc = dw("show", "--unit-file", write(name, text), "--format", "json").json()
    assert [quote_command_line(doc["exec_start"]["argv"])] == res.command_lines
    assert doc["exec_start"]["argv"] == argv
    unit_env = [line.split("=", 1)[1] for line in text.splitlines() if line.startswith("Environment=")]
    assert unit_env == res.environment


@pytest.mark.parametrize("name", list(BAD_UNITS))
def test_systemd_refuses_what_driftwatch_refuses(dw, write, systemd_oracle, name):
    text, _ = BAD_UNITS[name]
    res = systemd_oracle.run(name, [(name, text)])
    assert res.load_state != "loaded", res
    run = dw("show", "--unit-file", write(name, text))
    assert_one_line_error(run, "systemd would refuse this unit")


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("name", list(BAD_UNITS))
def test_what_systemd_refuses_is_exit_2_with_one_line(dw, write, name):
    text, needle = BAD_UNITS[name]
    bad = write(name, text)
    good = write("nginx.service", NGINX)
    assert_one_line_error(dw("show", "--unit-file", bad), name, needle)
    assert_one_line_error(dw("show", "--unit-file", bad, "--format", "json"), name, needle)
    assert_one_line_error(dw("compare", "--baseline", good, "--unit-file", bad), name, needle)
    assert_one_line_error(dw("compare", "--baseline", bad, "--unit-file", good), name, needle)


@pytest.mark.parametrize("name", list(BAD_UNITS))
def test_report_with_an_unreadable_unit_is_exit_2(dw, write, name):
    text, needle = BAD_UNITS[name]
    base = write("nginx.service", NGINX, "baseline")
    run = dw("report", "--unit-file", write("nginx.service", NGINX), "--unit-file", write(name, text),
             "--baseline", base, "--format", "json")
    assert run.code == 2, run
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip("\n").splitlines()
    assert len(lines) == 1 and lines[0].startswith("driftwatch: ") and needle in lines[0], run
    summary = run.json()["summary"]
    assert (summary["hosts"], summary["unreadable"], summary["clean"]) == (2, 1, 1)


# --------------------------------------------------------------------------- compare

@pytest.mark.parametrize("name", list(UNITS))
def test_identical_units_are_no_drift(dw, write, name):
    text = UNITS[name][0]
    base = write(name, text, "baseline")
    run = dw("compare", "--baseline", base, "--unit-file", write(name, text), "--format", "json")
    assert run.code == 0, run
    assert run.json()["findings"] == [] and run.json()["drift"] is False
    text_run = dw("compare", "--baseline", base, "--unit-file", write(name, text))
    assert text_run.code == 0, text_run
    assert "No drift" in text_run.stdout


def test_quoting_is_not_drift(dw, write):
    base = write("nginx.service", NGINX, "baseline")
    same = NGINX.replace("ExecStart=/usr/sbin/nginx -g 'daemon on; master_process on;'",
                         'ExecStart=/usr/sbin/nginx  -g "daemon on; master_process on;"')
    assert same != NGINX
    run = dw("compare", "--baseline", base, "--unit-file", write("nginx.service", same), "--format", "json")
    assert run.code == 0, run


@pytest.mark.parametrize("name", list(ARGUMENT_CHANGED))
def test_changed_argument_is_exec_argv(dw, write, name):
    text = UNITS[name][0]
    old, new, (b_side, c_side) = ARGUMENT_CHANGED[name]
    assert old in text
    base = write(name, text, "baseline")
    run = dw("compare", "--baseline", base, "--unit-file", write(name, text.replace(old, new, 1)),
             "--format", "json")
    assert run.code == 1, run
    found = keys(run.json())
    assert list(found) == ["exec.argv"], run.json()["findings"]
    assert b_side in found["exec.argv"]["baseline"] and c_side in found["exec.argv"]["current"]
    assert b_side not in found["exec.argv"]["current"]
    assert found["exec.argv"]["concept"] is None


@pytest.mark.parametrize("name", list(UNITS))
def test_argument_environment_and_user_changed(dw, write, name):
    text = UNITS[name][0]
    var = ENV_VAR[name]
    changed = with_user(with_env(text, var, "changed"), "nobody")
    expected = {f"env.{var}", "unit.Service.User"}
    if name in ARGUMENT_CHANGED:
        old, new, _ = ARGUMENT_CHANGED[name]
        changed = changed.replace(old, new, 1)
        expected.add("exec.argv")
    base = write(name, text, "baseline")
    run = dw("compare", "--baseline", base, "--unit-file", write(name, changed), "--format", "json")
    assert run.code == 1, run
    found = keys(run.json())
    assert set(found) == expected, run.json()["findings"]
    # "changed" is a plain word under names without a secret word: shown (docs/secrets.md)
    assert found[f"env.{var}"]["current"] == "changed"
    assert found["unit.Service.User"]["current"] == "nobody"
    text_run = dw("compare", "--baseline", base, "--unit-file", write(name, changed))
    assert text_run.code == 1, text_run
    assert var in text_run.stdout and "User" in text_run.stdout


@pytest.mark.parametrize("name,old,new", [
    ("docker-rm.service", "docker rm -f x", "docker rm -f y"),  # the container removed changed
    ("script.service", "cd /srv", "cd /tmp"),  # where the script runs changed
])
def test_changed_shell_script_is_drift(dw, write, name, old, new):
    text = UNITS[name][0]
    base = write(name, text, "baseline")
    run = dw("compare", "--baseline", base, "--unit-file", write(name, text.replace(old, new)), "--format", "json")
    assert run.code == 1, run
    assert "exec.argv" in keys(run.json())


def test_changed_program_is_a_finding(dw, write):
    base = write("redis-server.service", REDIS, "baseline")
    cur = REDIS.replace("/usr/bin/redis-server", "/usr/bin/valkey-server")
    run = dw("compare", "--baseline", base, "--unit-file", write("redis-server.service", cur), "--format", "json")
    assert run.code == 1, run
    found = keys(run.json())
    assert (found["launcher.entry"]["baseline"], found["launcher.entry"]["current"]) == (
        "/usr/bin/redis-server", "/usr/bin/valkey-server")


def test_engine_none_against_an_sglang_unit(dw, write):
    sglang = ("[Service]\nUser=www-data\nEnvironment=NGINX_WORKERS=4\nType=forking\nPIDFile=/run/nginx.pid\n"
              "TimeoutStopSec=5\nKillMode=mixed\n"
              "ExecStart=/opt/sg/bin/python -m sglang.launch_server --model-path /models/m --tp 2\n")
    base = write("nginx.service", NGINX, "baseline")
    run = dw("compare", "--baseline", base, "--unit-file", write("nginx.service", sglang), "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    found = keys(doc)
    assert "launcher.engine" in found and "exec.argv" in found
    assert "SGLang" in str(found["launcher.engine"]["current"])
    assert doc["predicted_throughput_ratio"] is None


# --------------------------------------------------------------------------- report

def test_report_counts_engine_none_units_as_read(dw, write):
    base = write("nginx.service", NGINX, "baseline")
    same = write("nginx.service", NGINX)
    changed = write("nginx-changed.service", with_user(NGINX, "nginx"))
    run = dw("report", "--unit-file", same, "--unit-file", changed, "--baseline", base, "--format", "json")
    assert run.code == 1, run
    doc = run.json()
    summary = doc["summary"]
    assert (summary["hosts"], summary["drifted"], summary["clean"], summary["unreadable"]) == (2, 1, 1, 0)
    by_unit = {h["unit"]: h for h in doc["hosts"]}
    assert by_unit["nginx.service"]["comparison"]["findings"] == []
    assert "unit.Service.User" in keys(by_unit["nginx-changed.service"]["comparison"])
    assert all(h["error"] is None for h in doc["hosts"])

    text = dw("report", "--unit-file", same, "--unit-file", changed, "--baseline", base)
    assert text.code == 1, text
    assert "unreadable: 0" in text.stdout and text.stderr == ""

    clean = dw("report", "--unit-file", same, "--baseline", base)
    assert clean.code == 0, clean


def test_report_every_kind_of_unit_against_nginx(dw, write):
    base = write("nginx.service", NGINX, "baseline")
    args = []
    for name, (text, _, _) in UNITS.items():
        args += ["--unit-file", write(name, text)]
    run = dw("report", *args, "--baseline", base, "--format", "json")
    assert run.code == 1, run
    summary = run.json()["summary"]
    assert (summary["hosts"], summary["drifted"], summary["clean"], summary["unreadable"]) == (5, 4, 1, 0)
    assert run.stderr == ""
