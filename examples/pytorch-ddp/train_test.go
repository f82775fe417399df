package pytorchddp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// python is Debian's Python, which tools/build.sh torch gives PyTorch,
// torchrun and scikit-learn.
const python = "/usr/bin/python3"

// minAccuracy is the test accuracy on the digits that 10 epochs must
// reach: they reach about 0.96.
const minAccuracy = 0.90

// runTimeout bounds each test's torchrun runs: about 30 s unloaded, but
// make test runs other packages beside them on a small machine.
const runTimeout = 4 * time.Minute

// stepsPerEpoch is the optimizer steps of one epoch at the default global
// batch, 64: 1,437 training images split over 2 ranks of 32 each.
const stepsPerEpoch = 23

// lastBatch is the images of an epoch's last step on 1 rank: 1,437 less
// 22 full batches of 64.
const lastBatch = 1437 - (stepsPerEpoch-1)*64

// run is one torchrun of train.py under python3 -m caravan_torch, as a
// Nomad task would run it.
type run struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
}

// start runs train.py with args on ranks local ranks, reporting to c and
// keeping its snapshot in ckpt.
func start(t *testing.T, ctx context.Context, c *collector.Collector, ckpt string, ranks int, env []string, args ...string) *run {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import torch.distributed, sklearn").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import torch and sklearn (make tools, or tools/build.sh torch, installs python3-torch and python3-sklearn): %v\n%s", python, err, out)
	}
	pythonPath, err := filepath.Abs("../../collector/python")
	must.NoError(t, err)
	// --redirects 2 --tee 2: torchrun 1.13 under Python 3.11 fails on
	// the default 0 (README.md, "torchrun on Python 3.11"). The
	// rendezvous is on a free loopback port: --standalone's is always
	// 29400, which a test run beside this one may hold.
	argv := append([]string{"-m", "caravan_torch", "torchrun", "--nnodes=1", "--nproc_per_node=" + strconv.Itoa(ranks),
		"--rdzv_backend=c10d", "--rdzv_endpoint=" + freeAddr(t), "--rdzv_id=" + filepath.Base(t.TempDir()),
		"--redirects", "2", "--tee", "2", "--log_dir", t.TempDir(), "train.py"}, args...)
	r := &run{cmd: exec.CommandContext(ctx, python, argv...)}
	// When ctx ends, the wrapper, torchrun (in a process group of its
	// own) and the workers are killed, and Wait gives up on the output
	// pipes they share soon after, so that a stuck run fails the test in
	// bounded time instead of holding it until the binary's timeout; the
	// test's end kills whatever is left.
	r.cmd.Cancel = func() error { return killTree(r.cmd.Process.Pid) }
	r.cmd.WaitDelay = 5 * time.Second
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = killTree(r.cmd.Process.Pid)
			_ = r.cmd.Wait()
		}
	})
	r.cmd.Env = append(append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1", "OMP_NUM_THREADS=1",
		"CARAVAN_COLLECTOR_ADDR="+c.Addr(), "CARAVAN_JOB_ID=digits", "CARAVAN_CHECKPOINT_DIR="+ckpt), env...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	must.NoError(t, r.cmd.Start())
	return r
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// killTree kills pid and every process descended from it, as /proc
// shows them now.
func killTree(pid int) error {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// "pid (comm) state ppid …": comm may hold spaces and parentheses.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		p, _ := strconv.Atoi(s[:strings.IndexByte(s, ' ')])
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	var first error
	for _, p := range tree {
		if err := syscall.Kill(p, syscall.SIGKILL); err != nil && first == nil && p == pid {
			first = err
		}
	}
	return first
}

func (r *run) wait(t *testing.T) error {
	t.Helper()
	err := r.cmd.Wait()
	t.Logf("train.py stdout:\n%s", r.stdout.String())
	return err
}

var finalLine = regexp.MustCompile(`final step=(\d+) test_accuracy=([0-9.]+)`)

