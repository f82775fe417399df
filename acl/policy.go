package acl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Coarse policies of a rule.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyWrite = "write"
)

// Namespace capabilities.
const (
	// CapDeny, in a rule's capabilities, denies everything in the
	// namespaces the rule matches, whatever other policies grant.
	CapDeny = "deny"
	// CapListJobs lists the namespace's jobs.
	CapListJobs = "list-jobs"
	// CapReadJob reads a job, its versions, history and summary.
	CapReadJob = "read-job"
	// CapSubmitJob registers, plans and reverts jobs.
	CapSubmitJob = "submit-job"
	// CapStopJob stops and purges jobs.
	CapStopJob = "stop-job"
	// CapReport reports trainers' samples (POST /v1/report).
	CapReport = "report"
	// CapReadMetrics reads a job's samples.
	CapReadMetrics = "read-metrics"
)

// capabilities lists every namespace capability, for validation.
var capabilities = []string{CapDeny, CapListJobs, CapReadJob, CapSubmitJob, CapStopJob, CapReport, CapReadMetrics}

// expand gives the capabilities a coarse namespace policy grants.
func expand(policy string) []string {
	switch policy {
	case PolicyDeny:
		return []string{CapDeny}
	case PolicyRead:
		return []string{CapListJobs, CapReadJob, CapReadMetrics}
	case PolicyWrite:
		return []string{CapListJobs, CapReadJob, CapReadMetrics, CapSubmitJob, CapStopJob, CapReport}
	}
	return nil
}

// Policy is a parsed ACL policy.
type Policy struct {
	Namespaces []*NamespaceRule `hcl:"namespace,block"`
	Operator   *Rule            `hcl:"operator,block"`
	Plugin     *Rule            `hcl:"plugin,block"`
	Agent      *Rule            `hcl:"agent,block"`
	// Queue governs the queues (issue 32), which are the cluster's and
	// no namespace's, as Nomad's quota rule governs quota specifications:
	// read lists and reads them, write also creates, changes and deletes
	// them.
	Queue *Rule `hcl:"queue,block"`
}

// NamespaceRule grants capabilities in the namespaces Name matches.
// Capabilities holds Policy's expansion and the listed capabilities once
// parsed.
type NamespaceRule struct {
	Name         string    `hcl:"name,label"`
	Policy       string    `hcl:"policy,optional"`
	Capabilities []string  `hcl:"capabilities,optional"`
	DefRange     hcl.Range `hcl:",def_range"`
}

// Rule is an operator, plugin, agent or queue rule.
type Rule struct {
	Policy   string    `hcl:"policy"`
	DefRange hcl.Range `hcl:",def_range"`
}

// Parse parses a policy's HCL. filename names it in diagnostics, which
// give file:line:col of each problem. The rules' capabilities are
// expanded: NamespaceRule.Capabilities holds every capability granted.
func Parse(filename string, src []byte) (*Policy, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	p := new(Policy)
	if diags := gohcl.DecodeBody(f.Body, nil, p); diags.HasErrors() {
		return nil, diags
	}
	for _, ns := range p.Namespaces {
		rng := ns.DefRange
		if ns.Name == "" {
			diags = append(diags, diag(rng, "Empty namespace", `a namespace rule needs a name or a glob such as "*"`))
		}
		if ns.Policy != "" && expand(ns.Policy) == nil {
			diags = append(diags, diag(rng, "Invalid namespace policy",
				fmt.Sprintf("policy %q of namespace %q is not one of read, write, deny", ns.Policy, ns.Name)))
		}
		for _, c := range ns.Capabilities {
			if !slices.Contains(capabilities, c) {
				diags = append(diags, diag(rng, "Invalid namespace capability",
					fmt.Sprintf("capability %q of namespace %q is not one of %s", c, ns.Name, strings.Join(capabilities, ", "))))
			}
		}
		if ns.Policy == "" && len(ns.Capabilities) == 0 {
			diags = append(diags, diag(rng, "Empty namespace rule",
				fmt.Sprintf("namespace %q sets neither policy nor capabilities", ns.Name)))
		}
		ns.Capabilities = compact(append(expand(ns.Policy), ns.Capabilities...))
	}
	for _, r := range []struct {
		name string
		rule *Rule
	}{{"operator", p.Operator}, {"plugin", p.Plugin}, {"agent", p.Agent}, {"queue", p.Queue}} {
		if r.rule != nil && !validCoarse(r.rule.Policy) {
			diags = append(diags, diag(r.rule.DefRange, "Invalid "+r.name+" policy",
				fmt.Sprintf("%s policy %q is not one of read, write, deny", r.name, r.rule.Policy)))
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return p, nil
}

func validCoarse(p string) bool { return p == PolicyDeny || p == PolicyRead || p == PolicyWrite }

func compact(caps []string) []string {
	slices.Sort(caps)
	return slices.Compact(caps)
}

func diag(rng hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}

// DiagnosticsError lists diagnostics one per line as file:line:col:
// summary; detail.
func DiagnosticsError(diags hcl.Diagnostics) error {
	var b strings.Builder
	for i, d := range diags {
		if i > 0 {
			b.WriteString("\n")
		}
		if d.Subject != nil {
			fmt.Fprintf(&b, "%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		b.WriteString(d.Summary)
		if d.Detail != "" {
			b.WriteString("; " + d.Detail)
		}
	}
	return fmt.Errorf("invalid policy:\n%s", b.String())
}
