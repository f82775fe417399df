package server

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caravan-sched/caravan/e2e/agent"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/server/fsm"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/shoenig/test/must"
)

// TestCluster_PoisonedEntry: a Raft log entry that no server can decode (a
// job whose driver config nests beyond msgpack's maximum depth, as the API
// of earlier versions committed) no longer stops a cluster from starting.
// Three servers are stopped, the entry is appended to each one's log after
// a registered job, and the servers restart on their data: they elect a
// leader, every one records the same EntrySkipped event for the entry,
// keep the job registered before it, and accept new writes.
func TestCluster_PoisonedEntry(t *testing.T) {
	const n = 3
	ports := agent.FreePorts(t, 2*n)
	var httpAddrs []string
	for _, p := range ports[:n] {
		httpAddrs = append(httpAddrs, fmt.Sprintf("127.0.0.1:%d", p))
	}
	d := simDriver(t, 1)
	configs := make([]Config, n)
	for i := range configs {
		cfg := TestConfig(t, d)
		cfg.NodeName = fmt.Sprintf("server-%d", i+1)
		cfg.HTTPAddr, cfg.RaftAddr = httpAddrs[i], fmt.Sprintf("127.0.0.1:%d", ports[n+i])
		cfg.BootstrapExpect = n
		cfg.RetryJoin = httpAddrs
		configs[i] = cfg
	}
	start := func() []*Server {
		servers := make([]*Server, n)
		for i, cfg := range configs {
			servers[i] = TestServer(t, cfg)
		}
		return servers
	}
	servers := start()
	c := client(t, leaderOf(t, servers...))
	_, _, err := c.Jobs().Register(demoJob(t, "before"), nil)
	must.NoError(t, err)
	for _, s := range servers {
		agent.WaitFor(t, 10*time.Second, "the job replicated", func() error {
			j, err := state.JobByID(s.State().Txn(), nil, structs.DefaultNamespace, "before")
			if j == nil {
				return fmt.Errorf("no job on %s (%v)", s.cfg.NodeName, err)
			}
			return nil
		})
	}
	for _, s := range servers {
		must.NoError(t, s.Shutdown())
	}

	job, diags := jobspec.Parse(&jobspec.Config{Filename: "demo.hcl", Src: []byte(demoJob(t, "poison").JobHCL)})
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	job.Worker.Config = map[string]any{"x": nested(1100)}
	var entry bytes.Buffer
	entry.WriteByte(byte(fsm.JobRegisterType))
	must.NoError(t, codec.NewEncoder(&entry, structs.MsgpackHandle).Encode(&fsm.JobRegisterRequest{Job: job, Time: 1}))
	var logs []string
	for _, cfg := range configs {
		logs = append(logs, filepath.Join(cfg.DataDir, "raft", "raft.db"))
	}
	appendEntry(t, logs, entry.Bytes())

	servers = start()
	c = client(t, leaderOf(t, servers...))
	_, _, err = c.Jobs().Register(demoJob(t, "after"), nil)
	must.NoError(t, err)
	var skipped []uint64
	for _, s := range servers {
		agent.WaitFor(t, 20*time.Second, "the entry skipped and the jobs kept on "+s.cfg.NodeName, func() error {
			txn := s.State().Txn()
			jobs, err := state.Jobs(txn, nil, "")
			if err != nil {
				return err
			}
			var ids []string
			for _, j := range jobs {
				ids = append(ids, j.ID)
			}
			if fmt.Sprint(ids) != "[after before]" {
				return fmt.Errorf("jobs %v, want [after before]", ids)
			}
			evs, err := state.Events(txn, nil, 0)
			if err != nil {
				return err
			}
			for _, e := range evs {
				if e.Type == structs.EventEntrySkipped {
					if e.Details["Type"] != "JobRegister" || !strings.HasSuffix(e.Message, "it does not decode") {
						return fmt.Errorf("skipped %+v, want the poisoned JobRegister entry", e)
					}
					skipped = append(skipped, e.Index)
					return nil
				}
			}
			return fmt.Errorf("no %s event", structs.EventEntrySkipped)
		})
	}
	must.Eq(t, []uint64{skipped[0], skipped[0], skipped[0]}, skipped)
}

// nested returns a value nesting depth maps.
func nested(depth int) any {
	var v any = 1
	for range depth {
		v = map[string]any{"a": v}
	}
	return v
}

// appendEntry appends a command entry to the Raft logs at paths, after
// their last common entry: a log that ends later (entries the leader wrote
// as the others stopped) is cut there first, so that the entry is at the
// same index, in the same term, in every log, as Raft would have put it.
func appendEntry(t *testing.T, paths []string, data []byte) {
	t.Helper()
	var stores []*raftboltdb.BoltStore
	common := uint64(math.MaxUint64)
	for _, p := range paths {
		store, err := raftboltdb.NewBoltStore(p)
		must.NoError(t, err)
		defer store.Close()
		last, err := store.LastIndex()
		must.NoError(t, err)
		stores, common = append(stores, store), min(common, last)
	}
	for _, store := range stores {
		last, err := store.LastIndex()
		must.NoError(t, err)
		if last > common {
			must.NoError(t, store.DeleteRange(common+1, last))
		}
		var prev raft.Log
		must.NoError(t, store.GetLog(common, &prev))
		must.NoError(t, store.StoreLog(&raft.Log{Index: common + 1, Term: prev.Term, Type: raft.LogCommand, Data: data, AppendedAt: time.Unix(0, 1)}))
	}
}
