package main

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	hcl "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/helper/pluginutils/hclspecutils"
	"github.com/hashicorp/nomad/plugins/base"
	"github.com/hashicorp/nomad/plugins/device"
	"github.com/shoenig/test/must"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// configure gives a new plugin the body of a config block, decoded with the
// plugin's schema and its defaults as Nomad's client does.
func configure(t *testing.T, body string) (*FakeGPU, error) {
	t.Helper()
	spec, diags := hclspecutils.Convert(configSpec)
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	file, diags := hclsyntax.ParseConfig([]byte(body), "config.hcl", hcl.InitialPos)
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	val, diags := hcldec.Decode(file.Body, spec, nil)
	must.False(t, diags.HasErrors(), must.Sprint(diags))
	data, err := msgpack.Marshal(val, val.Type())
	must.NoError(t, err)
	d := New(hclog.NewNullLogger())
	return d, d.SetConfig(&base.Config{PluginConfig: data})
}

func TestFakeGPU_Fingerprint(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		wantName   string
		wantIDs    []string
		wantMemory int64
	}{
		{"defaults", ``, "Tesla V100-SXM2-16GB", []string{"GPU-0", "GPU-1"}, 16384},
		{"set", "count = 3\nid_prefix = \"c1-gpu\"\nmodel = \"A100\"\nmemory_mib = 40960\n",
			"A100", []string{"c1-gpu-0", "c1-gpu-1", "c1-gpu-2"}, 40960},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := configure(t, tc.body)
			must.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			ch, err := d.Fingerprint(ctx)
			must.NoError(t, err)
			resp := <-ch
			must.NoError(t, resp.Error)
			must.SliceLen(t, 1, resp.Devices)
			g := resp.Devices[0]
			must.NoError(t, g.Validate())
			must.Eq(t, "nvidia", g.Vendor)
			must.Eq(t, device.DeviceTypeGPU, g.Type)
			must.Eq(t, tc.wantName, g.Name)
			var ids []string
			for _, dev := range g.Devices {
				must.True(t, dev.Healthy)
				ids = append(ids, dev.ID)
			}
			must.Eq(t, tc.wantIDs, ids)
			must.Eq(t, tc.wantMemory, *g.Attributes["memory"].Int)
			must.Eq(t, "MiB", g.Attributes["memory"].Unit)
			must.Eq(t, tc.wantName, *g.Attributes["model"].String)

			// The stream stays open until the context ends, then closes.
			select {
			case r, ok := <-ch:
				t.Fatalf("unexpected fingerprint %v (open %v)", r, ok)
			case <-time.After(50 * time.Millisecond):
			}
			cancel()
			_, ok := <-ch
			must.False(t, ok)
		})
	}
}

func TestFakeGPU_InvalidConfig(t *testing.T) {
	_, err := configure(t, "count = 0\nid_prefix = \"\"\n")
	must.ErrorContains(t, err, "count must be at least 1")
	must.ErrorContains(t, err, "id_prefix must not be empty")

	_, err = configure(t, "speed = 0\n")
	must.ErrorContains(t, err, "speed must be positive, got 0")
}

func TestFakeGPU_Reserve(t *testing.T) {
	d, err := configure(t, "id_prefix = \"c0-gpu\"\nmodel = \"Tesla T4\"\nspeed = 0.25\n")
	must.NoError(t, err)

	res, err := d.Reserve([]string{"c0-gpu-1", "c0-gpu-0"})
	must.NoError(t, err)
	must.Eq(t, map[string]string{
		"NVIDIA_VISIBLE_DEVICES": "c0-gpu-1,c0-gpu-0",
		"FAKEGPU_MODEL":          "Tesla T4",
		"FAKEGPU_MEMORY_MIB":     "16384",
		"FAKEGPU_SPEED":          "0.25",
	}, res.Envs)

	_, err = d.Reserve([]string{"c0-gpu-0", "c0-gpu-2"})
	must.ErrorContains(t, err, `unknown device "c0-gpu-2"`)
	_, err = d.Reserve(nil)
	must.Error(t, err)
}

func TestFakeGPU_Stats(t *testing.T) {
	d, err := configure(t, ``)
	must.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := d.Stats(ctx, 10*time.Millisecond)
	must.NoError(t, err)
	for range 2 {
		resp := <-ch
		must.NoError(t, resp.Error)
		must.SliceLen(t, 1, resp.Groups)
		must.MapLen(t, 2, resp.Groups[0].InstanceStats)
		must.Eq(t, 16384, *resp.Groups[0].InstanceStats["GPU-0"].Summary.IntDenominatorVal)
	}
	// Cancelling ends the stream even while nobody reads it.
	cancel()
	for range ch {
	}
}

func TestFakeGPU_Unconfigured(t *testing.T) {
	d := New(hclog.NewNullLogger())
	_, err := d.Fingerprint(t.Context())
	must.Error(t, err)
	_, err = d.Reserve([]string{"GPU-0"})
	must.Error(t, err)
}
