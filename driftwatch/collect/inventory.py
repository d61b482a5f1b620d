"""Where hosts come from: ``user@host:port`` specs, driftwatch YAML, Ansible INI and Ansible YAML.

driftwatch YAML::

    defaults: {user: root, units: [sglang-qwen.service]}     # optional, applies to every host
    groups:                                                   # optional
      a6000: {hosts: [ct129, ct200], port: 22, units: [...]}
    hosts:
      ct129: {address: gpu129.example.internal}   # address/user/port/units/identity, all optional
      ct200:                           # no address: ~/.ssh/config or DNS resolves the name

``baseline: NAME`` (defaults, group or host) names the baseline a host's units are judged against;
``units: {vllm.service: vl-32b}`` (beside the list form) gives a unit its own, which wins over
``baseline:``. Precedence: unit > host > group (later groups win) > defaults; ``none`` (or null) at
any level opts out: the unit is read and stored, never judged, and no lower level fills in.
Ansible inventories: ``ansible_host``
(or ``ansible_ssh_host``), ``ansible_user``, ``ansible_port``, ``ansible_ssh_private_key_file``
a ``driftwatch_units`` variable (a list, a comma-separated string, or a mapping unit: baseline) and
a ``driftwatch_baseline`` variable, with Ansible's variable
precedence (host > child group > parent group > all) and host ranges (``gpu[01:04]``). A file that
cannot be used raises InputError naming the file and line.
"""
from __future__ import annotations

import ast
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from driftwatch.collect.unitname import validate_container_name
from driftwatch.errors import InputError
from driftwatch.fileio import LimitedLoader, read_text_file, yaml_problem


@dataclass
class HostTarget:
    name: str
    address: str | None = None
    user: str | None = None
    port: int | None = None
    units: list[str] = field(default_factory=list)
    identity: str | None = None
    baseline: str | None = None  # the baseline every unit of the host is judged against (NO_BASELINE: none)
    unit_baselines: dict[str, str] = field(default_factory=dict)  # a unit's own baseline (wins; NO_BASELINE: none)
    groups: list[str] = field(default_factory=list, compare=False)  # its groups (for --limit)
    baseline_from: str = field(default="", compare=False)  # where `baseline` was set: host, group, defaults
    # Live containers on the host (`containers: [NAME…]`, or `auto`: every container running an engine),
    # each read with podman/docker inspect over the same SSH connection; a container's own baseline wins.
    containers: list[str] = field(default_factory=list)
    container_baselines: dict[str, str] = field(default_factory=dict)
    # `kubernetes: {context, namespace, selector}`: workloads and their Pods read with the user's kubectl
    kubernetes: KubernetesSource | None = None

    def baseline_for(self, unit: str) -> str | None:
        """The baseline NAME this unit is judged against: its own (``units: {unit: NAME}``), else
        the host's ``baseline:`` (host > groups > defaults), else None (also when opted out)."""
        return self.baseline_choice(unit)[0]

    def baseline_choice(self, unit: str | None) -> tuple[str | None, str]:
        """(baseline NAME or None, the level that decided: unit, host, group, defaults; "none" when a
        level opted out with ``none``/null; "" when the inventory names none): an opt-out must stop
        the config file's `baseline:` from filling in, so it is told apart from silence."""
        if unit is not None and unit in self.unit_baselines:
            name, level = self.unit_baselines[unit], "unit"
        elif self.baseline:
            name, level = self.baseline, self.baseline_from or "host"
        else:
            return None, ""
        return (None, "none") if name == NO_BASELINE else (name, level)


@dataclass(frozen=True)
class KubernetesSource:
    """Where an inventory entry's workloads are: the kubeconfig context (None: the current one), the
    namespace (None: the context's) and a label selector (None: every workload of the namespace)."""

    context: str | None = None
    namespace: str | None = None
    selector: str | None = None

    @property
    def label(self) -> str:
        """`context/namespace` as a report names the entry's source."""
        return "/".join(p for p in (self.context, self.namespace) if p) or "current context"


