package main

import (
	"flag"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/jobspec"
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/mattn/go-isatty"
)

// DefaultAddress is where the CLI finds a Caravan agent when neither -address
// nor CARAVAN_ADDR says otherwise.
const DefaultAddress = "http://127.0.0.1:4680"

// Meta holds what every command shares: the UI, a logger, and the global
// flags, as Nomad's command.Meta does.
type Meta struct {
	Ui     cli.Ui
	Logger hclog.Logger

	// address and token are the agent's HTTP address and the ACL token, from
	// -address/CARAVAN_ADDR and -token/CARAVAN_TOKEN.
	address string
	token   string
	noColor bool
	// namespace is -namespace or CARAVAN_NAMESPACE; empty means the
	// default namespace for a job, every namespace for a list.
	namespace string
	// tls is the TLS settings of -ca-cert, -ca-path, -client-cert, -client-key,
	// -tls-server-name and -tls-skip-verify, and of the CARAVAN_CACERT
	// and like variables they override.
	tls api.TLSConfig
}

func newMeta(ui cli.Ui) Meta {
	return Meta{
		Ui: ui,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "caravan",
			Level:  hclog.LevelFromString(os.Getenv("CARAVAN_LOG_LEVEL")),
			Output: os.Stderr,
		}),
	}
}

// FlagSet returns a flag set with the global flags every command accepts.
// Parse errors are printed by the command, not by the flag package.
func (m *Meta) FlagSet(name string) *flag.FlagSet {
	f := flag.NewFlagSet(name, flag.ContinueOnError)
	f.SetOutput(io.Discard)
	f.StringVar(&m.address, "address", envOr("CARAVAN_ADDR", DefaultAddress), "")
	f.StringVar(&m.token, "token", os.Getenv("CARAVAN_TOKEN"), "")
	f.StringVar(&m.namespace, "namespace", os.Getenv("CARAVAN_NAMESPACE"), "")
	f.BoolVar(&m.noColor, "no-color", false, "")
	f.StringVar(&m.tls.CACert, "ca-cert", os.Getenv("CARAVAN_CACERT"), "")
	f.StringVar(&m.tls.CAPath, "ca-path", os.Getenv("CARAVAN_CAPATH"), "")
	f.StringVar(&m.tls.ClientCert, "client-cert", os.Getenv("CARAVAN_CLIENT_CERT"), "")
	f.StringVar(&m.tls.ClientKey, "client-key", os.Getenv("CARAVAN_CLIENT_KEY"), "")
	f.StringVar(&m.tls.TLSServerName, "tls-server-name", os.Getenv("CARAVAN_TLS_SERVER_NAME"), "")
	skip, _ := strconv.ParseBool(os.Getenv("CARAVAN_SKIP_VERIFY"))
	f.BoolVar(&m.tls.Insecure, "tls-skip-verify", skip, "")
	return f
}

// arguments is how many positional arguments a command takes, and the usage
// error that tells the user so.
type arguments struct {
	min, max int
	usage    string
}

// noArguments is what a command that takes only flags accepts.
var noArguments = arguments{0, 0, "This command takes no arguments"}

// oneArgument is exactly one argument, such as "<job>".
func oneArgument(name string) arguments {
	return arguments{1, 1, "This command takes one argument: " + name}
}

// optionalArgument is at most one argument, such as "<job>".
func optionalArgument(name string) arguments {
	return arguments{0, 1, "This command takes at most one argument: " + name}
}

// parseArgs parses args with flags and checks the number of arguments left.
// On an error it prints it followed by help, and returns false.
func (m *Meta) parseArgs(flags *flag.FlagSet, args []string, help string, want arguments) bool {
	if err := flags.Parse(args); err != nil {
		m.usageError(err.Error(), help)
		return false
	}
	if n := flags.NArg(); n < want.min || n > want.max {
		m.usageError(want.usage, help)
		return false
	}
	return true
}

// usageError prints msg followed by the command's help.
func (m *Meta) usageError(msg, help string) {
	m.Ui.Error(msg + "\n\n" + help)
}

