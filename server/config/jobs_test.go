package config

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// TestJobs_Merge checks that a set list replaces the earlier one, an
// empty list too, and that an unset one keeps it.
func TestJobs_Merge(t *testing.T) {
	dir := t.TempDir()
	first := writeFile(t, dir, "a.hcl", "jobs {\n  drivers = [\"docker\", \"raw_exec\"]\n}\n")
	second := writeFile(t, dir, "b.json", `{"jobs": {"denied_drivers": [], "namespaces": ["ml"]}}`)
	loaded, diags := Load(first, second)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, &Jobs{Drivers: []string{"docker", "raw_exec"}, DeniedDrivers: []string{}, Namespaces: []string{"ml"}},
		Default().Merge(loaded).Jobs)

	// A file without a jobs block keeps the defaults.
	none := writeFile(t, dir, "c.hcl", "log_level = \"DEBUG\"\n")
	loaded, diags = Load(none)
	must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
	must.Eq(t, DefaultJobs(), Default().Merge(loaded).Jobs)
	// -dev denies no driver, unless a file says so.
	must.Eq(t, []string{}, DevDefault().Merge(loaded).Jobs.DeniedDrivers)
	must.Eq(t, []string{"raw_exec"}, DevDefault().Merge(&Config{Jobs: &Jobs{DeniedDrivers: []string{"raw_exec"}}}).Jobs.DeniedDrivers)
}

func TestJobs_Invalid(t *testing.T) {
	cases := []struct {
		name    string
		src     string // the jobs block's body
		jobs    *Jobs  // the same, for Validate
		summary string // none: valid
		detail  string
	}{
		{
			name: "empty drivers", src: `drivers = []`, jobs: &Jobs{Drivers: []string{}},
			summary: "Invalid jobs.drivers", detail: `jobs.drivers: the list is empty, so no job could run; list the task drivers jobs may use, such as ["docker"], or ["*"] for any`,
		},
		{
			name: "empty namespaces", src: `namespaces = []`, jobs: &Jobs{Namespaces: []string{}},
			summary: "Invalid jobs.namespaces", detail: `jobs.namespaces: the list is empty, so no job could run`,
		},
		{
			name: "bad driver", src: `drivers = ["docker", "raw exec"]`, jobs: &Jobs{Drivers: []string{"docker", "raw exec"}},
			summary: "Invalid jobs.drivers[1]", detail: `jobs.drivers[1]: "raw exec" is not a task driver name; use a task driver such as "docker", or "*" for any`,
		},
		{
			name: "star denied", src: `denied_drivers = ["*"]`, jobs: &Jobs{DeniedDrivers: []string{"*"}},
			summary: "Invalid jobs.denied_drivers[0]", detail: `jobs.denied_drivers[0]: "*" is not a task driver name; use a task driver such as "raw_exec"`,
		},
		{
			name: "bad namespace", src: `namespaces = ["ml_team"]`, jobs: &Jobs{Namespaces: []string{"ml_team"}},
			summary: "Invalid jobs.namespaces[0]", detail: `jobs.namespaces[0]: "ml_team" is not a namespace name; use a namespace such as "default", or "*" for any`,
		},
		{
			name: "valid", src: "drivers = [\"*\"]\ndenied_drivers = []\nnamespaces = [\"default\", \"ml-1\"]",
			jobs: &Jobs{Drivers: []string{"*"}, DeniedDrivers: []string{}, Namespaces: []string{"default", "ml-1"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "agent.hcl", "jobs {\n"+tc.src+"\n}\n")
			c, diags := LoadFile(path)
			err := tc.jobs.Validate()
			if tc.summary == "" {
				must.False(t, diags.HasErrors(), must.Sprint(diags.Error()))
				must.Eq(t, tc.jobs, c.Jobs)
				must.NoError(t, err)
				return
			}
			must.SliceLen(t, 1, diags, must.Sprint(diags.Error()))
			must.Eq(t, tc.summary, diags[0].Summary)
			_, detail, _ := strings.Cut(tc.detail, ": ")
			must.StrContains(t, diags[0].Detail, detail[1:]) // the diagnostic capitalizes it
			must.ErrorContains(t, err, strings.TrimPrefix(tc.detail, "jobs."))
		})
	}
}
