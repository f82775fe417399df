package agent

import (
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/shoenig/test/must"
)

// TestFreePorts: the ports are distinct, below the kernel's ephemeral
// range, and free to bind once returned.
func TestFreePorts(t *testing.T) {
	ports := FreePorts(t, 20)
	must.SliceLen(t, 20, ports)
	must.EqOp(t, 20, len(slices.Compact(slices.Sorted(slices.Values(ports)))), must.Sprint("a port returned twice"))
	for _, p := range ports {
		must.Between(t, freePortMin, p, freePortMax-1)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		must.NoError(t, err)
		l.Close()
	}
}
