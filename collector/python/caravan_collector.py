"""Report training progress to a Caravan metrics collector.

Standard library only (Python 3.8+). A PyTorch script reports in three lines:

    from caravan_collector import Reporter
    r = Reporter.from_env()
    r.report(step=s, loss=l)

Reporter buffers samples (bounded: when full, the oldest is dropped) and a
background thread sends them in batches, as the JSON body
{"samples": [...]} of POST <addr>/v1/report, the schema of DESIGN.md §3
that the Go client in collector/client sends too. Delivery follows the
answer's status, as in the Go client:

- 2xx: the batch is kept by the collector and leaves the buffer.
- 4xx (except 408 and 429): the batch is malformed; it is dropped, never
  retried, logged, and the next flush() raises RejectedError with the
  collector's message.
- 5xx, 408, 429 and connection errors: the batch stays buffered and is sent
  again, to the next address of CARAVAN_COLLECTOR_ADDR first.

Call flush() right after writing a checkpoint, so that the sample announcing
it reaches Caravan at once, and close() (or use a with block) at the end;
samples still buffered when the interpreter exits are flushed for up to 5 s.
A Reporter is safe to use from several threads.

A job whose jobspec lets its batch vary (training { batch_size { ... } })
trains at the batch Caravan chose, which the task learns at every start and
resume from its environment, and reports the batch with the gradient noise
statistics that Caravan's goodput model learns from:

    b = Batch.from_env()   # global_batch_size, local_batch_size, accum_steps,
                           # reference_batch_size
    lr = base_lr * adascale_gain(grad_sqr, grad_var, b.global_batch_size,
                                 b.reference_batch_size)
    r.report(step=s, loss=l, batch_size=b.global_batch_size,
             local_batch_size=b.local_batch_size, accum_steps=b.accum_steps,
             grad_sqr=grad_sqr, grad_var=grad_var)

Each worker computes local_batch_size examples a pass and accumulates the
gradients of accum_steps + 1 passes before it synchronises, so that
global = workers x local x (accum_steps + 1). grad_sqr is the squared norm
of the true gradient and grad_var the variance of the gradient averaged
over batch_size examples (the trace of its covariance), estimated as
AdaptDL does from the workers' (or passes') gradients: with k gradients
g_i of b examples each and their mean g,
grad_var = (mean |g_i|^2 - |g|^2) / (k - 1) and grad_sqr = |g|^2 - grad_var
(examples/trainer/README.md). A job without bounds gets its fixed batch,
accum_steps 0 and a reference batch equal to its global batch, so
adascale_gain is 1.

Coordinator is the client of the node's subtask coordinator (collector/coord,
Harmony's §4.3.1): co-located jobs take turns for the CPU and the network.

    from caravan_collector import Coordinator
    coord = Coordinator.from_env()       # CARAVAN_COORDINATOR_ADDR; unset: no-op
    with coord.communicate(): params = pull()
    with coord.compute(): grad = step(params)
    with coord.communicate(): push(grad)
"""

import atexit
import collections
import itertools
import json
import logging
import math
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = [
    "Reporter",
    "Batch",
    "adascale_gain",
    "Coordinator",
    "ENV_COORDINATOR_ADDR",
    "CollectorError",
    "RejectedError",
    "parse_addrs",
    "ENV_ADDR",
]

ENV_ADDR = "CARAVAN_COLLECTOR_ADDR"
# The ACL token reports are sent with (X-Caravan-Token), when Caravan
# servers have ACLs on; collectors ignore it.
ENV_TOKEN = "CARAVAN_TOKEN"
REPORT_PATH = "/v1/report"

DEFAULT_FLUSH_INTERVAL = 1.0
DEFAULT_MAX_BUFFER = 10000
DEFAULT_MAX_BATCH = 500
DEFAULT_REQUEST_TIMEOUT = 10.0
_RETRY_BACKOFF = 0.1
_MAX_RETRY_BACKOFF = 5.0
_EXIT_FLUSH_TIMEOUT = 5.0

log = logging.getLogger("caravan_collector")

# Collectors run next to the task: requests go straight to them, never
# through the HTTP_PROXY of the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class CollectorError(Exception):
    """No collector accepted the samples before the timeout."""


