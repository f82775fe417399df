package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultAddress is where a Caravan agent's HTTP API listens by default.
const DefaultAddress = "http://127.0.0.1:4680"

// Config configures a Client.
type Config struct {
	// Address is the agent's HTTP address, such as http://127.0.0.1:4680
	// or https://…; a bare host:port gets http://, or https:// when
	// TLSConfig is set.
	Address string
	// Token is sent as X-Caravan-Token.
	Token string
	// HTTPClient defaults to go-cleanhttp's pooled client with no overall
	// timeout, since blocking queries wait for minutes.
	HTTPClient *http.Client
	// TLSConfig verifies an agent served over HTTPS and holds the client
	// certificate; nil means the system's roots and no certificate. It is
	// unused when HTTPClient is set.
	TLSConfig *TLSConfig
}

// DefaultConfig reads CARAVAN_ADDR and CARAVAN_TOKEN from the environment,
// and the TLS settings from CARAVAN_CACERT, CARAVAN_CLIENT_CERT,
// CARAVAN_CLIENT_KEY, CARAVAN_TLS_SERVER_NAME and CARAVAN_SKIP_VERIFY.
func DefaultConfig() *Config {
	return &Config{Address: cmp.Or(os.Getenv("CARAVAN_ADDR"), DefaultAddress), Token: os.Getenv("CARAVAN_TOKEN"), TLSConfig: tlsFromEnv()}
}

// Client talks to one Caravan agent. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// NewClient returns a client for cfg; nil means DefaultConfig.
func NewClient(cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	addr := cmp.Or(cfg.Address, DefaultAddress)
	if !strings.Contains(addr, "://") {
		if cfg.TLSConfig.isSet() {
			addr = "https://" + addr
		} else {
			addr = "http://" + addr
		}
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("address %q is not a URL such as %s", cfg.Address, DefaultAddress)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		if hc, err = defaultHTTPClient(cfg.TLSConfig); err != nil {
			return nil, err
		}
	}
	return &Client{base: u, token: cfg.Token, http: hc}, nil
}

// Address returns the agent's address.
func (c *Client) Address() string { return c.base.String() }

// Error is an error the API answered with.
type Error struct {
	StatusCode int
	Message    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// IsNotFound reports whether err is a 404 of the API.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// QueryOptions are the options of reads, as Nomad's api.QueryOptions; nil
// means the defaults.
type QueryOptions struct {
	// Namespace defaults to "default".
	Namespace string
	// AuthToken, when set, is sent as X-Caravan-Token in place of the
	// Config's Token.
	AuthToken string
	// WaitIndex makes the read a blocking query: it returns when the
	// result's index exceeds WaitIndex, or after WaitTime.
	WaitIndex uint64
	WaitTime  time.Duration
	// AllowStale lets any server answer from its own state (?stale), as
	// Nomad's AllowStale: faster and available without a leader, but
	// possibly behind the leader by QueryMeta.LastContact. Without it,
	// reads are consistent: the leader answers them after confirming it
	// still leads.
	AllowStale bool
	// Prefix, Filter, PerPage, NextToken and Reverse shape the answer of a
	// list endpoint, as Nomad's: the items whose ID starts with Prefix, that
	// the go-bexpr expression Filter selects (such as `Status == "running"`),
	// at most PerPage of them from NextToken on (a previous page's
	// QueryMeta.NextToken), in descending order with Reverse. Sort picks
	// another order where the list has one (Jobs().List: "submit_time").
	Prefix    string
	Filter    string
	PerPage   int
	NextToken string
	Reverse   bool
	Sort      string

	ctx context.Context
}

// WithContext returns a copy of q (the defaults when q is nil) whose
// requests ctx bounds and cancels.
func (q *QueryOptions) WithContext(ctx context.Context) *QueryOptions {
	q2 := new(QueryOptions)
	if q != nil {
		*q2 = *q
	}
	q2.ctx = ctx
	return q2
}

// Context returns the context of q's requests: context.Background() unless
// WithContext set one.
func (q *QueryOptions) Context() context.Context {
	if q == nil || q.ctx == nil {
		return context.Background()
	}
	return q.ctx
}

// QueryMeta is what a read says about its result.
type QueryMeta struct {
	// LastIndex is the index to pass as WaitIndex to wait for a change.
	LastIndex uint64
	// KnownLeader is whether the answering server knew a leader, and
	// LastContact how long ago it last heard from it (0 on the leader);
	// they matter for AllowStale reads.
	KnownLeader bool
	LastContact time.Duration
	// NextToken, on a page of a list, is the QueryOptions.NextToken of the
	// next page; empty on the last.
	NextToken string
	// DriverError, on an answer about nodes, is set while the agent's
	// driver cannot read the cluster (Nomad): the nodes are the ones it
	// last read. It is the message of the DriverError event that began
	// the outage, at DriverErrorSince.
	DriverError      string
	DriverErrorSince time.Time
}

// WriteOptions are the options of writes, as Nomad's api.WriteOptions; nil
// means the defaults.
type WriteOptions struct {
	// Namespace is the namespace of a write that names a job by its ID
	// (Revert, Stop); it defaults to "default". A registration takes the
	// job's own namespace.
	Namespace string
	// AuthToken, when set, is sent as X-Caravan-Token in place of the
	// Config's Token.
	AuthToken string

	ctx context.Context
}

// WithContext returns a copy of w (the defaults when w is nil) whose
// requests ctx bounds and cancels.
func (w *WriteOptions) WithContext(ctx context.Context) *WriteOptions {
	w2 := new(WriteOptions)
	if w != nil {
		*w2 = *w
	}
	w2.ctx = ctx
	return w2
}

// Context returns the context of w's requests: context.Background() unless
// WithContext set one.
func (w *WriteOptions) Context() context.Context {
	if w == nil || w.ctx == nil {
		return context.Background()
	}
	return w.ctx
}

// WriteMeta is what a write says about what it did.
type WriteMeta struct {
	// LastIndex is the Raft index the write was committed at, when the
	// server says it (0 otherwise): a blocking read with it as WaitIndex
	// waits for changes after the write.
	LastIndex uint64
}

func (q *QueryOptions) values() url.Values {
	v := url.Values{}
	if q == nil {
		return v
	}
	if q.Namespace != "" {
		v.Set("namespace", q.Namespace)
	}
	if q.WaitIndex > 0 {
		v.Set("index", strconv.FormatUint(q.WaitIndex, 10))
	}
	if q.WaitTime > 0 {
		v.Set("wait", q.WaitTime.String())
	}
	if q.AllowStale {
		v.Set("stale", "")
	}
	for k, p := range map[string]string{"prefix": q.Prefix, "filter": q.Filter, "next_token": q.NextToken, "sort": q.Sort} {
		if p != "" {
			v.Set(k, p)
		}
	}
	if q.PerPage > 0 {
		v.Set("per_page", strconv.Itoa(q.PerPage))
	}
	if q.Reverse {
		v.Set("reverse", "true")
	}
	return v
}

// query makes a read of path with q's options and params; out, when not
// nil, receives the JSON answer.
func (c *Client) query(path string, params url.Values, out any, q *QueryOptions) (*QueryMeta, error) {
	v := q.values()
	for k, p := range params {
		v[k] = p
	}
	var token string
	if q != nil {
		token = q.AuthToken
	}
	resp, err := c.raw(q.Context(), http.MethodGet, path, v, nil, token)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	meta := &QueryMeta{LastIndex: indexHeader(resp), NextToken: resp.Header.Get("X-Caravan-NextToken")}
	meta.KnownLeader = resp.Header.Get("X-Caravan-KnownLeader") == "true"
	if ms, err := strconv.ParseUint(resp.Header.Get("X-Caravan-LastContact"), 10, 64); err == nil {
		meta.LastContact = time.Duration(ms) * time.Millisecond
	}
	if msg := resp.Header.Get("X-Caravan-Driver-Error"); msg != "" {
		meta.DriverError = msg
		if ns, err := strconv.ParseInt(resp.Header.Get("X-Caravan-Driver-Error-Since"), 10, 64); err == nil {
			meta.DriverErrorSince = time.Unix(0, ns)
		}
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return nil, fmt.Errorf("GET %s: decode answer: %w", path, err)
		}
	}
	return meta, nil
}

