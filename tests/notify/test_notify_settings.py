"""Settings for `driftwatch report`: config file, environment, CLI merge, password sources."""

from __future__ import annotations

import os

import pytest

from driftwatch.config import DEFAULTS, default_config_paths, load_report_settings, merge
from driftwatch.errors import InputError
from driftwatch.notify.deliver import smtp_settings

CONFIG = """\
email: [ops@example.com, oncall@example.com]
from: driftwatch@gpu-admin.example.com
subject_prefix: "[gpu-drift]"
inventory: inventory.yaml
baseline: 70toks
state: state/report-state.json
only_changes: true
smtp:
  host: smtp.example.com
  port: 587
  user: alerts
  security: starttls
  password_file: smtp-password
  ca_file: /etc/ssl/private-ca.pem
  timeout: 10
"""


def write(path, text, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_defaults_when_no_file(tmp_path):
    s = load_report_settings(None, {"HOME": str(tmp_path)}, search_paths=[str(tmp_path / "nope.yaml")])
    assert {k: s[k] for k in DEFAULTS} == DEFAULTS and s["config_file"] is None


def test_config_file(tmp_path):
    cfg = write(tmp_path / "conf" / "config.yaml", CONFIG)
    s = load_report_settings(str(cfg), {})
    assert s["email"] == ["ops@example.com", "oncall@example.com"]
    assert s["sender"] == "driftwatch@gpu-admin.example.com" and s["subject_prefix"] == "[gpu-drift]"
    assert s["smtp_host"] == "smtp.example.com" and s["smtp_port"] == 587 and s["smtp_user"] == "alerts"
    assert s["smtp_timeout"] == 10.0 and s["only_changes"] is True
    # relative paths are relative to the config file; names stay names
    assert s["inventory"] == str(cfg.parent.resolve() / "inventory.yaml")
    assert s["state"] == str(cfg.parent.resolve() / "state/report-state.json")
    assert s["smtp_password_file"] == str(cfg.parent.resolve() / "smtp-password")
    assert s["smtp_ca_file"] == "/etc/ssl/private-ca.pem" and s["baseline"] == "70toks"
    assert s["config_file"] == str(cfg)


def test_default_search_order(tmp_path):
    env = {"HOME": str(tmp_path / "home")}
    user_cfg = tmp_path / "home" / ".config" / "driftwatch" / "config.yaml"
    etc_cfg = write(tmp_path / "etc" / "config.yaml", "subject_prefix: etc\n")
    paths = [default_config_paths(env)[0], str(etc_cfg)]
    assert paths[0] == str(user_cfg)
    assert default_config_paths(env)[1] == "/etc/driftwatch/config.yaml"
    assert load_report_settings(None, env, search_paths=paths)["subject_prefix"] == "etc"
    write(user_cfg, "subject_prefix: user\n")
    assert load_report_settings(None, env, search_paths=paths)["subject_prefix"] == "user"
    assert default_config_paths({"HOME": "/h", "XDG_CONFIG_HOME": "/x"})[0] == "/x/driftwatch/config.yaml"


def test_missing_explicit_config_is_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_report_settings(str(tmp_path / "missing.yaml"), {})


def test_bad_yaml_names_file_and_line(tmp_path):
    cfg = write(tmp_path / "config.yaml", "email: [a@b.c\nsmtp:\n  host: x\n  port: : 25\n")
    with pytest.raises(InputError) as e:
        load_report_settings(str(cfg), {})
    msg = str(e.value)
    assert msg.startswith(f"{cfg}:") and "invalid YAML" in msg and "\n" not in msg
    cfg2 = write(tmp_path / "c2.yaml", "email: a@b.c\nsmtp:\n  host: x\n   port: 25\n")
    with pytest.raises(InputError, match=rf"{cfg2}:4: invalid YAML"):
        load_report_settings(str(cfg2), {})


@pytest.mark.parametrize("text, match", [
    ("- a\n- b\n", "must be a mapping"),
    ("emial: a@b.c\n", "unknown setting"),
    ("smtp: {hots: x}\n", "unknown smtp setting"),
    ("smtp: {password: hunter2}\n", "not allowed in a config file"),
    ("smtp: {port: eighty}\n", "port must be a number"),
    ("smtp: {port: 0}\n", "between 1 and 65535"),
    ("smtp: {security: tls}\n", "security must be one of"),
    ("smtp: {timeout: -1}\n", "positive"),
    ("only_changes: maybe\n", "true or false"),
    ("email: {a: b}\n", "email must be"),
    ("smtp: [1]\n", "smtp must be a mapping"),
])
def test_bad_values(tmp_path, text, match):
    cfg = write(tmp_path / "config.yaml", text)
    with pytest.raises(InputError, match=match) as e:
        load_report_settings(str(cfg), {})
    assert "hunter2" not in str(e.value)


def test_binary_and_empty_config(tmp_path):
    cfg = tmp_path / "bin.yaml"
    cfg.write_bytes(b"\x00\x01\x02")
    with pytest.raises(InputError, match="binary"):
        load_report_settings(str(cfg), {})
    empty = write(tmp_path / "empty.yaml", "")
    assert load_report_settings(str(empty), {})["smtp_host"] == "localhost"


def test_env_over_config(tmp_path):
    cfg = write(tmp_path / "config.yaml", CONFIG)
    env = {"DRIFTWATCH_SMTP_HOST": "mail.internal", "DRIFTWATCH_SMTP_PORT": "2525", "DRIFTWATCH_SMTP_USER": "bot",
           "DRIFTWATCH_EMAIL": "a@x.org, b@y.org", "DRIFTWATCH_FROM": "dw@x.org", "DRIFTWATCH_SMTP_SECURITY": "ssl",
           "DRIFTWATCH_SMTP_PASSWORD": "from-env"}
    s = load_report_settings(str(cfg), env)
    assert (s["smtp_host"], s["smtp_port"], s["smtp_user"], s["smtp_security"]) == ("mail.internal", 2525, "bot", "ssl")
    assert s["email"] == ["a@x.org", "b@y.org"] and s["sender"] == "dw@x.org"
    # the env password beats the config's password file; the password itself is not in the dict
    assert s["smtp_password_file"] is None and "from-env" not in repr(s)
    assert smtp_settings(s, env).password == "from-env"


def test_empty_env_is_unset(tmp_path):
    s = load_report_settings(None, {"DRIFTWATCH_SMTP_HOST": "", "DRIFTWATCH_EMAIL": " "}, search_paths=[])
    assert s["smtp_host"] == "localhost" and s["email"] == []


def test_bad_env_port():
    with pytest.raises(InputError, match="DRIFTWATCH_SMTP_PORT"):
        load_report_settings(None, {"DRIFTWATCH_SMTP_PORT": "smtp"}, search_paths=[])


def test_cli_over_env_over_config(tmp_path):
    cfg = write(tmp_path / "config.yaml", CONFIG)
    env = {"DRIFTWATCH_SMTP_HOST": "mail.internal"}
    s = load_report_settings(str(cfg), env)
    cli = {"email": ("cli@example.com",), "smtp_host": None, "smtp_port": 2526, "only_changes": False,
           "smtp_security": None, "always": True, "format": "text"}
    m = merge(cli, s)
    assert m["email"] == ["cli@example.com"]          # CLI
    assert m["smtp_host"] == "mail.internal"          # env (CLI not given)
    assert m["smtp_port"] == 2526                     # CLI over config
    assert m["smtp_user"] == "alerts"                 # config
    assert m["only_changes"] is True                  # a click flag left at False does not override
    assert m["always"] is True and m["format"] == "text"  # other CLI keys carried over
    with pytest.raises(InputError, match="--smtp-port"):
        merge({"smtp_port": 99999}, s)


def test_password_precedence(tmp_path):
    cfg_pw = write(tmp_path / "cfg-pw", "from-config-file\n", 0o600)
    cli_pw = write(tmp_path / "cli-pw", "from-cli-file\n", 0o600)
    cfg = write(tmp_path / "config.yaml", f"smtp: {{user: alerts, password_file: {cfg_pw}}}\n")
    # config file only
    s = load_report_settings(str(cfg), {})
    assert smtp_settings(merge({}, s), {}).password == "from-config-file"
    # env beats config
    env = {"DRIFTWATCH_SMTP_PASSWORD": "from-env"}
    s = load_report_settings(str(cfg), env)
    assert smtp_settings(merge({}, s), env).password == "from-env"
    # CLI password file beats env
    assert smtp_settings(merge({"smtp_password_file": str(cli_pw)}, s), env).password == "from-cli-file"


def test_password_file_permissions_enforced_via_settings(tmp_path):
    pw = write(tmp_path / "pw", "hunter2\n", 0o644)
    cfg = write(tmp_path / "config.yaml", f"smtp: {{user: alerts, password_file: {pw}}}\n")
    with pytest.raises(InputError, match="chmod 600"):
        smtp_settings(load_report_settings(str(cfg), {}), {})


def test_smtp_settings_repr_hides_password():
    s = smtp_settings({"smtp_user": "u"}, {"DRIFTWATCH_SMTP_PASSWORD": "hunter2"})
    assert "hunter2" not in repr(s) and s.password == "hunter2"
