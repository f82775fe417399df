package nomad

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// A job declared in Nomad that Caravan rejects (its caravan block is
// invalid, the job policy refuses it, or a job of its ID was submitted to
// Caravan's API) would run in Nomad as written, without Caravan's
// environment, its tasks failing at once. Reject stops it instead, and
// writes why where Nomad users look: the job's name, which plain
// `nomad job status` prints, its meta and its UI description.

// metaError is the meta key of a rejected Nomad job that holds the whole
// diagnostic; metaRejected, of a version Caravan wrote to stop it, the
// cluster index of the user's version it rejected.
const (
	metaError    = "caravan_error"
	metaRejected = "caravan_rejected"
)

// rejectedMark starts what Reject appends to a rejected job's name.
const rejectedMark = " (rejected by Caravan: "

// maxRejectedName bounds the name Reject writes, in characters: the
// diagnostic is cut to fit, and is whole in the meta.
const maxRejectedName = 200

// Reject stops the Nomad job of a declaration the leader rejected, at
// the version declared (decl.Index, with Nomad's check-index: a newer
// version of the user's is the leader's to judge), with why written on
// it: the name becomes "<name> (rejected by Caravan: <first error>)",
// meta caravan_error holds why, and the UI description says it (see
// writeRejection). The versions it writes read as Caravan's
// (DeclaredManaged, then DeclaredStopped), never as a user's
// declaration; a later `nomad job run` is a user's version again,
// declared as any other. It returns at once: the write runs on a worker
// of its own (a Caravan job of the same ID keeps its worker), and is
// retried while Nomad fails, until it lands, the job changes, or another
// rejection of the job follows.
func (d *Driver) Reject(_ context.Context, decl *structs.Declaration, why string) error {
	if decl == nil || decl.Index == 0 {
		return errors.New("reject a Nomad job: no declared version")
	}
	// A space is in no job ID: the key is no Caravan job's.
	key := structs.JobKey{Namespace: decl.Namespace, ID: "reject " + decl.JobID}
	d.enqueue(key, func(ctx context.Context) { d.retryReject(ctx, key, decl, why) })
	return nil
}

// retryReject writes a rejection, trying again with backoff (at most
// every 10 s) while Nomad fails, until it lands, the job changed (the
// write is at the rejected version's index) or another rejection of the
// job is queued: the leader records a rejection once, so giving up
// would leave the job crash-looping in Nomad.
func (d *Driver) retryReject(ctx context.Context, key structs.JobKey, decl *structs.Declaration, why string) {
	var backoff time.Duration
	for {
		err := d.writeRejection(ctx, decl, why)
		if err == nil || ctx.Err() != nil {
			return
		}
		d.log.Warn("cannot stop a Nomad job Caravan rejected, trying again", "nomad_job", decl.JobID, "namespace", decl.Namespace, "error", err)
		backoff = nextBackoff(backoff)
		if !sleep(ctx, backoff) || d.queued(key) {
			return
		}
	}
}

// writeRejection reads the declared version and writes its rejected
// copy over it, in two versions: the first has every group at count 0,
// which stops the allocations Nomad placed of the user's version, and
// the second, once they are stopped, is the same job stopped (Stop), so
// that `nomad job status` says "dead (stopped)". Stop alone is not
// enough: Nomad 1.11.0's reconciler stops, for a stopped job, the
// allocations of one of its groups only (handleStop keeps the last
// group's), and the others run until their restarts run out. A job gone,
// stopped, or at another version since is left alone.
func (d *Driver) writeRejection(ctx context.Context, decl *structs.Declaration, why string) error {
	id := namespacedID{Namespace: decl.Namespace, ID: decl.JobID}
	info, err := d.readJob(ctx, id)
	if isNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	// A retry after the first write went through goes on from it.
	first := info.Meta[metaRejected] != strconv.FormatUint(decl.Index, 10)
	if info.JobModifyIndex == nil || first && *info.JobModifyIndex != decl.Index || info.Stop != nil && *info.Stop {
		d.log.Debug("not stopping a rejected Nomad job: it changed since", "nomad_job", decl.JobID, "namespace", decl.Namespace)
		return nil
	}
	nj, index := info, *info.JobModifyIndex
	if first {
		nj = rejectedJob(info, decl.Index, why, firstError(decl, why))
		if index, err = d.registerAt(ctx, nj, decl.Index); err != nil || index == 0 {
			return err
		}
	}
	if !d.awaitStopped(ctx, id) {
		d.log.Warn("allocations of a rejected Nomad job still run after its groups went to count 0; stopping it anyway", "nomad_job", decl.JobID, "namespace", decl.Namespace)
	}
	stopped := *nj
	stopped.Stop = new(true)
	if _, err := d.registerAt(ctx, &stopped, index); err != nil {
		return err
	}
	d.log.Info("stopped a Nomad job Caravan rejected", "nomad_job", decl.JobID, "namespace", decl.Namespace, "error", why)
	return nil
}

// registerAt writes nj over the version at index (Nomad's check-index)
// and returns the index of the version written, or 0 when another
// version came first.
func (d *Driver) registerAt(ctx context.Context, nj *api.Job, index uint64) (uint64, error) {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	resp, _, err := d.client.Jobs().EnforceRegister(nj, index, (&api.WriteOptions{Namespace: *nj.Namespace}).WithContext(ctx))
	if err != nil {
		if strings.Contains(err.Error(), "conflicting job modify index") {
			d.log.Debug("not stopping a rejected Nomad job: a newer version came first", "nomad_job", *nj.ID, "namespace", *nj.Namespace)
			return 0, nil
		}
		return 0, fmt.Errorf("stop rejected Nomad job %s: %w", *nj.ID, err)
	}
	return resp.JobModifyIndex, nil
}

