package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/collector/client"
	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/structs"
)

// The process tests run the real trainer binary: parameter servers and
// workers as separate processes on loopback, a checkpoint directory in
// t.TempDir, and an httptest collector receiving the workers' samples.

var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// trainerBinary builds the trainer once per test run (with the race
// detector when the tests have it) and returns its path.
func trainerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "caravan-trainer-test-")
		if buildErr != nil {
			return
		}
		buildPath = filepath.Join(buildDir, "trainer")
		args := []string{"build", "-o", buildPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build the trainer: %v", buildErr)
	}
	return buildPath
}

// collector is a POST /v1/report endpoint that checks samples as a
// Caravan server does and keeps them.
type collector struct {
	srv *httptest.Server

	mu sync.Mutex
	// samples are the chief's, tasks the other workers'.
	samples  []structs.Sample
	tasks    []structs.Sample
	rejected []string
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.rejected) > 0 {
			t.Errorf("the collector rejected reports: %q", c.rejected)
		}
	})
	return c
}

func (c *collector) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != client.ReportPath {
		http.Error(w, "no such endpoint", http.StatusNotFound)
		return
	}
	var body struct {
		Samples []structs.Sample `json:"samples"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(&body)
	if err == nil && len(body.Samples) == 0 {
		err = errors.New("request has no samples")
	}
	for i := range body.Samples {
		if err == nil {
			if verr := body.Samples[i].Validate(); verr != nil {
				err = fmt.Errorf("samples[%d]: %w", i, verr)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.rejected = append(c.rejected, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, smp := range body.Samples {
		if smp.Chief() {
			c.samples = append(c.samples, smp)
		} else {
			c.tasks = append(c.tasks, smp)
		}
	}
	fmt.Fprintf(w, `{"Accepted": %d}`, len(body.Samples))
}

// all returns the chief's samples.
func (c *collector) all() []structs.Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]structs.Sample(nil), c.samples...)
}

// others returns the samples of the workers other than the chief.
func (c *collector) others() []structs.Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]structs.Sample(nil), c.tasks...)
}

// waitSample waits for the first sample that match accepts.
func (c *collector) waitSample(t *testing.T, timeout time.Duration, what string, match func(structs.Sample) bool) structs.Sample {
	t.Helper()
	var found structs.Sample
	agent.WaitFor(t, timeout, what, func() error {
		all := c.all()
		for _, s := range all {
			if match(s) {
				found = s
				return nil
			}
		}
		if len(all) == 0 {
			return errors.New("no samples yet")
		}
		last := all[len(all)-1]
		return fmt.Errorf("%d samples, the last at step %d with loss %.4f and checkpoint_step %d", len(all), last.Step, last.Loss, last.CheckpointStep)
	})
	return found
}

// jobSpec is one placement of a training job: how many of each role, and
// the environment Caravan's Nomad driver would give them.
type jobSpec struct {
	ps, workers int
	generation  string
	resume      bool
	dir         string
	collector   *collector
	env         map[string]string // more variables, e.g. the training block
	flags       []string
	// rankFlags, when set, adds flags of one task.
	rankFlags func(role string, rank int) []string
}

// job is the running processes of a jobSpec.
type job struct {
	t     *testing.T
	procs []*proc
	chief *proc
}

// proc is one trainer process; its stderr goes to a file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error // valid once exited is closed
}

// startJob starts the parameter servers, then the workers. Every process
// is killed when the test ends if it is still running.
func startJob(t *testing.T, spec jobSpec) *job {
	t.Helper()
	bin := trainerBinary(t)
	env := map[string]string{
		envJobID:         "logreg",
		envNamespace:     "default",
		envNumPS:         strconv.Itoa(spec.ps),
		envNumWorkers:    strconv.Itoa(spec.workers),
		envCheckpointDir: spec.dir,
		envGeneration:    spec.generation,
		envResume:        "0",
	}
	if spec.resume {
		env[envResume] = "1"
	}
	if spec.collector != nil {
		// Both forms of address; the first is down, as a dead server is.
		env[envCollector] = "127.0.0.1:1," + spec.collector.srv.URL
	}
	for k, v := range spec.env {
		env[k] = v
	}
	j := &job{t: t}
	logDir := t.TempDir()
	for _, role := range []struct {
		name string
		n    int
	}{{structs.RolePS, spec.ps}, {structs.RoleWorker, spec.workers}} {
		for rank := range role.n {
			name := fmt.Sprintf("gen%s-%s-%d", strings.NewReplacer("/", "_", ".", "_").Replace(spec.generation), role.name, rank)
			p := &proc{name: name, exited: make(chan struct{})}
			p.logPath = filepath.Join(logDir, p.name+".log")
			logFile, err := os.Create(p.logPath)
			if err != nil {
				t.Fatal(err)
			}
			flags := spec.flags
			if spec.rankFlags != nil {
				flags = append(slices.Clone(flags), spec.rankFlags(role.name, rank)...)
			}
			p.cmd = exec.Command(bin, flags...)
			p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
			p.cmd.Env = os.Environ()
			for k, v := range env {
				p.cmd.Env = append(p.cmd.Env, k+"="+v)
			}
			p.cmd.Env = append(p.cmd.Env, envRole+"="+role.name, envRank+"="+strconv.Itoa(rank), envAllocID+"="+name)
			if err := p.cmd.Start(); err != nil {
				logFile.Close()
				t.Fatalf("start %s: %v", p.name, err)
			}
			go func() {
				p.err = p.cmd.Wait()
				logFile.Close()
				close(p.exited)
			}()
			t.Cleanup(func() {
				p.kill()
				if t.Failed() {
					t.Logf("last lines of %s:\n%s", p.name, agent.Tail(p.logPath, 25))
				}
			})
			j.procs = append(j.procs, p)
			if role.name == structs.RoleWorker && rank == 0 {
				j.chief = p
			}
		}
	}
	return j
}

func (p *proc) kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", p.name, err)
	}
}

// exitCode waits up to timeout for the process to exit and returns its
// status.
func (p *proc) exitCode(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v", p.name, timeout)
	}
	return p.cmd.ProcessState.ExitCode()
}

// waitExit waits for every process to exit and returns their status by
// name.
func (j *job) waitExit(timeout time.Duration) map[string]int {
	j.t.Helper()
	codes := map[string]int{}
	for _, p := range j.procs {
		codes[p.name] = p.exitCode(j.t, timeout)
	}
	return codes
}

// stop interrupts every process, as Nomad stops tasks, and returns their
// status by name.
func (j *job) stop(timeout time.Duration) map[string]int {
	j.t.Helper()
	for _, p := range j.procs {
		select {
		case <-p.exited:
		default:
			p.signal(j.t, syscall.SIGINT)
		}
	}
	return j.waitExit(timeout)
}

// trainingEnv is the environment of a job's training block.
func trainingEnv(mode string, global, workers, stepsPerEpoch int, threshold float64, patience, maxEpochs int) map[string]string {
	local := global
	if mode == structs.ModeSync {
		local = max(1, global/workers)
	}
	return map[string]string{
		envMode:          mode,
		envGlobalBatch:   strconv.Itoa(global),
		envLocalBatch:    strconv.Itoa(local),
		envStepsPerEpoch: strconv.Itoa(stepsPerEpoch),
		envThreshold:     strconv.FormatFloat(threshold, 'g', -1, 64),
		envPatience:      strconv.Itoa(patience),
		envMaxEpochs:     strconv.Itoa(maxEpochs),
	}
}
