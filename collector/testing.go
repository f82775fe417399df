package collector

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestCollector starts a collector for a test, on a free loopback port
// unless cfg says otherwise, logging at the level CARAVAN_TEST_LOG_LEVEL
// names (silent by default), and shuts it down when the test ends.
func TestCollector(t testing.TB, cfg Config) *Collector {
	t.Helper()
	if cfg.Logger == nil {
		level := hclog.LevelFromString(os.Getenv("CARAVAN_TEST_LOG_LEVEL"))
		if level == hclog.NoLevel {
			level = hclog.Off
		}
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: level, Output: os.Stderr})
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("new collector: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start collector: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Shutdown(ctx); err != nil {
			t.Logf("shut down collector: %v", err)
		}
	})
	return c
}
