package nomad

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// declared is the driver's view of the jobs declared in Nomad, kept by
// watchJobs.
type declared struct {
	// byKey holds a declaration per Nomad job; index is Nomad's index of
	// the list they were read from; err is the last list's error.
	byKey map[structs.JobKey]*structs.Declaration
	index uint64
	err   error
	// listed is closed once the first list (or error) is in.
	listed chan struct{}
}

// Declared returns a declaration per Nomad job, as last read, and Nomad's
// index of that read: a Nomad job whose groups carry a caravan scaling
// policy declares a job (see jobspec.FromNomad). It waits for the first
// read, and fails while Nomad cannot be reached rather than answer from a
// stale list. The map is the caller's.
func (d *Driver) Declared(ctx context.Context) (map[structs.JobKey]*structs.Declaration, uint64, error) {
	select {
	case <-d.decl.listed:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.decl.err != nil {
		return nil, 0, d.decl.err
	}
	return maps.Clone(d.decl.byKey), d.decl.index, nil
}

// watchJobs follows Nomad's job list with blocking queries and keeps a
// declaration per job. A job version is read in full only when it is a
// user's running version not seen before: stopped jobs and Caravan's own
// versions are told by the list alone.
func (d *Driver) watchJobs(ctx context.Context) {
	var index uint64
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		q := (&api.QueryOptions{Namespace: d.queryNamespace(), WaitIndex: index, WaitTime: d.cfg.WaitTime}).WithContext(ctx)
		stubs, meta, err := d.client.Jobs().ListOptions(&api.JobListOptions{Fields: &api.JobListFields{Meta: true}}, q)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.setDeclared(nil, 0, fmt.Errorf("list Nomad jobs: %w", err))
			backoff = min(max(2*backoff, 250*time.Millisecond), 10*time.Second)
			index = 0
			continue
		}
		backoff = 0
		if meta.LastIndex < index { // Nomad's index went back: start over
			index = 0
			continue
		}
		index = meta.LastIndex
		d.mu.Lock()
		prev := d.decl.byKey
		d.mu.Unlock()
		next := make(map[structs.JobKey]*structs.Declaration, len(stubs))
		for _, s := range stubs {
			key := structs.JobKey{Namespace: s.Namespace, ID: s.ID}
			if p := prev[key]; p != nil && p.Index == s.JobModifyIndex && (p.Kind == structs.DeclaredStopped) == s.Stop {
				next[key] = p
				continue
			}
			if decl := d.declaration(ctx, s); decl != nil {
				next[key] = decl
			}
		}
		d.setDeclared(next, index, nil)
	}
}

func (d *Driver) setDeclared(byKey map[structs.JobKey]*structs.Declaration, index uint64, err error) {
	d.mu.Lock()
	if err != nil && d.decl.err == nil {
		d.log.Warn("cannot read Nomad's jobs", "error", err)
	}
	if err == nil {
		d.decl.byKey, d.decl.index = byKey, index
	}
	d.decl.err = err
	d.mu.Unlock()
	d.declOnce.Do(func() { close(d.decl.listed) })
}

// declaration says what a Nomad job's current version is; nil when it
// cannot be read now (it is read again at the next list).
func (d *Driver) declaration(ctx context.Context, s *api.JobListStub) *structs.Declaration {
	decl := &structs.Declaration{Namespace: s.Namespace, JobID: s.ID, Index: s.JobModifyIndex}
	switch {
	case s.Stop:
		decl.Kind = structs.DeclaredStopped
		return decl
	case s.Meta[metaJobID] != "":
		decl.Kind = structs.DeclaredManaged
		return decl
	case s.ParentID != "" || s.Type == api.JobTypeSystem || s.Type == api.JobTypeSysbatch:
		decl.Kind = structs.DeclaredPlain // launched by another job, or on every node
		return decl
	}
	q := (&api.QueryOptions{Namespace: s.Namespace}).WithContext(ctx)
	info, _, err := d.client.Jobs().Info(s.ID, q)
	if err != nil {
		if !isNotFound(err) && ctx.Err() == nil {
			d.log.Warn("cannot read Nomad job", "nomad_job", s.ID, "namespace", s.Namespace, "error", err)
		}
		return nil
	}
	if info.JobModifyIndex == nil || *info.JobModifyIndex != s.JobModifyIndex {
		return nil // changed since the list; the next list has it
	}
	if !jobspec.HasPolicy(info) {
		decl.Kind = structs.DeclaredPlain
		return decl
	}
	job, diags := jobspec.FromNomad(info)
	if diags.HasErrors() {
		decl.Kind, decl.Message = structs.DeclaredInvalid, describe(diags)
		return decl
	}
	decl.Kind, decl.Job = structs.DeclaredJob, job
	return decl
}

// describe renders the errors of a Nomad job's caravan policy on one
// line, each with the group and field it is about.
func describe(diags hcl.Diagnostics) string {
	var parts []string
	for _, diag := range diags {
		if diag.Severity != hcl.DiagError {
			continue
		}
		msg := diag.Summary
		if diag.Detail != "" {
			msg += ": " + strings.TrimSuffix(diag.Detail, ".")
		}
		if diag.Subject != nil && diag.Subject.Filename != "" {
			msg = diag.Subject.Filename + ": " + msg
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}