AUTO_CONTAINERS = "auto"  # `containers: auto`: every container whose command starts an engine
_KUBE_KEYS = ("context", "namespace", "selector")
# kubectl's own checks are the authority; these keep a value from ever reading as an option or a shell word
_KUBE_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,252}$")
_SELECTOR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/=!,() -]{0,1023}$")


def _kubernetes(value: Any, where: str) -> KubernetesSource:
    """`kubernetes: {context, namespace, selector}` (each optional; strings kubectl takes as argv)."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise InputError(f"{where}: kubernetes {value!r} is not a mapping") from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InputError(f"{where}: kubernetes must be a mapping (context, namespace, selector)")
    unknown = sorted(str(k) for k in value if k not in _KUBE_KEYS)
    if unknown:
        raise InputError(f"{where}: kubernetes: unknown key {unknown[0]!r} (expected {', '.join(_KUBE_KEYS)})")
    out: dict[str, str | None] = {}
    for key in _KUBE_KEYS:
        v = value.get(key)
        if v is None or (isinstance(v, str) and not v.strip()):
            out[key] = None
            continue
        pattern = _SELECTOR if key == "selector" else _KUBE_VALUE
        if not isinstance(v, str) or not pattern.match(v.strip()):
            raise InputError(f"{where}: kubernetes: {key} {v!r} is not a {key} kubectl takes")
        out[key] = v.strip()
    return KubernetesSource(out["context"], out["namespace"], out["selector"])


def _containers(value: Any, where: str) -> tuple[list[str], dict[str, str]]:
    """`containers:` as `auto`, a list of names, or a mapping name -> baseline NAME (as `units:`)."""
    if value is None:
        return [], {}
    if isinstance(value, str) and value.strip() == AUTO_CONTAINERS:
        return [AUTO_CONTAINERS], {}
    if isinstance(value, str) and not value.strip().startswith(("[", "{")):
        value = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise InputError(f"{where}: containers {value!r} is not a list") from None
    own: dict[str, str] = {}
    if isinstance(value, dict):
        for name, baseline in value.items():
            if baseline is not None and (not isinstance(baseline, str) or not baseline.strip()):
                raise InputError(f"{where}: containers: {name}: the baseline must be a name (or none)")
            own[str(name)] = _baseline_name(baseline)
        value = list(value)
    if not isinstance(value, list) or not all(isinstance(n, str) and n for n in value):
        raise InputError(f"{where}: containers must be `auto`, a list of container names or a mapping "
                         "name: baseline")
    for n in value:
        if n != AUTO_CONTAINERS:
            try:
                validate_container_name(n)
            except InputError as exc:
                raise InputError(f"{where}: containers: {exc}") from None
    return list(value), own


NO_BASELINE = "none"  # `baseline: none` (or null): the unit is not judged, whatever a lower level names


def _baseline_name(value: Any) -> str:
    """A baseline value as written: a name, or NO_BASELINE for `none`/null."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null", "~")):
        return NO_BASELINE
    return str(value).strip()


_HOST_CHARS = re.compile(r"[A-Za-z0-9._%:\-]+\Z")  # names, IPv4, IPv6 (inside brackets), zone ids


def _check_host(host: str, spec: str) -> str:
    if not host or host.startswith("-") or not _HOST_CHARS.match(host):
        raise InputError(f"invalid host {spec!r}: expected host, user@host, host:port or [v6addr]:port")
    if ":" not in host and (host.startswith(".") or ".." in host or len(host) > 253
                            or any(len(label) > 63 for label in host.split("."))):
        # `..`, `.`, `a..b`: no name a resolver or ssh takes (and never a folder name of the store)
        raise InputError(f"invalid host {spec!r}: not a host name (empty or over-long label)")
    return host


def _check_port(port: Any, where: str) -> int:
    try:
        value = int(str(port).strip())
    except (TypeError, ValueError):
        raise InputError(f"{where}: port {port!r} is not a number") from None
    if not 0 < value < 65536:
        raise InputError(f"{where}: port {value} out of range 1-65535")
    return value


