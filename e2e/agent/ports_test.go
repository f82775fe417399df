package agent

import (
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/shoenig/test/must"
)

// TestFreePorts: the ports are distinct, below the kernel's ephemeral
// range, free to bind once returned, and never returned again.
func TestFreePorts(t *testing.T) {
	handedOut.Lock()
	handedOut.ports = nil // -count above 1 would run out
	handedOut.Unlock()
	ports := FreePorts(t, 20)
	must.SliceLen(t, 20, ports)
	must.EqOp(t, 20, len(slices.Compact(slices.Sorted(slices.Values(ports)))), must.Sprint("a port returned twice"))
	for _, p := range ports {
		must.Between(t, freePortMin, p, freePortMax-1)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		must.NoError(t, err)
		l.Close()
	}
	// A later call, as a test running in parallel makes, draws none of
	// them again (3,000 of the 10,000 would draw one of 20 with
	// probability 0.998).
	more := FreePorts(t, 3000)
	for _, p := range more {
		must.SliceNotContains(t, ports, p, must.Sprint("a port handed out twice"))
	}
}
