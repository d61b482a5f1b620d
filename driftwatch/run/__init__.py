"""The use cases: what each command does, without click, callable from Python and from tests.

targets.py    what the user names (a unit file, a snapshot, a live host, a baseline) -> snapshots
compare.py    one unit against a baseline (`compare`)
fleet.py      the fleet report end to end (`report`): collect, judge as answers arrive, since, mail
snapshots.py  a fleet snapshot into the store (`snapshot`) and retention (`prune`)
history.py    what changed when, and since when each finding is there (`history`, a report's since)
baselines.py  named baselines saved, accepted, listed, shown (`baseline …`)
restore.py    the drop-in back to a baseline: planned, checked, written, installed (`restore`)
voice.py      where a use case's messages go (the CLI prints them; nothing here does)
"""
