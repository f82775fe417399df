package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/caravan-sched/caravan/jobspec"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// Loader loads configuration files and keeps the files it read, so that
// diagnostics can be rendered with source snippets. A Loader is not safe for
// concurrent use.
type Loader struct {
	p *hclparse.Parser
}

// NewLoader returns a Loader that has read no file.
func NewLoader() *Loader { return &Loader{p: hclparse.NewParser()} }

// Files returns the files read so far by name, for
// hcl.NewDiagnosticTextWriter.
func (l *Loader) Files() map[string]*hcl.File { return l.p.Files() }

// LoadFile loads one configuration file, in HCL's JSON syntax when its name
// ends in ".json" and in native HCL syntax otherwise. It applies no defaults:
// the Config holds what the file sets and nothing else, with Files set to
// the file's path.
//
// Besides HCL's own errors (syntax, unknown arguments and blocks, wrong
// types), every value out of its allowed range is a diagnostic at that value,
// and all are reported together. LoadFile returns nil when there is any
// error; warnings may accompany a Config.
func (l *Loader) LoadFile(path string) (*Config, hcl.Diagnostics) {
	path = filepath.Clean(path)
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(path, ".json") {
		file, diags = l.p.ParseJSONFile(path)
	} else {
		file, diags = l.p.ParseHCLFile(path)
	}
	if file == nil || diags.HasErrors() {
		return nil, diags
	}

	c := &Config{}
	diags = append(diags, gohcl.DecodeBody(file.Body, nil, c)...)
	s := newSites(file.Body, diags)
	diags = append(diags, s.parseDurations(c)...)
	for _, p := range c.problems() {
		if subject, ok := s.of(p); ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid " + p.path,
				Detail:   upperFirst(p.detail) + ".",
				Subject:  subject.Ptr(),
			})
		}
	}
	jobspec.SortDiagnostics(diags)
	if diags.HasErrors() {
		return nil, diags
	}
	c.Files = []string{path}
	return c, diags
}

// Load loads the configuration at each path and merges them in order, later
// ones overriding earlier ones (see Config.Merge). A path is a file, loaded
// with LoadFile, or a directory, which contributes its files named *.hcl or
// *.json in lexical order, skipping subdirectories and editors' temporary
// files, as Nomad's -config does. A directory without such files adds
// nothing.
//
// Load applies no defaults; callers build the agent's configuration with
// Default().Merge(loaded).Merge(flags). It returns the diagnostics of every
// file, and nil when any has an error. With no paths, or only empty
// directories, the Config is empty. Its blocks are never nil.
func (l *Loader) Load(paths ...string) (*Config, hcl.Diagnostics) {
	result := (&Config{}).Merge(nil)
	var diags hcl.Diagnostics
	for _, path := range paths {
		files, d := configFiles(path)
		diags = append(diags, d...)
		for _, f := range files {
			c, d := l.LoadFile(f)
			diags = append(diags, d...)
			if c != nil {
				result = result.Merge(c)
			}
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return result, diags
}

// LoadFile loads one configuration file with a new Loader; see
// Loader.LoadFile.
func LoadFile(path string) (*Config, hcl.Diagnostics) { return NewLoader().LoadFile(path) }

// Load loads configuration files and directories with a new Loader; see
// Loader.Load.
func Load(paths ...string) (*Config, hcl.Diagnostics) { return NewLoader().Load(paths...) }

// configFiles returns the files path stands for: itself, or the
// configuration files of a directory in lexical order.
func configFiles(path string) ([]string, hcl.Diagnostics) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, readError(err)
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path) // sorted by name
	if err != nil {
		return nil, readError(err)
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || isTemporaryFile(name) ||
			!strings.HasSuffix(name, ".hcl") && !strings.HasSuffix(name, ".json") {
			continue
		}
		files = append(files, filepath.Join(path, name))
	}
	return files, nil
}

func readError(err error) hcl.Diagnostics {
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Failed to read configuration",
		Detail:   upperFirst(err.Error()) + ".",
	}}
}

// isTemporaryFile reports whether name is a temporary file of vim or emacs.
func isTemporaryFile(name string) bool {
	return strings.HasSuffix(name, "~") || // vim
		strings.HasPrefix(name, ".#") || // emacs
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#") // emacs
}

// site is where a key is written in a file.
type site struct {
	// attr is the whole `name = value` (a block's header for a block), value
	// the value alone (the header again for a block).
	attr, value hcl.Range
}

// sites records where each key of a file is written, by path ("log_level",
// "server.retry_join", "server.retry_join[1]"), and which keys failed to
// decode, so that a check never reports the zero value a decoding error
// left behind.
type sites struct {
	at     map[string]site
	failed map[string]bool
}

