package jobspec

import (
	"github.com/caravan-sched/caravan/internal/hcldiag"
	"os"
	"strings"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// Config says what to parse and with which variable values.
type Config struct {
	// Filename names the jobspec in diagnostics. A name ending in ".json" is
	// parsed as HCL's JSON syntax.
	Filename string
	// Src is the jobspec; when nil it is read from Filename.
	Src []byte
	// ArgVars are -var values, each "name=value". Values of variables typed
	// other than string are HCL expressions: -var 'gpus=[0,1]'.
	ArgVars []string
	// VarFiles are -var-file paths: HCL files of `name = value` lines.
	VarFiles []string
	// Environ is an environment as os.Environ returns it; CARAVAN_VAR_<name>
	// entries set variable <name>. Values given later in this order win:
	// default, Environ, VarFiles, ArgVars.
	Environ []string
}

// Parser parses jobspecs and keeps the files it read, so that diagnostics can
// be rendered with source snippets. A Parser is not safe for concurrent use.
type Parser struct {
	p *hclparse.Parser
}

// NewParser returns an empty Parser.
func NewParser() *Parser { return &Parser{p: hclparse.NewParser()} }

// Files returns the files parsed so far by name, for
// hcl.NewDiagnosticTextWriter.
func (p *Parser) Files() map[string]*hcl.File { return p.p.Files() }

// Parse parses one Caravan jobspec. It returns a canonicalized job that
// passed structs.Job.Validate, or nil and diagnostics holding every error
// found. Warnings may accompany a job. A Nomad job file (FormatNomad) is
// an error that says to run it with nomad job run.
func (p *Parser) Parse(cfg *Config) (*structs.Job, hcl.Diagnostics) {
	job, format, diags := p.ParseAny(cfg)
	if format == FormatNomad {
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "A Nomad job file",
			Detail:   "This is a Nomad job (it has group blocks): run it with nomad job run, and Caravan takes it over from Nomad through its caravan scaling policies; or turn it into a Caravan jobspec with caravan job convert.",
		})
	}
	return job, diags
}

// ParseAny parses one jobspec of either format, Caravan's or Nomad's with
// caravan scaling policies (see nomad.go), and says which it is: a job
// block with group blocks is a Nomad job. Of a Nomad job file only what
// Caravan uses is checked, and the job has no Nomad template (Nomad
// makes it: see FromNomad). Otherwise it is as Parse.
func (p *Parser) ParseAny(cfg *Config) (*structs.Job, string, hcl.Diagnostics) {
	src := cfg.Src
	if src == nil {
		var err error
		if src, err = os.ReadFile(cfg.Filename); err != nil {
			return nil, "", hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Failed to read jobspec",
				Detail:   err.Error(),
			}}
		}
	}
	if diags := checkSource(src, cfg.Filename); diags.HasErrors() {
		return nil, "", diags
	}
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(cfg.Filename, ".json") {
		file, diags = p.p.ParseJSON(src, cfg.Filename)
	} else {
		file, diags = p.p.ParseHCL(src, cfg.Filename)
	}
	if diags.HasErrors() {
		return nil, "", diags
	}
	if diags := meter(file.Body); diags.HasErrors() {
		return nil, "", diags
	}

	content, d := file.Body.Content(rootSchema)
	diags = append(diags, d...)

	vars, d := p.variables(content.Blocks.OfType("variable"), cfg)
	diags = append(diags, d...)
	ctx := newEvalContext(vars, newBudget())
	diags = append(diags, evalLocals(ctx, content.Blocks.OfType("locals"))...)

	jobs := content.Blocks.OfType("job")
	switch {
	case len(jobs) == 0 && diags.HasErrors():
		// Most likely a job block HCL rejected, e.g. for a missing label.
		return nil, "", diags
	case len(jobs) == 0:
		return nil, "", append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing job block",
			Detail:   `A jobspec must define one job block, e.g. job "resnet50" { ... }.`,
			Subject:  content.MissingItemRange.Ptr(),
		})
	case len(jobs) > 1:
		for _, b := range jobs[1:] {
			diags = append(diags, duplicate(b, jobs[0]))
		}
	}

	dec := newDecoder(ctx)
	format, job := FormatCaravan, (*structs.Job)(nil)
	if isNomadJob(jobs[0]) {
		format, job = FormatNomad, dec.nomadJob(jobs[0])
	} else {
		job = dec.job(jobs[0])
	}
	diags = append(diags, dec.diags...)
	job.Canonicalize()
	diags = append(diags, dec.validation(job.Validate())...)
	SortDiagnostics(diags)
	if diags.HasErrors() {
		return nil, format, diags
	}
	return job, format, diags
}

// isNomadJob reports whether a job block is a Nomad job's: whether it
// has groups.
func isNomadJob(b *hcl.Block) bool {
	c, _, _ := b.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "group", LabelNames: []string{"name"}}}})
	return c != nil && len(c.Blocks) > 0
}

// Parse parses one jobspec with a new Parser; see Parser.Parse.
func Parse(cfg *Config) (*structs.Job, hcl.Diagnostics) { return NewParser().Parse(cfg) }

// SortDiagnostics orders diagnostics by file and position, those without a
// position (such as a bad -var) first, so they read top to bottom.
func SortDiagnostics(diags hcl.Diagnostics) { hcldiag.Sort(diags) }

// duplicate reports a second block of a type that may appear once.
func duplicate(b, first *hcl.Block) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Duplicate " + b.Type + " block",
		Detail:   "Only one " + b.Type + " block is allowed here; the first one is at " + first.DefRange.String() + ".",
		Subject:  b.DefRange.Ptr(),
	}
}
