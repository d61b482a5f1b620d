"""The largest unit and vLLM config file a fleet run survives within its timeouts (issue 21).

    sudo python benchmarks/fleet_limits.py [--connect-timeout 5] [--command-timeout 10] [-k NAME]
    python benchmarks/fleet_limits.py --patterns    # --limit on 20 000 hosts (no root, no SSH)

A two-host fleet of real OpenSSH servers on loopback (tests/collect/dw_sshlab.py, root): host
``big`` serves the input under test, host ``small`` a plain SGLang unit. For each input the real
``driftwatch`` console script runs what cron runs — ``snapshot --inventory`` (collect, build, save
to a store) and ``report --inventory --baseline`` (collect, build, compare, "since" from that store,
which then holds the one snapshot just taken, render, write, save) — each in a child process timed
with ``wait4`` (wall, user+sys CPU, peak RSS). Each input has its own store (a shared one makes every
later report read the earlier inputs' history: see benchmarks/README.md). "Survives" means: the run ends
with exit 0/1/2 and no traceback, ``small`` is read, ``big`` is read or refused with one line, and
the collection of ``big`` (connect + round trip, from ``snapshot -v``) stays within the budget the
fleet watchdog gives a host (connect + command x units + 2 s grace); parsing runs after it, and its
CPU is the figure to watch. Traffic goes to 127.0.0.1 only.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "collect"))
DW = Path(sys.executable).parent / "driftwatch"
UNIT = "sglang-qwen.service"
SG = "/root/ml-env/bin/python3 -m sglang.launch_server --model-path /root/models/m --tp 2"
VLLM = "/root/vllm/bin/vllm serve Qwen/Qwen3-8B --config /root/vllm/c.yaml --tensor-parallel-size 2"
WATCHDOG_GRACE = 2.0


def _fill(piece, limit: int) -> str:
    """Pieces piece(0), piece(1), ... joined while the total stays under `limit` bytes."""
    out, size, i = [], 0, 0
    while True:
        p = piece(i)
        if size + len(p) > limit:
            return "".join(out)
        out.append(p)
        size += len(p)
        i += 1


def unit_with(args: str, cmd: str = SG) -> str:
    return f"[Unit]\nDescription=limits\n\n[Service]\nExecStart={cmd}{args}\n"


def _unknown_flags(size: int) -> str:
    head = unit_with("")
    return unit_with(_fill(lambda i: f" --unknown-flag-{i} {i}", size - len(head)))


def _continuations(size: int) -> str:
    head = unit_with("")
    return unit_with(_fill(lambda i: f" \\\n  --x{i} {i}", size - len(head)))


def _long_value(size: int) -> str:
    head = unit_with(" --json-model-override-args '{\"a\": \"\"}'")
    return unit_with(" --json-model-override-args '{\"a\": \"" + "x" * (size - len(head)) + "\"}'")


def _config_keys(size: int) -> str:
    return _fill(lambda i: f"extra-key-{i}: {i}\n", size)


def _config_catalog(size: int) -> str:
    """Known keys with long values (a real config, padded with a long chat template)."""
    head = "max-num-seqs: 64\ntensor-parallel-size: 2\ngpu-memory-utilization: 0.85\nchat-template: \""
    return head + "x" * (size - len(head) - 2) + "\"\n"


def _config_aliases(size: int) -> str:
    """Aliases expanding to 8^5 = 32 768 values (over the loader's 20 000), padded to `size`."""
    lines = ["a0: &a0 [" + ",".join(["x"] * 8) + "]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 8) + "]" for i in range(1, 5)]
    text = "\n".join(lines) + "\n"
    return text + "#" * max(0, size - len(text) - 1) + "\n"


KB = 1000
CASES = {
    # name: (unit text for host big, config text or None)
    "unit, 4 000 unknown flags (100 KB)": lambda: (_unknown_flags(100 * KB), None),
    "unit, unknown flags, 250 KB": lambda: (_unknown_flags(250 * KB), None),
    "unit, unknown flags, 500 KB": lambda: (_unknown_flags(500 * KB), None),
    "unit, unknown flags, 999 KB (the 1 MB limit)": lambda: (_unknown_flags(999 * KB), None),
    "unit, continuation lines, 999 KB": lambda: (_continuations(999 * KB), None),
    "unit, one 999 KB flag value": lambda: (_long_value(999 * KB), None),
    "unit, 1.2 MB (over the limit)": lambda: (_unknown_flags(1200 * KB), None),
    "config, 16 KB of unknown keys": lambda: (unit_with("", VLLM), _config_keys(16 * KB)),
    "config, 64 KB of unknown keys (the cap)": lambda: (unit_with("", VLLM), _config_keys(65536 - 100)),
    "config, 64 KB, known keys": lambda: (unit_with("", VLLM), _config_catalog(65536 - 100)),
    "config, 64 KB, alias bomb": lambda: (unit_with("", VLLM), _config_aliases(65536 - 100)),
    "config, 65 KB (over the cap)": lambda: (unit_with("", VLLM), _config_keys(66 * KB)),
}


def _collect_seconds(steps: str) -> float | None:
    """connect + round trip of host big, from `snapshot -v`'s line (what the watchdog bounds)."""
    import re
    found = {k: float(v) * (0.001 if unit == "ms" else 1.0)
             for k, v, unit in re.findall(r"(connect|round trip) ([0-9.]+) (ms|s)\b", steps)}
    if not found:
        return None
    return round(sum(found.values()), 2)


def timed(argv: list[str], env: dict, cwd: str, limit: float) -> dict:
    start = time.monotonic()
    with open(os.path.join(cwd, "out"), "w") as out, open(os.path.join(cwd, "err"), "w") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd, stdin=subprocess.DEVNULL)
        deadline = start + limit
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
    wall = time.monotonic() - start
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024,
            "rc": os.waitstatus_to_exitcode(status), "stdout": Path(cwd, "out").read_text(errors="replace"),
            "stderr": Path(cwd, "err").read_text(errors="replace")}


