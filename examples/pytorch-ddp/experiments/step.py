# One tiny all-reduce "step" every 50 ms; logs its rank, world size and the time.
import os, time
t0 = time.time()
import torch, torch.distributed as dist
dist.init_process_group("gloo")
r, w = dist.get_rank(), dist.get_world_size()
print("READY t=%.3f rank=%d world=%d start=%.3f" % (time.time(), r, w, t0), flush=True)
x = torch.ones(1000)
for step in range(1, 100000):
    dist.all_reduce(x)
    if step <= 3 or step % 40 == 0:
        print("STEP t=%.3f rank=%d world=%d step=%d" % (time.time(), r, w, step), flush=True)
    time.sleep(0.05)
