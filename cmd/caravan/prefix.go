package main

import (
	"fmt"
	"strings"

	"github.com/caravan-sched/caravan/api"
)

// jobRef is a job a command names, once its ID prefix is resolved.
type jobRef struct {
	ID        string
	Namespace string
}

// query returns the read options of the job.
func (j jobRef) query() *api.QueryOptions { return &api.QueryOptions{Namespace: j.Namespace} }

// resolveJob finds the job that id names, as Nomad's CLI does: the job
// with that ID, else the one job whose ID starts with it, in -namespace
// (every namespace when it is unset). When several jobs match it lists
// them and returns false; when none does, it returns id unchanged, in
// -namespace, so that the command reports the job as not found. Other
// errors are printed and return false.
func (m *Meta) resolveJob(client *api.Client, id string) (jobRef, bool) {
	stubs, _, err := client.Jobs().List(&api.QueryOptions{Namespace: m.namespace, Prefix: id})
	if err != nil {
		m.apiError(fmt.Sprintf("looking up job %q", id), err)
		return jobRef{}, false
	}
	var exact []*api.JobListStub
	for _, s := range stubs {
		if s.ID == id {
			exact = append(exact, s)
		}
	}
	switch {
	case len(exact) == 1:
		return jobRef{ID: id, Namespace: exact[0].Namespace}, true
	case len(exact) == 0 && len(stubs) == 1:
		return jobRef{ID: stubs[0].ID, Namespace: stubs[0].Namespace}, true
	case len(stubs) == 0:
		return jobRef{ID: id, Namespace: m.namespace}, true
	}
	if len(exact) > 1 {
		stubs = exact
	}
	rows := [][]string{{"ID", "Namespace", "Status"}}
	for _, s := range stubs {
		rows = append(rows, []string{s.ID, s.Namespace, s.Status})
	}
	m.Ui.Error(fmt.Sprintf("Prefix %q matched multiple jobs; give a longer prefix or -namespace\n\n%s", id, formatList(rows)))
	return jobRef{}, false
}

// resolveNode finds the node that id names: the node with that ID or name,
// else the one node whose ID starts with it. When several match it lists
// them and returns false; when none does, it says so and returns false.
// While the agent's driver cannot read the cluster it says so
// (driverHealthy) and returns false: the nodes it kept are stale.
func (m *Meta) resolveNode(client *api.Client, id string) (string, bool) {
	nodes, meta, err := client.Nodes(nil)
	if err != nil {
		m.apiError("listing nodes", err)
		return "", false
	}
	if !m.driverHealthy("listing nodes", meta) {
		return "", false
	}
	var matches [][]string
	for _, n := range nodes {
		if n.ID == id || n.Name == id {
			return n.ID, true
		}
		if strings.HasPrefix(n.ID, id) {
			matches = append(matches, []string{n.ID, n.Name, n.Status})
		}
	}
	switch len(matches) {
	case 0:
		m.Ui.Error(fmt.Sprintf("No node with ID or name %q, nor with an ID that starts with it", id))
		return "", false
	case 1:
		return matches[0][0], true
	}
	m.Ui.Error(fmt.Sprintf("Prefix %q matched multiple nodes\n\n%s", id, formatList(append([][]string{{"ID", "Name", "Status"}}, matches...))))
	return "", false
}