def parse_target(spec: str) -> HostTarget:
    """``host``, ``user@host``, ``host:port``, ``user@host:port``, ``[::1]:2222``, ``::1``."""
    original = spec
    spec = spec.strip()
    user = None
    if "@" in spec:
        user, spec = spec.rsplit("@", 1)
        if not user or not re.match(r"[A-Za-z0-9._][A-Za-z0-9._-]*\$?\Z", user):
            raise InputError(f"invalid host {original!r}: bad user name {user!r}")
    port = None
    if spec.startswith("["):
        host, sep, rest = spec[1:].partition("]")
        if not sep:
            raise InputError(f"invalid host {original!r}: missing ']'")
        if rest:
            if not rest.startswith(":"):
                raise InputError(f"invalid host {original!r}: expected ':port' after ']'")
            port = _check_port(rest[1:], f"host {original!r}")
    elif spec.count(":") == 1:
        host, _, p = spec.partition(":")
        port = _check_port(p, f"host {original!r}")
    else:
        host = spec  # a name, IPv4, or a bare IPv6 address (no port possible)
    return HostTarget(name=_check_host(host, original), user=user, port=port)


# ---------------------------------------------------------------------------------------------
# Bounds of one inventory: a fleet of 10^5 hosts with addresses, users and units is 8-15 MB and
# about 10^6 values in YAML; 8x that still reads (memory grows with it, about 1 KB a host), while a
# file that is no inventory (a disk image, an alias bomb) is refused before it fills the memory.
MAX_INVENTORY_BYTES = 128 << 20
MAX_INVENTORY_VALUES = 16_000_000


def load_inventory(path: str | os.PathLike) -> list[HostTarget]:
    path = os.fspath(path)
    text = read_text_file(path, "inventory file", limit=MAX_INVENTORY_BYTES)
    if _looks_like_ini(path, text):
        return _load_ini(path, text)
    return _load_yaml(path, text)


def _looks_like_ini(path: str, text: str) -> bool:
    ext = os.path.splitext(path)[1].lower()
    if ext in (".yaml", ".yml", ".json"):
        return False
    if ext in (".ini", ".cfg"):
        return True
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        if s == "---":
            return False
        if re.match(r"\[[^\]\s]+\]\Z", s):
            return True
        if re.match(r"\S+\s+\w+=", s):
            return True  # "host ansible_host=..."
        return not re.search(r":(\s|$)", s)  # a YAML key has ': ' or ends with ':'; "host:2222" does not
    return False


# --- YAML with line numbers ------------------------------------------------------------------
class _Map(dict):
    line = 0
    key_lines: dict


class _Seq(list):
    line = 0


def _yaml_load(path: str, text: str) -> Any:
    """The inventory's YAML with each mapping's and list's line, bounded; libyaml's parser where it
    reads the text as PyYAML does (100 000 hosts: 43 -> 12 s of CPU), else (and for the message of a
    text it refuses) the pure loader."""
    from driftwatch.fileio import CLimitedLoader, libyaml_reads_alike
    if libyaml_reads_alike(text):
        try:
            return _yaml_load_with(CLimitedLoader, path, text)
        except Exception:  # noqa: BLE001 - the pure loader gives the verdict and the message
            pass
    return _yaml_load_with(LimitedLoader, path, text)


