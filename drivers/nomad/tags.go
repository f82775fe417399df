package nomad

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
)

// Version tags keep the versions of a job declared in Nomad that its user
// wrote. Every rescale is a new version of the Nomad job, and Nomad keeps
// only its last JobTrackedVersions (6) untagged versions, so without tags
// the user's own versions would be gone after a few rescales and `nomad
// job revert <id> <version>` to them impossible. Nomad (1.9 on) keeps a
// tagged version whatever the number of versions.
//
// A tag changes the modify index of the tagged version, never its job
// modify index (nomad/state UpdateJobVersionTag), so it is not a new
// version: the driver's check-index writes (EnforceRegister) and its
// reading of Nomad's job list (discover.go) compare job modify indexes and
// see no change.
const (
	// KeepUserVersionTags is how many of a job's user versions stay
	// tagged: tagging a newer one untags the oldest of Caravan's tags
	// beyond it, so that they do not pile up.
	KeepUserVersionTags = 3
	// userTagDescription describes Caravan's tags in `nomad job history`.
	userTagDescription = "written by the job's user, kept by Caravan: nomad job revert %s %d runs it again under Caravan"
)

// userTagName matches the names of the tags Caravan gives users' versions.
var userTagName = regexp.MustCompile(`^v([0-9]+)-by-user$`)

// UserVersionTag is the name of the tag Caravan gives version v of a job
// declared in Nomad, which its user wrote: "v<version>-by-user".
func UserVersionTag(version uint64) string {
	return "v" + strconv.FormatUint(version, 10) + "-by-user"
}

// tagUserVersion tags the user's version of job that Caravan is about
// to take over and untags Caravan's tags of older user versions beyond
// KeepUserVersionTags (see planTags). It runs on the job's worker. A tag
// Nomad refuses is logged, not returned: tags let the user go back, and
// are no reason not to run the job.
func (d *Driver) tagUserVersion(ctx context.Context, job *structs.Job, versions []*api.Job) {
	plan := planTags(job, versions)
	log := d.log.With("job_id", job.ID, "namespace", job.Namespace)
	if plan.tag != nil {
		if err := d.tagVersion(ctx, job, *plan.tag, UserVersionTag(*plan.tag)); err != nil {
			log.Warn("cannot tag the user's version of a Nomad job", "version", *plan.tag, "error", err)
			return
		}
	}
	for _, name := range plan.untag {
		if err := d.untagVersion(ctx, job, name); err != nil {
			log.Warn("cannot untag an old user's version of a Nomad job", "tag", name, "error", err)
		}
	}
}

// tagPlan is what tagUserVersion does: tag a version (nil: none), and
// remove tags by name.
type tagPlan struct {
	tag   *uint64
	untag []string
}

// planTags decides the tags of a job declared in Nomad when Caravan takes
// its user's version over: that version, found among versions (those
// Nomad keeps, as Jobs().Versions lists them) by the job modify index it
// was declared at, is tagged UserVersionTag unless it has a tag (its
// user's, or Caravan's already), and of the user versions Caravan
// tagged, the newest KeepUserVersionTags keep their tags. A version not listed (Nomad has a newer one, which the
// driver reads next) is not tagged, and nothing is untagged for it.
func planTags(job *structs.Job, versions []*api.Job) tagPlan {
	var plan tagPlan
	if job.Nomad == nil {
		return plan
	}
	var adopted *api.Job
	var tagged []uint64 // versions carrying one of Caravan's tags
	names := map[uint64]string{}
	for _, v := range versions {
		if v.Version == nil || v.JobModifyIndex == nil {
			continue
		}
		if *v.JobModifyIndex == job.Nomad.JobModifyIndex && v.Meta[metaJobID] == "" {
			adopted = v
		}
		if v.VersionTag != nil && userTagName.MatchString(v.VersionTag.Name) {
			tagged = append(tagged, *v.Version)
			names[*v.Version] = v.VersionTag.Name
		}
	}
	if adopted == nil {
		return plan
	}
	if adopted.VersionTag == nil {
		// A version its user tagged keeps that tag (a version has one).
		plan.tag = adopted.Version
		tagged = append(tagged, *adopted.Version)
		names[*adopted.Version] = UserVersionTag(*adopted.Version)
	}
	slices.SortFunc(tagged, func(a, b uint64) int { return cmp.Compare(b, a) })
	for _, v := range tagged[min(len(tagged), KeepUserVersionTags):] {
		plan.untag = append(plan.untag, names[v])
	}
	return plan
}

func (d *Driver) tagVersion(ctx context.Context, job *structs.Job, version uint64, name string) error {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	q := (&api.WriteOptions{Namespace: job.Namespace}).WithContext(ctx)
	desc := fmt.Sprintf(userTagDescription, job.ID, version)
	if _, err := d.client.Jobs().TagVersion(job.ID, version, name, desc, q); err != nil {
		return fmt.Errorf("tag version %d of Nomad job %s: %w", version, job.ID, err)
	}
	return nil
}

func (d *Driver) untagVersion(ctx context.Context, job *structs.Job, name string) error {
	ctx, cancel := d.callContext(ctx)
	defer cancel()
	q := (&api.WriteOptions{Namespace: job.Namespace}).WithContext(ctx)
	if _, err := d.client.Jobs().UntagVersion(job.ID, name, q); err != nil && !isNotFound(err) {
		return fmt.Errorf("untag %s of Nomad job %s: %w", name, job.ID, err)
	}
	return nil
}
