package server

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// Permissions of the data directory's raft/ tree. Raft's log, its stable
// store and its snapshots hold the whole replicated state, every ACL
// secret and the report key included: only the server's own user may read
// them.
const (
	privateDirMode  fs.FileMode = 0o700
	privateFileMode fs.FileMode = 0o600
)

// makePrivate sets every directory under root, root included, to 0700
// and every regular file to 0600, whatever the umask and whatever an
// earlier version left there (raft's FileSnapshotStore creates its
// directories 0755 and its files 0644 less the umask; raft-boltdb opens
// raft.db 0600). A missing root is not an error.
func makePrivate(root string) error {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := privateFileMode
		switch {
		case d.IsDir():
			mode = privateDirMode
		case !d.Type().IsRegular():
			return nil
		}
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("restrict permissions: %w", err)
		}
		return nil
	})
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

// privateSnapshotStore is raft's FileSnapshotStore whose snapshots are
// made private (makePrivate) as soon as they are complete. While a
// snapshot is being written its files have raft's modes, but they lie in
// snapshots/, which is 0700 before the first snapshot starts, so no other
// user can reach them.
type privateSnapshotStore struct {
	*raft.FileSnapshotStore
	// dir is the snapshots/ directory of the store.
	dir string
}

var _ raft.SnapshotStore = (*privateSnapshotStore)(nil)

// newPrivateSnapshotStore opens the snapshot store in raftDir, keeping
// retain snapshots, and makes raftDir's whole tree private.
func newPrivateSnapshotStore(raftDir string, retain int, s *Server) (*privateSnapshotStore, error) {
	store, err := raft.NewFileSnapshotStoreWithLogger(raftDir, retain, s.log.Named("raft"))
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	if err := makePrivate(raftDir); err != nil {
		return nil, err
	}
	return &privateSnapshotStore{FileSnapshotStore: store, dir: filepath.Join(raftDir, "snapshots")}, nil
}

// Create starts a snapshot as FileSnapshotStore does; its sink makes the
// snapshot private when it closes.
func (p *privateSnapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := p.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &privateSink{SnapshotSink: sink, dir: p.dir}, nil
}

// privateSink makes its snapshot's directory and files private once
// raft's sink has moved them in place.
type privateSink struct {
	raft.SnapshotSink
	dir string
}

// Close completes the snapshot, then restricts its permissions. The
// snapshot is in place by then, so a failure to restrict them is returned
// (raft logs it and skips compacting its log) but does not undo it; the
// snapshots/ directory is 0700 already, so no other user can reach it.
func (p *privateSink) Close() error {
	if err := p.SnapshotSink.Close(); err != nil {
		return err
	}
	return makePrivate(filepath.Join(p.dir, p.ID()))
}
