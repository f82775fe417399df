// Package version reports which Caravan this is. Version and GitCommit are
// set at link time (see GNUmakefile): -X .../version.GitCommit=<sha>.
package version
