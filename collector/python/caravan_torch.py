"""Caravan's task contract for a PyTorch DDP script launched by torchrun.

Standard library and torch only (torch is imported when first needed). A
script that follows PyTorch's elastic DDP tutorial (load the snapshot at
start, save one now and then) uses it in a few lines:

    import caravan_torch
    job = caravan_torch.Job.from_env()          # after init_process_group
    start = job.load_snapshot(model, optimizer)  # 0 without a snapshot
    for step in range(start + 1, max_steps + 1):
        ...                                      # forward, backward, step
        job.report(step, loss)                   # rank 0 only; a no-op elsewhere
        if job.checkpoint_requested() or step % every == 0:
            job.save_snapshot(step, model, optimizer)   # rank 0 writes and confirms

Signals. Caravan asks a job for a checkpoint by sending its tasks the
checkpoint signal (CARAVAN_CHECKPOINT_SIGNAL, SIGUSR1 by default), and Nomad
sends it to the task's main process. torchrun 1.13 has no handler for
SIGUSR1, so the signal's default action kills it, and its workers with it
(examples/pytorch-ddp/README.md has the measurements). A task therefore
runs torchrun under this module:

    python3 -m caravan_torch torchrun train.py ...

which starts torchrun in a process group of its own with the checkpoint
signal ignored (torchrun and the workers inherit that until a worker's
Job installs its handler), forwards the checkpoint signal to the whole
group (the workers), forwards SIGTERM and SIGINT to torchrun alone (which
stops its workers itself) and exits with torchrun's status. Under
Caravan's Nomad driver (training.launcher = "torchrun") it also adds the
torchrun flags of the generation's rendezvous that the command lacks,
from CARAVAN_RDZV_ENDPOINT, CARAVAN_RDZV_ID, CARAVAN_NUM_WORKERS and
CARAVAN_RANK (torchrun_args).

Agreement. The signal reaches each node's workers at a different moment,
so a worker never acts on its own flag: checkpoint_requested() is a
collective call that every rank makes once per step, and it all-reduces
the ranks' flags (MAX of one int64, one small gloo or NCCL message): every
rank sees True at the same step, the first one at which any rank had
caught the signal. It is then True on every later call too, until
save_snapshot() clears it. Training goes on after the snapshot: Caravan
then stops or re-forms the tasks itself, and they resume at its step.

Snapshots. CARAVAN_CHECKPOINT_DIR/snapshot.pt holds {"step", "model",
"optimizer", "extra", "world_size"} as torch.save writes it; rank 0 writes
it to a temporary file, fsyncs it and renames it, so that a crash leaves
the previous snapshot whole. Every rank loads it (the directory is shared
by the job's tasks, DESIGN.md section 3). save_snapshot() then reports a
sample whose checkpoint_step is the step and flushes it to the collector:
that is the confirmation Caravan waits for before it rescales.

The batch Caravan chose: job.batch (caravan_collector.Batch, None when
the environment names no batch) and job.local_batch_size(default).
"""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from caravan_collector import ENV_ADDR, Batch, Reporter, _env_int

__all__ = ["Job", "SNAPSHOT_FILE", "DEFAULT_CHECKPOINT_SIGNAL", "checkpoint_signal", "run", "torchrun_args"]

SNAPSHOT_FILE = "snapshot.pt"
DEFAULT_CHECKPOINT_SIGNAL = "SIGUSR1"

# The signals a checkpoint may be asked with: those whose default action
# is not needed to stop a task (examples/trainer's list).
_ALLOWED_SIGNALS = (
    "SIGUSR1", "SIGUSR2", "SIGHUP", "SIGALRM", "SIGWINCH", "SIGIO",
    "SIGVTALRM", "SIGXCPU", "SIGXFSZ",
)


def checkpoint_signal():
    """The checkpoint signal of the environment, CARAVAN_CHECKPOINT_SIGNAL
    (a name such as SIGUSR1 or USR1; SIGUSR1 when unset). Raises
    ValueError on a signal that is not allowed (never SIGINT or SIGTERM)."""
    name = os.environ.get("CARAVAN_CHECKPOINT_SIGNAL", "").strip().upper() or DEFAULT_CHECKPOINT_SIGNAL
    if not name.startswith("SIG"):
        name = "SIG" + name
    if name not in _ALLOWED_SIGNALS or not hasattr(signal, name):
        raise ValueError("CARAVAN_CHECKPOINT_SIGNAL=%s: not one of %s" % (name, ", ".join(_ALLOWED_SIGNALS)))
    return getattr(signal, name)


