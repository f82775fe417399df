package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Checkpoint layout, under $CARAVAN_CHECKPOINT_DIR/ckpt:
//
//	manifest.json            the latest complete checkpoint; written last
//	<tag>/shard-<r>.json     parameter server r's slice, for the manifest of <tag>
//
// Each checkpoint gets its own <tag> directory ("step-<s>-<random>"), so
// writing one never touches the files the current manifest names: a crash
// at any point leaves the previous checkpoint whole. Once the new manifest
// is in place, the chief removes the other directories.

const (
	ckptDirName      = "ckpt"
	manifestName     = "manifest.json"
	manifestVersion  = 1
	rendezvousDir    = "rendezvous"
	tmpPrefix        = ".tmp-"
	checkpointPrefix = "step-"
)

// manifest describes a complete checkpoint: the step every shard was
// taken at and where each slice of the parameter vector lies. Besides the
// parameters it keeps the chief's convergence tracking, so that a rescale
// neither resets nor repeats it.
type manifest struct {
	Version  int        `json:"version"`
	JobID    string     `json:"job_id"`
	Step     int64      `json:"step"`
	Features int        `json:"features"`
	Shards   []shardRef `json:"shards"`
	// Loss is the evaluation loss of the parameters at Step.
	Loss float64 `json:"loss"`
	// Epoch is the last epoch boundary the chief passed, EpochLoss the
	// loss there, and EpochsBelow how many epochs in a row improved less
	// than the convergence threshold.
	Epoch       int64   `json:"epoch"`
	EpochLoss   float64 `json:"epoch_loss"`
	EpochsBelow int     `json:"epochs_below"`
	// The shape and generation of the run that wrote the checkpoint.
	Generation string `json:"generation"`
	NumPS      int    `json:"num_ps"`
	NumWorkers int    `json:"num_workers"`
	// GlobalBatch is the batch the run trained at; GradSqr, GradVarRef
	// and GradWeight the chief's gradient noise averages (gradNoise), so
	// that a resumed run scales its learning rate as the last did.
	GlobalBatch int     `json:"global_batch,omitempty"`
	GradSqr     float64 `json:"grad_sqr,omitempty"`
	GradVarRef  float64 `json:"grad_var_ref,omitempty"`
	GradWeight  float64 `json:"grad_weight,omitempty"`
}

// shardRef locates one slice of a checkpoint: Len parameters from Offset,
// stored in File (relative to the ckpt directory), taken at Step.
type shardRef struct {
	File   string `json:"file"`
	Offset int    `json:"offset"`
	Len    int    `json:"len"`
	Step   int64  `json:"step"`
}

// shard is the content of a shard file.
type shard struct {
	Step   int64     `json:"step"`
	Offset int       `json:"offset"`
	Len    int       `json:"len"`
	Params []float64 `json:"params"`
}

func ckptRoot(checkpointDir string) string { return filepath.Join(checkpointDir, ckptDirName) }

// writeShard writes rank's slice for the checkpoint tag, atomically.
func writeShard(root, tag string, rank int, sh shard) (shardRef, error) {
	ref := shardRef{File: filepath.Join(tag, fmt.Sprintf("shard-%d.json", rank)), Offset: sh.Offset, Len: sh.Len, Step: sh.Step}
	data, err := json.Marshal(sh)
	if err != nil {
		return shardRef{}, fmt.Errorf("encode shard %d: %w", rank, err)
	}
	if err := writeFileAtomic(filepath.Join(root, ref.File), data); err != nil {
		return shardRef{}, err
	}
	return ref, nil
}

// writeManifest validates m and replaces the manifest atomically.
func writeManifest(root string, m *manifest) error {
	if err := m.validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	return writeFileAtomic(filepath.Join(root, manifestName), data)
}

// readManifest returns the current manifest; an error wrapping
// fs.ErrNotExist means there is no checkpoint.
func readManifest(root string) (*manifest, error) {
	data, err := os.ReadFile(filepath.Join(root, manifestName))
	if err != nil {
		return nil, fmt.Errorf("read checkpoint manifest: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode checkpoint manifest %s: %w", filepath.Join(root, manifestName), err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("checkpoint manifest %s: %w", filepath.Join(root, manifestName), err)
	}
	return &m, nil
}

// validate checks that the shards tile [0, Features) and stay inside the
// ckpt directory.
func (m *manifest) validate() error {
	if m.Version != manifestVersion {
		return fmt.Errorf("version %d is not %d", m.Version, manifestVersion)
	}
	if m.Step < 0 || m.Features < 1 {
		return fmt.Errorf("step %d and features %d must be positive", m.Step, m.Features)
	}
	shards := slices.Clone(m.Shards)
	slices.SortFunc(shards, func(a, b shardRef) int { return a.Offset - b.Offset })
	next := 0
	for _, s := range shards {
		if s.Offset != next || s.Len < 1 {
			return fmt.Errorf("shards do not tile the %d parameters: %s has [%d, %d) where %d was expected", m.Features, s.File, s.Offset, s.Offset+s.Len, next)
		}
		if !filepath.IsLocal(s.File) {
			return fmt.Errorf("shard file %q is outside the checkpoint directory", s.File)
		}
		next += s.Len
	}
	if next != m.Features {
		return fmt.Errorf("shards cover %d of %d parameters", next, m.Features)
	}
	return nil
}

// loadSlice reads parameters [offset, offset+length) of the checkpoint m
// from whichever shards hold them: the number of parameter servers may
// differ from the run that wrote it.
func loadSlice(root string, m *manifest, offset, length int) ([]float64, error) {
	if offset < 0 || length < 1 || offset+length > m.Features {
		return nil, fmt.Errorf("slice [%d, %d) is outside the checkpoint's %d parameters", offset, offset+length, m.Features)
	}
	out := make([]float64, length)
	for _, ref := range m.Shards {
		lo, hi := max(offset, ref.Offset), min(offset+length, ref.Offset+ref.Len)
		if lo >= hi {
			continue
		}
		sh, err := readShard(root, ref)
		if err != nil {
			return nil, err
		}
		copy(out[lo-offset:hi-offset], sh.Params[lo-ref.Offset:hi-ref.Offset])
	}
	return out, nil
}

func readShard(root string, ref shardRef) (*shard, error) {
	path := filepath.Join(root, ref.File)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint shard: %w", err)
	}
	var sh shard
	if err := json.Unmarshal(data, &sh); err != nil {
		return nil, fmt.Errorf("decode checkpoint shard %s: %w", path, err)
	}
	if sh.Offset != ref.Offset || sh.Len != ref.Len || len(sh.Params) != ref.Len || sh.Step != ref.Step {
		return nil, fmt.Errorf("checkpoint shard %s holds [%d, %d) at step %d with %d values; the manifest expects [%d, %d) at step %d",
			path, sh.Offset, sh.Offset+sh.Len, sh.Step, len(sh.Params), ref.Offset, ref.Offset+ref.Len, ref.Step)
	}
	return &sh, nil
}

// removeOldCheckpoints deletes the checkpoint directories and temporary
// files under root other than keep. Only the chief calls it, after the
// manifest naming keep is in place and while no shard is being written.
func removeOldCheckpoints(root, keep string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("list checkpoints: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if name == keep || !(strings.HasPrefix(name, checkpointPrefix) || strings.HasPrefix(name, tmpPrefix)) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeFileAtomic writes data to path through a temporary file in the
// same directory, synced and renamed over path, and syncs the directory:
// readers see the old content or the new, never a part.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}

// noCheckpoint reports whether err means that there is no manifest.
func noCheckpoint(err error) bool { return errors.Is(err, fs.ErrNotExist) }
