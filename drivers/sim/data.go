package sim

import (
	"embed"
	"io/fs"
)

//go:embed data/pollux
var embedded embed.FS

// Data is the Pollux data set compiled into Caravan, rooted so that paths
// read "pollux/workloads/workload-6.csv" and "pollux/traces/cifar10".
var Data fs.FS = func() fs.FS {
	sub, err := fs.Sub(embedded, "data")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return sub
}()
