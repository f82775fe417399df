package collector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector/coord"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestPythonClient runs testdata/report.py, which reports through
// python/caravan_collector.py as a PyTorch script would, against a real
// collector. The first address of CARAVAN_COLLECTOR_ADDR is dead: the
// client fails over to the second.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to test the Python client: %v", err)
	}
	c := TestCollector(t, Config{})
	dead := "127.0.0.1:" + strconv.Itoa(agent.FreePorts(t, 1)[0])
	pythonPath, err := filepath.Abs("python")
	must.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/report.py")
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+pythonPath,
		"PYTHONDONTWRITEBYTECODE=1",
		"CARAVAN_COLLECTOR_ADDR="+dead+", http://"+c.Addr()+"/",
		"CARAVAN_JOB_ID=py-job",
		"CARAVAN_NAMESPACE=ml",
		"CARAVAN_ROLE=worker",
		"CARAVAN_RANK=2",
		"CARAVAN_NUM_PS=1",
		"CARAVAN_NUM_WORKERS=4",
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	must.NoError(t, err, must.Sprintf("python3 testdata/report.py:\n%s", stderr.String()))

	var out struct {
		Pending  int      `json:"pending"`
		Dropped  int      `json:"dropped"`
		Addrs    []string `json:"addrs"`
		NaN      string   `json:"nan"`
		Rejected *struct {
			Status  int    `json:"status"`
			Message string `json:"message"`
			Error   string `json:"error"`
		} `json:"rejected"`
		DroppedAfterReject int `json:"dropped_after_reject"`
	}
	must.NoError(t, json.Unmarshal(stdout, &out), must.Sprintf("output: %s\nstderr: %s", stdout, stderr.String()))
	must.Eq(t, []string{"http://" + dead, "http://" + c.Addr()}, out.Addrs)
	must.Eq(t, 0, out.Pending, must.Sprint("flush delivered everything"))
	must.Eq(t, 0, out.Dropped)
	must.StrContains(t, out.NaN, "loss=nan is not a finite number", must.Sprint("report() refuses what JSON cannot carry"))

	// The malformed sample: a clear 4xx surfaced by flush().
	must.NotNil(t, out.Rejected, must.Sprint("flush() raises RejectedError"))
	must.Eq(t, 400, out.Rejected.Status)
	must.StrContains(t, out.Rejected.Message, "samples[0]: Loss: -1 must be a finite number, not negative")
	must.StrContains(t, out.Rejected.Error, "collector rejected 1 samples (HTTP 400)")
	must.Eq(t, 1, out.DroppedAfterReject)

	p := c.Samples(ctx, 0, DefaultLimit, 0)
	must.SliceLen(t, 5, p.Samples)
	for i, s := range p.Samples {
		step := int64(i + 1)
		ckpt := int64(0)
		if step >= 4 {
			ckpt = 4
		}
		must.Positive(t, s.Time, must.Sprint("the client stamps the time"))
		must.Eq(t, structs.Sample{
			Namespace: "ml", JobID: "py-job", Role: structs.RoleWorker, Rank: 2,
			Step: step, Epoch: float64(step) / 10, Loss: 1 / float64(step), StepTimeS: 0.5,
			Samples: 32, CPUS: 0.4, NetS: 0.1, CheckpointStep: ckpt, NumPS: 1, NumWorkers: 4,
			Time: s.Time,
		}, s)
	}
	must.Eq(t, 1, c.Stats().Rejected)

	t.Run("three lines, no flush", func(t *testing.T) {
		// What the README shows: the samples still buffered are sent at
		// exit.
		cmd := exec.CommandContext(ctx, python, "-c",
			"from caravan_collector import Reporter; r = Reporter.from_env(); r.report(step=7, loss=0.25)")
		cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1",
			"CARAVAN_COLLECTOR_ADDR="+c.Addr(), "CARAVAN_JOB_ID=three-lines")
		out, err := cmd.CombinedOutput()
		must.NoError(t, err, must.Sprint(string(out)))
		p := c.Samples(ctx, 5, DefaultLimit, 0)
		must.SliceLen(t, 1, p.Samples)
		must.Eq(t, "three-lines", p.Samples[0].JobID)
		must.Eq(t, 7, p.Samples[0].Step)
		must.Eq(t, 0.25, p.Samples[0].Loss)
	})

	t.Run("the batch", func(t *testing.T) {
		// A task of an adaptive job reads its batch from the environment
		// and reports it with its noise statistics; AdaScale's gain at 4×
		// the reference batch with grad_sqr 3 and grad_var 0.5 (2 at the
		// reference) is (2 + 3)/(2/4 + 3).
		script := `
import json
from caravan_collector import Batch, Reporter, adascale_gain
b = Batch.from_env()
r = Reporter.from_env()
r.report(step=9, loss=0.5, batch_size=b.global_batch_size, local_batch_size=b.local_batch_size,
         accum_steps=b.accum_steps, grad_sqr=3.0, grad_var=0.5)
r.flush(timeout=10)
print(json.dumps({"batch": b._asdict(), "gain": adascale_gain(3.0, 0.5, b.global_batch_size, b.reference_batch_size),
                  "fixed": adascale_gain(3.0, 0.5, 32, 32)}))
`
		cmd := exec.CommandContext(ctx, python, "-c", script)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1",
			"CARAVAN_COLLECTOR_ADDR="+c.Addr(), "CARAVAN_JOB_ID=adaptive",
			"CARAVAN_GLOBAL_BATCH_SIZE=128", "CARAVAN_LOCAL_BATCH_SIZE=16", "CARAVAN_ACCUM_STEPS=1",
			"CARAVAN_REFERENCE_BATCH_SIZE=32", "CARAVAN_NUM_WORKERS=4")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		must.NoError(t, err, must.Sprint(stderr.String()))
		var got struct {
			Batch map[string]int `json:"batch"`
			Gain  float64        `json:"gain"`
			Fixed float64        `json:"fixed"`
		}
		must.NoError(t, json.Unmarshal(stdout, &got), must.Sprint(string(stdout)))
		must.Eq(t, map[string]int{"global_batch_size": 128, "local_batch_size": 16, "accum_steps": 1, "reference_batch_size": 32}, got.Batch)
		must.Less(t, 1e-12, got.Gain-5/3.5)
		must.Greater(t, -1e-12, got.Gain-5/3.5)
		must.Eq(t, 1.0, got.Fixed)
		var s structs.Sample
		agent.WaitFor(t, 10*time.Second, "the sample", func() error {
			for _, smp := range c.Samples(ctx, 0, DefaultLimit, 0).Samples {
				if smp.JobID == "adaptive" {
					s = smp
					return nil
				}
			}
			return errors.New("not received")
		})
		must.Eq(t, 128, s.BatchSize)
		must.Eq(t, 16, s.LocalBatchSize)
		must.Eq(t, 1, s.AccumSteps)
		must.Eq(t, 3.0, s.GradSqr)
		must.Eq(t, 0.5, s.GradVar)
	})
	t.Run("from_env without an address", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, python, "-c", "from caravan_collector import Reporter; Reporter.from_env()")
		cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1", "CARAVAN_COLLECTOR_ADDR=")
		out, err := cmd.CombinedOutput()
		must.Error(t, err)
		must.StrContains(t, string(out), "CARAVAN_COLLECTOR_ADDR is not set")
	})
}

