#!/usr/bin/env python3
"""Benchmark: snapshot N hosts over SSH with driftwatch vs raw paramiko vs Ansible ad-hoc.

Builds a test fleet of real sshd servers in network namespaces (tests/collect/dw_sshlab.py; needs
root, openssh-server, iproute2), each with its own /etc/systemd/system/sglang-qwen.service, then
for N in --sizes runs, on the same fleet in one run:

  driftwatch        driftwatch.collect.fleet.collect_fleet (full collection: unit with fallback,
                    systemctl show, process argv, interpreter version, GPUs, journal)
  driftwatch-snapshot  the whole `snapshot` (run/snapshots.snapshot_fleet): the inventory read, every
                    host collected as above, each answer parsed, typed and saved to a new store
                    (SQLite, in a temp dir) as it arrives, one result line each
  paramiko-threads  raw paramiko, one thread per host, `systemctl cat U || cat /etc/.../U`
  paramiko-threads+ raw paramiko, one thread per host, running driftwatch's own remote script
                    (same remote work as driftwatch: isolates driftwatch's client-side overhead)
  paramiko-seq      raw paramiko, one host after another, the same `cat` command
  ansible           `ansible all -m shell -a 'systemctl cat U || cat ...' -f N` (if installed in
                    --ansible-venv, default /work/oracles/ansible; skipped with a note otherwise)

Each method runs in its own child process (fresh interpreter; peak RSS from wait4 includes the
child's own children, e.g. Ansible's forks and ssh clients). Wall time: for the Python methods the
collection itself (connect to last result, interpreter start-up and imports excluded, reported
separately as "process"); for Ansible the whole command, which is what its user waits for.
Median of --repeat runs.

    sudo /work/venv/bin/python benchmarks/ssh_fleet.py [--sizes 1,5,20] [--repeat 3] [--pad-known-hosts 1000]

Client CPU per host (user + sys of the child, from wait4, divided by N) is reported too;
--pad-known-hosts K adds K entries for other hosts to the lab's known_hosts (issue 12: a real
file has one line per host of the fleet, and the lookup used to scan all of them).

    sudo python benchmarks/ssh_fleet.py --loopback --sizes 1,20,100,1000 --tree /tmp/dw_before \
        --methods driftwatch,driftwatch@before,paramiko-threads,paramiko-threads+

--loopback: the fleet is one sshd on 0.0.0.0 inside a namespace of its own with only its loopback
up, answering on N addresses 127.x.y.z (one known_hosts line each, as a real fleet's file has); the
methods run inside that namespace with --parallel hosts at once (default 32, for every method);
sshd-side CPU is the sshd's reaped children (per-connection sshd and the shells they ran); the raw
paramiko methods parse known_hosts once per run (paramiko would per client: quadratic). With
--tree DIR (a checkout of another revision), "driftwatch@before" is driftwatch imported from DIR.

    python benchmarks/ssh_fleet.py --known-hosts-only [--entries 1000] [--before REV]
    python benchmarks/ssh_fleet.py --fleet-loop 16000 --parallel 256 [--tree DIR]
    python benchmarks/ssh_fleet.py --inventory-hosts 100000

needs no root and no network: the known_hosts work of N = --entries hosts against a file of as many
entries (plain, hashed, one wildcard line), as collect/ssh.py does it per host (preferred_algorithms
then check), in ms of CPU per host; --before REV also runs the hostkeys.py of that revision.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# the tree a worker imports driftwatch from (method "driftwatch@before": --tree of another checkout)
sys.path.insert(0, os.environ.get("DW_BENCH_TREE") or REPO)
sys.path.insert(0, os.path.join(REPO, "tests", "collect"))

UNIT = "sglang-qwen.service"
RAW_CMD = f"systemctl cat {UNIT} 2>/dev/null || cat /etc/systemd/system/{UNIT}"
UNIT_TEXT = """[Unit]
Description=SGLang benchmark host {i}

