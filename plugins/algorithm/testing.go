package algorithm

import (
	"testing"

	"github.com/hashicorp/go-plugin"
)

// TestClient serves impl over go-plugin's gRPC transport in this process
// and returns the host's Algorithm that calls it, as a plugin binary would
// be called. Both ends close when the test ends.
func TestClient(t testing.TB, impl Algorithm) Algorithm {
	t.Helper()
	// Closing the client stops the server too, through go-plugin's
	// controller; stopping it here as well would race with that.
	c, _ := plugin.TestPluginGRPCConn(t, false, PluginSet(impl))
	t.Cleanup(func() { c.Close() })
	raw, err := c.Dispense(PluginName)
	if err != nil {
		t.Fatalf("dispense the algorithm plugin: %v", err)
	}
	return raw.(Algorithm)
}