class RejectedError(CollectorError):
    """A collector answered a batch with a 4xx status: its samples were
    malformed and are dropped. status is the HTTP status and message the
    collector's explanation, such as "samples[0]: loss: -1 must be a finite
    number, not negative"."""

    def __init__(self, status, message, dropped):
        super().__init__(
            "collector rejected %d samples (HTTP %d): %s" % (dropped, status, message)
        )
        self.status = status
        self.message = message
        self.dropped = dropped


class _Retryable(Exception):
    """A request failed in a way that another try may not."""


def parse_addrs(value):
    """Split a comma-separated list of collector addresses into base URLs:
    "host:port" becomes "http://host:port". Raises ValueError on an empty
    list or an address that is not http(s)://host[:port][/path]."""
    addrs = []
    for item in (value or "").split(","):
        item = item.strip()
        if not item:
            continue
        if "://" not in item:
            item = "http://" + item
        u = urllib.parse.urlsplit(item)
        if u.scheme not in ("http", "https"):
            raise ValueError("collector address %r: scheme must be http or https" % item)
        if not u.netloc:
            raise ValueError("collector address %r has no host" % item)
        if u.query or u.fragment:
            raise ValueError("collector address %r must not have a query or fragment" % item)
        addrs.append(item.rstrip("/"))
    if not addrs:
        raise ValueError("no collector address")
    return addrs


def _env_int(name, default=0):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError("%s=%r is not an integer" % (name, value)) from None


