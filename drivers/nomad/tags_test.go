package nomad

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

func TestPlanTags(t *testing.T) {
	// version returns version v of a Nomad job at job modify index 100+v,
	// Caravan's when caravan is set, with tag (none when empty).
	version := func(v uint64, caravan bool, tag string) *api.Job {
		j := &api.Job{Version: new(v), JobModifyIndex: new(100 + v), Meta: map[string]string{"owner": "user"}}
		if caravan {
			j.Meta[metaJobID] = "j"
		}
		if tag != "" {
			j.VersionTag = &api.JobVersionTag{Name: tag}
		}
		return j
	}
	declared := func(v uint64) *structs.Job {
		return &structs.Job{ID: "j", Namespace: "default", Nomad: &structs.NomadSource{JobModifyIndex: 100 + v}}
	}
	cases := []struct {
		name     string
		job      *structs.Job
		versions []*api.Job
		want     tagPlan
	}{{
		name:     "the user's version 0, first taken over",
		job:      declared(0),
		versions: []*api.Job{version(0, false, "")},
		want:     tagPlan{tag: new(uint64(0))},
	}, {
		name:     "already tagged: nothing to do",
		job:      declared(0),
		versions: []*api.Job{version(1, true, ""), version(0, false, "v0-by-user")},
		want:     tagPlan{},
	}, {
		name:     "a version its user tagged keeps its tag",
		job:      declared(2),
		versions: []*api.Job{version(2, false, "golden"), version(1, true, ""), version(0, false, "v0-by-user")},
		want:     tagPlan{},
	}, {
		name: "the fourth user version untags the oldest of Caravan's",
		job:  declared(9),
		versions: []*api.Job{
			version(9, false, ""), version(8, true, ""), version(7, false, "v7-by-user"),
			version(6, true, ""), version(5, false, "v5-by-user"), version(4, false, "mine"),
			version(0, false, "v0-by-user"),
		},
		want: tagPlan{tag: new(uint64(9)), untag: []string{"v0-by-user"}},
	}, {
		name:     "the declared version is not listed: Nomad has a newer one",
		job:      declared(5),
		versions: []*api.Job{version(6, false, ""), version(4, false, "v4-by-user")},
		want:     tagPlan{},
	}, {
		name:     "a version of Caravan's at that index is not the user's",
		job:      declared(1),
		versions: []*api.Job{version(1, true, "")},
		want:     tagPlan{},
	}, {
		name:     "a job submitted to Caravan has no user's versions",
		job:      &structs.Job{ID: "j"},
		versions: []*api.Job{version(0, false, "")},
		want:     tagPlan{},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, planTags(tc.job, tc.versions))
		})
	}
	must.Eq(t, "v12-by-user", UserVersionTag(12))
	must.True(t, userTagName.MatchString(UserVersionTag(12)))
}