// TestPythonCoordinator runs testdata/coordinate.py: two threads take
// turns for the CPU through the Python client of the node's subtask
// coordinator, served by a collector; without an address the client is a
// no-op, and with a dead one the phases run uncoordinated.
func TestPythonCoordinator(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to test the Python client: %v", err)
	}
	co, err := coord.New(coord.Config{})
	must.NoError(t, err)
	c := TestCollector(t, Config{Coordinator: co})
	pythonPath, err := filepath.Abs("python")
	must.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/coordinate.py")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1",
		"CARAVAN_COORDINATOR_ADDR="+c.Addr(), "CARAVAN_JOB_ID=py",
		"DEAD_ADDR=127.0.0.1:"+strconv.Itoa(agent.FreePorts(t, 1)[0]))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	must.NoError(t, err, must.Sprintf("python3 testdata/coordinate.py:\n%s", stderr.String()))
	var out struct {
		Overlaps           int   `json:"overlaps"`
		Granted            []int `json:"granted"`
		EnabledWithoutAddr bool  `json:"enabled_without_addr"`
		DeadRan            int   `json:"dead_ran"`
		DeadUncoordinated  int   `json:"dead_uncoordinated"`
	}
	must.NoError(t, json.Unmarshal(stdout, &out), must.Sprintf("output: %s\nstderr: %s", stdout, stderr.String()))
	must.Eq(t, 0, out.Overlaps, must.Sprint("no two compute blocks ran at once"))
	must.Eq(t, []int{41, 40}, out.Granted)
	must.False(t, out.EnabledWithoutAddr)
	must.Eq(t, 3, out.DeadRan)
	must.Eq(t, 3, out.DeadUncoordinated)
	st := co.Status().Resources
	must.Eq(t, uint64(41), st[coord.CPU].Released, must.Sprint("every block released its slot, the one that raised too"))
	must.Eq(t, uint64(40), st[coord.Net].Released)
	must.Eq(t, 1, st[coord.CPU].MaxHolders)
}

