package sim

import (
	"embed"
	"io/fs"
)

//go:embed data/pollux data/sia
var embedded embed.FS

// Data is the Pollux and Sia data sets compiled into Caravan (see
// data/NOTICE), rooted so that paths read
// "pollux/workloads/workload-6.csv", "pollux/traces/cifar10" and
// "sia/traces/cifar10/placements-aws.csv".
var Data fs.FS = func() fs.FS {
	sub, err := fs.Sub(embedded, "data")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return sub
}()
