//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector/coord"
	"github.com/caravan-sched/caravan/e2e/agent"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// colocationSteps is how many steps each co-located job trains: about
// 100 ms a step with colocationArgs, so a run lasts about 10 s.
const colocationSteps = 100

// colocationArgs make a trainer step three comparable phases: a pull and
// a push of 1 MB each over a link paced at 50 MB/s (about 20 ms each and
// little CPU), and a computation of 2,000 gradient passes spread over
// every core (about 30 ms on this 2-core machine when alone).
var colocationArgs = []string{"-sample-cost", "0", "-cpu-work", "2000", "-comm-bytes", "1000000", "-link-rate", "50000000"}

// phaseLine is one line of the trainer's -phase-log.
type phaseLine struct {
	Job    string `json:"job"`
	Step   int64  `json:"step"`
	Phase  string `json:"phase"`
	Start  int64  `json:"start_ns"`
	End    int64  `json:"end_ns"`
	Waited int64  `json:"waited_ns"`
}

// interval is [start, end) in Unix ns.
type interval struct{ start, end int64 }

// jobPhases is what one job's worker logged.
type jobPhases struct {
	compute []interval
	// iterations start when a step's pull is asked for.
	iterations []int64
	computeNs  int64
}

func readPhases(t *testing.T, path string) *jobPhases {
	t.Helper()
	f, err := os.Open(path)
	must.NoError(t, err)
	defer f.Close()
	jp := &jobPhases{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p phaseLine
		must.NoError(t, json.Unmarshal(sc.Bytes(), &p), must.Sprintf("line %q", sc.Text()))
		switch p.Phase {
		case "pull":
			jp.iterations = append(jp.iterations, p.Start-p.Waited)
		case "compute":
			jp.compute = append(jp.compute, interval{p.Start, p.End})
			jp.computeNs += p.End - p.Start
		}
	}
	must.NoError(t, sc.Err())
	return jp
}

// meanIteration is the mean time between the starts of consecutive
// iterations that both begin within [from, to]: the steps the job ran
// while the other ran too.
func (jp *jobPhases) meanIteration(from, to int64) (time.Duration, int) {
	var sum int64
	n := 0
	for i := 1; i < len(jp.iterations); i++ {
		if jp.iterations[i-1] >= from && jp.iterations[i] <= to {
			sum += jp.iterations[i] - jp.iterations[i-1]
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return time.Duration(sum / int64(n)), n
}

// overlap sums the time two sorted lists of intervals intersect.
func overlap(a, b []interval) time.Duration {
	var total int64
	for i, k := 0, 0; i < len(a) && k < len(b); {
		if lo, hi := max(a[i].start, b[k].start), min(a[i].end, b[k].end); hi > lo {
			total += hi - lo
		}
		if a[i].end < b[k].end {
			i++
		} else {
			k++
		}
	}
	return time.Duration(total)
}

// colocatedJob is a Nomad batch job of examples/trainer: one parameter
// server and one worker in one group, on the dev agent's only node.
func colocatedJob(id, trainer, dir, coordAddr string) *nomadapi.Job {
	job := nomadapi.NewBatchJob(id, id, "global", 50)
	job.Datacenters = []string{"*"}
	grp := nomadapi.NewTaskGroup("train", 1)
	grp.RestartPolicy = &nomadapi.RestartPolicy{Attempts: new(0), Mode: new("fail")}
	grp.ReschedulePolicy = &nomadapi.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)}
	for _, role := range []string{"ps", "worker"} {
		args := []string{"-rendezvous-timeout", "1m", "-rpc-timeout", "30s"}
		if role == "worker" {
			args = append(args, colocationArgs...)
			args = append(args, "-max-steps", strconv.Itoa(colocationSteps), "-phase-log", filepath.Join(dir, id+".phases.jsonl"))
		}
		env := map[string]string{
			"CARAVAN_JOB_ID": id, "CARAVAN_ROLE": role, "CARAVAN_RANK": "0",
			"CARAVAN_NUM_WORKERS": "1", "CARAVAN_NUM_PS": "1",
			"CARAVAN_CHECKPOINT_DIR": filepath.Join(dir, id),
			"CARAVAN_GENERATION":     "1",
		}
		if coordAddr != "" {
			env["CARAVAN_COORDINATOR_ADDR"] = coordAddr
		}
		task := nomadapi.NewTask(role, "raw_exec").
			SetConfig("command", trainer).
			SetConfig("args", args).
			Require(&nomadapi.Resources{CPU: new(100), MemoryMB: new(128)})
		task.Env = env
		grp.AddTask(task)
	}
	job.AddTaskGroup(grp)
	return job
}

