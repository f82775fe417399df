// Package algorithm is the contract between Caravan and its scheduling
// algorithms: the Algorithm interface, which built-ins satisfy in-process
// (FromPlanner) and external plugins over go-plugin's gRPC (proto/v1), the
// Handshake both sides must share, and API version negotiation.
//
// Host and plugin both import this package. A plugin author uses
// plugins/algorithm/sdk, which serves an Algorithm; the server reaches
// plugins through plugins/loader.
package algorithm
