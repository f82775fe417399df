"""Elastic DDP training of a small MLP on scikit-learn's digits, launched by
torchrun on CPU (gloo) and scaled by Caravan through caravan_torch.

The structure is that of PyTorch's elastic DDP tutorial (a Trainer that
loads the snapshot at start, runs epochs of batches and saves a snapshot
every few epochs); README.md shows the lines that differ. Run it as:

    python3 -m caravan_torch torchrun --standalone --nproc_per_node=2 \\
        --redirects 2 --tee 2 train.py --epochs 10

with collector/python on PYTHONPATH and CARAVAN_CHECKPOINT_DIR set (and,
under Caravan, the rest of its environment). Rank 0 prints the final test
accuracy as its last line: "final step=<s> test_accuracy=<a>".
"""

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import caravan_torch


def ddp_setup():
    init_process_group(backend="gloo")


class Trainer:
    def __init__(self, model, train_data, test_data, optimizer, save_every, max_steps, job, step_delay=0.0):
        self.global_rank = int(os.environ["RANK"])
        self.model = model
        self.train_data = train_data
        self.test_data = test_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.max_steps = max_steps
        self.job = job
        self.step_delay = step_delay
        self.steps_per_epoch = len(train_data)
        self.step = job.load_snapshot(model, optimizer)
        if self.step:
            print(f"Resuming training from snapshot at step {self.step}")
        self.model = DDP(self.model)

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.cross_entropy(output, targets)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        # A resumed epoch skips the batches its snapshot's steps trained on:
        # the global batch, hence the steps per epoch, is the same at any
        # world size.
        skip = self.step - epoch * self.steps_per_epoch
        for i, (source, targets) in enumerate(self.train_data):
            if i < skip:
                continue
            if self.max_steps and self.step >= self.max_steps:
                return
            loss = self._run_batch(source, targets)
            if self.step_delay:
                time.sleep(self.step_delay)  # a bigger model's compute, in tests
            self.step += 1
            torch.distributed.all_reduce(loss)
            loss = loss.item() / torch.distributed.get_world_size()
            self.job.report(self.step, loss, epoch=self.step / self.steps_per_epoch,
                            samples=len(source) * torch.distributed.get_world_size())
            if self.job.checkpoint_requested():
                self.job.save_snapshot(self.step, self.model, self.optimizer, loss=loss)

    def train(self, max_epochs):
        for epoch in range(self.step // self.steps_per_epoch, max_epochs):
            self._run_epoch(epoch)
            if self.max_steps and self.step >= self.max_steps:
                break
            if self.save_every and (epoch + 1) % self.save_every == 0:
                self.job.save_snapshot(self.step, self.model, self.optimizer)
        self.job.save_snapshot(self.step, self.model, self.optimizer)
        if self.global_rank == 0:
            print(f"final step={self.step} test_accuracy={self.test_accuracy():.4f}", flush=True)

    def test_accuracy(self):
        self.model.eval()
        correct = total = 0
        with torch.no_grad():
            for source, targets in self.test_data:
                correct += (self.model.module(source).argmax(1) == targets).sum().item()
                total += len(targets)
        self.model.train()
        return correct / total


def load_train_objs():
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return TensorDataset(x_train, y_train), TensorDataset(x_test, y_test), model, optimizer


def prepare_dataloader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, shuffle=False, sampler=DistributedSampler(dataset, seed=0))


def main(save_every, total_epochs, batch_size, max_steps, step_delay=0.0):
    ddp_setup()
    job = caravan_torch.Job.from_env()
    batch_size = job.local_batch_size(batch_size // torch.distributed.get_world_size())
    train_set, test_set, model, optimizer = load_train_objs()
    train_data = prepare_dataloader(train_set, batch_size)
    test_data = DataLoader(test_set, batch_size=256)
    trainer = Trainer(model, train_data, test_data, optimizer, save_every, max_steps, job, step_delay)
    trainer.train(total_epochs)
    job.close()
    torch.distributed.barrier()
    destroy_process_group()
    # Leave here, before main's locals are freed: under torch 1.13 with
    # gloo a rank sometimes hung in the destructors of the DDP model and
    # its process group (faulthandler showed the main thread in main's
    # return, waiting on a futex; 1 run in 8 of TestTrain, and a
    # two-agent run of make try-pytorch). Everything is saved, flushed
    # and the process group destroyed by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="elastic DDP on the digits, under Caravan")
    parser.add_argument("--epochs", default=10, type=int, help="total epochs to train")
    parser.add_argument("--save-every", default=5, type=int, help="epochs between snapshots (0: only when asked and at the end)")
    parser.add_argument("--batch-size", default=64, type=int, help="global batch when Caravan names none")
    parser.add_argument("--max-steps", default=0, type=int, help="stop after this step (0: no cap)")
    parser.add_argument("--step-delay", default=0.0, type=float,
                        help="seconds to sleep each step, standing in for a bigger model (the e2e tests)")
    args = parser.parse_args()
    main(args.save_every, args.epochs, args.batch_size, args.max_steps, args.step_delay)