// TestTrain trains the digits for 10 epochs on 2 ranks: the loss falls,
// the test accuracy passes minAccuracy, and rank 0 reported every step
// and confirmed the snapshots.
func TestTrain(t *testing.T) {
	c := collector.TestCollector(t, collector.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	r := start(t, ctx, c, t.TempDir(), 2, nil, "--epochs", "10", "--save-every", "5")
	must.NoError(t, r.wait(t), must.Sprint(r.stderr.String()))

	m := finalLine.FindStringSubmatch(r.stdout.String())
	must.NotNil(t, m, must.Sprintf("no final line in:\n%s", r.stdout.String()))
	must.Eq(t, strconv.Itoa(10*stepsPerEpoch), m[1])
	acc, err := strconv.ParseFloat(m[2], 64)
	must.NoError(t, err)
	must.Greater(t, minAccuracy, acc, must.Sprintf("test accuracy %v", acc))

	samples := c.Samples(ctx, 0, collector.DefaultLimit, 0).Samples
	var steps []structs.Sample
	var confirmed []int64
	for _, s := range samples {
		if s.CheckpointStep == s.Step {
			confirmed = append(confirmed, s.Step)
			continue
		}
		steps = append(steps, s)
	}
	must.SliceLen(t, 10*stepsPerEpoch, steps, must.Sprint("one sample a step"))
	must.Eq(t, []int64{5 * stepsPerEpoch, 10 * stepsPerEpoch, 10 * stepsPerEpoch}, confirmed,
		must.Sprint("a snapshot every 5 epochs, and one at the end"))
	first, last := meanLoss(steps[:stepsPerEpoch]), meanLoss(steps[len(steps)-stepsPerEpoch:])
	must.Less(t, first/5, last, must.Sprintf("the last epoch's loss %v is not a fifth of the first's %v", last, first))
	must.Eq(t, 2, steps[0].NumWorkers)
	must.Eq(t, 64, steps[0].Samples)
}

// TestCheckpointSignal sends SIGUSR1 to the task's main process during
// training on 2 ranks, as Caravan does through Nomad: rank 0 writes a
// snapshot and reports it. After a stop (SIGTERM, Nomad's), a restart on
// 1 rank, a rescale, resumes at the snapshot's step.
func TestCheckpointSignal(t *testing.T) {
	c := collector.TestCollector(t, collector.Config{})
	ckpt := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	r := start(t, ctx, c, ckpt, 2, nil, "--epochs", "1000", "--save-every", "0")

	agent.WaitFor(t, 60*time.Second, "step 20", func() error {
		if n := len(c.Samples(ctx, 0, collector.DefaultLimit, 0).Samples); n < 20 {
			return fmt.Errorf("%d samples", n)
		}
		return nil
	})
	must.NoError(t, r.cmd.Process.Signal(syscall.SIGUSR1))
	var k int64
	agent.WaitFor(t, 30*time.Second, "the confirmed snapshot", func() error {
		for _, s := range c.Samples(ctx, 0, collector.DefaultLimit, 0).Samples {
			if s.CheckpointStep > 0 {
				k = s.CheckpointStep
				return nil
			}
		}
		return errors.New("no sample with checkpoint_step")
	})
	must.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	must.Error(t, r.wait(t), must.Sprint("a stopped torchrun exits non-zero"))
	_, err := os.Stat(filepath.Join(ckpt, "snapshot.pt"))
	must.NoError(t, err)

	before := len(c.Samples(ctx, 0, collector.DefaultLimit, 0).Samples)
	r = start(t, ctx, c, ckpt, 1, []string{"CARAVAN_RESUME=1"}, "--epochs", "1000", "--save-every", "0",
		"--max-steps", strconv.FormatInt(k+5, 10))
	must.NoError(t, r.wait(t), must.Sprint(r.stderr.String()))
	must.StrContains(t, r.stdout.String(), fmt.Sprintf("Resuming training from snapshot at step %d", k))
	resumed := c.Samples(ctx, uint64(before), collector.DefaultLimit, 0).Samples
	must.SliceNotEmpty(t, resumed)
	must.Eq(t, k+1, resumed[0].Step, must.Sprint("the restart's first step follows the snapshot's"))
	must.Eq(t, k, resumed[0].CheckpointStep)
	must.Eq(t, 1, resumed[0].NumWorkers)
	batch := int64(64)
	if resumed[0].Step%stepsPerEpoch == 0 {
		batch = lastBatch
	}
	must.Eq(t, batch, resumed[0].Samples, must.Sprint("the global batch is kept: 1 rank of 64, less at an epoch's end"))
	last := resumed[len(resumed)-1]
	must.Eq(t, k+5, last.Step)
	must.Eq(t, k+5, last.CheckpointStep, must.Sprint("the final snapshot is confirmed"))
}

func meanLoss(samples []structs.Sample) float64 {
	var sum float64
	for _, s := range samples {
		sum += s.Loss
	}
	return sum / float64(len(samples))
}
