package queuespec

import "github.com/hashicorp/hcl/v2"

// The schemas list every block and argument of a queue file. Only gpu's
// nominal is marked required here, as 0 is a nominal quota a queue may
// have (one that only borrows) and Validate cannot tell it from a
// forgotten one; every other required field is checked once, by
// structs.Queue.Validate, for queue files and API requests alike.
var (
	rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "queue", LabelNames: []string{"name"}},
	}}
	queueSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "namespaces"}, {Name: "weight"}, {Name: "cohort"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "quota"}},
	}
	quotaSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "cpu"}, {Name: "memory"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "gpu", LabelNames: []string{"type"}}},
	}
	gpuSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "nominal", Required: true}, {Name: "borrowing_limit"}, {Name: "lending_limit"}},
	}
)
