// Command pollux serves the built-in pollux algorithm as an external
// algorithm plugin, built from the same code the server runs in-process.
package main

import (
	"github.com/caravan-sched/caravan/plugins/algorithm/sdk"
	"github.com/caravan-sched/caravan/plugins/builtin/algorithm/pollux/plugin"
)

func main() { sdk.Serve(plugin.New()) }