def _unwrap(model):
    """The module a DistributedDataParallel wrapper holds, or model."""
    return getattr(model, "module", model)


class _Request:
    """The checkpoint request of one process: set by the signal handler,
    agreed on by all ranks in Job.checkpoint_requested()."""

    def __init__(self):
        self.caught = False  # this process caught the signal
        self.agreed = False  # every rank agreed at a step boundary


class Job:
    """One torchrun worker's view of its Caravan job. Create it with
    from_env() after torch.distributed.init_process_group (or without a
    process group, as a job of one). Not thread-safe; call its collective
    method, checkpoint_requested(), from the training loop of every rank."""

    def __init__(self, checkpoint_dir, reporter=None, batch=None, rank=None, world_size=None,
                 signum=None, flush_timeout=10.0):
        if not checkpoint_dir:
            raise ValueError("CARAVAN_CHECKPOINT_DIR is not set: where do snapshots go?")
        self.checkpoint_dir = checkpoint_dir
        self.reporter = reporter
        self.batch = batch
        self._rank, self._world = rank, world_size
        self._flush_timeout = flush_timeout
        self._request = _Request()
        self.checkpoint_step = 0
        self.extra = {}
        self._last_step = None  # (step, time.monotonic()) of the last report
        self._last_sample = {}  # the fields of the last sample sent
        if signum is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signum, self._on_signal)

    @classmethod
    def from_env(cls, **kwargs):
        """A Job of the environment: CARAVAN_CHECKPOINT_DIR (required), the
        collector's variables of caravan_collector.Reporter.from_env (no
        reporting when CARAVAN_COLLECTOR_ADDR is unset, as when the script
        runs outside Caravan), the batch variables of Batch.from_env (None
        when CARAVAN_GLOBAL_BATCH_SIZE is unset) and the checkpoint signal,
        whose handler it installs. Only rank 0 reports, labelled with its
        rank and CARAVAN_NUM_WORKERS, or the world size when unset."""
        rank, world = _rank_and_world()
        args = {
            "checkpoint_dir": os.environ.get("CARAVAN_CHECKPOINT_DIR", "").strip(),
            "rank": rank,
            "world_size": world,
            "signum": checkpoint_signal(),
        }
        if "batch" not in kwargs and os.environ.get("CARAVAN_GLOBAL_BATCH_SIZE", "").strip():
            args["batch"] = Batch.from_env()
        if "reporter" not in kwargs and rank == 0 and os.environ.get(ENV_ADDR, "").strip():
            args["reporter"] = Reporter.from_env(
                role=os.environ.get("CARAVAN_ROLE", "") or "worker",
                rank=0,
                num_workers=_env_int("CARAVAN_NUM_WORKERS") or world,
            )
        args.update(kwargs)
        return cls(**args)

    @property
    def rank(self):
        return self._rank if self._rank is not None else _rank_and_world()[0]

    @property
    def world_size(self):
        return self._world if self._world is not None else _rank_and_world()[1]

    @property
    def resume(self):
        """CARAVAN_RESUME=1: Caravan restarted the job from a checkpoint."""
        return os.environ.get("CARAVAN_RESUME", "").strip() == "1"

    @property
    def snapshot_path(self):
        return os.path.join(self.checkpoint_dir, SNAPSHOT_FILE)

    def local_batch_size(self, default):
        """The examples one worker computes per pass: the batch Caravan
        chose, or default outside an adaptive job."""
        return self.batch.local_batch_size if self.batch is not None else int(default)

    def _on_signal(self, signum, frame):
        self._request.caught = True

    def request_checkpoint(self):
        """Ask for a checkpoint as the signal does (for tests and for a
        script's own triggers)."""
        self._request.caught = True

    def checkpoint_requested(self):
        """Whether a checkpoint was asked for, agreed by every rank: a
        collective call (one all-reduce of an int64) that every rank must
        make at the same point of each step. True from the first step at
        which any rank had caught the checkpoint signal until
        save_snapshot()."""
        req = self._request
        if not req.agreed:
            flag = 1 if req.caught else 0
            if _distributed():
                import torch
                import torch.distributed as dist

                t = torch.tensor([flag], dtype=torch.int64)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                flag = int(t.item())
            req.agreed = bool(flag)
        return req.agreed

    def load_snapshot(self, model, optimizer=None, map_location="cpu"):
        """Load CARAVAN_CHECKPOINT_DIR/snapshot.pt into model (unwrapped
        from DDP) and optimizer, on every rank; returns its step, 0 when
        there is none. The snapshot's extra dict is job.extra."""
        import torch

        self.extra = {}
        try:
            snap = torch.load(self.snapshot_path, map_location=map_location)
        except FileNotFoundError:
            return 0
        _unwrap(model).load_state_dict(snap["model"])
        if optimizer is not None and snap.get("optimizer") is not None:
            optimizer.load_state_dict(snap["optimizer"])
        self.extra = snap.get("extra") or {}
        self.checkpoint_step = int(snap["step"])
        return self.checkpoint_step

    def save_snapshot(self, step, model, optimizer=None, loss=None, **extra):
        """On rank 0, write the snapshot of step atomically, then report a
        sample with checkpoint_step=step (loss defaults to the last one
        reported) and flush it, which raises CollectorError if no collector
        kept it in time. Every rank then clears its checkpoint request. A
        no-op elsewhere but for that; no rank waits for another."""
        step = int(step)
        if self.rank == 0:
            import torch

            snap = {
                "step": step,
                "model": _unwrap(model).state_dict(),
                "optimizer": optimizer.state_dict() if optimizer is not None else None,
                "extra": extra,
                "world_size": self.world_size,
            }
            os.makedirs(self.checkpoint_dir, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".snapshot-", dir=self.checkpoint_dir)
            try:
                with os.fdopen(fd, "wb") as f:
                    torch.save(snap, f)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.snapshot_path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            _fsync_dir(self.checkpoint_dir)
        self.checkpoint_step = step
        self._request = _Request()
        if self.rank == 0 and self.reporter is not None:
            fields = dict(self._last_sample)
            last_loss = fields.pop("loss", 0.0)
            self._send(step, last_loss if loss is None else loss, fields)
            self.reporter.flush(timeout=self._flush_timeout)

    def report(self, step, loss, **fields):
        """Report step and loss on rank 0 (a no-op elsewhere, and without
        a collector), with the time per step since the previous report,
        the latest checkpoint_step and, when Caravan chose the batch, the
        batch fields. fields are the other arguments of
        caravan_collector.Reporter.report (epoch, samples, grad_sqr,
        grad_var, ...)."""
        if self.rank != 0 or self.reporter is None:
            return
        now, step = time.monotonic(), int(step)
        if "step_time_s" not in fields and self._last_step is not None:
            prev_step, prev_t = self._last_step
            if step > prev_step:
                fields["step_time_s"] = (now - prev_t) / (step - prev_step)
        if self.batch is not None:
            fields.setdefault("batch_size", self.batch.global_batch_size)
            fields.setdefault("local_batch_size", self.batch.local_batch_size)
            fields.setdefault("accum_steps", self.batch.accum_steps)
        self._send(step, loss, fields)
        self._last_step = (step, now)

    def _send(self, step, loss, fields):
        """Queue a sample of step with the latest checkpoint_step; keep
        its fields for the confirmation of the next snapshot."""
        fields = dict(fields, checkpoint_step=min(self.checkpoint_step, step))
        self.reporter.report(step=step, loss=float(loss), **fields)
        self._last_sample = dict(fields, loss=float(loss))

    def close(self):
        """Flush and stop the reporter."""
        if self.reporter is not None:
            self.reporter.close()


