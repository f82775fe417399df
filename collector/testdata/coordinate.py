"""Two threads, as two co-located jobs, take turns through the node's
subtask coordinator with python/caravan_collector.py; prints what happened
as JSON for collector/python_test.go."""

import json
import os
import threading
import time

from caravan_collector import Coordinator

coords = [Coordinator.from_env(holder="py-%s/worker-0" % j) for j in "ab"]
inside = [0]
overlaps = [0]
lock = threading.Lock()


def job(coord):
    for _ in range(20):
        with coord.compute():
            with lock:
                inside[0] += 1
                if inside[0] > 1:
                    overlaps[0] += 1
            time.sleep(0.001)  # the phase's work
            with lock:
                inside[0] -= 1
        with coord.communicate():
            pass


threads = [threading.Thread(target=job, args=(c,)) for c in coords]
for t in threads:
    t.start()
for t in threads:
    t.join()

# An exception inside the block still releases the slot.
try:
    with coords[0].compute():
        raise KeyError("boom")
except KeyError:
    pass

# Without an address: a no-op. With a dead one: the phase runs anyway.
os.environ.pop("CARAVAN_COORDINATOR_ADDR")
off = Coordinator.from_env()
with off.compute():
    pass
dead = Coordinator(os.environ["DEAD_ADDR"], backoff=3600)
ran = 0
for _ in range(3):
    with dead.compute():
        ran += 1

print(json.dumps({
    "overlaps": overlaps[0],
    "granted": [c.granted for c in coords],
    "enabled_without_addr": off.enabled,
    "dead_ran": ran,
    "dead_uncoordinated": dead.uncoordinated,
}))
