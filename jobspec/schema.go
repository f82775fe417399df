package jobspec

import "github.com/hashicorp/hcl/v2"

// The schemas list every block and attribute of the jobspec. Nothing is
// marked required here: required fields are checked once, by
// structs.Job.Validate, for jobspecs and API submissions alike.

func attrs(names ...string) []hcl.AttributeSchema {
	out := make([]hcl.AttributeSchema, len(names))
	for i, n := range names {
		out[i] = hcl.AttributeSchema{Name: n}
	}
	return out
}

func blocks(names ...string) []hcl.BlockHeaderSchema {
	out := make([]hcl.BlockHeaderSchema, len(names))
	for i, n := range names {
		out[i] = hcl.BlockHeaderSchema{Type: n}
	}
	return out
}

var (
	rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "job", LabelNames: []string{"id"}},
	}}
	variableSchema = &hcl.BodySchema{Attributes: attrs("type", "default", "description")}

	jobSchema = &hcl.BodySchema{
		Attributes: attrs("name", "namespace", "region", "datacenters", "node_pool", "priority", "weight"),
		Blocks:     blocks("meta", "constraint", "affinity", "training", "elastic", "worker", "parameter_server"),
	}
	trainingSchema = &hcl.BodySchema{
		Attributes: attrs("framework", "architecture", "launcher", "mode", "global_batch_size", "steps_per_epoch"),
		Blocks:     blocks("convergence", "speed", "batch_size"),
	}
	batchSizeSchema   = &hcl.BodySchema{Attributes: attrs("min", "max", "min_local", "max_local")}
	speedSchema       = &hcl.BodySchema{Attributes: attrs("ps", "workers", "steps_per_second")}
	convergenceSchema = &hcl.BodySchema{Attributes: attrs("threshold", "patience", "max_epochs")}
	elasticSchema     = &hcl.BodySchema{Blocks: blocks("workers", "parameter_servers", "checkpoint")}
	boundsSchema      = &hcl.BodySchema{Attributes: attrs("min", "max")}
	checkpointSchema  = &hcl.BodySchema{Attributes: attrs("signal", "timeout", "interval")}
	roleSchema        = &hcl.BodySchema{
		Attributes: attrs("driver"),
		Blocks:     blocks("config", "env", "meta", "resources", "constraint", "affinity"),
	}
	// cpu and memory are attributes (a number, "auto" or an object
	// { min, max, initial }) or blocks with those arguments; hclsyntax
	// looks attributes and blocks up apart, and in HCL-JSON the attribute
	// wins, hence the object form.
	resourcesSchema = &hcl.BodySchema{
		Attributes: attrs("cpu", "memory"),
		Blocks:     append(blocks("cpu", "memory"), hcl.BlockHeaderSchema{Type: "device", LabelNames: []string{"name"}}),
	}
	rangeSchema      = &hcl.BodySchema{Attributes: attrs("min", "max", "initial")}
	deviceSchema     = &hcl.BodySchema{Attributes: attrs("count"), Blocks: blocks("constraint", "affinity")}
	constraintSchema = &hcl.BodySchema{Attributes: attrs("attribute", "operator", "value")}
	affinitySchema   = &hcl.BodySchema{Attributes: attrs("attribute", "operator", "value", "weight")}
)

// blockTypes are the names that are blocks rather than arguments, to word
// "missing" diagnostics right.
var blockTypes = map[string]bool{
	"training": true, "convergence": true, "speed": true, "elastic": true, "workers": true,
	"parameter_servers": true, "checkpoint": true, "worker": true,
	"parameter_server": true, "resources": true, "batch_size": true,
}