// write makes a write with w's options and params; in is JSON-encoded
// unless it is an io.Reader, and out, when not nil, receives the JSON
// answer. Without out, an answer {"Index": n} gives WriteMeta.LastIndex
// when the X-Caravan-Index header does not.
func (c *Client) write(method, path string, params url.Values, in, out any, w *WriteOptions) (*WriteMeta, error) {
	v := url.Values{}
	for k, p := range params {
		v[k] = p
	}
	var token string
	if w != nil {
		if w.Namespace != "" {
			v.Set("namespace", w.Namespace)
		}
		token = w.AuthToken
	}
	resp, err := c.raw(w.Context(), method, path, v, in, token)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	meta := &WriteMeta{LastIndex: indexHeader(resp)}
	if out == nil {
		var answer struct{ Index uint64 }
		if json.NewDecoder(resp.Body).Decode(&answer) == nil && meta.LastIndex == 0 {
			meta.LastIndex = answer.Index
		}
		return meta, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return meta, nil
}

// indexHeader reads X-Caravan-Index; 0 when absent.
func indexHeader(resp *http.Response) uint64 {
	idx, _ := strconv.ParseUint(resp.Header.Get("X-Caravan-Index"), 10, 64)
	return idx
}

// raw makes a request and returns the response of a 2xx answer; the caller
// closes its body. token, when set, replaces the Config's Token.
func (c *Client) raw(ctx context.Context, method, path string, query url.Values, in any, token string) (*http.Response, error) {
	var body io.Reader
	switch v := in.(type) {
	case nil:
	case io.Reader:
		body = v
	default:
		buf, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(buf)
	}
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if token = cmp.Or(token, c.token); token != "" {
		req.Header.Set("X-Caravan-Token", token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		e := &Error{StatusCode: resp.StatusCode, Message: strings.TrimSpace(string(msg))}
		if resp.StatusCode == http.StatusBadRequest && strings.Contains(e.Message, "HTTP request to an HTTPS server") {
			e.Message += " (the agent serves HTTPS: use an https:// address, with the CA in CARAVAN_CACERT or -ca-cert)"
		}
		return nil, e
	}
	return resp, nil
}

// get reads path into a T (a slice or a plain value).
func get[T any](c *Client, path string, params url.Values, q *QueryOptions) (T, *QueryMeta, error) {
	var out T
	meta, err := c.query(path, params, &out, q)
	return out, meta, err
}

// getOne reads path into a *T; nil on an error.
func getOne[T any](c *Client, path string, params url.Values, q *QueryOptions) (*T, *QueryMeta, error) {
	out, meta, err := get[T](c, path, params, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}

// writeOne makes a write whose answer is a T; nil on an error.
func writeOne[T any](c *Client, method, path string, in any, w *WriteOptions) (*T, *WriteMeta, error) {
	var out T
	meta, err := c.write(method, path, nil, in, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return &out, meta, nil
}
