# Each worker logs the signals that reach it (SIGTERM ends it after TERM_LINGER s), for 30 s.
import os, signal, sys, time
rank = os.environ.get("RANK")
def h(sig, frame):
    print("worker rank=%s pid=%d got %s at %.3f" % (rank, os.getpid(), signal.Signals(sig).name, time.time()), flush=True)
    if sig == signal.SIGTERM:
        time.sleep(float(os.environ.get("TERM_LINGER", "0")))
        print("worker rank=%s exiting after SIGTERM at %.3f" % (rank, time.time()), flush=True)
        sys.exit(143)
for s in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
    signal.signal(s, h)
print("worker rank=%s pid=%d ppid=%d pgid=%d sid=%d" % (rank, os.getpid(), os.getppid(), os.getpgid(0), os.getsid(0)), flush=True)
for _ in range(300):
    time.sleep(0.1)
print("worker rank=%s done" % rank, flush=True)