class Reporter:
    """Buffers the samples of one training task and sends them to its
    collectors. Create it with from_env() in a task Caravan started, and
    stop it with close()."""

    def __init__(
        self,
        addrs,
        job_id,
        namespace="",
        role="",
        rank=0,
        num_ps=0,
        num_workers=0,
        flush_interval=DEFAULT_FLUSH_INTERVAL,
        max_buffer=DEFAULT_MAX_BUFFER,
        max_batch=DEFAULT_MAX_BATCH,
        request_timeout=DEFAULT_REQUEST_TIMEOUT,
    ):
        if isinstance(addrs, str):
            addrs = [addrs]
        self._addrs = parse_addrs(",".join(addrs))
        if not job_id:
            raise ValueError("job_id is required")
        self._labels = {
            "namespace": namespace or "",
            "job_id": job_id,
            "role": role or "",
            "rank": int(rank),
            "num_ps": int(num_ps),
            "num_workers": int(num_workers),
        }
        if max_buffer < 1 or max_batch < 1 or flush_interval <= 0:
            raise ValueError("max_buffer, max_batch and flush_interval must be positive")
        self._interval = flush_interval
        self._max_buffer = max_buffer
        self._max_batch = max_batch
        self._timeout = request_timeout

        # _buf holds the samples not yet kept by a collector; _head is the
        # sequence number of _buf[0]. Sequence numbers let a sender
        # acknowledge a batch even when report() dropped some of its
        # samples meanwhile.
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._buf = collections.deque()
        self._head = 0
        self._dropped = 0
        self._closed = False
        self._overflowing = False
        # Rejections since the last flush(), which raises the last one.
        self._rejected = None

        # One sender at a time, so batches go out in order; _preferred, the
        # address that answered last, is guarded by it.
        self._sending = threading.Lock()
        self._preferred = 0

        self._thread = threading.Thread(
            target=self._background, name="caravan-collector-reporter", daemon=True
        )
        self._thread.start()
        atexit.register(self._at_exit)

    @classmethod
    def from_env(cls, **kwargs):
        """A Reporter configured by the environment Caravan gives every
        task (DESIGN.md §3): CARAVAN_COLLECTOR_ADDR (comma-separated,
        required), CARAVAN_JOB_ID (required), CARAVAN_NAMESPACE,
        CARAVAN_ROLE, CARAVAN_RANK, CARAVAN_NUM_PS and
        CARAVAN_NUM_WORKERS. kwargs override them and set the other
        options of Reporter."""
        addr = os.environ.get(ENV_ADDR, "")
        if "addrs" not in kwargs and not addr.strip():
            raise ValueError("%s is not set: is this task running under Caravan?" % ENV_ADDR)
        args = {
            "addrs": addr,
            "job_id": os.environ.get("CARAVAN_JOB_ID", ""),
            "namespace": os.environ.get("CARAVAN_NAMESPACE", ""),
            "role": os.environ.get("CARAVAN_ROLE", ""),
            "rank": _env_int("CARAVAN_RANK"),
            "num_ps": _env_int("CARAVAN_NUM_PS"),
            "num_workers": _env_int("CARAVAN_NUM_WORKERS"),
        }
        args.update(kwargs)
        if not args["job_id"]:
            raise ValueError("CARAVAN_JOB_ID is not set: is this task running under Caravan?")
        return cls(**args)

    @property
    def addrs(self):
        """The collector base URLs, in the order they are tried."""
        return list(self._addrs)

    @property
    def pending(self):
        """How many samples wait to be kept by a collector."""
        with self._lock:
            return len(self._buf)

    @property
    def dropped(self):
        """How many samples will never be delivered: dropped because the
        buffer was full, rejected by a collector, reported after close(), or
        still buffered when close() gave up."""
        with self._lock:
            return self._dropped

    def report(
        self,
        step,
        loss,
        epoch=0.0,
        step_time_s=0.0,
        samples=0,
        cpu_s=0.0,
        net_s=0.0,
        checkpoint_step=0,
        time_ns=None,
        batch_size=0,
        local_batch_size=0,
        accum_steps=0,
        grad_sqr=0.0,
        grad_var=0.0,
    ):
        """Queue one sample and return at once. step, samples,
        checkpoint_step and the batch sizes are integers; loss, the times
        (seconds) and the gradient statistics are numbers, or anything
        float() takes, such as a 0-d torch tensor. time_ns defaults to now.
        batch_size, local_batch_size, accum_steps, grad_sqr and grad_var
        (see Batch and the module's doc) are sent when not 0; grad_sqr and
        grad_var need batch_size. Raises ValueError on a value that is not a
        finite number; other problems (a negative loss, a checkpoint ahead
        of the step) are for the collector to reject."""
        sample = dict(self._labels)
        sample.update(
            step=int(step),
            epoch=_finite("epoch", epoch),
            loss=_finite("loss", loss),
            step_time_s=_finite("step_time_s", step_time_s),
            samples=int(samples),
            cpu_s=_finite("cpu_s", cpu_s),
            net_s=_finite("net_s", net_s),
            checkpoint_step=int(checkpoint_step),
            time=int(time_ns) if time_ns is not None else time.time_ns(),
        )
        for name, value in (
            ("batch_size", int(batch_size)),
            ("local_batch_size", int(local_batch_size)),
            ("accum_steps", int(accum_steps)),
            ("grad_sqr", _finite("grad_sqr", grad_sqr)),
            ("grad_var", _finite("grad_var", grad_var)),
        ):
            if value:
                sample[name] = value
        with self._lock:
            if self._closed:
                self._dropped += 1
                log.warning("dropping a sample reported after close (step %d)", sample["step"])
                return
            if len(self._buf) >= self._max_buffer:
                self._buf.popleft()
                self._head += 1
                self._dropped += 1
                if not self._overflowing:
                    self._overflowing = True
                    log.warning(
                        "sample buffer is full (%d); dropping the oldest samples", self._max_buffer
                    )
            self._buf.append(sample)
            if len(self._buf) >= self._max_batch:
                self._wake.notify()

    def flush(self, timeout=10.0):
        """Send every sample reported so far and wait until a collector kept
        it. Retries with backoff until timeout seconds passed, then raises
        CollectorError (the samples stay buffered). Raises RejectedError if
        a collector rejected samples since the last flush()."""
        with self._lock:
            if self._closed:
                raise CollectorError("reporter is closed")
            target = self._head + len(self._buf)
        self._flush(target, time.monotonic() + timeout)

    def close(self, timeout=10.0):
        """Stop the background thread and flush what is buffered for up to
        timeout seconds; samples still buffered then are dropped. Raises as
        flush() does. close() is idempotent."""
        with self._lock:
            was_closed = self._closed
            self._closed = True
            target = self._head + len(self._buf)
            self._wake.notify()
        if was_closed:
            return
        atexit.unregister(self._at_exit)
        self._thread.join()
        try:
            self._flush(target, time.monotonic() + timeout)
        finally:
            with self._lock:
                n = len(self._buf)
                if n:
                    self._dropped += n
                    self._head += n
                    self._buf.clear()
                    log.warning("dropping %d samples not delivered before close", n)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _at_exit(self):
        try:
            self.close(timeout=_EXIT_FLUSH_TIMEOUT)
        except CollectorError as e:
            log.error("samples not delivered at exit: %s", e)

    def _background(self):
        while True:
            with self._lock:
                if not self._closed:
                    self._wake.wait(self._interval)
                if self._closed:
                    return
                target = self._head + len(self._buf)
            try:
                self._flush(target, None)
            except RejectedError:
                pass  # logged; the next flush() raises it
            except CollectorError as e:
                log.debug("background flush failed; will retry: %s", e)

    def _flush(self, target, deadline):
        """Send the samples numbered below target. With a deadline, retry
        rounds over the addresses until it passes; without, give up after
        one failed round."""
        left = _remaining(deadline)
        if not self._sending.acquire(timeout=-1 if left is None else left):
            raise CollectorError("timed out waiting for another flush")
        try:
            wait = _RETRY_BACKOFF
            while True:
                with self._lock:
                    if target <= self._head:
                        break
                    n = min(target - self._head, len(self._buf), self._max_batch)
                    batch = list(itertools.islice(self._buf, 0, n))
                    first = self._head
                try:
                    self._send_round(batch, deadline)
                except RejectedError as e:
                    self._ack(first + len(batch), dropped=len(batch))
                    with self._lock:
                        self._rejected = e
                    continue
                except _Retryable as e:
                    left = _remaining(deadline)
                    if left is None or left <= 0:
                        raise CollectorError(
                            "no collector kept the samples; %d still buffered: %s"
                            % (self.pending, e)
                        ) from None
                    time.sleep(min(wait, left))
                    wait = min(2 * wait, _MAX_RETRY_BACKOFF)
                    continue
                self._ack(first + len(batch))
                wait = _RETRY_BACKOFF
            if deadline is not None:
                with self._lock:
                    rejected, self._rejected = self._rejected, None
                if rejected is not None:
                    raise rejected
        finally:
            self._sending.release()

    def _ack(self, up_to, dropped=0):
        with self._lock:
            self._dropped += dropped
            if up_to <= self._head:
                return
            for _ in range(min(up_to - self._head, len(self._buf))):
                self._buf.popleft()
                self._head += 1
            if not self._buf:
                self._overflowing = False

    def _send_round(self, batch, deadline):
        """Post batch to each address once, starting with the one that
        answered last, until one keeps or rejects it."""
        body = json.dumps({"samples": batch}, allow_nan=False).encode()
        errors = []
        for i in range(len(self._addrs)):
            idx = (self._preferred + i) % len(self._addrs)
            addr = self._addrs[idx]
            try:
                self._post(addr, body, deadline)
            except RejectedError as e:
                self._preferred = idx
                log.error("%s rejected %d samples; dropping them: %s", addr, len(batch), e.message)
                raise RejectedError(e.status, e.message, len(batch)) from None
            except _Retryable as e:
                errors.append(str(e))
                continue
            self._preferred = idx
            return
        raise _Retryable("; ".join(errors))

    def _post(self, addr, body, deadline):
        req = urllib.request.Request(
            addr + REPORT_PATH,
            data=body,
            method="POST",
            headers=_headers(),
        )
        timeout = self._timeout
        left = _remaining(deadline)
        if left is not None:
            timeout = max(min(timeout, left), 0.001)
        try:
            with _OPENER.open(req, timeout=timeout) as resp:
                resp.read(64 << 10)
        except urllib.error.HTTPError as e:
            message = e.read(1024).decode("utf-8", "replace").strip()
            e.close()
            if 400 <= e.code < 500 and e.code not in (408, 429):
                raise RejectedError(e.code, message, 0) from None
            raise _Retryable("%s answered %d: %s" % (addr, e.code, message)) from None
        except (OSError, ValueError) as e:
            # URLError, timeouts and connection errors are OSErrors.
            raise _Retryable("%s: %s" % (addr, e)) from None