// color reports whether diagnostics may use terminal colors.
func (m *Meta) color() bool {
	return !m.noColor && os.Getenv("NO_COLOR") == "" && isatty.IsTerminal(os.Stderr.Fd())
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// generalOptions documents the global flags in every command's help.
const generalOptions = `
General Options:

  -address=<addr>
    The address of the Caravan agent. Overrides CARAVAN_ADDR.
    Default: ` + DefaultAddress + `

  -token=<token>
    The ACL token to use. Overrides CARAVAN_TOKEN.

  -namespace=<namespace>
    The namespace of the job a command names, of the jobs it lists, and
    of a jobspec that names none (or "default"), as Nomad's -namespace.
    Overrides CARAVAN_NAMESPACE. Default: a job's namespace is "default";
    lists, and the search for a job whose ID starts with what is given,
    cover every namespace.

  -ca-cert=<path>
    The CA certificate that verifies an agent served over HTTPS. Overrides
    CARAVAN_CACERT.

  -ca-path=<path>
    A directory of CA certificates that verify an agent served over HTTPS.
    Overrides CARAVAN_CAPATH.

  -client-cert=<path>
    The client certificate presented to the agent, which one with
    verify_https_client requires. Overrides CARAVAN_CLIENT_CERT.

  -client-key=<path>
    The key of -client-cert. Overrides CARAVAN_CLIENT_KEY.

  -tls-server-name=<name>
    The name the agent's certificate must carry, such as
    server.global.caravan. Overrides CARAVAN_TLS_SERVER_NAME.

  -tls-skip-verify
    Does not verify the agent's certificate (not recommended). Overrides
    CARAVAN_SKIP_VERIFY.

  -no-color
    Disables colored output. NO_COLOR in the environment does the same.`

// stringsFlag is a repeatable string flag, such as -var.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// jobspecFlags are the flags of every command that reads a jobspec.
type jobspecFlags struct {
	vars     stringsFlag
	varFiles stringsFlag
}

func (j *jobspecFlags) register(f *flag.FlagSet) {
	f.Var(&j.vars, "var", "")
	f.Var(&j.varFiles, "var-file", "")
}

const jobspecOptions = `
Jobspec Options:

  -var 'key=value'
    Sets a jobspec variable. Repeatable; overrides -var-file, which overrides
    CARAVAN_VAR_<key> in the environment.

  -var-file=path
    Reads variable values from an HCL file of key = value lines. Repeatable.`

// jobspecCommand parses the arguments of a command that reads one jobspec
// (its flags, which extra may add to, and one path), then the jobspec, of
// either format as "caravan job validate" reads it (parseAnyJobspec), as
// the API client's Job to send, and its format (jobspec.FormatCaravan or
// jobspec.FormatNomad). It prints what is wrong and returns nil on any
// error.
func (m *Meta) jobspecCommand(name string, args []string, help string, extra func(*flag.FlagSet)) (*api.Job, string) {
	var jf jobspecFlags
	flags := m.FlagSet(name)
	jf.register(flags)
	if extra != nil {
		extra(flags)
	}
	if !m.parseArgs(flags, args, help, oneArgument("<path>")) {
		return nil, ""
	}
	job, format, _ := m.parseAnyJobspec(flags.Arg(0), &jf)
	if job == nil {
		if format == jobspec.FormatNomad {
			m.Ui.Error(nomadChecked)
		}
		return nil, format
	}
	if m.namespace != "" && job.Namespace == structs.DefaultNamespace && job.Nomad == nil {
		job.Namespace = m.namespace
	}
	out, err := jobspec.APIJob(job)
	if err != nil {
		m.Ui.Error(err.Error())
		return nil, format
	}
	return out, format
}

// parseAnyJobspec parses the jobspec at path in either format (see
// jobspec.Parser.ParseAny) and returns it, its format ("" when it could
// not be told) and the parser, which holds the file. On errors it prints
// them and returns a nil job.
func (m *Meta) parseAnyJobspec(path string, jf *jobspecFlags) (*structs.Job, string, *jobspec.Parser) {
	return m.readJobspec(path, jf, (*jobspec.Parser).ParseAny)
}

// stdinName names a jobspec read from standard input in diagnostics.
const stdinName = "<stdin>"

// jobspecName is the name of the jobspec at path in diagnostics and in
// the parser's files.
func jobspecName(path string) string {
	if path == "-" {
		return stdinName
	}
	return path
}

// readJobspec reads the jobspec at path with parse, and prints its
// diagnostics with source snippets.
func (m *Meta) readJobspec(path string, jf *jobspecFlags, parse func(*jobspec.Parser, *jobspec.Config) (*structs.Job, string, hcl.Diagnostics)) (*structs.Job, string, *jobspec.Parser) {
	cfg := &jobspec.Config{
		Filename: path,
		ArgVars:  jf.vars,
		VarFiles: jf.varFiles,
		Environ:  os.Environ(),
	}
	if path == "-" {
		src, err := io.ReadAll(os.Stdin)
		if err != nil {
			m.Ui.Error("Error reading standard input: " + err.Error())
			return nil, "", nil
		}
		cfg.Filename, cfg.Src = jobspecName(path), src
	}
	p := jobspec.NewParser()
	job, format, diags := parse(p, cfg)
	m.printDiagnostics(p.Files(), diags)
	if diags.HasErrors() {
		return nil, format, p
	}
	m.Logger.Debug("parsed jobspec", "path", path, "job_id", job.ID, "format", format)
	return job, format, p
}

// printDiagnostics prints diagnostics with source snippets on stderr.
func (m *Meta) printDiagnostics(files map[string]*hcl.File, diags hcl.Diagnostics) {
	if len(diags) == 0 {
		return
	}
	var b strings.Builder
	writeDiagnostics(&b, files, diags, m.color())
	if diags.HasErrors() {
		m.Ui.Error(strings.TrimRight(b.String(), "\n"))
	} else {
		m.Ui.Warn(strings.TrimRight(b.String(), "\n"))
	}
}

// writeDiagnostics renders each diagnostic as a "file:line:col" header, the
// source line with the subject underlined, and the detail.
func writeDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, color bool) {
	bold, red, yellow, reset := "\x1b[1m", "\x1b[31m", "\x1b[33m", "\x1b[0m"
	if !color {
		bold, red, yellow, reset = "", "", "", ""
	}
	for _, d := range diags {
		sev, c := "Error", red
		if d.Severity == hcl.DiagWarning {
			sev, c = "Warning", yellow
		}
		io.WriteString(w, c+bold+sev+": "+reset+bold)
		if s := d.Subject; s != nil {
			io.WriteString(w, s.Filename+":"+strconv.Itoa(s.Start.Line)+":"+strconv.Itoa(s.Start.Column)+": ")
		}
		io.WriteString(w, d.Summary+reset+"\n")
		if s := d.Subject; s != nil && files[s.Filename] != nil {
			writeSnippet(w, files[s.Filename].Bytes, *s, c, reset)
		}
		if d.Detail != "" {
			io.WriteString(w, "  "+d.Detail+"\n")
		}
		io.WriteString(w, "\n")
	}
}

// writeSnippet prints the first line of rng from src, with carets under the
// part of it that rng covers.
func writeSnippet(w io.Writer, src []byte, rng hcl.Range, color, reset string) {
	lines := strings.Split(string(src), "\n")
	if rng.Start.Line < 1 || rng.Start.Line > len(lines) {
		return
	}
	line := strings.TrimRight(lines[rng.Start.Line-1], "\r")
	num := strconv.Itoa(rng.Start.Line)
	pad := strings.Repeat(" ", len(num))
	start := max(rng.Start.Column-1, 0)
	end := len([]rune(line))
	if rng.End.Line == rng.Start.Line {
		end = min(rng.End.Column-1, end)
	}
	width := max(end-start, 1)
	io.WriteString(w, "  "+num+" | "+strings.ReplaceAll(line, "\t", " ")+"\n")
	io.WriteString(w, "  "+pad+" | "+strings.Repeat(" ", start)+color+strings.Repeat("^", width)+reset+"\n")
}
