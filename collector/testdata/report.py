"""Reports through caravan_collector as a PyTorch script would, for
python_test.go: five samples and a flush, then a malformed sample whose
rejection the client must surface. Prints what it saw as one JSON line."""

import json
import math

from caravan_collector import RejectedError, Reporter

r = Reporter.from_env()
for s in range(1, 6):
    r.report(
        step=s,
        loss=1.0 / s,
        epoch=s / 10,
        step_time_s=0.5,
        samples=32,
        cpu_s=0.4,
        net_s=0.1,
        checkpoint_step=4 if s >= 4 else 0,
    )
r.flush(timeout=10)
out = {"pending": r.pending, "dropped": r.dropped, "addrs": r.addrs}

try:
    r.report(step=6, loss=math.nan)
    out["nan"] = None
except ValueError as e:
    out["nan"] = str(e)

r.report(step=6, loss=-1.0)
try:
    r.flush(timeout=10)
    out["rejected"] = None
except RejectedError as e:
    out["rejected"] = {"status": e.status, "message": e.message, "error": str(e)}
out["dropped_after_reject"] = r.dropped
r.close()
print(json.dumps(out))
