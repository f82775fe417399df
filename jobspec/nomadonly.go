package jobspec

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// NomadOnly returns a warning at each part of a Nomad job file that a
// Caravan jobspec has no place for, and that converting the file to one
// (FormatJob) leaves out: arguments and blocks Caravan does not read
// (services, templates, networks, update and restart policies, a group's
// scaling policies other than caravan), and every task of a group but its
// main one, of which only the resources count (see mergeTasks). file must
// have parsed as a Nomad job (ParseAny's FormatNomad); a file in HCL's JSON
// syntax gets one warning without a position.
func NomadOnly(file *hcl.File) hcl.Diagnostics {
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return hcl.Diagnostics{{
			Severity: hcl.DiagWarning,
			Summary:  "Nomad-only parts not listed",
			Detail:   "Converting a Nomad job file in JSON leaves out what a Caravan jobspec has no place for (services, templates, networks, the tasks besides each group's main one, ...) without listing it.",
		}}
	}
	var n nomadOnly
	for _, jb := range body.Blocks {
		if jb.Type == "job" {
			n.job(jb)
			break
		}
	}
	return n.diags
}

type nomadOnly struct {
	diags hcl.Diagnostics
}

func (n *nomadOnly) job(b *hclsyntax.Block) {
	n.extra(b.Body, nomadJobSchema, "job "+quoteLabel(b))
	for _, gb := range b.Body.Blocks {
		if gb.Type == "group" {
			n.group(gb)
		}
	}
}

func (n *nomadOnly) group(b *hclsyntax.Block) {
	where := "group " + quoteLabel(b)
	n.extra(b.Body, nomadGroupSchema, where)
	var tasks []*hclsyntax.Block
	var lifecycle []bool
	for _, sb := range b.Body.Blocks {
		switch sb.Type {
		case "scaling":
			n.extra(sb.Body, nomadScalingSchema, where+" scaling")
			for _, pb := range sb.Body.Blocks {
				if pb.Type == "policy" {
					n.extra(pb.Body, nomadPolicySchema, where+" scaling policy")
				}
			}
		case "task":
			tasks = append(tasks, sb)
			lc := false
			for _, tb := range sb.Body.Blocks {
				lc = lc || tb.Type == "lifecycle"
			}
			lifecycle = append(lifecycle, lc)
		}
	}
	if len(tasks) == 0 {
		return
	}
	main := mainTask(lifecycle)
	for i, tb := range tasks {
		if i != main {
			n.warn(tb.DefRange(), "Task not converted", fmt.Sprintf(
				"Task %q of %s is not the group's main task (%q): a Caravan role template is one task, so this one's resources are added to the role's, and the rest of it is left out.",
				tb.Labels[0], where, tasks[main].Labels[0]))
			continue
		}
		tw := where + " task " + quoteLabel(tb)
		n.extra(tb.Body, nomadTaskSchema, tw)
		for _, rb := range tb.Body.Blocks {
			if rb.Type == "resources" {
				n.extra(rb.Body, resourcesSchema, tw+" resources")
			}
		}
	}
}

// extra warns about each argument and block of body that schema does not
// name.
func (n *nomadOnly) extra(body *hclsyntax.Body, schema *hcl.BodySchema, where string) {
	known := map[string]bool{}
	for _, a := range schema.Attributes {
		known[a.Name] = true
	}
	for _, b := range schema.Blocks {
		known[b.Type] = true
	}
	for _, a := range sortedAttributes(body) {
		if !known[a.Name] {
			n.warn(a.NameRange, "Not converted", fmt.Sprintf("Argument %q of %s has no place in a Caravan jobspec and is left out.", a.Name, where))
		}
	}
	for _, b := range body.Blocks {
		if !known[b.Type] {
			n.warn(b.DefRange(), "Not converted", fmt.Sprintf("Block %q of %s has no place in a Caravan jobspec and is left out.", b.Type, where))
		}
	}
}

func (n *nomadOnly) warn(rng hcl.Range, summary, detail string) {
	n.diags = append(n.diags, &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  summary,
		Detail:   detail,
		Subject:  rng.Ptr(),
	})
}

// sortedAttributes returns body's attributes in source order.
func sortedAttributes(body *hclsyntax.Body) []*hclsyntax.Attribute {
	out := slices.Collect(maps.Values(body.Attributes))
	slices.SortFunc(out, func(a, b *hclsyntax.Attribute) int { return a.NameRange.Start.Byte - b.NameRange.Start.Byte })
	return out
}

func quoteLabel(b *hclsyntax.Block) string {
	if len(b.Labels) == 0 {
		return ""
	}
	return fmt.Sprintf("%q", b.Labels[0])
}
