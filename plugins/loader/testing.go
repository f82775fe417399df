package loader

import (
	"os/exec"
	"path"
	"path/filepath"
	"testing"
)

// BuildPlugin builds the plugin binary of a package of this module, such as
// "examples/plugin-random", into the test's temporary folder and returns
// its path.
func BuildPlugin(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, "github.com/caravan-sched/caravan/"+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("build plugin %s: %v\n%s", pkg, err, out)
	}
	return bin
}