[Service]
ExecStart=/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/Qwen3.6-27B --port {port} --tp-size 2
"""


# ---------------------------------------------------------------------------------------------
# children
def _sock(host: str, port: int, timeout: float = 10) -> socket.socket:
    s = socket.create_connection((host, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _paramiko_one(spec: dict, host: dict, command: str, stdin: bytes | None = None) -> bytes:
    import paramiko

    client = paramiko.SSHClient()
    if spec.get("shared_host_keys"):  # --loopback: parsed once per run, not once per client (a floor)
        client._host_keys = _shared_host_keys(spec["known_hosts"])
    else:
        client.load_host_keys(spec["known_hosts"])
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(host["address"], port=host["port"], username="root", key_filename=spec["key"],
                   sock=_sock(host["address"], host["port"]), allow_agent=False, look_for_keys=False,
                   timeout=10)
    try:
        stdin_f, stdout, _ = client.exec_command(command, timeout=30)
        if stdin is not None:
            stdin_f.write(stdin)
            stdin_f.channel.shutdown_write()
        return stdout.read()
    finally:
        client.close()


_HOST_KEYS = {}


def _shared_host_keys(path: str):
    """One paramiko HostKeys for every client of a run: paramiko parses known_hosts into key objects
    per client, which at 1 000 hosts x 1 000 lines is most of its time; the floor should not pay it."""
    if path not in _HOST_KEYS:
        import paramiko
        _HOST_KEYS[path] = paramiko.HostKeys(path)
    return _HOST_KEYS[path]


def worker(method: str, spec: dict) -> dict:
    hosts = spec["hosts"]
    if method == "driftwatch-before":  # driftwatch with the known_hosts code of --before REV
        from driftwatch.collect import hostkeys
        hostkeys.KnownHosts = _hostkeys_module(spec["before"]).KnownHosts
        method = "driftwatch"
    if method == "driftwatch-snapshot":  # the whole `snapshot`: inventory read, collected, parsed, saved
        import paramiko  # noqa: F401 - outside the timed part, as for the raw paramiko methods

        from driftwatch.collect.sshoptions import SSHOptions
        from driftwatch.engines.files import NO_FILES
        from driftwatch.run.reading import CollectOptions
        from driftwatch.run.snapshots import SnapshotRun, snapshot_fleet
        from driftwatch.run.targets import TargetRequest, resolve_targets
        from driftwatch.run.voice import Voice

        tmp = tempfile.mkdtemp(prefix="dw-bench-store-")
        inventory = os.path.join(tmp, "fleet.yaml")
        with open(inventory, "w") as fh:
            fh.write(f"defaults: {{user: root, units: [{UNIT}]}}\nhosts:\n")
            fh.writelines(f"  {h['name']}: {{address: {h['address']}, port: {h['port']}}}\n" for h in hosts)
        opts = SSHOptions(known_hosts=spec["known_hosts"], identity=spec["key"], ssh_config="",
                          allow_agent=False, look_for_keys=False, parallel=spec.get("parallel") or 32)
        lines = []
        t0 = time.perf_counter()
        try:
            targets = resolve_targets(TargetRequest(inventory=inventory))  # the inventory read, as `snapshot` does
            snapshot_fleet(SnapshotRun(tuple(targets), CollectOptions(opts, NO_FILES), os.path.join(tmp, "store")),
                           Voice(out=lines.append))
            wall = time.perf_counter() - t0
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # the store is only there to be written
        ok = sum(line.split("\t")[2] in ("ok", "fallback") for line in lines)
        method = "done"
    if method == "driftwatch":
        import paramiko  # noqa: F401 - outside the timed part, as for the raw paramiko methods

        from driftwatch.collect.fleet import collect_fleet
        from driftwatch.collect.inventory import HostTarget
        from driftwatch.collect.sshoptions import SSHOptions
        from driftwatch.snapshots.reader import EngineReader

        opts = SSHOptions(known_hosts=spec["known_hosts"], identity=spec["key"], ssh_config="",
                          allow_agent=False, look_for_keys=False, parallel=spec.get("parallel") or 32)
        targets = [(HostTarget(h["name"], h["address"], "root", h["port"]), UNIT) for h in hosts]
        t0 = time.perf_counter()
        raws = collect_fleet(targets, opts, EngineReader())
        wall = time.perf_counter() - t0
        ok = sum(r.status in ("ok", "fallback") and "--port" in (r.text or "") for r in raws)
    elif method != "done":
        import concurrent.futures as cf

        import paramiko  # noqa: F401 - imported before timing, like driftwatch's lazy import is not

        if method == "paramiko-threads+":
            from driftwatch.collect.commands import build_command
            from driftwatch.snapshots.reader import EngineReader
            markers = EngineReader().startup_markers  # the script driftwatch sends
            cmds = [build_command(UNIT, markers=markers) for _ in hosts]
            jobs = [(h, c.command, c.script.encode()) for h, c in zip(hosts, cmds, strict=False)]
        else:
            jobs = [(h, RAW_CMD, None) for h in hosts]
        if spec.get("shared_host_keys"):
            _shared_host_keys(spec["known_hosts"])  # before timing, as driftwatch indexes its file once
        t0 = time.perf_counter()
        if method == "paramiko-seq":
            outs = [_paramiko_one(spec, h, c, i) for h, c, i in jobs]
        else:
            with cf.ThreadPoolExecutor(max_workers=min(len(jobs), spec.get("parallel") or len(jobs))) as pool:
                outs = list(pool.map(lambda j: _paramiko_one(spec, *j), jobs))
        wall = time.perf_counter() - t0
        ok = sum(b"--port" in o for o in outs)
    return {"wall": wall, "ok": ok}


def run_child(argv: list[str], env: dict | None = None) -> tuple[float, int, str, int]:
    """(wall seconds, peak RSS KiB incl. waited-for descendants, stdout, exit code); the child's CPU
    (user + sys) is left in run_child.cpu."""
    out = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    run_child.cpu = usage.ru_utime + usage.ru_stime
    out.seek(0)
    return wall, usage.ru_maxrss, out.read().decode(errors="replace"), proc.returncode


# ---------------------------------------------------------------------------------------------
def ansible_run(venv: str, spec: dict, tmp: str, n: int) -> dict:
    inv = os.path.join(tmp, f"ansible-{n}.ini")
    with open(inv, "w") as fh:
        fh.write("[fleet]\n")
        for h in spec["hosts"]:
            fh.write(f"{h['name']} ansible_host={h['address']} ansible_port={h['port']}\n")
        fh.write(f"\n[fleet:vars]\nansible_user=root\nansible_ssh_private_key_file={spec['key']}\n"
                 "ansible_python_interpreter=/usr/bin/python3\n")
    cp = tempfile.mkdtemp(prefix="cp-", dir=tmp)  # cold ControlMaster sockets each run
    cfg = os.path.join(tmp, "ansible.cfg")  # an empty config: no ~/.ansible.cfg or ./ansible.cfg
    open(cfg, "w").close()
    env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING="True", ANSIBLE_SSH_CONTROL_PATH_DIR=cp,
               ANSIBLE_LOCAL_TEMP=os.path.join(tmp, "ansible-local"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_SSH_ARGS=f"-o UserKnownHostsFile={spec['known_hosts']} -o ControlMaster=auto "
                                f"-o ControlPersist=60s", ANSIBLE_CONFIG=cfg,
               ANSIBLE_GATHERING="explicit")
    argv = [os.path.join(venv, "bin", "ansible"), "all", "-i", inv, "-m", "shell", "-a", RAW_CMD,
            "-f", str(n), "-o"]
    wall, rss, out, rc = run_child(argv, env)
    ok = sum("--port" in line for line in out.splitlines())
    # tear down ControlPersist masters so the next run is cold and nothing is left running
    for name in os.listdir(cp):
        subprocess.run(["ssh", "-o", f"ControlPath={os.path.join(cp, name)}", "-O", "exit", "x"],
                       capture_output=True)
    if rc != 0 and ok == 0:
        raise RuntimeError(f"ansible failed: {out[-1500:]}")
    return {"wall": wall, "process": wall, "rss": rss, "ok": ok, "cpu": run_child.cpu}


def python_run(method: str, spec_path: str, netns: str | None = None, tree: str | None = None) -> dict:
    """One method in a child (inside `netns` for the loopback lab); "driftwatch@before" imports
    driftwatch from `tree`."""
    env = dict(os.environ)
    if method.endswith("@before"):
        method, env["DW_BENCH_TREE"] = method.split("@")[0], tree
    argv = [sys.executable, os.path.abspath(__file__), "--worker", method, "--spec", spec_path]
    wall, rss, out, rc = run_child((["ip", "netns", "exec", netns] if netns else []) + argv, env)
    if rc != 0:
        raise RuntimeError(f"{method} failed: {out[-2000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    return {"wall": res["wall"], "process": wall, "rss": rss, "ok": res["ok"], "cpu": run_child.cpu}


def import_check() -> dict:
    code = ("import sys, driftwatch.collect.local, driftwatch.collect.inventory, "
            "driftwatch.collect.fleet; print('paramiko' in sys.modules)")
    local = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import paramiko"], check=True)
    cost = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    base = time.perf_counter() - t0
    return {"paramiko_imported_by_local_paths": local.stdout.strip(),
            "paramiko_import_cost_s": round(cost - base, 3)}


# ---------------------------------------------------------------------------------------------
# known_hosts alone (issue 12)
PAD_KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIHBhZCFwYWQhcGFkIXBhZCFwYWQhcGFkIXBhZCFwYWQh"  # a well-formed ed25519 blob no host has


def pad_lines(k: int) -> list[str]:
    """K entries for hosts that are not in the fleet (documentation addresses: never contacted)."""
    return [f"198.18.{i // 250}.{i % 250 + 1} ssh-ed25519 {PAD_KEY}\n" for i in range(k)]


def _hashed(name: str, salt: bytes) -> str:
    import base64
    import hashlib
    import hmac
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


def _hostkeys_module(rev: str | None):
    if rev is None:
        from driftwatch.collect import hostkeys
        return hostkeys
    import importlib.util
    source = subprocess.run(["git", "-C", REPO, "show", f"{rev}:driftwatch/collect/hostkeys.py"], check=True,
                            capture_output=True, text=True).stdout
    path = os.path.join(tempfile.mkdtemp(prefix="dw-hostkeys-"), "hostkeys_before.py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location("hostkeys_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["hostkeys_before"] = module
    spec.loader.exec_module(module)
    return module


def known_hosts_bench(entries: int, before: str | None) -> int:
    """ms of CPU per host for the known_hosts work of a fleet of `entries` hosts, one entry each."""
    hosts = [f"127.{i // 62500}.{i // 250 % 250}.{i % 250 + 2}" for i in range(entries)]
    tmp = tempfile.mkdtemp(prefix="dw-kh-")
    files = {}
    for kind in ("plain", "hashed", "wildcard"):
        path = files[kind] = os.path.join(tmp, kind)
        with open(path, "w") as fh:
            if kind == "wildcard":
                fh.write(f"127.* ssh-ed25519 {PAD_KEY}\n")
            else:
                for h in hosts:
                    fh.write(f"{_hashed(h, os.urandom(20)) if kind == 'hashed' else h} ssh-ed25519 {PAD_KEY}\n")
    trees = [("before " + before, _hostkeys_module(before))] if before else []
    trees.append(("now", _hostkeys_module(None)))
    print(f"| known_hosts ({entries} hosts, {entries} entries) | " + " | ".join(t for t, _ in trees) + " |")
    print("|---|" + "---|" * len(trees))
    for kind, path in files.items():
        cells = []
        for _, module in trees:
            t0 = time.process_time()
            known = module.KnownHosts(path)
            load = time.process_time() - t0
            sample = hosts if len(trees) == 1 or module.__name__ != "hostkeys_before" else hosts[:: max(1, entries // 100)]
            t0 = time.process_time()
            for h in sample:  # what collect/ssh.py asks per host
                known.preferred_algorithms([h])
                known.check(h, [h], "ssh-ed25519", PAD_KEY)
            per_host = (time.process_time() - t0) / len(sample)
            cells.append(f"{per_host * 1000:.3f} ms/host (loading the file: {load * 1000:.1f} ms)")
        print(f"| {kind} | " + " | ".join(cells) + " |")
    return 0


def _medians(runs: list[dict], keys: tuple[str, ...]) -> dict:
    """The median of each figure over the runs; hosts read: the worst run's."""
    res = {k: statistics.median(r[k] for r in runs) for k in keys}
    res["ok"] = min(r["ok"] for r in runs)
    return res


