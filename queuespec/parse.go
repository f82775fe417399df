package queuespec

import (
	"fmt"
	"github.com/caravan-sched/caravan/internal/hcldiag"
	"io"
	"os"

	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// Parser parses queue files and keeps the files it read, so that
// diagnostics can be rendered with source snippets. A Parser is not safe
// for concurrent use.
type Parser struct {
	p *hclparse.Parser
}

// NewParser returns an empty Parser.
func NewParser() *Parser { return &Parser{p: hclparse.NewParser()} }

// Files returns the files parsed so far by name, for
// hcl.NewDiagnosticTextWriter.
func (p *Parser) Files() map[string]*hcl.File { return p.p.Files() }

// Parse parses the queue file src named filename (in diagnostics). It
// returns the file's queues in the order given, each canonicalized and
// passed by structs.Queue.Validate, or nil and diagnostics holding every
// error found, sorted by position. It never returns some of the queues: a
// file is applied whole or not at all.
func (p *Parser) Parse(src []byte, filename string) ([]*structs.Queue, hcl.Diagnostics) {
	if diags := checkSource(src, filename); diags.HasErrors() {
		return nil, diags
	}
	file, diags := p.p.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	if d := checkExpressions(file.Body); d.HasErrors() {
		diags = append(diags, d...)
		hcldiag.Sort(diags) // the walk visits a body's arguments in map order
		return nil, diags
	}
	content, d := file.Body.Content(rootSchema)
	diags = append(diags, d...)

	blocks := content.Blocks.OfType("queue")
	switch {
	case len(blocks) == 0 && diags.HasErrors():
		// Most likely a queue block HCL rejected, e.g. for a missing label.
		return nil, diags
	case len(blocks) == 0:
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing queue block",
			Detail:   `A queue file must define at least one queue block, e.g. queue "nlp" { namespaces = ["nlp-*"] }.`,
			Subject:  content.MissingItemRange.Ptr(),
		})
	case len(blocks) > MaxQueues:
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Too many queues",
			Detail:   fmt.Sprintf("A queue file may define at most %d queues, as many as a cluster may have.", MaxQueues),
			Subject:  blocks[MaxQueues].DefRange.Ptr(),
		})
	}

	queues := make([]*structs.Queue, 0, len(blocks))
	decoders := make([]*decoder, 0, len(blocks))
	first := map[string]*hcl.Block{}
	for _, b := range blocks {
		if f, ok := first[b.Labels[0]]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate queue",
				Detail:   fmt.Sprintf("A queue named %q is defined already, at %s; queue names are unique.", b.Labels[0], f.DefRange),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		first[b.Labels[0]] = b
		dec := newDecoder()
		q := dec.queue(b)
		q.Canonicalize()
		diags = append(diags, dec.diags...)
		diags = append(diags, dec.validation(q.Validate())...)
		queues = append(queues, q)
		decoders = append(decoders, dec)
	}
	diags = append(diags, conflicts(queues, decoders)...)
	hcldiag.Sort(diags)
	if diags.HasErrors() {
		return nil, diags
	}
	return queues, diags
}

// conflicts reports a namespace pattern that two queues of the file give,
// which structs.QueueConflict would refuse when the queues are applied:
// a namespace maps to one queue.
func conflicts(queues []*structs.Queue, decoders []*decoder) hcl.Diagnostics {
	var diags hcl.Diagnostics
	owner := map[string]string{}
	for i, q := range queues {
		for j, ns := range q.Namespaces {
			o, ok := owner[ns]
			switch {
			case !ok:
				owner[ns] = q.Name
			case o != q.Name:
				p := fmt.Sprintf("namespaces[%d]", j)
				rng := hcldiag.RangeFor(decoders[i].ranges, p)
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid " + p,
					Detail:   fmt.Sprintf("%q is queue %q's already: a namespace maps to one queue.", ns, o),
					Subject:  &rng,
				})
			}
		}
	}
	return diags
}

// ParseFile reads the queue file at path and parses it; see Parse. A file
// over MaxSourceBytes is refused without reading it whole.
func (p *Parser) ParseFile(path string) ([]*structs.Queue, hcl.Diagnostics) {
	src, err := readLimited(path)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Failed to read queue file",
			Detail:   err.Error(),
		}}
	}
	return p.Parse(src, path)
}

// readLimited reads path up to one byte past MaxSourceBytes, enough for
// checkSource to refuse a larger file.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxSourceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return src, nil
}

// Parse parses the queue file src named filename with a new Parser; see
// Parser.Parse.
func Parse(src []byte, filename string) ([]*structs.Queue, hcl.Diagnostics) {
	return NewParser().Parse(src, filename)
}

// ParseFile reads and parses a queue file with a new Parser; see
// Parser.ParseFile.
func ParseFile(path string) ([]*structs.Queue, hcl.Diagnostics) {
	return NewParser().ParseFile(path)
}
