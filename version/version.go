package version

import "fmt"

var (
	// Version is the release version, semver without the leading v.
	Version = "0.2.0"
	// Prerelease marks builds between releases, such as "dev".
	Prerelease = "dev"
	// GitCommit is the commit the binary was built from, if known.
	GitCommit = ""
)

// String returns the version as `caravan version` prints it:
// "Caravan v0.2.0-dev (abc1234)".
func String() string {
	v := "Caravan v" + Version
	if Prerelease != "" {
		v += "-" + Prerelease
	}
	if GitCommit != "" {
		v += fmt.Sprintf(" (%s)", GitCommit)
	}
	return v
}