Batch = collections.namedtuple(
    "Batch", ["global_batch_size", "local_batch_size", "accum_steps", "reference_batch_size"]
)
Batch.__doc__ = """The batch a task trains at: samples per optimizer step across all
workers, samples one worker computes in one pass, passes it accumulates
before the last, and the batch the learning rate is tuned for (the
jobspec's global_batch_size)."""


def _batch_from_env(cls):
    """The batch of the task's environment, read at every start and resume:
    CARAVAN_GLOBAL_BATCH_SIZE, CARAVAN_LOCAL_BATCH_SIZE, CARAVAN_ACCUM_STEPS
    (0 when unset) and CARAVAN_REFERENCE_BATCH_SIZE (the global batch when
    unset). Raises ValueError when the global or local batch is missing or
    any value is not a non-negative integer."""
    global_bsz = _env_int("CARAVAN_GLOBAL_BATCH_SIZE")
    local = _env_int("CARAVAN_LOCAL_BATCH_SIZE")
    accum = _env_int("CARAVAN_ACCUM_STEPS")
    ref = _env_int("CARAVAN_REFERENCE_BATCH_SIZE") or global_bsz
    if global_bsz < 1 or local < 1 or accum < 0 or ref < 1:
        raise ValueError(
            "CARAVAN_GLOBAL_BATCH_SIZE=%d CARAVAN_LOCAL_BATCH_SIZE=%d CARAVAN_ACCUM_STEPS=%d: "
            "the batches must be positive and the accumulation steps not negative; "
            "is this task running under Caravan?" % (global_bsz, local, accum)
        )
    return cls(global_bsz, local, accum, ref)