// coordinatorJob is the node's subtask coordinator as it is deployed:
// deploy/nomad/caravan-coordinator.nomad.hcl, a system job running
// `caravan collector -coordinator` on a fixed loopback port of every
// node, parsed by Nomad with this checkout's binary and addr.
func coordinatorJob(t *testing.T, c *nomadapi.Client, caravan, addr string) *nomadapi.Job {
	t.Helper()
	src, err := os.ReadFile("../deploy/nomad/caravan-coordinator.nomad.hcl")
	must.NoError(t, err)
	job, err := c.Jobs().ParseHCLOpts(&nomadapi.JobsParseRequest{
		JobHCL:       string(src),
		Variables:    fmt.Sprintf("caravan_binary = %q\naddr = %q\n", caravan, addr),
		Canonicalize: true,
	})
	must.NoError(t, err)
	must.Eq(t, "system", *job.Type)
	return job
}

// stopNomadJob stops a Nomad job, if it still runs, and waits until none
// of its allocations runs: the dev agent leaves its tasks running when it
// stops, so a test stops its jobs first.
func stopNomadJob(t *testing.T, c *nomadapi.Client, id string) {
	t.Helper()
	if _, _, err := c.Jobs().Deregister(id, false, nil); err != nil {
		t.Logf("stop Nomad job %s: %v", id, err)
		return
	}
	agent.WaitFor(t, 30*time.Second, "Nomad job "+id+" stopped", func() error {
		allocs, _, err := c.Jobs().Allocations(id, true, nil)
		if err != nil {
			return err
		}
		for _, a := range allocs {
			if a.ClientStatus == nomadapi.AllocClientStatusRunning || a.ClientStatus == nomadapi.AllocClientStatusPending {
				return fmt.Errorf("allocation %s is %s", a.ID, a.ClientStatus)
			}
		}
		return nil
	})
}

func coordStatus(addr string) (*coord.Status, error) {
	resp, err := http.Get("http://" + addr + coord.StatusPath)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var st coord.Status
	return &st, json.NewDecoder(resp.Body).Decode(&st)
}

// colocationRun is what one run of the two co-located jobs measured.
type colocationRun struct {
	name       string
	iter       map[string]time.Duration
	iters      map[string]int
	compute    map[string]time.Duration
	cpuOverlap time.Duration
	wall       time.Duration
}

// runColocated runs jobs a and b of the run on Nomad at once, each with
// coordAddr as its coordinator ("" for none), waits for both to
// complete, and measures them from their phase logs.
func runColocated(t *testing.T, c *nomadapi.Client, name, trainer, coordAddr string) *colocationRun {
	t.Helper()
	dir := t.TempDir()
	ids := []string{name + "-a", name + "-b"}
	start := time.Now()
	for _, id := range ids {
		_, _, err := c.Jobs().Register(colocatedJob(id, trainer, dir, coordAddr), nil)
		must.NoError(t, err)
		t.Cleanup(func() { stopNomadJob(t, c, id) })
	}
	for _, id := range ids {
		completedAlloc(t, c, id)
	}
	run := &colocationRun{name: name, wall: time.Since(start), iter: map[string]time.Duration{}, iters: map[string]int{}, compute: map[string]time.Duration{}}
	a, b := readPhases(t, filepath.Join(dir, ids[0]+".phases.jsonl")), readPhases(t, filepath.Join(dir, ids[1]+".phases.jsonl"))
	for _, jp := range []*jobPhases{a, b} {
		// Steps 0 to colocationSteps: the last is computed, then the
		// chief stops.
		must.SliceLen(t, colocationSteps+1, jp.compute, must.Sprint("one computation phase per step"))
	}
	// The window where both jobs trained.
	from := max(a.iterations[0], b.iterations[0])
	to := min(a.iterations[len(a.iterations)-1], b.iterations[len(b.iterations)-1])
	for i, jp := range []*jobPhases{a, b} {
		job := ids[i][len(name)+1:]
		run.iter[job], run.iters[job] = jp.meanIteration(from, to)
		run.compute[job] = time.Duration(jp.computeNs / int64(len(jp.compute)))
		must.Greater(t, colocationSteps/2, run.iters[job], must.Sprintf("job %s ran %d of its steps while the other ran: the jobs did not run together", ids[i], run.iters[job]))
	}
	run.cpuOverlap = overlap(a.compute, b.compute)
	return run
}