// rejectStopChecks bounds how many times awaitStopped looks at a job's
// allocations: with backoff, about 8 s in all.
const rejectStopChecks = 6

// awaitStopped waits until no allocation of a Nomad job is to run and
// running or pending, and reports whether that came.
func (d *Driver) awaitStopped(ctx context.Context, id namespacedID) bool {
	var backoff time.Duration
	for range rejectStopChecks {
		backoff = nextBackoff(backoff)
		if !sleep(ctx, backoff) {
			return false
		}
		if live, err := d.liveAllocs(ctx, id); err == nil && live == 0 {
			return true
		}
	}
	return false
}

// liveAllocs counts the allocations of a Nomad job that are to run and
// have not ended.
func (d *Driver) liveAllocs(ctx context.Context, id namespacedID) (int, error) {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	allocs, _, err := d.client.Jobs().Allocations(id.ID, false, (&api.QueryOptions{Namespace: id.Namespace}).WithContext(ctx))
	if err != nil {
		return 0, err
	}
	return liveCount(allocs), nil
}

// liveCount counts the allocations that are to run and have not ended.
func liveCount(allocs []*api.AllocationListStub) int {
	live := 0
	for _, a := range allocs {
		if a.DesiredStatus == api.AllocDesiredStatusRun &&
			(a.ClientStatus == api.AllocClientStatusPending || a.ClientStatus == api.AllocClientStatusRunning) {
			live++
		}
	}
	return live
}

// rejectedJob returns a copy of a user's version of a Nomad job, at
// cluster index index, with why written on it and every group at count
// 0 (their scaling min too, which Nomad holds the count to); the caller
// sets Stop. Meta caravan_rejected marks it as Caravan's (see
// declaration).
func rejectedJob(info *api.Job, index uint64, why, first string) *api.Job {
	nj := *info
	nj.Meta = maps.Clone(info.Meta)
	if nj.Meta == nil {
		nj.Meta = map[string]string{}
	}
	nj.Meta[metaError] = why
	nj.Meta[metaRejected] = strconv.FormatUint(index, 10)
	nj.TaskGroups = make([]*api.TaskGroup, len(info.TaskGroups))
	for i, tg := range info.TaskGroups {
		c := *tg
		c.Count = new(0)
		if tg.Scaling != nil {
			sc := *tg.Scaling
			sc.Min = new(int64(0))
			c.Scaling = &sc
		}
		nj.TaskGroups[i] = &c
	}
	name := deref(info.Name)
	if i := strings.Index(name, rejectedMark); i >= 0 {
		name = name[:i] // rejected before, and run again as it was
	}
	if name == "" {
		name = deref(info.ID)
	}
	nj.Name = new(rejectedName(name, first))
	ui := &api.JobUIConfig{}
	if info.UI != nil {
		ui.Links = info.UI.Links
	}
	ui.Description = "**Rejected by Caravan**, which stopped this version instead of running it: " + why +
		"\n\nFix the job file (`caravan job validate <file>` checks it) and run it again with `nomad job run`."
	nj.UI = ui
	return &nj
}

// firstError is the first of the errors a rejection lists: the
// declaration's first, else why's first line.
func firstError(decl *structs.Declaration, why string) string {
	if len(decl.Errors) > 0 {
		return decl.Errors[0]
	}
	first, _, _ := strings.Cut(why, "\n")
	return first
}

// rejectedName is name with the error appended, cut to maxRejectedName
// characters.
func rejectedName(name, msg string) string {
	s := name + rejectedMark + msg + ")"
	if utf8.RuneCountInString(s) <= maxRejectedName {
		return s
	}
	keep := maxRejectedName - utf8.RuneCountInString(name+rejectedMark+"…)")
	r := []rune(msg)
	if keep < 0 {
		keep = 0
	}
	return name + rejectedMark + string(r[:min(keep, len(r))]) + "…)"
}

// submittedDiagnostics parses the source the user submitted for a
// version of a Nomad job (Nomad ≥ 1.6 keeps it for `nomad job run` of
// an HCL2 file) as `caravan job validate` does, so that the errors say
// where they are in it, one by one. It returns none when Nomad kept no
// source, the source is not HCL2, or its parse finds no error (the
// caller keeps what the API's job says).
func (d *Driver) submittedDiagnostics(ctx context.Context, info *api.Job) []string {
	if info.Version == nil {
		return nil
	}
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	id, version := deref(info.ID), int(*info.Version)
	sub, _, err := d.client.Jobs().Submission(id, version, (&api.QueryOptions{Namespace: deref(info.Namespace)}).WithContext(ctx))
	if err != nil {
		if !isNotFound(err) {
			d.log.Debug("cannot read the source submitted for a Nomad job", "nomad_job", id, "error", err)
		}
		return nil
	}
	return sourceDiagnostics(id, version, sub)
}

// sourceDiagnostics parses a submitted source; see submittedDiagnostics.
func sourceDiagnostics(id string, version int, sub *api.JobSubmission) []string {
	if sub == nil || sub.Format != "hcl2" || sub.Source == "" || sub.Variables != "" {
		return nil // a var file's values are not kept in a form the parser reads
	}
	cfg := &jobspec.Config{
		Filename: fmt.Sprintf("%s (submitted to Nomad, version %d)", id, version),
		Src:      []byte(sub.Source),
	}
	for k, v := range sub.VariableFlags {
		cfg.ArgVars = append(cfg.ArgVars, k+"="+v)
	}
	_, format, diags := jobspec.NewParser().ParseAny(cfg)
	if format != jobspec.FormatNomad || !diags.HasErrors() {
		return nil
	}
	return describe(diags, true)
}