Batch.from_env = classmethod(_batch_from_env)


def adascale_gain(grad_sqr, grad_var, batch_size, reference_batch_size):
    """AdaScale's gain (Johnson et al., ICML 2020), the factor of the
    learning rate tuned for reference_batch_size when training at
    batch_size: r = (v + s) / (v / scale + s), with scale = batch_size /
    reference_batch_size, s = grad_sqr and v the variance at the reference
    batch (grad_var, measured at batch_size, times scale). r lies between 1
    (no noise) and scale (all noise: the linear scaling rule), and r /
    scale is the statistical efficiency Caravan's goodput model predicts.
    1 at the reference batch, and when the statistics are not usable
    (grad_sqr not positive, grad_var negative)."""
    if batch_size == reference_batch_size or reference_batch_size <= 0:
        return 1.0
    scale = float(batch_size) / reference_batch_size
    s, v = float(grad_sqr), float(grad_var) * scale
    if not (s > 0 and v >= 0 and math.isfinite(s + v)):
        return 1.0
    r = (v + s) / (v / scale + s)
    return min(max(r, min(1.0, scale)), max(1.0, scale))


def _finite(name, value):
    v = float(value)
    if not math.isfinite(v):
        raise ValueError("%s=%r is not a finite number" % (name, value))
    return v


def _remaining(deadline):
    """Seconds left before deadline (a time.monotonic() value), or None when
    there is none."""
    if deadline is None:
        return None
    return max(deadline - time.monotonic(), 0)


def _headers():
    """The headers of a report: JSON, and the ACL token of the environment."""
    headers = {"Content-Type": "application/json"}
    token = os.environ.get(ENV_TOKEN, "").strip()
    if token:
        headers["X-Caravan-Token"] = token
    return headers


ENV_COORDINATOR_ADDR = "CARAVAN_COORDINATOR_ADDR"
_COORD_ACQUIRE = "/v1/coord/acquire"
_COORD_RELEASE = "/v1/coord/release"


