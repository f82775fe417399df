package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/url"
	"time"

	"github.com/caravan-sched/caravan/api"
)

// requestTimeout bounds a single write to the agent.
const requestTimeout = time.Minute

// agentCommand parses the arguments of a command that talks to the agent
// (flags, then want's count of arguments, left in flags) and returns a
// client for the agent. It prints what is wrong and returns false on any
// error.
func (m *Meta) agentCommand(flags *flag.FlagSet, args []string, help string, want arguments) (*api.Client, bool) {
	if !m.parseArgs(flags, args, help, want) {
		return nil, false
	}
	return m.client()
}

// client returns an API client for the agent the global flags name. It
// prints the error and returns false when the address is not a URL.
func (m *Meta) client() (*api.Client, bool) {
	tls := m.tls
	c, err := api.NewClient(&api.Config{Address: m.address, Token: m.token, TLSConfig: &tls})
	if err != nil {
		m.Ui.Error("create API client: " + err.Error())
		return nil, false
	}
	return c, true
}

// apiError prints "Error <what>: <err>", adding a hint when the request did
// not get an answer at all (as opposed to an error answer or a timeout).
func (m *Meta) apiError(what string, err error) {
	msg := "Error " + what + ": " + err.Error()
	var urlErr *url.Error
	if errors.As(err, &urlErr) && !urlErr.Timeout() && !errors.Is(err, context.DeadlineExceeded) {
		msg += "\n\nIs a Caravan agent running at " + m.address + "? Set -address or CARAVAN_ADDR to reach another."
	}
	m.Ui.Error(msg)
}

// output prints an answer of the agent: v as indented JSON when asJSON is
// set (the -json flag), else the text format returns. It returns the exit
// code.
func (m *Meta) output(asJSON bool, v any, format func() string) int {
	if asJSON {
		return m.outputJSON(v)
	}
	m.Ui.Output(format())
	return 0
}

// outputJSON prints v as indented JSON and returns the exit code.
func (m *Meta) outputJSON(v any) int {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		m.Ui.Error("Error encoding JSON: " + err.Error())
		return 1
	}
	m.Ui.Output(string(out))
	return 0
}

// jsonOption documents -json in the help of a command that prints what
// ("the nodes") as JSON.
func jsonOption(what string) string {
	return `
  -json
    Prints ` + what + ` as JSON.`
}

// queryOpts and writeOpts are the options of a read and of a write that
// ctx bounds, in the default namespace.
func queryOpts(ctx context.Context) *api.QueryOptions {
	return (&api.QueryOptions{}).WithContext(ctx)
}

func writeOpts(ctx context.Context) *api.WriteOptions {
	return (&api.WriteOptions{}).WithContext(ctx)
}

// value is an answer without its QueryMeta or WriteMeta.
func value[T, M any](v T, _ M, err error) (T, error) { return v, err }

// asServer re-decodes v, an answer of the API, as the server's type T, for
// the methods of package structs (Job.Diff); the two encode alike (package
// api's tests check it).
func asServer[T any](v any) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	return out, err
}