// TestColocation runs two co-located trainer jobs on one Nomad node, each
// step a pull, a computation over every core and a push of comparable
// lengths, first without and then with the node's subtask coordinator
// (collector/coord, run as the system job in deploy/nomad), and logs both jobs' mean
// iteration times. With the coordinator the two jobs' computation phases
// never overlap (measured from the trainers' own clocks, not the
// coordinator's counters), while without it they do.
func TestColocation(t *testing.T) {
	nomad := agent.StartNomad(t, agent.NomadOptions{})
	trainer := buildTrainer(t)
	caravan := agent.BuildCaravan(t)
	addr := "127.0.0.1:" + strconv.Itoa(agent.FreePorts(t, 1)[0])

	coordJob := coordinatorJob(t, nomad.Client, caravan, addr)
	_, _, err := nomad.Client.Jobs().Register(coordJob, nil)
	must.NoError(t, err)
	t.Cleanup(func() {
		// The system job runs until stopped: stop it, and wait until
		// its process is gone.
		stopNomadJob(t, nomad.Client, *coordJob.ID)
		agent.WaitFor(t, 30*time.Second, "the coordinator to stop", func() error {
			if _, err := coordStatus(addr); err == nil {
				return fmt.Errorf("the coordinator at %s still answers", addr)
			}
			return nil
		})
	})
	agent.WaitFor(t, time.Minute, "the coordinator system job serving on "+addr, func() error {
		_, err := coordStatus(addr)
		return err
	})

	off := runColocated(t, nomad.Client, "off", trainer, "")
	before, err := coordStatus(addr)
	must.NoError(t, err)
	must.Eq(t, uint64(0), before.Resources[coord.CPU].Granted, must.Sprint("jobs without CARAVAN_COORDINATOR_ADDR never ask"))
	on := runColocated(t, nomad.Client, "on", trainer, addr)
	after, err := coordStatus(addr)
	must.NoError(t, err)

	var b strings.Builder
	fmt.Fprintf(&b, "two co-located trainer jobs, %d steps each, on one Nomad node (%s)\n", colocationSteps, strings.Join(colocationArgs, " "))
	fmt.Fprintf(&b, "%-16s %14s %14s %16s %16s %16s %8s\n", "coordinator", "a iteration", "b iteration", "a computation", "b computation", "CPU overlap", "wall")
	for _, r := range []*colocationRun{off, on} {
		fmt.Fprintf(&b, "%-16s %11.1f ms %11.1f ms %13.1f ms %13.1f ms %13.0f ms %7.1fs\n", r.name,
			ms(r.iter["a"]), ms(r.iter["b"]), ms(r.compute["a"]), ms(r.compute["b"]), ms(r.cpuOverlap), r.wall.Seconds())
	}
	cpu, net := after.Resources[coord.CPU], after.Resources[coord.Net]
	fmt.Fprintf(&b, "coordinator: cpu granted %d, waited %.2fs in all, max holders %d, expired %d; net granted %d (%d as the secondary), max holders %d",
		cpu.Granted, cpu.WaitedSeconds, cpu.MaxHolders, cpu.Expired, net.Granted, net.Secondary, net.MaxHolders)
	t.Log(b.String())

	// Uncoordinated, the computations of two jobs using every core
	// collide: the measure below can see an overlap.
	must.Greater(t, 0, off.cpuOverlap, must.Sprint("without the coordinator the jobs' computation phases overlap"))
	// Coordinated, never: each trainer stamps its phase after its grant
	// and before its release.
	must.Eq(t, time.Duration(0), on.cpuOverlap, must.Sprint("with the coordinator no two computation phases overlap"))
	must.Eq(t, uint64(2*(colocationSteps+1)), cpu.Granted, must.Sprint("every computation phase of both jobs was admitted"))
	must.Eq(t, uint64(2*(2*colocationSteps+1)), net.Granted, must.Sprint("every pull and push of both jobs was admitted"))
	must.Eq(t, uint64(0), cpu.Expired+net.Expired, must.Sprint("no lease outlived its phase"))
	must.Eq(t, 1, cpu.MaxHolders)
	must.Between(t, 1, net.MaxHolders, 2)
	// What coordination costs is counted above, not timed: one grant per
	// phase (two round trips to a loopback HTTP server), no lease held
	// past its phase, and the jobs still ran together (runColocated).
	// The iteration times of the two runs are in the table only: their
	// ratio is the machine's load as much as the coordinator's.
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