def _distributed():
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return dist.is_available() and dist.is_initialized()


def _rank_and_world():
    if _distributed():
        import torch.distributed as dist

        return dist.get_rank(), dist.get_world_size()
    return _env_int("RANK"), _env_int("WORLD_SIZE", 1)


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# The environment Caravan's Nomad driver gives the workers of a torchrun
# job (training.launcher = "torchrun", drivers/nomad/README.md).
ENV_RDZV_ENDPOINT = "CARAVAN_RDZV_ENDPOINT"
ENV_RDZV_ID = "CARAVAN_RDZV_ID"


def _is_torchrun(argv, i):
    """Whether argv[i] ends the torchrun command: torchrun itself, or
    python's "-m torch.distributed.run"."""
    a = argv[i]
    if os.path.basename(a) == "torchrun":
        return True
    return a == "torch.distributed.run" and i > 0 and argv[i - 1] == "-m"


def _has_flag(args, *names):
    for a in args:
        for n in names:
            if a == n or a.startswith(n + "="):
                return True
    return False


def torchrun_args(argv, env=None):
    """argv with the torchrun flags of Caravan's rendezvous inserted after
    the torchrun command (torchrun, or python -m torch.distributed.run),
    each unless argv has it already: --nnodes=CARAVAN_NUM_WORKERS,
    --nproc_per_node=1, --rdzv_backend=c10d,
    --rdzv_endpoint=CARAVAN_RDZV_ENDPOINT, --rdzv_id=CARAVAN_RDZV_ID,
    --rdzv_conf=is_host=1 on Caravan's rank 0 (CARAVAN_RANK) and 0
    elsewhere (every task may share one address), --max_restarts=0 (a
    failed worker fails the task: Caravan resumes the job) and
    --redirects=2 --tee=2 (torchrun 1.13 under Python 3.11 fails without).
    argv unchanged without CARAVAN_RDZV_ENDPOINT, with --standalone, or
    when it runs no torchrun."""
    env = os.environ if env is None else env
    endpoint = env.get(ENV_RDZV_ENDPOINT, "").strip()
    at = next((i for i in range(len(argv)) if _is_torchrun(argv, i)), None)
    if not endpoint or at is None:
        return list(argv)
    head, args = list(argv[: at + 1]), list(argv[at + 1 :])
    if _has_flag(args, "--standalone"):
        return list(argv)
    rank = env.get("CARAVAN_RANK", "").strip()
    flags = []
    for names, value in (
        (("--nnodes",), env.get("CARAVAN_NUM_WORKERS", "").strip() or "1"),
        (("--nproc_per_node", "--nproc-per-node"), "1"),
        (("--rdzv_backend", "--rdzv-backend"), "c10d"),
        (("--rdzv_endpoint", "--rdzv-endpoint"), endpoint),
        (("--rdzv_id", "--rdzv-id"), env.get(ENV_RDZV_ID, "").strip() or "caravan"),
        (("--rdzv_conf", "--rdzv-conf"), "is_host=%d" % (1 if rank == "0" else 0)),
        (("--max_restarts", "--max-restarts"), "0"),
        (("--redirects",), "2"),
        (("--tee",), "2"),
    ):
        if not _has_flag(args, *names):
            flags.append("%s=%s" % (names[0], value))
    return head + flags + args


def run(argv):
    """Run argv (torchrun and its arguments, with torchrun_args's flags)
    as a task's main process: in a process group of its own, with the checkpoint signal ignored
    (until a worker's Job handles it) and forwarded to the whole group,
    SIGTERM and SIGINT forwarded to argv's process alone. Returns its exit
    status (128 + signal when a signal ended it)."""
    if not argv:
        raise ValueError("usage: python3 -m caravan_torch torchrun [args...]")
    ckpt = checkpoint_signal()
    signal.signal(ckpt, signal.SIG_IGN)
    argv = torchrun_args(argv)
    if os.environ.get(ENV_RDZV_ENDPOINT, "").strip():
        print("caravan_torch: " + " ".join(argv), file=sys.stderr, flush=True)
    proc = subprocess.Popen(argv, start_new_session=True)

    def to_group(signum, frame):
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    def to_child(signum, frame):
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    signal.signal(ckpt, to_group)
    signal.signal(signal.SIGTERM, to_child)
    signal.signal(signal.SIGINT, to_child)
    rc = proc.wait()
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