// torchPython is Debian's Python with PyTorch (tools/build.sh torch): the
// test is skipped, saying how to install it, when it cannot import torch.
func torchPython(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import torch.distributed").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import torch (make tools, or tools/build.sh torch, installs python3-torch): %v\n%s", python, err, out)
	}
	return python
}

// TestPythonTorch runs testdata/torch_job.py: two gloo ranks train through
// python/caravan_torch.py against a real collector; rank 1 alone catches
// the checkpoint signal before step 3, and both ranks must agree on the
// request at step 3, rank 0 write the snapshot of step 3 and confirm it
// with a flushed sample, and a fresh Job load it.
func TestPythonTorch(t *testing.T) {
	python := torchPython(t)
	c := TestCollector(t, Config{})
	pythonPath, err := filepath.Abs("python")
	must.NoError(t, err)
	ckpt := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/torch_job.py")
	// At the deadline the whole process group goes, the spawned ranks
	// too, and Output stops waiting for their end of stdout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1",
		"CARAVAN_COLLECTOR_ADDR="+c.Addr(), "CARAVAN_JOB_ID=ddp", "CARAVAN_NAMESPACE=ml",
		"CARAVAN_CHECKPOINT_DIR="+ckpt, "CARAVAN_NUM_WORKERS=2",
		"CARAVAN_GLOBAL_BATCH_SIZE=16", "CARAVAN_LOCAL_BATCH_SIZE=8", "OMP_NUM_THREADS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	must.NoError(t, err, must.Sprintf("python3 testdata/torch_job.py:\n%s", stderr.String()))
	var out struct {
		Ranks []struct {
			Rank           int   `json:"rank"`
			Start          int   `json:"start"`
			Requested      []int `json:"requested"`
			LocalBatchSize int   `json:"local_batch_size"`
			Loaded         int   `json:"loaded"`
			SameParams     bool  `json:"same_params"`
			MomentumLoaded bool  `json:"momentum_loaded"`
		} `json:"ranks"`
		Files []string `json:"files"`
	}
	must.NoError(t, json.Unmarshal(stdout, &out), must.Sprintf("output: %s\nstderr: %s", stdout, stderr.String()))
	must.SliceLen(t, 2, out.Ranks)
	for _, r := range out.Ranks {
		must.Eq(t, 0, r.Start, must.Sprintf("rank %d: no snapshot at first", r.Rank))
		must.Eq(t, []int{3}, r.Requested, must.Sprintf("rank %d agrees on the request at the step rank 1 caught it", r.Rank))
		must.Eq(t, 8, r.LocalBatchSize, must.Sprint("the batch Caravan chose"))
		must.Eq(t, 3, r.Loaded, must.Sprintf("rank %d loads the snapshot's step", r.Rank))
		must.True(t, r.MomentumLoaded, must.Sprintf("rank %d loads the optimizer's state", r.Rank))
	}
	must.True(t, out.Ranks[0].SameParams, must.Sprint("the snapshot holds the parameters of step 3"))
	must.Eq(t, []string{"snapshot.pt"}, out.Files, must.Sprint("no temporary file is left"))

	// Rank 0 alone reports: steps 1 to 6, and the confirmation of step 3
	// right after its step's sample.
	p := c.Samples(ctx, 0, DefaultLimit, 0)
	var steps, ckpts []int64
	for _, s := range p.Samples {
		must.Eq(t, "ddp", s.JobID)
		must.Eq(t, "ml", s.Namespace)
		must.Eq(t, 0, s.Rank)
		must.Eq(t, structs.RoleWorker, s.Role)
		must.Eq(t, 2, s.NumWorkers)
		must.Eq(t, 16, s.BatchSize)
		must.Eq(t, 8, s.LocalBatchSize)
		steps = append(steps, s.Step)
		ckpts = append(ckpts, s.CheckpointStep)
	}
	must.Eq(t, []int64{1, 2, 3, 3, 4, 5, 6}, steps)
	must.Eq(t, []int64{0, 0, 0, 3, 3, 3, 3}, ckpts)
	must.Eq(t, 16, p.Samples[0].Samples)
	must.Positive(t, p.Samples[1].StepTimeS, must.Sprint("the time per step since the last report"))
}

