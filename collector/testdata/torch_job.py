"""Trains a tiny model on two ranks (gloo, CPU) through caravan_torch, for
python_test.go: rank 1 alone catches the checkpoint signal before step 3,
both ranks must agree on the request at step 3, rank 0 saves and confirms
a snapshot, and a fresh Job loads it. Rank 0 prints one JSON line."""

import json
import os
import signal
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import caravan_torch

STEPS = 6
ASK_AT = 3


def model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def worker(rank, init, out):
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    model, opt = model_and_optimizer()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    job = caravan_torch.Job.from_env()
    record = {"rank": rank, "start": job.load_snapshot(ddp, opt), "requested": [],
              "local_batch_size": job.local_batch_size(7)}
    x = torch.ones(8, 4) * (rank + 1)
    saved = None
    for step in range(1, STEPS + 1):
        opt.zero_grad()
        loss = ddp(x).pow(2).mean()
        loss.backward()
        opt.step()
        job.report(step, loss.item(), epoch=step / 10, samples=16)
        if rank == 1 and step == ASK_AT:
            os.kill(os.getpid(), signal.SIGUSR1)
        if job.checkpoint_requested():
            record["requested"].append(step)
            job.save_snapshot(step, ddp, opt)
            saved = [p.detach().clone() for p in model.parameters()]
    dist.barrier()  # rank 0 has written the snapshot
    fresh, fresh_opt = model_and_optimizer()
    again = caravan_torch.Job.from_env(reporter=None, signum=None)
    record["loaded"] = again.load_snapshot(fresh, fresh_opt)
    record["same_params"] = saved is not None and all(
        torch.equal(a, b) for a, b in zip(saved, fresh.parameters()))
    record["momentum_loaded"] = len(fresh_opt.state_dict()["state"]) == 2
    job.close()
    with open(os.path.join(out, "rank-%d.json" % rank), "w") as f:
        json.dump(record, f)
    dist.destroy_process_group()
    # Leave before the DDP model and gloo's process group are freed: under
    # torch 1.13 a rank sometimes hung in their destructors
    # (examples/pytorch-ddp/train.py has the same exit).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    out = tempfile.mkdtemp()
    init = "file://" + os.path.join(out, "rendezvous")
    mp.spawn(worker, args=(init, out), nprocs=2)
    records = [json.load(open(os.path.join(out, "rank-%d.json" % r))) for r in range(2)]
    ckpt = os.environ["CARAVAN_CHECKPOINT_DIR"]
    json.dump({"ranks": records, "files": sorted(os.listdir(ckpt))}, sys.stdout)
