package collector

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	must.StrContains(t, out.Rejected.Message, "samples[0]: loss: -1 must be a finite number, not negative")
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
