//go:build unix

package server

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"
)

// TestDataDir_Private: under the most permissive umask, and over a raft/
// tree an earlier version left world-readable, every directory of raft/
// is 0700 and every file 0600 once a snapshot was taken, since they hold
// every secret.
func TestDataDir_Private(t *testing.T) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })

	cfg := TestConfig(t, simDriver(t, 1))
	must.NoError(t, os.MkdirAll(filepath.Join(cfg.DataDir, "raft", "snapshots"), 0o755))
	must.NoError(t, os.Chmod(filepath.Join(cfg.DataDir, "raft"), 0o755))
	s := TestServer(t, cfg)
	leaderOf(t, s)
	_, _, err := client(t, s).Jobs().Register(demoJob(t, "a"), nil)
	must.NoError(t, err)
	var snap bytes.Buffer
	must.NoError(t, errOf(client(t, s).Operator().SnapshotSave(&snap, nil)))

	modes := map[string]fs.FileMode{}
	files := 0
	must.NoError(t, filepath.WalkDir(filepath.Join(cfg.DataDir, "raft"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(cfg.DataDir, path)
		modes[rel] = info.Mode().Perm()
		if d.Type().IsRegular() {
			files++
		}
		return nil
	}))
	must.Positive(t, files)
	must.MapContainsKey(t, modes, filepath.Join("raft", "snapshots"))
	must.MapContainsKey(t, modes, filepath.Join("raft", "raft.db"))
	for path, mode := range modes {
		want := privateFileMode
		if info, err := os.Stat(filepath.Join(cfg.DataDir, path)); err == nil && info.IsDir() {
			want = privateDirMode
		}
		must.Eq(t, want, mode, must.Sprintf("%s is %v", path, mode))
	}
	must.Greater(t, 3, len(modes), must.Sprintf("a snapshot's directory and files are there: %v", modes))
}
