// Package api is the Go client of Caravan's HTTP API, as github.com/hashicorp/nomad/api
// is for Nomad's: the CLI and the e2e tests talk to Caravan agents through it.
// It imports only structs, so that programs can use it without the server.
package api
