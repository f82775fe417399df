"""Stands in for torchrun and its worker under `python3 -m caravan_torch`,
for python_test.go. As the launcher it reports whether it inherited the
checkpoint signal ignored, starts a worker in its process group, waits for
it, then dies of the SIGTERM it is sent. As the worker ("worker") it
catches SIGUSR1 and exits 0."""

import os
import signal
import subprocess
import sys
import time

if sys.argv[1:] == ["worker"]:
    got = []
    signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
    print("worker ready", flush=True)
    while not got:
        time.sleep(0.01)
    print("worker caught SIGUSR1", flush=True)
    sys.exit(0)

print("launcher ignores SIGUSR1: %s" % (signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN), flush=True)
w = subprocess.Popen([sys.executable, __file__, "worker"])
print("worker exited %d" % w.wait(), flush=True)
terms = []
signal.signal(signal.SIGTERM, lambda s, f: terms.append(s))
print("launcher waits for SIGTERM", flush=True)
while not terms:
    time.sleep(0.01)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
os.kill(os.getpid(), signal.SIGTERM)