// newSites walks body with the schema gohcl decoded it with. A key fails
// when one of diags, the decoding's, lies within it. Duplicate blocks are
// left out, as gohcl leaves them undecoded.
func newSites(body hcl.Body, diags hcl.Diagnostics) *sites {
	s := &sites{at: map[string]site{}, failed: map[string]bool{}}
	s.walk(body, "", reflect.TypeFor[Config]())
	for path, st := range s.at {
		for _, d := range diags {
			if d.Severity == hcl.DiagError && d.Subject != nil &&
				d.Subject.Filename == st.attr.Filename &&
				st.attr.ContainsOffset(d.Subject.Start.Byte) {
				s.failed[path] = true
			}
		}
	}
	return s
}

// walk records the arguments of body, decoded into a struct of type t, and
// the blocks it holds, recursively.
func (s *sites) walk(body hcl.Body, prefix string, t reflect.Type) {
	schema, _ := gohcl.ImpliedBodySchema(reflect.New(t).Interface())
	content, _, _ := body.PartialContent(schema)
	for name, a := range content.Attributes {
		path := prefix + name
		s.at[path] = site{attr: a.Range, value: a.Expr.Range()}
		if elems, d := hcl.ExprList(a.Expr); !d.HasErrors() {
			for i, e := range elems {
				s.at[path+"["+strconv.Itoa(i)+"]"] = site{attr: e.Range(), value: e.Range()}
			}
		}
	}
	blocks := content.Blocks.ByType()
	for i := range t.NumField() {
		f := t.Field(i)
		name, kind, _ := strings.Cut(f.Tag.Get("hcl"), ",")
		if kind != "block" {
			continue
		}
		if f.Type.Kind() == reflect.Slice { // labelled blocks, plugin "name" {}
			for _, b := range blocks[name] {
				path := prefix + name + "." + strings.Join(b.Labels, ".")
				s.at[path] = site{attr: b.DefRange, value: b.DefRange}
				s.walk(b.Body, path+".", f.Type.Elem().Elem())
			}
			continue
		}
		if len(blocks[name]) != 1 {
			continue
		}
		b := blocks[name][0]
		s.at[prefix+name] = site{attr: b.DefRange, value: b.DefRange}
		s.walk(b.Body, prefix+name+".", f.Type.Elem())
	}
}

// of returns where to report p: at the list element or the value it is
// about. It reports false for a key the file does not set, or one that
// failed to decode.
func (s *sites) of(p problem) (hcl.Range, bool) {
	key := p.key()
	if _, ok := s.at[key]; !ok || s.failed[key] {
		return hcl.Range{}, false
	}
	if st, ok := s.at[p.path]; ok {
		return st.value, true
	}
	return s.at[key].value, true
}

// parseDurations fills the time.Duration beside each duration string c's
// file sets. An unparseable string is a diagnostic, and its key fails.
func (s *sites) parseDurations(c *Config) hcl.Diagnostics {
	type duration struct {
		path string
		str  *string
		d    *time.Duration
	}
	var ds []duration
	if c.Server != nil {
		ds = append(ds, duration{"server.retry_interval", &c.Server.RetryInterval, &c.Server.RetryIntervalDuration},
			duration{"server.job_gc_threshold", &c.Server.JobGCThreshold, &c.Server.JobGCThresholdDuration},
			duration{"server.job_gc_interval", &c.Server.JobGCInterval, &c.Server.JobGCIntervalDuration})
	}
	if c.Scheduler != nil {
		ds = append(ds, duration{"scheduler.interval", &c.Scheduler.Interval, &c.Scheduler.IntervalDuration})
		if st := c.Scheduler.Straggler; st != nil {
			ds = append(ds, duration{"scheduler.straggler.window", &st.Window, &st.WindowDuration})
		}
	}
	if c.Nomad != nil {
		ds = append(ds, duration{"nomad.usage_interval", &c.Nomad.UsageInterval, &c.Nomad.UsageIntervalDuration})
		ds = append(ds, duration{"nomad.call_timeout", &c.Nomad.CallTimeout, &c.Nomad.CallTimeoutDuration},
			duration{"nomad.type_profile_hold", &c.Nomad.TypeProfileHold, &c.Nomad.TypeProfileHoldDuration})
	}
	var diags hcl.Diagnostics
	for _, d := range ds {
		st, ok := s.at[d.path]
		if !ok || s.failed[d.path] {
			continue
		}
		v, err := time.ParseDuration(*d.str)
		if err != nil {
			s.failed[d.path] = true
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid " + d.path,
				Detail:   fmt.Sprintf("%q is not a duration; use a number with a unit, such as \"15s\", \"2m\" or \"1h30m\".", *d.str),
				Subject:  st.value.Ptr(),
			})
			continue
		}
		*d.d = v
	}
	return diags
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
