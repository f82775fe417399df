package acl

import (
	"testing"

	"github.com/shoenig/test/must"
)

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, diags := Parse("policy.hcl", []byte(src))
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	return p
}

func TestParse_Errors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"syntax", "namespace \"a\" {\n  policy = \n}", "policy.hcl:2:"},
		{"bad policy", "\nnamespace \"ml\" {\n  policy = \"admin\"\n}", `policy.hcl:2:1: Invalid namespace policy; policy "admin" of namespace "ml" is not one of read, write, deny`},
		{"bad capability", "namespace \"ml\" {\n  capabilities = [\"fly\"]\n}", `policy.hcl:1:1: Invalid namespace capability; capability "fly"`},
		{"empty rule", `namespace "ml" {}`, "namespace \"ml\" sets neither policy nor capabilities"},
		{"bad operator", "operator {\n  policy = \"root\"\n}", `policy.hcl:1:1: Invalid operator policy; operator policy "root"`},
		{"bad queue", "\nqueue {\n  policy = \"admin\"\n}", `policy.hcl:2:1: Invalid queue policy; queue policy "admin" is not one of read, write, deny`},
		{"missing agent policy", "agent {}", `policy.hcl:1:`},
		{"unknown block", "node { policy = \"read\" }", `Unsupported block type`},
		{"unknown attribute", "namespace \"a\" {\n  policy = \"read\"\n  color = 1\n}", `policy.hcl:3:3: Unsupported argument`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Parse("policy.hcl", []byte(tc.src))
			must.True(t, diags.HasErrors())
			err := DiagnosticsError(diags)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}

func TestParse_Expands(t *testing.T) {
	p := mustParse(t, `namespace "ml" {
  policy       = "read"
  capabilities = ["report", "read-job"]
}`)
	must.Eq(t, []string{CapListJobs, CapReadJob, CapReadMetrics, CapReport}, p.Namespaces[0].Capabilities)
}

func TestACL_Matrix(t *testing.T) {
	dev := mustParse(t, `
namespace "default" { policy = "write" }
namespace "ml-*"    { policy = "read" }
namespace "ml-prod" { capabilities = ["list-jobs"] }
namespace "ml-p*"   { capabilities = ["report"] }
operator { policy = "read" }
plugin   { policy = "read" }
queue    { policy = "write" }
`)
	denyProd := mustParse(t, `
namespace "ml-prod" { policy = "deny" }
namespace "*" { capabilities = ["read-job"] }
agent { policy = "write" }
operator { policy = "deny" }
queue { policy = "read" }
`)
	reporter := mustParse(t, `namespace "*" { capabilities = ["report"] }`)

	cases := []struct {
		name string
		acl  *ACL
		ns   string
		cap  string
		want bool
	}{
		{"write grants submit", New(dev), "default", CapSubmitJob, true},
		{"write grants stop", New(dev), "default", CapStopJob, true},
		{"glob read", New(dev), "ml-dev", CapReadJob, true},
		{"glob read is not submit", New(dev), "ml-dev", CapSubmitJob, false},
		{"exact beats glob", New(dev), "ml-prod", CapReadJob, false},
		{"exact grants its own", New(dev), "ml-prod", CapListJobs, true},
		{"longest glob wins", New(dev), "ml-pre", CapReport, true},
		{"longest glob wins, not the shorter's", New(dev), "ml-pre", CapReadJob, false},
		{"unmatched namespace", New(dev), "web", CapListJobs, false},
		{"deny wins across policies", New(dev, denyProd), "ml-prod", CapListJobs, false},
		{"union across policies", New(dev, denyProd), "web", CapReadJob, true},
		{"report only", New(reporter), "anything", CapReport, true},
		{"report only cannot submit", New(reporter), "anything", CapSubmitJob, false},
		{"management", ManagementACL, "x", CapSubmitJob, true},
		{"deny all", DenyAll, "default", CapListJobs, false},
		{"nil", nil, "default", CapListJobs, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, tc.acl.AllowNamespaceOperation(tc.ns, tc.cap))
		})
	}

	a := New(dev)
	must.True(t, a.AllowOperatorRead())
	must.False(t, a.AllowOperatorWrite())
	must.True(t, a.AllowPluginRead())
	must.False(t, a.AllowAgentRead())
	must.True(t, a.AllowAnyNamespace(CapSubmitJob))
	must.False(t, New(reporter).AllowAnyNamespace(CapSubmitJob))

	must.True(t, a.AllowQueueWrite())
	must.True(t, a.AllowQueueRead())
	ro := New(denyProd)
	must.True(t, ro.AllowQueueRead())
	must.False(t, ro.AllowQueueWrite(), must.Sprint("read is not write"))
	must.False(t, New(reporter).AllowQueueRead(), must.Sprint("no queue rule, no queues"))
	must.False(t, New(dev, mustParse(t, `queue { policy = "deny" }`)).AllowQueueRead(), must.Sprint("deny wins over write"))
	must.True(t, ManagementACL.AllowQueueWrite())

	b := New(dev, denyProd)
	must.False(t, b.AllowOperatorRead(), must.Sprint("deny wins over read"))
	must.True(t, b.AllowAgentWrite())
	must.True(t, b.AllowAgentRead())
	must.False(t, b.IsManagement())
	must.True(t, ManagementACL.IsManagement())
	must.True(t, ManagementACL.AllowOperatorWrite())
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"*c", "abc", true}, {"a*c", "abbbc", true}, {"a*b*c", "axbyc", true}, {"a*b*c", "axc", false},
		{"abc", "abc", true}, {"abc", "abcd", false},
	}
	for _, tc := range cases {
		t.Run(tc.pattern+"/"+tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, globMatch(tc.pattern, tc.name))
		})
	}
}