// TestPythonTorchRun runs testdata/torch_wrapper_child.py under `python3
// -m caravan_torch`, as a task's main process runs torchrun (no torch
// needed): the launcher inherits the checkpoint signal ignored, the
// wrapper forwards it to the worker in the launcher's process group and
// SIGTERM to the launcher, and exits 128+15 when the launcher dies of it.
func TestPythonTorchRun(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to test the Python client: %v", err)
	}
	pythonPath, err := filepath.Abs("python")
	must.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "caravan_torch", python, "testdata/torch_wrapper_child.py")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1")
	stdout, err := cmd.StdoutPipe()
	must.NoError(t, err)
	// A file, not a buffer: the messages read it while the process runs.
	stderrPath := filepath.Join(t.TempDir(), "stderr")
	stderrFile, err := os.Create(stderrPath)
	must.NoError(t, err)
	defer stderrFile.Close()
	cmd.Stderr = stderrFile
	stderr := func() string {
		b, _ := os.ReadFile(stderrPath)
		return string(b)
	}
	must.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	expect := func(want string) {
		t.Helper()
		must.True(t, lines.Scan(), must.Sprintf("expected %q; stderr:\n%s", want, stderr()))
		must.Eq(t, want, lines.Text())
	}
	expect("launcher ignores SIGUSR1: True")
	expect("worker ready")
	must.NoError(t, cmd.Process.Signal(syscall.SIGUSR1))
	expect("worker caught SIGUSR1")
	expect("worker exited 0")
	expect("launcher waits for SIGTERM")
	must.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	var exit *exec.ExitError
	must.True(t, errors.As(err, &exit), must.Sprintf("wait: %v; stderr:\n%s", err, stderr()))
	must.Eq(t, 128+int(syscall.SIGTERM), exit.ExitCode())
}

// TestPythonTorchrunArgs checks the torchrun flags caravan_torch's
// wrapper inserts from the rendezvous the Nomad driver gives a torchrun
// job's tasks, and that it leaves a command alone outside one.
func TestPythonTorchrunArgs(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to test the Python client: %v", err)
	}
	pythonPath, err := filepath.Abs("python")
	must.NoError(t, err)
	rdzv := map[string]string{
		"CARAVAN_RDZV_ENDPOINT": "10.0.0.7:45123", "CARAVAN_RDZV_ID": "default.ddp.3",
		"CARAVAN_NUM_WORKERS": "2", "CARAVAN_RANK": "0",
	}
	cases := []struct {
		name string
		argv []string
		env  map[string]string
		want []string
	}{
		{"rank 0", []string{"torchrun", "train.py", "--epochs", "3"}, rdzv, []string{
			"torchrun", "--nnodes=2", "--nproc_per_node=1", "--rdzv_backend=c10d", "--rdzv_endpoint=10.0.0.7:45123",
			"--rdzv_id=default.ddp.3", "--rdzv_conf=is_host=1", "--max_restarts=0", "--redirects=2", "--tee=2",
			"train.py", "--epochs", "3"}},
		{"rank 1, the user's flags kept", []string{"python3", "-m", "torch.distributed.run", "--nproc_per_node=2", "--tee", "3", "t.py"},
			map[string]string{"CARAVAN_RDZV_ENDPOINT": "h:1", "CARAVAN_RDZV_ID": "x", "CARAVAN_NUM_WORKERS": "3", "CARAVAN_RANK": "1"},
			[]string{"python3", "-m", "torch.distributed.run", "--nnodes=3", "--rdzv_backend=c10d", "--rdzv_endpoint=h:1",
				"--rdzv_id=x", "--rdzv_conf=is_host=0", "--max_restarts=0", "--redirects=2", "--nproc_per_node=2", "--tee", "3", "t.py"}},
		{"no rendezvous", []string{"torchrun", "train.py"}, map[string]string{}, []string{"torchrun", "train.py"}},
		{"standalone", []string{"torchrun", "--standalone", "train.py"}, rdzv, []string{"torchrun", "--standalone", "train.py"}},
		{"not torchrun", []string{"python3", "train.py"}, rdzv, []string{"python3", "train.py"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := json.Marshal(map[string]any{"argv": tc.argv, "env": tc.env})
			must.NoError(t, err)
			cmd := exec.Command(python, "-c", "import json, sys, caravan_torch; a = json.load(sys.stdin); print(json.dumps(caravan_torch.torchrun_args(a['argv'], a['env'])))")
			cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1")
			cmd.Stdin = bytes.NewReader(in)
			out, err := cmd.Output()
			must.NoError(t, err)
			var got []string
			must.NoError(t, json.Unmarshal(out, &got))
			must.Eq(t, tc.want, got)
		})
	}
}
