"""Stage *collect*: raw unit text and facts from a host (see the design's pipeline).

interface.py  Collector ABC, RawUnit statuses and sources, HostError
local.py      LocalCollector (unit file / directory tree), systemd search order, `# /path` text
unitname.py   systemd unit-name grammar (checked before anything reaches a remote shell)
commands.py   the one remote `sh` script per unit and the parser of its sections
reader.py     UnitReader: what collecting asks about a command line, answered by the caller's reader
inventory.py  HostTarget, `user@host:port`, driftwatch YAML and Ansible INI/YAML inventories
hostpatterns.py --limit's ~regex bounded by shape; an exact pattern for a set of host names
sshconfig.py  ~/.ssh/config resolution (HostName, User, Port, IdentityFile, ProxyJump)
hostkeys.py   known_hosts checking, --accept-new recording
ssh.py        SSHConnection / SSHCollector (paramiko, imported lazily)
sshoptions.py SSHOptions: how to reach hosts (known_hosts, identity, timeouts, --parallel, --probe)
fleet.py      collect_fleet: many hosts in parallel

Nothing here imports paramiko at import time.
"""
