// Command dlrover serves the built-in dlrover algorithm as an external
// algorithm plugin, built from the same code the server runs in-process.
package main

import (
	"github.com/caravan-sched/caravan/plugins/algorithm/sdk"
	"github.com/caravan-sched/caravan/plugins/builtin/algorithm/dlrover/plugin"
)

func main() { sdk.Serve(plugin.New()) }
