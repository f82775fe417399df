// Package api is the Go client of Caravan's HTTP API, as
// github.com/hashicorp/nomad/api is for Nomad's: the CLI, the simulator and
// the e2e tests talk to Caravan agents through it.
//
// It has its own types for what the API takes and answers (Job, Placement,
// Plan, Node, Event, JobSamples, ACLToken, ...), and imports no package of
// Caravan, so that programs can use it without the server. Each type
// mirrors the server's own (package structs) field for field, with the
// same JSON: the keys are the Go field names. types_test.go checks every
// pair, so a field the server adds fails the tests until it is added here.
//
// Every method has one of two shapes, as Nomad's:
//
//	// reads: GET, with blocking queries, stale reads and list options
//	func (j *Jobs) Info(id string, q *QueryOptions) (*Job, *QueryMeta, error)
//	// writes: the answer, if any, and the Raft index of the write
//	func (j *Jobs) Register(req *JobRegisterRequest, w *WriteOptions) (*JobRegisterResponse, *WriteMeta, error)
//	func (j *Jobs) Stop(id string, purge bool, w *WriteOptions) (*WriteMeta, error)
//
// A nil QueryOptions or WriteOptions means the defaults: the default
// namespace, the Config's token and no deadline. WithContext returns a
// copy of the options whose requests a context bounds:
//
//	client, err := api.NewClient(api.DefaultConfig()) // CARAVAN_ADDR, CARAVAN_TOKEN, CARAVAN_CACERT...
//	if err != nil {
//		return err
//	}
//	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
//	defer cancel()
//	resp, meta, err := client.Jobs().Register(&api.JobRegisterRequest{JobHCL: src, Filename: "demo.hcl"},
//		(&api.WriteOptions{}).WithContext(ctx))
//	if err != nil {
//		return err
//	}
//	// Wait for the job's summary to change after the registration.
//	q := (&api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 5 * time.Minute}).WithContext(ctx)
//	sum, _, err := client.Jobs().Summary(resp.JobID, q)
//
// A client talks to an agent over HTTP or HTTPS (Config.TLSConfig, or the
// CARAVAN_CACERT, CARAVAN_CLIENT_CERT, CARAVAN_CLIENT_KEY,
// CARAVAN_TLS_SERVER_NAME and CARAVAN_SKIP_VERIFY variables); an error the
// agent answers with is an *Error, and IsNotFound and IsForbidden tell the
// common ones apart.
package api
