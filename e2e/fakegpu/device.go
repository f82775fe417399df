package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/device"
	"github.com/hashicorp/nomad/plugins/shared/hclspec"
	"github.com/hashicorp/nomad/plugins/shared/structs"
)

const (
	// pluginName is the name Nomad knows the plugin by: the plugin block's
	// label and the binary's file name in plugin_dir.
	pluginName = "fakegpu"

	// vendor and the device type make the group's ID "nvidia/gpu/<model>",
	// which jobs request as `device "nvidia/gpu"`.
	vendor = "nvidia"

	// visibleDevicesEnv is the variable Reserve sets, as NVIDIA's container
	// runtime reads it.
	visibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES"

	// What Reserve tells a task of the GPUs it was given, in place of
	// what a real trainer would ask its GPU (the CUDA device name and
	// memory): their model, memory (MiB) and relative speed. Only the e2e
	// trainer (examples/trainer) reads them.
	modelEnv  = "FAKEGPU_MODEL"
	memoryEnv = "FAKEGPU_MEMORY_MIB"
	speedEnv  = "FAKEGPU_SPEED"
)

var (
	pluginInfo = &base.PluginInfoResponse{
		Type:              base.PluginTypeDevice,
		PluginApiVersions: []string{device.ApiVersion010},
		PluginVersion:     "v0.1.0",
		Name:              pluginName,
	}

	// configSpec is the schema of the plugin block's config; every field
	// has a default, so an empty config block gives two 16 GiB V100s.
	configSpec = hclspec.NewObject(map[string]*hclspec.Spec{
		"count": hclspec.NewDefault(
			hclspec.NewAttr("count", "number", false),
			hclspec.NewLiteral("2"),
		),
		"model": hclspec.NewDefault(
			hclspec.NewAttr("model", "string", false),
			hclspec.NewLiteral(`"Tesla V100-SXM2-16GB"`),
		),
		"memory_mib": hclspec.NewDefault(
			hclspec.NewAttr("memory_mib", "number", false),
			hclspec.NewLiteral("16384"),
		),
		"cuda_cores": hclspec.NewDefault(
			hclspec.NewAttr("cuda_cores", "number", false),
			hclspec.NewLiteral("5120"),
		),
		"speed": hclspec.NewDefault(
			hclspec.NewAttr("speed", "number", false),
			hclspec.NewLiteral("1"),
		),
		"id_prefix": hclspec.NewDefault(
			hclspec.NewAttr("id_prefix", "string", false),
			hclspec.NewLiteral(`"GPU"`),
		),
	})
)

// Config is the decoded plugin config block.
type Config struct {
	// Count is the number of GPU instances to report.
	Count int `codec:"count"`
	// Model names the device group and is its "model" attribute.
	Model string `codec:"model"`
	// MemoryMiB is each instance's "memory" attribute, in MiB.
	MemoryMiB int64 `codec:"memory_mib"`
	// CUDACores is each instance's "cuda_cores" attribute.
	CUDACores int64 `codec:"cuda_cores"`
	// Speed is how fast the model computes, relative to a speed of 1:
	// the e2e trainer divides its simulated time per example by it.
	Speed float64 `codec:"speed"`
	// IDPrefix starts every instance ID: "<IDPrefix>-<n>".
	IDPrefix string `codec:"id_prefix"`
}

// Validate reports every invalid field.
func (c *Config) Validate() error {
	var errs []error
	if c.Count < 1 {
		errs = append(errs, fmt.Errorf("count must be at least 1, got %d", c.Count))
	}
	if c.Model == "" {
		errs = append(errs, errors.New("model must not be empty"))
	}
	if c.MemoryMiB < 1 {
		errs = append(errs, fmt.Errorf("memory_mib must be at least 1, got %d", c.MemoryMiB))
	}
	if c.CUDACores < 0 {
		errs = append(errs, fmt.Errorf("cuda_cores must not be negative, got %d", c.CUDACores))
	}
	if !(c.Speed > 0) {
		errs = append(errs, fmt.Errorf("speed must be positive, got %g", c.Speed))
	}
	if c.IDPrefix == "" {
		errs = append(errs, errors.New("id_prefix must not be empty"))
	}
	return errors.Join(errs...)
}

// ids returns the instance IDs in order.
func (c *Config) ids() []string {
	ids := make([]string, c.Count)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", c.IDPrefix, i)
	}
	return ids
}

// FakeGPU implements device.DevicePlugin. Its devices never change and are
// always healthy. It is safe for concurrent use; SetConfig must come first,
// as Nomad guarantees.
type FakeGPU struct {
	logger hclog.Logger

	mu     sync.RWMutex
	config *Config         // nil until SetConfig
	known  map[string]bool // instance IDs, for Reserve
}

var _ device.DevicePlugin = (*FakeGPU)(nil)

// New returns an unconfigured plugin.
func New(logger hclog.Logger) *FakeGPU {
	return &FakeGPU{logger: logger.Named(pluginName)}
}

// PluginInfo describes the plugin to Nomad's plugin loader.
func (d *FakeGPU) PluginInfo() (*base.PluginInfoResponse, error) {
	return pluginInfo, nil
}

