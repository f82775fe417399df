package nomad

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// TestRejectedJob: the rejected copy of a user's version has every
// group at count 0 (and scaling min 0), carries the whole diagnostic and
// the user's version's index in its meta, the first error in its name
// (cut to maxRejectedName characters) and its UI description, and leaves
// the user's version as it was; a name rejected before is not marked
// twice.
func TestRejectedJob(t *testing.T) {
	user := &api.Job{ID: new("typo"), Name: new("typo"), Meta: map[string]string{"team": "a"},
		UI: &api.JobUIConfig{Description: "mine", Links: []*api.JobUILink{{Label: "wiki", URL: "https://example.com"}}},
		TaskGroups: []*api.TaskGroup{
			{Name: new("worker"), Count: new(1), Scaling: &api.ScalingPolicy{Min: new(int64(1)), Max: new(int64(4))}},
			{Name: new("ps"), Count: new(1)},
		}}
	why := "typo.hcl:12:9: Missing required argument; typo.hcl:18:13: Unsupported argument"
	nj := rejectedJob(user, 42, why, "typo.hcl:12:9: Missing required argument")
	must.Nil(t, nj.Stop, must.Sprint("stopped by the second write"))
	must.Eq(t, map[string]string{"team": "a", metaError: why, metaRejected: "42"}, nj.Meta)
	must.Eq(t, "typo (rejected by Caravan: typo.hcl:12:9: Missing required argument)", *nj.Name)
	must.StrContains(t, nj.UI.Description, why)
	must.Eq(t, user.UI.Links, nj.UI.Links)
	for _, tg := range nj.TaskGroups {
		must.Eq(t, 0, *tg.Count, must.Sprint(*tg.Name))
	}
	must.Eq(t, 0, *nj.TaskGroups[0].Scaling.Min)
	must.Eq(t, 4, *nj.TaskGroups[0].Scaling.Max)

	must.Eq(t, "typo", *user.Name, must.Sprint("the user's version is not changed"))
	must.Eq(t, map[string]string{"team": "a"}, user.Meta)
	must.Eq(t, 1, *user.TaskGroups[0].Count)
	must.Eq(t, 1, *user.TaskGroups[0].Scaling.Min)

	again := rejectedJob(nj, 43, "typo.hcl:1:1: other", "typo.hcl:1:1: other")
	must.Eq(t, "typo (rejected by Caravan: typo.hcl:1:1: other)", *again.Name)

	long := rejectedJob(user, 42, "long", strings.Repeat("é", 500))
	must.Eq(t, maxRejectedName, utf8.RuneCountInString(*long.Name))
	must.StrHasSuffix(t, "é…)", *long.Name)
	must.True(t, utf8.ValidString(*long.Name))
}

// TestFirstError: the name carries the declaration's first error, else
// the first line of why (errors.Join's separator), whatever "; " the
// errors hold.
func TestFirstError(t *testing.T) {
	decl := &structs.Declaration{Errors: []string{"svc:3:10: Not a batch job: a; b", "svc:4:1: other"}}
	must.Eq(t, "svc:3:10: Not a batch job: a; b", firstError(decl, "ignored"))
	must.Eq(t, "task driver \"raw_exec\": denied; see jobs", firstError(&structs.Declaration{}, "task driver \"raw_exec\": denied; see jobs\nsecond"))
}

// TestSourceDiagnostics: an HCL2 source Nomad kept is parsed as caravan
// job validate parses it, each error at its line and column in a file
// named for Nomad's copy; no source, another format, or a source without
// errors gives nothing, so that the caller keeps the API's wording.
func TestSourceDiagnostics(t *testing.T) {
	src := `job "typo" {
  type = "batch"
  group "worker" {
    scaling {
      min = 1
      max = 2
      policy {
        caravan {
          role = "worker"
          training {
            architecture     = "allreduce"
            mode             = "sync"
            global_batchsize = 64
            steps_per_epoch  = 10
          }
        }
      }
    }
    task "train" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
`
	got := sourceDiagnostics("typo", 3, &api.JobSubmission{Source: src, Format: "hcl2"})
	must.Eq(t, []string{
		"typo (submitted to Nomad, version 3):8:9: Missing required argument: The argument \"training.global_batch_size\" is required here",
		"typo (submitted to Nomad, version 3):13:13: Unsupported argument: An argument named \"global_batchsize\" is not expected here. Did you mean \"global_batch_size\"?",
	}, got)

	fixed := strings.Replace(src, "global_batchsize", "global_batch_size", 1)
	must.SliceEmpty(t, sourceDiagnostics("typo", 3, &api.JobSubmission{Source: fixed, Format: "hcl2"}))
	must.SliceEmpty(t, sourceDiagnostics("typo", 3, &api.JobSubmission{Source: src, Format: "json"}))
	must.SliceEmpty(t, sourceDiagnostics("typo", 3, nil))
}
