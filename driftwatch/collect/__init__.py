"""Stage *collect*: raw unit text and facts from a target (see the design's pipeline).

interface.py  Collector ABC, RawUnit statuses and sources, HostError, the registry by target kind
              (``collector_for``: "unit-file", "snapshot", "ssh")
local.py      UnitFileCollector (``--unit-file FILE`` or stdin), systemd search order, `# /path` text
snapshot.py   SnapshotCollector (a stored snapshot: named here, read by the store)
unitname.py   systemd unit-name grammar (checked before anything reaches a remote shell)
commands.py   the one remote `sh` script per unit, built from the engines' markers, and its parser
reader.py     UnitReader: what collecting asks about a command line and the engines' markers,
              answered by the caller's reader (collect/ names no engine)
inventory.py  HostTarget, `user@host:port`, driftwatch YAML and Ansible INI/YAML inventories
hostpatterns.py --limit's ~regex bounded by shape; an exact pattern for a set of host names
sshconfig.py  ~/.ssh/config resolution (HostName, User, Port, IdentityFile, ProxyJump)
hostkeys.py   known_hosts checking, --accept-new recording
ssh.py        SSHConnection / SSHCollector (paramiko, imported lazily)
sshoptions.py SSHOptions: how to reach hosts (known_hosts, identity, timeouts, --parallel, --probe)
fleet.py      collect_targets: any kinds, hosts in parallel; collect_fleet: its SSH case

Nothing here imports paramiko at import time.
"""