// ConfigSchema returns the schema of the plugin block's config.
func (d *FakeGPU) ConfigSchema() (*hclspec.Spec, error) {
	return configSpec, nil
}

// SetConfig decodes and validates the config Nomad sends, already filled in
// with the schema's defaults.
func (d *FakeGPU) SetConfig(c *base.Config) error {
	var cfg Config
	if err := base.MsgPackDecode(c.PluginConfig, &cfg); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid config: %w", err)
	}
	known := make(map[string]bool, cfg.Count)
	for _, id := range cfg.ids() {
		known[id] = true
	}
	d.mu.Lock()
	d.config, d.known = &cfg, known
	d.mu.Unlock()
	d.logger.Info("configured fake gpus", "count", cfg.Count, "model", cfg.Model, "id_prefix", cfg.IDPrefix)
	return nil
}

func (d *FakeGPU) configured() (*Config, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.config == nil {
		return nil, errors.New("plugin is not configured")
	}
	return d.config, nil
}

// Fingerprint sends the device group once and then keeps the stream open,
// as the devices never change, until ctx is cancelled: Nomad takes a closed
// stream for the end of fingerprinting and drops the devices.
func (d *FakeGPU) Fingerprint(ctx context.Context) (<-chan *device.FingerprintResponse, error) {
	cfg, err := d.configured()
	if err != nil {
		return nil, err
	}
	out := make(chan *device.FingerprintResponse, 1)
	out <- device.NewFingerprint(deviceGroup(cfg))
	go func() {
		<-ctx.Done()
		close(out)
	}()
	return out, nil
}

// deviceGroup is the one group the plugin reports.
func deviceGroup(cfg *Config) *device.DeviceGroup {
	g := &device.DeviceGroup{
		Vendor: vendor,
		Type:   device.DeviceTypeGPU,
		Name:   cfg.Model,
		Attributes: map[string]*structs.Attribute{
			"memory":     structs.NewIntAttribute(cfg.MemoryMiB, structs.UnitMiB),
			"model":      structs.NewStringAttribute(cfg.Model),
			"cuda_cores": structs.NewIntAttribute(cfg.CUDACores, ""),
		},
	}
	for _, id := range cfg.ids() {
		g.Devices = append(g.Devices, &device.Device{ID: id, Healthy: true})
	}
	return g
}

// Reserve is called on the client before a task that was given deviceIDs
// starts. It sets NVIDIA_VISIBLE_DEVICES to the comma-separated IDs, and
// FAKEGPU_MODEL, FAKEGPU_MEMORY_MIB and FAKEGPU_SPEED to the model, memory
// and speed of the GPUs, and fails for an ID the plugin did not report.
func (d *FakeGPU) Reserve(deviceIDs []string) (*device.ContainerReservation, error) {
	if len(deviceIDs) == 0 {
		return nil, errors.New("no device IDs to reserve")
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.config == nil {
		return nil, errors.New("plugin is not configured")
	}
	for _, id := range deviceIDs {
		if !d.known[id] {
			return nil, fmt.Errorf("unknown device %q", id)
		}
	}
	return &device.ContainerReservation{
		Envs: map[string]string{
			visibleDevicesEnv: strings.Join(deviceIDs, ","),
			modelEnv:          d.config.Model,
			memoryEnv:         strconv.FormatInt(d.config.MemoryMiB, 10),
			speedEnv:          strconv.FormatFloat(d.config.Speed, 'g', -1, 64),
		},
	}, nil
}

// Stats sends every interval an idle reading (no memory used, 0% busy) for
// each instance, until ctx is cancelled; it then closes the stream.
func (d *FakeGPU) Stats(ctx context.Context, interval time.Duration) (<-chan *device.StatsResponse, error) {
	cfg, err := d.configured()
	if err != nil {
		return nil, err
	}
	if interval <= 0 {
		return nil, fmt.Errorf("stats interval must be positive, got %v", interval)
	}
	out := make(chan *device.StatsResponse)
	go func() {
		defer close(out)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case out <- &device.StatsResponse{Groups: []*device.DeviceGroupStats{idleStats(cfg, time.Now())}}:
			case <-ctx.Done():
				return
			}
			select {
			case <-ticker.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// idleStats is a reading of instances that are not in use.
func idleStats(cfg *Config, now time.Time) *device.DeviceGroupStats {
	g := &device.DeviceGroupStats{
		Vendor:        vendor,
		Type:          device.DeviceTypeGPU,
		Name:          cfg.Model,
		InstanceStats: make(map[string]*device.DeviceStats, cfg.Count),
	}
	for _, id := range cfg.ids() {
		memory := &structs.StatValue{
			IntNumeratorVal:   new(int64(0)),
			IntDenominatorVal: new(cfg.MemoryMiB),
			Unit:              structs.UnitMiB,
			Desc:              "Memory in use",
		}
		g.InstanceStats[id] = &device.DeviceStats{
			Summary: memory,
			Stats: &structs.StatObject{Attributes: map[string]*structs.StatValue{
				"memory": memory,
				"utilization": {
					IntNumeratorVal: new(int64(0)),
					Unit:            "%",
					Desc:            "GPU utilization",
				},
			}},
			Timestamp: now,
		}
	}
	return g
}
