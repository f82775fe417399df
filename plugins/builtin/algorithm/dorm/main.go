// Command dorm serves the built-in dorm algorithm as an external
// algorithm plugin, built from the same code the server runs in-process.
package main

import (
	"github.com/caravan-sched/caravan/plugins/algorithm/sdk"
	"github.com/caravan-sched/caravan/plugins/builtin/algorithm/dorm/plugin"
)

func main() { sdk.Serve(plugin.New()) }
