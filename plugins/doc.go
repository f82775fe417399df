// Package plugins holds the wire contracts between Caravan and its
// go-plugin plugins (plugins/algorithm with its proto/v1 gRPC service), the
// loader that launches external plugins, and the SDK for plugin authors. Host
// and plugin both import the contract packages.
package plugins