class Coordinator:
    """A task's client of the node's subtask coordinator (collector/coord):
    wrap each computation phase in ``with coord.compute():`` and each pull or
    push in ``with coord.communicate():``; the block runs once the
    coordinator grants the CPU (one computation at a time on the node) or
    the network (a primary and a secondary communication at a time), and
    the slot is released when the block ends, exception or not.

    A Coordinator without an address (CARAVAN_COORDINATOR_ADDR unset) does
    nothing. It fails open: when the coordinator cannot be reached or
    refuses (a full queue), the block runs uncoordinated, a warning is
    logged once, and the coordinator is tried again after ``backoff``
    seconds. ``ttl`` (seconds) is each phase's lease: it must exceed the
    longest phase, and bounds how long a task that dies mid-phase blocks
    the others. Safe to use from several threads."""

    def __init__(self, addr=None, holder="", ttl=30.0, wait=30.0, backoff=5.0):
        self._base = parse_addrs(addr)[0] if addr else None
        self._holder = holder
        self._ttl, self._wait, self._backoff = float(ttl), float(wait), float(backoff)
        self._lock = threading.Lock()
        self._retry_at = 0.0
        self._failing = False
        self.granted = 0
        self.uncoordinated = 0

    @classmethod
    def from_env(cls, **kwargs):
        """A Coordinator of CARAVAN_COORDINATOR_ADDR (a no-op when unset),
        its holder named <job>/<role>-<rank> from the environment."""
        holder = "%s/%s-%s" % (
            os.environ.get("CARAVAN_JOB_ID", ""),
            os.environ.get("CARAVAN_ROLE", "worker"),
            os.environ.get("CARAVAN_RANK", "0"),
        )
        kwargs.setdefault("holder", holder)
        return cls(os.environ.get(ENV_COORDINATOR_ADDR, "").strip() or None, **kwargs)

    @property
    def enabled(self):
        return self._base is not None

    def compute(self):
        """A context manager: the block is a computation (COMP) phase."""
        return _Phase(self, "cpu")

    def communicate(self):
        """A context manager: the block is a communication (pull or push)
        phase."""
        return _Phase(self, "net")

    def acquire(self, resource):
        """Wait for resource ("cpu" or "net"); returns the lease to pass to
        release(), or None when uncoordinated."""
        if self._base is None:
            return None
        with self._lock:
            if time.monotonic() < self._retry_at:
                self.uncoordinated += 1
                return None
        query = urllib.parse.urlencode({
            "resource": resource, "holder": self._holder,
            "ttl": "%gs" % self._ttl, "wait": "%gs" % self._wait,
        })
        while True:
            try:
                ans = self._call(_COORD_ACQUIRE + "?" + query, self._wait + 10)
            except (OSError, ValueError) as e:
                with self._lock:
                    if not self._failing:
                        log.warning("subtask coordinator %s failed; running phases uncoordinated: %s", self._base, e)
                    self._failing = True
                    self._retry_at = time.monotonic() + self._backoff
                    self.uncoordinated += 1
                return None
            # Caravan answers with field names ("Granted"); earlier
            # versions with snake_case keys.
            if ans.get("Granted", ans.get("granted")):
                with self._lock:
                    self._failing = False
                    self.granted += 1
                return ans.get("Lease", ans.get("lease"))

    def release(self, lease):
        """End a lease; an expired one, or an unreachable coordinator, is
        ignored (the lease then expires there)."""
        if lease is None:
            return
        try:
            self._call(_COORD_RELEASE + "?" + urllib.parse.urlencode({"lease": lease}), 5)
        except (OSError, ValueError) as e:
            log.debug("could not release lease %s: %s", lease, e)

    def _call(self, path, timeout):
        req = urllib.request.Request(self._base + path, data=b"", method="POST")
        try:
            with _OPENER.open(req, timeout=timeout) as resp:
                return json.loads(resp.read(64 << 10).decode("utf-8"))
        except urllib.error.HTTPError as e:
            message = e.read(1024).decode("utf-8", "replace").strip()
            e.close()
            raise ValueError("coordinator answered %d: %s" % (e.code, message)) from None


class _Phase:
    def __init__(self, coord, resource):
        self._coord, self._resource, self._lease = coord, resource, None

    def __enter__(self):
        self._lease = self._coord.acquire(self._resource)
        return self

    def __exit__(self, *exc):
        self._coord.release(self._lease)
        self._lease = None
        return False