def sshd_children_cpu(pid: int) -> float:
    """CPU seconds of the sshd's exited (reaped) children: the per-connection sshd and the shells it ran."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime


def loopback_fleet(lab, n: int):
    """One sshd on 0.0.0.0 in a namespace with only its loopback: hosts 127.x.y.z, one known_hosts
    line each (as a real fleet's file has). Only that namespace's own addresses are ever contacted."""
    ns = lab.loopback_namespace()
    server = lab.start_sshd("loopback-fleet", address="0.0.0.0", port=22, netns=ns,
                            max_startups="2000:100:4000")
    server.write(f"/etc/systemd/system/{UNIT}", UNIT_TEXT.format(i=0, port=30000))
    key = " ".join(server.host_pub.split()[:2])
    hosts = [{"name": f"lo{i}", "address": f"127.{i // 62500}.{i // 250 % 250}.{i % 250 + 2}", "port": 22}
             for i in range(n)]
    return ns, server, hosts, [f"{h['address']} {key}\n" for h in hosts]


def loopback_main(args, methods) -> int:
    import dw_sshlab

    sizes = [int(x) for x in args.sizes.split(",")]
    lab = dw_sshlab.Lab()
    results: dict[tuple[str, int], dict] = {}
    try:
        ns, server, hosts, lines = loopback_fleet(lab, max(sizes))
        for n in sizes:
            kh = os.path.join(lab.tmp, f"known_hosts-{n}")
            with open(kh, "w") as fh:
                fh.writelines(lines[:n])
            spec_path = os.path.join(lab.tmp, f"spec-{n}.json")
            with open(spec_path, "w") as fh:
                json.dump({"key": lab.client_key, "known_hosts": kh, "parallel": args.parallel,
                           "shared_host_keys": True, "hosts": hosts[:n]}, fh)
            for method in methods:
                runs = []
                for _ in range(args.repeat):
                    before = sshd_children_cpu(server.pid)
                    run = python_run(method, spec_path, ns, args.tree)
                    run["sshd"] = sshd_children_cpu(server.pid) - before
                    runs.append(run)
                res = results[(method, n)] = _medians(runs, ("wall", "process", "rss", "cpu", "sshd"))
                print(f"{method:18} N={n:<5} wall {res['wall']:.2f}s  client CPU {res['cpu'] / n * 1000:.1f} ms/host  "
                      f"sshd CPU {res['sshd'] / n * 1000:.1f} ms/host  peak RSS {res['rss'] / 1024:.0f} MiB  "
                      f"ok {res['ok']}/{n}", file=sys.stderr)
    finally:
        lab.close()
    print("| method | " + " | ".join(f"N={n} wall | client CPU/host | sshd CPU/host | peak RSS" for n in sizes) + " |")
    print("|---|" + "---|---|---|---|" * len(sizes))
    for m in methods:
        cells = []
        for n in sizes:
            r = results[(m, n)]
            cells += [f"{r['wall']:.2f} s", f"{r['cpu'] / n * 1000:.1f} ms", f"{r['sshd'] / n * 1000:.1f} ms",
                      f"{r['rss'] / 1024:.0f} MiB" + ("" if r["ok"] == n else f" ({r['ok']}/{n} read)")]
        print(f"| {m} | " + " | ".join(cells) + " |")
    return 0


def fleet_loop_bench(n: int, parallel: int) -> dict:
    """The collector's own loop alone (no SSH): `n` hosts whose reading is a sleep of 5-50 ms, through
    collect_fleet with `parallel` threads; the CPU of the calling thread (the loop: completions,
    watchdog, progress), not the workers'. Run in a child per tree (DW_BENCH_TREE)."""
    import random

    from driftwatch.collect import fleet
    from driftwatch.collect.inventory import HostTarget
    from driftwatch.collect.raw import RawUnit
    from driftwatch.collect.sshoptions import SSHOptions

    rng = random.Random(1)
    delays = [rng.uniform(0.005, 0.05) for _ in range(n)]

    def host(self, idx):
        time.sleep(delays[idx[0]])
        return [RawUnit(host=self.pairs[i][0].name, unit=self.pairs[i][1], source="", status="ok") for i in idx]

    fleet._Runner.host = host  # no connection: no host is contacted
    targets = [(HostTarget(f"h{i}", "192.0.2.1"), UNIT) for i in range(n)]
    opts = SSHOptions(known_hosts=os.devnull, ssh_config="none", parallel=parallel)
    t0, c0 = time.perf_counter(), time.thread_time()
    raws = fleet.collect_fleet(targets, opts, reader=None, on_result=lambda i, raw: None)
    return {"wall": time.perf_counter() - t0, "loop_cpu": time.thread_time() - c0, "ok": len(raws)}


def inventory_bench(n: int) -> int:
    """In-process CPU of reading an inventory of `n` hosts with addresses: a driftwatch YAML `hosts:`
    map and an Ansible INI group (no root, no network; files in a temp dir)."""
    from driftwatch.collect.inventory import load_inventory
    with tempfile.TemporaryDirectory(prefix="dw-inv-") as tmp:  # the files (up to 15 MB) go with it
        return _inventory_bench(n, tmp, load_inventory)


def _inventory_bench(n: int, tmp: str, load_inventory) -> int:
    files = {"yaml": os.path.join(tmp, "fleet.yaml"), "ini": os.path.join(tmp, "fleet.ini")}
    with open(files["yaml"], "w") as fh:
        fh.write(f"defaults: {{user: root, units: [{UNIT}]}}\nhosts:\n")
        fh.writelines(f"  gpu{i:06d}.fleet.internal: {{address: 10.{i // 65536}.{i // 256 % 256}.{i % 256}, port: 22}}\n"
                      for i in range(n))
    with open(files["ini"], "w") as fh:
        fh.write("[fleet]\n")
        fh.writelines(f"gpu{i:06d}.fleet.internal ansible_host=10.{i // 65536}.{i // 256 % 256}.{i % 256} "
                      f"ansible_port=22\n" for i in range(n))
        fh.write(f"[fleet:vars]\ndriftwatch_units={UNIT}\nansible_user=root\n")
    print(f"| {n} hosts | size | CPU |\n|---|---|---|")
    for kind, path in files.items():
        t0 = time.process_time()
        hosts = load_inventory(path)
        assert len(hosts) == n
        print(f"| {kind} | {os.path.getsize(path) / 1e6:.1f} MB | {time.process_time() - t0:.1f} s |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,5,20")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ansible-venv", default="/work/oracles/ansible")
    ap.add_argument("--methods", default="driftwatch,paramiko-threads,paramiko-threads+,paramiko-seq,ansible")
    ap.add_argument("--pad-known-hosts", type=int, default=0, metavar="K",
                    help="add K entries for other hosts to the lab's known_hosts")
    ap.add_argument("--known-hosts-only", action="store_true",
                    help="only the known_hosts CPU per host, no lab (no root, no network)")
    ap.add_argument("--entries", type=int, default=1000)
    ap.add_argument("--before", metavar="REV", help="also driftwatch with the hostkeys.py of REV")
    ap.add_argument("--loopback", action="store_true",
                    help="one sshd in a namespace of its own answering on N loopback addresses (fleets of "
                         "100-1 000 on one machine); methods driftwatch, driftwatch@before, paramiko-threads, "
                         "paramiko-threads+")
    ap.add_argument("--parallel", type=int, default=32, help="hosts at once, for every method (--loopback)")
    ap.add_argument("--tree", help="the checkout driftwatch@before imports (git archive REV | tar -x -C DIR)")
    ap.add_argument("--inventory-hosts", type=int, metavar="N",
                    help="only reading an inventory of N hosts (YAML and INI; no root, no network)")
    ap.add_argument("--fleet-loop", type=int, metavar="N",
                    help="only the collector's loop: N hosts that sleep instead of SSH (no root, no network); "
                         "with --tree, the loop of that checkout too")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.known_hosts_only:
        return known_hosts_bench(args.entries, args.before)

    if args.inventory_hosts:
        return inventory_bench(args.inventory_hosts)
    if args.fleet_loop:
        if args.worker:
            print(json.dumps(fleet_loop_bench(args.fleet_loop, args.parallel)))
            return 0
        print(f"| fleet loop, {args.fleet_loop} hosts (sleeps), --parallel {args.parallel} | wall | CPU of the loop's thread |")
        print("|---|---|---|")
        for label, tree in (("before", args.tree), ("now", None)):
            if label == "before" and not tree:
                continue
            env = dict(os.environ, **({"DW_BENCH_TREE": tree} if tree else {}))
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--fleet-loop", str(args.fleet_loop),
                                  "--parallel", str(args.parallel), "--worker", "loop"], env=env, check=True,
                                 capture_output=True, text=True).stdout
            res = json.loads(out.strip().splitlines()[-1])
            print(f"| {label} | {res['wall']:.2f} s | {res['loop_cpu']:.2f} s |")
        return 0

    if args.worker:
        with open(args.spec) as fh:
            spec = json.load(fh)
        print(json.dumps(worker(args.worker, spec)))
        return 0

    import dw_sshlab

    if not (dw_sshlab.is_root() and dw_sshlab.have_sshd() and dw_sshlab.have_netns()):
        print("needs root, /usr/sbin/sshd and `ip netns`", file=sys.stderr)
        return 2
    if args.loopback:
        chosen = [m for m in args.methods.split(",") if m in ("driftwatch", "driftwatch@before", "driftwatch-snapshot",
                                                                "driftwatch-snapshot@before", "paramiko-threads",
                                                                "paramiko-threads+")]
        return loopback_main(args, chosen)
    sizes = [int(x) for x in args.sizes.split(",")]
    methods = args.methods.split(",")
    if args.before and "driftwatch" in methods:
        methods.insert(methods.index("driftwatch"), "driftwatch-before")
    ansible_ok = os.access(os.path.join(args.ansible_venv, "bin", "ansible"), os.X_OK)
    notes = []
    if "ansible" in methods and not ansible_ok:
        methods.remove("ansible")
        notes.append(f"Ansible skipped: no {args.ansible_venv}/bin/ansible "
                     f"(python3 -m venv {args.ansible_venv} && {args.ansible_venv}/bin/pip install ansible-core)")
    lab = dw_sshlab.Lab()
    results: dict[tuple[str, int], dict] = {}
    try:
        servers = []
        t0 = time.perf_counter()
        for i in range(max(sizes)):
            s = lab.netns_host(f"h{i}")
            s.write(f"/etc/systemd/system/{UNIT}", UNIT_TEXT.format(i=i, port=30000 + i))
            servers.append(s)
        print(f"# fleet of {len(servers)} sshd hosts up in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        kh = os.path.join(lab.tmp, "known_hosts")
        with open(kh, "w") as fh:
            fh.writelines(s.known_hosts_line() for s in servers)
            fh.writelines(pad_lines(args.pad_known_hosts))
        for n in sizes:
            spec = {"key": lab.client_key, "known_hosts": kh, "before": args.before,
                    "hosts": [{"name": s.name, "address": s.address, "port": s.port} for s in servers[:n]]}
            spec_path = os.path.join(lab.tmp, f"spec-{n}.json")
            with open(spec_path, "w") as fh:
                json.dump(spec, fh)
            for method in methods:
                runs = []
                for _ in range(args.repeat):
                    if method == "ansible":
                        runs.append(ansible_run(args.ansible_venv, spec, lab.tmp, n))
                    else:
                        runs.append(python_run(method, spec_path))
                res = results[(method, n)] = _medians(runs, ("wall", "process", "rss", "cpu"))
                print(f"{method:18} N={n:<4} wall {res['wall']:.3f}s  process {res['process']:.3f}s  "
                      f"client CPU {res['cpu'] / n * 1000:.1f} ms/host  "
                      f"peak RSS {res['rss'] / 1024:.0f} MiB  ok {res['ok']}/{n}", file=sys.stderr)
    finally:
        lab.close()
    imports = import_check()
    print_table(results, sizes, methods, imports, notes)
    return 0


def print_table(results, sizes, methods, imports, notes) -> None:
    """A Markdown table (stdout) of the medians, then the ratios the targets are about."""
    lines = ["| method | " + " | ".join(f"N={n} wall (process) | N={n} client CPU/host | N={n} peak RSS"
                                       for n in sizes) + " |",
             "|---|" + "---|---|---|" * len(sizes)]
    for m in methods:
        cells = []
        for n in sizes:
            r = results[(m, n)]
            cells.append(f"{r['wall']:.2f} s ({r['process']:.2f} s)")
            cells.append(f"{r['cpu'] / n * 1000:.1f} ms")
            cells.append(f"{r['rss'] / 1024:.0f} MiB")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    big = max(sizes)
    summary = []
    if ("driftwatch", big) in results and ("paramiko-threads", big) in results:
        dw, raw = results[("driftwatch", big)]["wall"], results[("paramiko-threads", big)]["wall"]
        summary.append(f"driftwatch / raw parallel paramiko at N={big}: {dw / raw:.2f}x (target <= 1.5x)")
        if ("paramiko-threads+", big) in results:
            same = results[("paramiko-threads+", big)]["wall"]
            summary.append(f"driftwatch / raw parallel paramiko running the same script at N={big}: "
                           f"{dw / same:.2f}x")
        if ("ansible", big) in results:
            an = results[("ansible", big)]["wall"]
            summary.append(f"Ansible / driftwatch at N={big}: {an / dw:.1f}x (target >= 10x)")
    summary.append(f"paramiko imported by local-only paths: {imports['paramiko_imported_by_local_paths']} "
                   f"(import paramiko costs {imports['paramiko_import_cost_s']:.2f} s)")
    text = "\n".join(lines + [""] + [f"- {s}" for s in summary + notes])
    print(text)


if __name__ == "__main__":
    sys.exit(main())