def patterns(hosts: int = 20000, unions: tuple[int, ...] = (1000, 2000, 4000)) -> int:
    """--limit on a large inventory (issue 34): select_hosts with unions of 1 000 / 2 000 / 4 000 host
    names, a group union, a glob, a regex, a refused regex, and the restore hint's exact pattern for the
    same names; each timed in this process (CPU and wall). Before the index a:b:... cost names x hosts
    (28 / 49 / 93 s for these unions in issue 34; 20 s CPU for 1 000 names measured again here); with
    it, 0.02 s each (2026-12-07, 2 shared cores), and the restore hint for 4 000 contiguous hosts is 29
    bytes instead of 36 000."""
    sys.path.insert(0, str(REPO))
    from driftwatch.collect.hostpatterns import names_regex
    from driftwatch.collect.inventory import HostTarget, select_hosts
    from driftwatch.errors import InputError

    targets = [HostTarget(name=f"gpu{i:05d}", units=["x.service"], groups=[f"rack{i // 40}", "all"])
               for i in range(hosts)]
    cases: list[tuple[str, str]] = []
    for k in unions:
        step = hosts // k
        names = ":".join(f"gpu{i:05d}" for i in range(0, hosts, step))
        cases.append((f"union of {k} names (every {step}th host)", names))
    for k in unions:
        cases.append((f"union of {k} names, contiguous", ":".join(f"gpu{i:05d}" for i in range(k))))
    cases.append(("union of 500 rack groups", ":".join(f"rack{i}" for i in range(0, hosts // 40))))
    cases.append(("glob gpu0*:&rack1*", "gpu0*:&rack1*"))
    cases.append(("regex ~gpu0[0-9]+7", "~gpu0[0-9]+7"))
    cases.append(("regex ~(a+)+b (refused)", "~(a+)+b"))
    print(f"| --limit on {hosts} hosts | pattern bytes | hosts selected | wall | CPU |")
    print("|---|---|---|---|---|")
    for name, pattern in cases:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            selected: object = len(select_hosts(targets, pattern))
        except InputError as exc:
            selected = f"refused: {str(exc)[:60]}…"
        print(f"| {name} | {len(pattern)} | {selected} | {time.perf_counter() - wall:.3f} s | "
              f"{time.process_time() - cpu:.3f} s |", flush=True)
    print()
    print("| restore hint for | --limit as names (bytes) | as the exact pattern (bytes) | built in |")
    print("|---|---|---|---|")
    for k in unions:
        spread = [f"gpu{i:05d}" for i in range(0, hosts, hosts // k)]
        for label, listed in ((f"{k} contiguous hosts", [f"gpu{i:05d}" for i in range(k)]),
                              (f"{k} hosts, every {hosts // k}th", spread)):
            wall = time.perf_counter()
            exact = names_regex(listed)
            print(f"| {label} | {len(':'.join(listed))} | {len(exact) + 1 if exact else '- (names kept)'} | "
                  f"{time.perf_counter() - wall:.3f} s |")
    return 0


def main() -> int:
    if "--patterns" in sys.argv[1:]:
        return patterns()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connect-timeout", type=float, default=5.0)
    ap.add_argument("--command-timeout", type=float, default=10.0)
    ap.add_argument("--limit", type=float, default=300.0, help="kill a run after this many seconds")
    ap.add_argument("-k", help="only cases whose name contains this")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import dw_sshlab

    if not (dw_sshlab.is_root() and dw_sshlab.have_sshd()):
        print("needs root and /usr/sbin/sshd", file=sys.stderr)
        return 2
    budget = args.connect_timeout + args.command_timeout + WATCHDOG_GRACE
    lab = dw_sshlab.Lab()
    rows = []
    try:
        big, small = lab.start_sshd("big"), lab.start_sshd("small")
        small.write(f"/etc/systemd/system/{UNIT}", unit_with(""))
        tmp = Path(lab.tmp)
        (tmp / "kh").write_text(big.known_hosts_line() + small.known_hosts_line())
        (tmp / "ssh_config").write_text("".join(f"Host {n}\n    HostName {s.address}\n    Port {s.port}\n    User root\n"
                                                for n, s in (("big", big), ("small", small))))
        (tmp / "inv.yaml").write_text(f"hosts:\n  big:\n    units: [{UNIT}]\n  small:\n    units: [{UNIT}]\n")
        (tmp / "home").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_") and k != "SSH_AUTH_SOCK"}
        env["HOME"] = str(tmp / "home")
        ssh = ["--inventory", str(tmp / "inv.yaml"), "--ssh-config", str(tmp / "ssh_config"), "-i", lab.client_key,
               "--known-hosts", str(tmp / "kh"), "--connect-timeout", f"{args.connect_timeout:g}",
               "--command-timeout", f"{args.command_timeout:g}"]
        for name, make in CASES.items():
            if args.k and args.k not in name:
                continue
            unit, config = make()
            big.write(f"/etc/systemd/system/{UNIT}", unit)
            if config is not None:
                big.write("/root/vllm/c.yaml", config)
            work = tmp / f"case-{len(rows)}"
            work.mkdir()
            snap = timed([str(DW), "snapshot", "--store", str(work / "store"), "--quiet", "-v", *ssh], env, str(work),
                         args.limit)
            status = {ln.split("\t")[0]: ln.split("\t")[2] for ln in snap["stdout"].splitlines() if ln.count("\t") >= 2}
            rep = timed([str(DW), "report", "--store", str(work / "store"), "--baseline", str(REPO / "baselines" / "70toks.yaml"), "--format", "json",
                         "-o", str(work / "report.json"), "--quiet", *ssh], env, str(work), args.limit)
            ok = all(r["rc"] in (0, 1, 2) and "Traceback" not in r["stderr"] for r in (snap, rep))
            ok = ok and status.get("small") in ("ok", "fallback") and (work / "report.json").exists()
            big_lines = [ln for ln in snap["stderr"].splitlines() if ln.startswith("driftwatch: big")]
            steps = next((ln for ln in big_lines if "round trip" in ln), "")
            big_line = next((ln for ln in big_lines if "round trip" not in ln), "")
            collected = _collect_seconds(steps)
            row = {"case": name, "unit_bytes": len(unit.encode()), "config_bytes": len(config.encode()) if config else 0,
                   "big": status.get("big", "?"), "small": status.get("small", "?"), "survives": ok,
                   "snapshot": {k: snap[k] for k in ("wall", "cpu", "rss_mib", "rc")},
                   "report": {k: rep[k] for k in ("wall", "cpu", "rss_mib", "rc")},
                   "collect_s": collected, "within_budget": collected is None or collected <= budget,
                   "big_error": big_line[:200]}
            row["survives"] = ok and row["within_budget"]
            rows.append(row)
            print(f"{name}: big {row['big']}, small {row['small']}; snapshot {snap['wall']:.1f} s wall "
                  f"{snap['cpu']:.1f} s CPU {snap['rss_mib']:.0f} MiB rc {snap['rc']}; report {rep['wall']:.1f} s "
                  f"{rep['cpu']:.1f} s CPU {rep['rss_mib']:.0f} MiB rc {rep['rc']}; "
                  f"{'survives' if ok else 'FAILS'}; {steps[:200] or big_line[:200]}",
                  file=sys.stderr, flush=True)
    finally:
        lab.close()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"budget per host: connect {args.connect_timeout:g} s + command {args.command_timeout:g} s + "
          f"grace {WATCHDOG_GRACE:g} s = {budget:g} s")
    print("| input on host big | bytes | big | small | big: connect + round trip | snapshot wall / CPU / RSS | "
          "report wall / CPU / RSS | survives |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        s, p = r["snapshot"], r["report"]
        size = r["config_bytes"] or r["unit_bytes"]
        col = "-" if r["collect_s"] is None else f"{r['collect_s']:.2f} s"
        print(f"| {r['case']} | {size} | {r['big']} | {r['small']} | {col} | {s['wall']:.1f} s / {s['cpu']:.1f} s / "
              f"{s['rss_mib']:.0f} MiB | {p['wall']:.1f} s / {p['cpu']:.1f} s / {p['rss_mib']:.0f} MiB | "
              f"{'yes' if r['survives'] else 'NO'}{'' if r['within_budget'] else ' (collection over the budget)'} |")
    return 0 if all(r["survives"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
