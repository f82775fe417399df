package hclscan

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Depth tracks how deep an hclsyntax walk is among a body's expressions,
// for walkers that refuse expressions nested over Max: their Enter calls
// Enter first, and their Exit calls Exit.
type Depth struct {
	// Max is the deepest nesting allowed; What names the source in the
	// diagnostic ("jobspec", "queue file").
	Max  int
	What string

	depth    int
	reported bool
}

// Enter counts one level more, and reports, once a walk, the first node
// nested deeper than Max.
func (d *Depth) Enter(node hclsyntax.Node) hcl.Diagnostics {
	d.depth++
	if d.depth <= d.Max || d.reported {
		return nil
	}
	d.reported = true
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Expression too deep",
		Detail:   fmt.Sprintf("This expression nests more than %d levels deep, the most a %s may.", d.Max, d.What),
		Subject:  node.Range().Ptr(),
	}}
}

// Exit counts one level less.
func (d *Depth) Exit() { d.depth-- }
