// Command goodput-las serves the built-in goodput-las algorithm as an external
// algorithm plugin, built from the same code the server runs in-process.
package main

import (
	"github.com/caravan-sched/caravan/plugins/algorithm/sdk"
	"github.com/caravan-sched/caravan/plugins/builtin/algorithm/goodput-las/plugin"
)

func main() { sdk.Serve(plugin.New()) }
