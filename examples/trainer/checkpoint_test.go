package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// writeCheckpoint stores params as a checkpoint of numPS shards at step,
// as the parameter servers and the chief do, and returns its manifest.
func writeCheckpoint(t *testing.T, root string, params []float64, numPS int, step int64) *manifest {
	t.Helper()
	tag := fmt.Sprintf("%s%d-test", checkpointPrefix, step)
	m := &manifest{Version: manifestVersion, JobID: "j", Step: step, Features: len(params), Loss: 0.5, NumPS: numPS}
	for r := range numPS {
		off, n := partition(len(params), numPS, r)
		ref, err := writeShard(root, tag, r, shard{Step: step, Offset: off, Len: n, Params: params[off : off+n]})
		must.NoError(t, err)
		m.Shards = append(m.Shards, ref)
	}
	must.NoError(t, writeManifest(root, m))
	return m
}

func vector(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i) + 0.25
	}
	return v
}

// TestReshard reads checkpoints back with another number of parameter
// servers: each new server gets exactly its slice of the old vector.
func TestReshard(t *testing.T) {
	for _, tc := range []struct{ from, to, n int }{{2, 1, 200}, {1, 3, 200}, {3, 2, 10}, {4, 3, 7}} {
		t.Run(fmt.Sprintf("%d to %d", tc.from, tc.to), func(t *testing.T) {
			root := t.TempDir()
			params := vector(tc.n)
			writeCheckpoint(t, root, params, tc.from, 42)

			m, err := readManifest(root)
			must.NoError(t, err)
			must.Eq(t, 42, m.Step)
			var got []float64
			for r := range tc.to {
				off, n := partition(tc.n, tc.to, r)
				slice, err := loadSlice(root, m, off, n)
				must.NoError(t, err)
				must.Eq(t, params[off:off+n], slice)
				got = append(got, slice...)
			}
			must.Eq(t, params, got)
		})
	}
}

func TestReadManifestErrors(t *testing.T) {
	root := t.TempDir()
	_, err := readManifest(root)
	must.True(t, noCheckpoint(err), must.Sprintf("no manifest: %v", err))

	good := writeCheckpoint(t, root, vector(10), 2, 5)
	cases := map[string]struct {
		edit func(m *manifest)
		want string
	}{
		"gap":        {func(m *manifest) { m.Shards[1].Offset++ }, "do not tile"},
		"short":      {func(m *manifest) { m.Features = 12 }, "cover 10 of 12"},
		"escape":     {func(m *manifest) { m.Shards[0].File = "../x.json" }, "outside the checkpoint directory"},
		"version":    {func(m *manifest) { m.Version = 9 }, "version 9"},
		"empty file": {func(m *manifest) { m.Shards[0].Len = 0 }, "do not tile"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := *good
			m.Shards = append([]shardRef(nil), good.Shards...)
			tc.edit(&m)
			must.ErrorContains(t, m.validate(), tc.want)
			must.ErrorContains(t, writeManifest(root, &m), tc.want, must.Sprint("an invalid manifest is never written"))
		})
	}
	m, err := readManifest(root)
	must.NoError(t, err)
	must.Eq(t, good, m)

	// A shard that is not what the manifest says is refused.
	m.Shards[1].Step = 6
	_, err = loadSlice(root, m, 0, 10)
	must.ErrorContains(t, err, "the manifest expects")

	must.NoError(t, os.WriteFile(filepath.Join(root, manifestName), []byte("{"), 0o644))
	_, err = readManifest(root)
	must.ErrorContains(t, err, "decode checkpoint manifest")
}

func TestRemoveOldCheckpoints(t *testing.T) {
	root := t.TempDir()
	writeCheckpoint(t, root, vector(4), 1, 1)
	writeCheckpoint(t, root, vector(4), 2, 2)
	must.NoError(t, os.WriteFile(filepath.Join(root, tmpPrefix+"manifest.json-123"), nil, 0o644))
	must.NoError(t, os.Mkdir(filepath.Join(root, "other"), 0o755))

	must.NoError(t, removeOldCheckpoints(root, checkpointPrefix+"2-test"))
	entries, err := os.ReadDir(root)
	must.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	must.Eq(t, []string{manifestName, "other", checkpointPrefix + "2-test"}, names)
	m, err := readManifest(root)
	must.NoError(t, err)
	_, err = loadSlice(root, m, 0, 4)
	must.NoError(t, err, must.Sprint("the current checkpoint is whole"))
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b")
	must.NoError(t, writeFileAtomic(path, []byte("one")))
	must.NoError(t, writeFileAtomic(path, []byte("two")))
	data, err := os.ReadFile(path)
	must.NoError(t, err)
	must.Eq(t, "two", string(data))
	entries, err := os.ReadDir(filepath.Dir(path))
	must.NoError(t, err)
	must.SliceLen(t, 1, entries, must.Sprint("no temporary file is left"))
}

func TestRendezvous(t *testing.T) {
	dir := t.TempDir()
	must.NoError(t, publishPS(dir, "3", 0, psAddress{Addr: "127.0.0.1:1", Incarnation: "a"}))
	must.NoError(t, publishPS(dir, "2", 1, psAddress{Addr: "127.0.0.1:9", Incarnation: "old"}))
	ctx := t.Context()
	_, err := waitForPS(ctx, dir, "3", 2, 150*time.Millisecond)
	must.ErrorContains(t, err, "1 of 2 parameter servers did not publish")

	must.NoError(t, publishPS(dir, "3", 1, psAddress{Addr: "127.0.0.1:2", Incarnation: "b"}))
	addrs, err := waitForPS(ctx, dir, "3", 2, 150*time.Millisecond)
	must.NoError(t, err)
	must.Eq(t, []psAddress{{Addr: "127.0.0.1:1", Incarnation: "a"}, {Addr: "127.0.0.1:2", Incarnation: "b"}}, addrs)

	must.NoError(t, removeOldRendezvous(dir, "3"))
	_, err = readPS(dir, "2", 1)
	must.True(t, noCheckpoint(err), must.Sprint("earlier generations are removed"))
	_, err = readPS(dir, "3", 1)
	must.NoError(t, err)
}