def _yaml_load_with(base: Any, path: str, text: str) -> Any:  # base: a limited (C)SafeLoader
    import yaml

    class Loader(base):  # a SafeLoader with depth and alias-expansion limits
        _dw_max_nodes = MAX_INVENTORY_VALUES

    def construct_mapping(loader: Any, node: Any) -> _Map:
        loader.flatten_mapping(node)
        m = _Map()
        m.line = node.start_mark.line + 1
        m.key_lines = {}
        for knode, vnode in node.value:
            key = loader.construct_object(knode, deep=True)
            try:
                hash(key)
            except TypeError:
                raise InputError(f"{path}:{knode.start_mark.line + 1}: unusable mapping key") from None
            m[key] = loader.construct_object(vnode, deep=True)
            m.key_lines[key] = knode.start_mark.line + 1
        return m

    def construct_seq(loader: Any, node: Any) -> _Seq:
        s = _Seq(loader.construct_object(v, deep=True) for v in node.value)
        s.line = node.start_mark.line + 1
        return s

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_seq)
    loader = Loader(text)  # a SafeLoader that also records line numbers
    try:
        return loader.get_single_data()
    except (ValueError, OverflowError, RecursionError) as exc:  # an integer of more than 4300 digits …
        raise InputError(f"{path}: not usable YAML: {str(exc).splitlines()[0][:120]}") from None
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        raise InputError(f"{path}{f':{line}' if line else ''}: not valid YAML: {problem}") from None
    finally:
        loader.dispose()


def _line(obj: Any, key: Any = None) -> int:
    if isinstance(obj, _Map) and key is not None and key in obj.key_lines:
        return obj.key_lines[key]
    return getattr(obj, "line", 0)


def _load_yaml(path: str, text: str) -> list[HostTarget]:
    doc = _yaml_load(path, text)
    if doc is None:
        raise InputError(f"{path}: empty inventory")
    if not isinstance(doc, dict):
        raise InputError(f"{path}:{_line(doc)}: an inventory is a mapping (hosts:, or Ansible groups)")
    if set(doc) <= {"hosts", "defaults", "groups"} and "hosts" in doc:
        return _load_driftwatch_yaml(path, doc)
    return _load_ansible_yaml(path, doc)


_DW_KEYS = {"address", "user", "port", "units", "identity", "baseline", "containers", "kubernetes"}


def _unit_baselines(value: Any, where: str) -> tuple[list[str], dict[str, str]]:
    """``units:`` as a list (or a comma-separated string), or a mapping unit -> baseline NAME (a
    null value or ``none``: the unit opts out of any baseline, NO_BASELINE)."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise InputError(f"{where}: units {value!r} is not a mapping") from None
    if isinstance(value, dict):
        own = {}
        for unit, name in value.items():
            if not isinstance(unit, str) or not unit:
                raise InputError(f"{where}: units: keys must be unit names")
            if name is not None and (not isinstance(name, str) or not name.strip()):
                raise InputError(f"{where}: units: {unit}: the baseline must be a name (or none)")
            own[unit] = _baseline_name(name)
        return list(value), own
    return _units(value, where), {}


def _units(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise InputError(f"{where}: units {value!r} is not a list") from None
        else:
            return [u.strip() for u in text.split(",") if u.strip()]
    if not isinstance(value, list) or not all(isinstance(u, str) and u for u in value):
        raise InputError(f"{where}: units must be a list of unit names")
    return list(value)


def _settings(path: str, mapping: Any, what: str) -> dict:
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise InputError(f"{path}:{_line(mapping)}: {what} must be a mapping")
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        where = f"{path}:{_line(mapping, key)}"
        if key not in _DW_KEYS:
            raise InputError(f"{where}: unknown key {key!r} in {what} "
                             f"(expected {', '.join(sorted(_DW_KEYS))})")
        if key == "port":
            out[key] = _check_port(value, where)
        elif key == "units":
            out[key], out["unit_baselines"] = _unit_baselines(value, where)
        elif key == "containers":
            out[key], out["container_baselines"] = _containers(value, where)
        elif key == "kubernetes":
            out[key] = _kubernetes(value, where)
        elif key == "baseline" and (value is None or isinstance(value, str) and value.strip()):
            out[key] = _baseline_name(value)  # null or `none`: opted out, below this level too
        elif value is not None:
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise InputError(f"{where}: {key} must be a string")
            out[key] = str(value)
    return out


def _load_driftwatch_yaml(path: str, doc: dict) -> list[HostTarget]:
    defaults = _settings(path, doc.get("defaults"), "defaults")
    hosts = doc.get("hosts")
    if isinstance(hosts, list):
        hosts_map: dict[str, None] = {}
        for h in hosts:
            if not isinstance(h, str):
                raise InputError(f"{path}:{_line(hosts)}: hosts: list entries must be host names")
            hosts_map[h] = None
        hosts = hosts_map
    if not isinstance(hosts, dict) or not hosts:
        raise InputError(f"{path}:{_line(doc, 'hosts')}: hosts: must map host names to settings")
    group_settings: dict[str, list[dict]] = {}
    member_groups: dict[str, list[str]] = {}
    groups = doc.get("groups") or {}
    if not isinstance(groups, dict):
        raise InputError(f"{path}:{_line(doc, 'groups')}: groups: must be a mapping")
    for gname, group in groups.items():
        if not isinstance(group, dict):
            raise InputError(f"{path}:{_line(groups, gname)}: group {gname!r} must be a mapping")
        members = group.get("hosts") or []
        if not isinstance(members, list):
            raise InputError(f"{path}:{_line(group, 'hosts')}: group {gname!r}: hosts must be a list")
        rest = _Map({k: v for k, v in group.items() if k != "hosts"})
        rest.line, rest.key_lines = getattr(group, "line", 0), getattr(group, "key_lines", {})
        settings = _settings(path, rest, f"group {gname!r}")
        for member in members:
            if member not in hosts:
                raise InputError(f"{path}:{_line(members)}: group {gname!r} names unknown host {member!r}")
            group_settings.setdefault(member, []).append(settings)
            member_groups.setdefault(member, []).append(str(gname))
    targets = []
    for name, mapping in hosts.items():
        if not isinstance(name, str):
            raise InputError(f"{path}:{_line(hosts, name)}: host names must be strings")
        merged = dict(defaults)
        merged["baseline_from"] = "defaults"
        for s in group_settings.get(name, []):
            merged.update(s)
            merged["baseline_from"] = "group" if "baseline" in s else merged["baseline_from"]
        own = _settings(path, mapping, f"host {name!r}")
        merged.update(own)
        merged["baseline_from"] = "host" if "baseline" in own else merged["baseline_from"]
        merged["groups"] = member_groups.get(name, [])
        targets.append(_target(path, _line(hosts, name), name, merged))
    return targets


def _target(path: str, line: int, name: str, s: dict) -> HostTarget:
    where = f"{path}:{line}"
    try:
        _check_host(name, name)
        if s.get("address"):
            _check_host(s["address"].strip("[]"), s["address"])
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return HostTarget(name=name, address=s.get("address") or None, user=s.get("user") or None,
                      port=s.get("port"), units=list(s.get("units") or []), identity=s.get("identity"),
                      baseline=s.get("baseline") or None, unit_baselines=dict(s.get("unit_baselines") or {}),
                      groups=list(s.get("groups") or []),
                      baseline_from=s.get("baseline_from", "") if s.get("baseline") else "",
                      containers=list(s.get("containers") or []),
                      container_baselines=dict(s.get("container_baselines") or {}), kubernetes=s.get("kubernetes"))


# --- Ansible ---------------------------------------------------------------------------------
_RANGE = re.compile(r"\[([0-9a-zA-Z]+):([0-9a-zA-Z]+)(?::([0-9]+))?\]")


MAX_RANGE_HOSTS = 10_000  # hosts one pattern may expand to (every range in it multiplied)


def _range_items(lo: str, hi: str, step: int, pattern: str, where: str) -> range | list[str]:
    if step < 1:
        raise InputError(f"{where}: host range {pattern!r}: the step must be at least 1")
    if lo.isdigit() and hi.isdigit():
        if len(lo) > 9 or len(hi) > 9:
            raise InputError(f"{where}: host range {pattern!r}: bounds of more than 9 digits")
        return range(int(lo), int(hi) + 1, step)
    if len(lo) == 1 and len(hi) == 1 and lo.isalpha() and hi.isalpha():
        return [chr(c) for c in range(ord(lo), ord(hi) + 1, step)]
    raise InputError(f"{where}: cannot expand host range {pattern!r}")


def expand_host_pattern(pattern: str, where: str) -> list[str]:
    """Ansible host ranges: ``gpu[01:03]`` -> gpu01 gpu02 gpu03, ``n[a:c]``, ``h[0:10:5]``. A pattern
    expands to at most MAX_RANGE_HOSTS hosts (counted before any is made); a step of 0 is refused."""
    ranges = []
    rest = pattern
    while True:
        m = _RANGE.search(rest)
        if not m:
            break
        lo, hi = m.group(1), m.group(2)
        digits = m.group(3) or "1"
        if len(digits) > 9:
            raise InputError(f"{where}: host range {pattern!r}: step of more than 9 digits")
        ranges.append((m, _range_items(lo, hi, int(digits), pattern, where), lo))
        rest = rest[m.end():]
    if not ranges:
        return [pattern]
    total = 1
    for _, items, _ in ranges:
        total *= len(items)
        if total > MAX_RANGE_HOSTS:
            raise InputError(f"{where}: host range {pattern!r} expands to more than {MAX_RANGE_HOSTS} hosts")
    if total == 0:
        raise InputError(f"{where}: empty host range {pattern!r}")
    m = ranges[0][0]  # the first range of `pattern` (found above)
    lo = m.group(1)
    items = _range_items(lo, m.group(2), int(m.group(3) or 1), pattern, where)
    head, tail = pattern[: m.start()], pattern[m.end():]
    if isinstance(items, range):
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        items = [str(i).zfill(width) for i in items]
    return [x for i in items for x in expand_host_pattern(head + i + tail, where)]


class _AnsibleInventory:
    def __init__(self, path: str):
        self.path = path
        self.hosts: dict[str, dict] = {}  # name -> host vars
        self.host_lines: dict[str, int] = {}
        self.host_groups: dict[str, list[str]] = {}
        self.group_vars: dict[str, dict] = {}
        self.children: dict[str, list[str]] = {}

    def add_host(self, name: str, group: str, hvars: dict, line: int) -> None:
        if name not in self.hosts:
            self.hosts[name] = {}
            self.host_lines[name] = line
            self.host_groups[name] = []
        self.hosts[name].update(hvars)
        if group not in self.host_groups[name]:
            self.host_groups[name].append(group)

    def _ancestors(self, group: str, seen: set[str] | None = None) -> list[str]:
        """Groups from most generic to most specific for precedence (all first)."""
        seen = seen if seen is not None else set()
        parents = [p for p, kids in self.children.items() if group in kids]
        order: list[str] = []
        for p in parents:
            if p in seen:
                continue
            seen.add(p)
            for a in self._ancestors(p, seen) + [p]:
                if a not in order:
                    order.append(a)
        return order

    def targets(self) -> list[HostTarget]:
        out = []
        for name, hvars in self.hosts.items():
            merged: dict = dict(self.group_vars.get("all", {}))
            chain: list[str] = []
            for g in self.host_groups[name]:
                for a in self._ancestors(g) + [g]:
                    if a not in chain and a != "all":
                        chain.append(a)
            for g in chain:
                merged.update(self.group_vars.get(g, {}))
            merged.update(hvars)
            where = f"{self.path}:{self.host_lines[name]}"
            address = merged.get("ansible_host", merged.get("ansible_ssh_host"))
            user = merged.get("ansible_user", merged.get("ansible_ssh_user"))
            port = merged.get("ansible_port", merged.get("ansible_ssh_port"))
            identity = merged.get("ansible_ssh_private_key_file", merged.get("ansible_private_key_file"))
            units, own = _unit_baselines(merged.get("driftwatch_units"), where)
            containers, container_own = _containers(merged.get("driftwatch_containers"), where)
            kube = merged.get("driftwatch_kubernetes")
            baseline = merged.get("driftwatch_baseline")
            if baseline is not None and (not isinstance(baseline, str) or not baseline.strip()):
                raise InputError(f"{where}: driftwatch_baseline must be a baseline name (or none)")
            if "driftwatch_baseline" in merged:  # null or `none`: opted out
                baseline = _baseline_name(baseline)
            level = ("host" if "driftwatch_baseline" in hvars else
                     "group" if any("driftwatch_baseline" in self.group_vars.get(g, {}) for g in chain) else "defaults")
            s = {
                "address": str(address) if address not in (None, "") else None,
                "user": str(user) if user not in (None, "") else None,
                "port": _check_port(port, where) if port not in (None, "") else None,
                "units": units, "unit_baselines": own,
                "identity": str(identity) if identity else None,
                "baseline": baseline.strip() if baseline else None, "baseline_from": level,
                "groups": chain + ["all"],
                "containers": containers, "container_baselines": container_own,
                "kubernetes": _kubernetes(kube, where) if "driftwatch_kubernetes" in merged else None,
            }
            out.append(_target(self.path, self.host_lines[name], name, s))
        return out


_PLAIN_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z|\d+(?:\.\d+){2,}\Z")  # a name, a host, an IPv4 address
_PLAIN_INT = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_SHELL_SPECIAL = re.compile(r"[\"'\\#]")
_INI_BLANKS = re.compile(r"[ \t\r\n]+")


def _ini_value(raw: str) -> Any:
    """A variable's value as Ansible's INI reader types it (a Python literal, else the text). Plain
    words and integers skip the compile (10^5 hosts: seconds of CPU)."""
    if _PLAIN_WORD.match(raw) and raw not in ("True", "False", "None"):
        return raw
    if _PLAIN_INT.match(raw):
        return int(raw)
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw


def _load_ini(path: str, text: str) -> list[HostTarget]:
    inv = _AnsibleInventory(path)
    section, kind = "ungrouped", "hosts"
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        where = f"{path}:{lineno}"
        m = re.match(r"\[([^\]:\s]+)(?::(vars|children))?\]\Z", s)
        if m:
            section, kind = m.group(1), m.group(2) or "hosts"
            if kind == "vars":
                inv.group_vars.setdefault(section, {})
            elif kind == "children":
                inv.children.setdefault(section, [])
            continue
        if s.startswith("["):
            raise InputError(f"{where}: bad section header {s!r}")
        try:  # without quotes, escapes or comments shlex's words are the runs between blanks (10x faster)
            tokens = shlex.split(s, comments=True) if _SHELL_SPECIAL.search(s) else _INI_BLANKS.split(s)
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None
        if not tokens:
            continue
        if kind == "vars":
            key, sep, value = s.partition("=")
            if not sep or not key.strip():
                raise InputError(f"{where}: expected key=value in [{section}:vars]")
            inv.group_vars[section][key.strip()] = _ini_value(value.strip())
        elif kind == "children":
            inv.children[section].append(tokens[0])
        else:
            hvars = {}
            for tok in tokens[1:]:
                key, sep, value = tok.partition("=")
                if not sep or not key:
                    raise InputError(f"{where}: expected key=value after the host name, got {tok!r}")
                hvars[key] = _ini_value(value)
            hostpat = tokens[0]
            if hostpat.count(":") == 1 and "[" not in hostpat:
                hostpat, port = hostpat.split(":")
                hvars.setdefault("ansible_port", port)
            for name in expand_host_pattern(hostpat, where):
                inv.add_host(name, section, hvars, lineno)
    if not inv.hosts:
        raise InputError(f"{path}: no hosts in inventory")
    return inv.targets()


def _load_ansible_yaml(path: str, doc: dict) -> list[HostTarget]:
    inv = _AnsibleInventory(path)

    def walk(gname: str, group: Any, line: int) -> None:
        if group is None:
            return
        if not isinstance(group, dict):
            raise InputError(f"{path}:{line}: group {gname!r} must be a mapping (hosts/vars/children)")
        unknown = set(group) - {"hosts", "vars", "children"}
        if unknown:
            key = sorted(unknown, key=str)[0]
            raise InputError(f"{path}:{_line(group, key)}: unknown key {key!r} in group {gname!r} "
                             f"(expected hosts, vars, children)")
        gvars = group.get("vars") or {}
        if not isinstance(gvars, dict):
            raise InputError(f"{path}:{_line(group, 'vars')}: vars of {gname!r} must be a mapping")
        inv.group_vars.setdefault(gname, {}).update(gvars)
        hosts = group.get("hosts") or {}
        if not isinstance(hosts, dict):
            raise InputError(f"{path}:{_line(group, 'hosts')}: hosts of {gname!r} must be a mapping")
        for hpat, hvars in hosts.items():
            hline = _line(hosts, hpat)
            if hvars is not None and not isinstance(hvars, dict):
                raise InputError(f"{path}:{hline}: variables of host {hpat!r} must be a mapping")
            for name in expand_host_pattern(str(hpat), f"{path}:{hline}"):
                inv.add_host(name, gname, dict(hvars or {}), hline)
        children = group.get("children") or {}
        if not isinstance(children, dict):
            raise InputError(f"{path}:{_line(group, 'children')}: children of {gname!r} must be a mapping")
        for cname, child in children.items():
            kids = inv.children.setdefault(gname, [])
            if cname not in kids:
                kids.append(cname)
            walk(str(cname), child, _line(children, cname))

    for gname, group in doc.items():
        walk(str(gname), group, _line(doc, gname))
    if not inv.hosts:
        raise InputError(f"{path}: no hosts in inventory")
    return inv.targets()


# --- --limit: Ansible's host patterns ----------------------------------------------------------
def select_hosts(targets: list[HostTarget], pattern: str) -> list[HostTarget]:
    """The hosts an Ansible host pattern selects, in inventory order: terms separated by ``:`` or
    ``,``; each a host or group name, a glob (``gpu*``) or ``~regex``; ``all``/``*`` every host;
    ``a:b`` union, ``a:&b`` intersection, ``a:!b`` exclusion (unions first, then intersections,
    then exclusions, as Ansible does). A pattern that selects nothing is an InputError."""
    import fnmatch

    from .hostpatterns import compile_host_regex
    terms = [t.strip() for t in re.split(r"[:,]", pattern or "") if t.strip()]
    if not terms:
        raise InputError(f"--limit {pattern!r}: an empty host pattern")
    # names and group names indexed once: an exact term is a lookup, so a:b:... of k names costs
    # k + hosts, not k x hosts; a glob or a regex is tested once per distinct name, not per membership
    members: dict[str, set[str]] = {}
    for t in targets:
        members.setdefault(t.name, set()).add(t.name)
        for g in t.groups:
            members.setdefault(g, set()).add(t.name)
    where = f"--limit {pattern!r}" if len(pattern) <= 300 else f"--limit '{pattern[:200]}…'"

    def matches(term: str) -> set[str]:
        if term in ("all", "*"):
            return {t.name for t in targets}
        if term.startswith("~"):
            rx = compile_host_regex(term[1:], where)
            test = lambda name: bool(rx.match(name))  # noqa: E731
        elif not any(c in term for c in "*?["):
            return set(members.get(term, ()))
        else:
            test = lambda name: fnmatch.fnmatchcase(name, term)  # noqa: E731
        found: set[str] = set()
        for name, hosts in members.items():
            if test(name):
                found |= hosts
        return found

    union: set[str] = set()
    for term in terms:
        if term[0] not in "&!":
            union |= matches(term)
    if all(term[0] in "&!" for term in terms):
        union = {t.name for t in targets}
    for term in terms:
        if term[0] == "&":
            union &= matches(term[1:])
    for term in terms:
        if term[0] == "!":
            union -= matches(term[1:])
    chosen = [t for t in targets if t.name in union]
    if not chosen:
        raise InputError(f"{where} matches no host in the inventory")
    return chosen
