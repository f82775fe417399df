package chaos

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Network is a private network of n hosts, each a network namespace made
// with iproute2, and the test's own namespace as the clients' host:
//
//	         clients (the test)
//	  10.98.i.1 ─ veth ─ 10.98.i.2
//	                       │
//	host i: namespace, service address 10.99.0.<i+1> on lo
//	                       │
//	  10.97.<i><j>.1 ─ veth ─ 10.97.<i><j>.2   (one link per pair)
//	                       │
//	                    host j
//
// Every host reaches every other through their own link, and the clients
// reach every host through its own, so a partition between hosts leaves
// the clients able to ask each side what it does. A cut sets the link
// down at both ends (the machines here have no netem and no packet
// filter). The addresses are private to the namespaces the test made;
// nothing leaves the machine. Making namespaces needs root.
type Network struct {
	t    testing.TB
	id   string
	n    int
	down map[link]bool
}

// NewNetwork makes a network of n hosts (at most 9) and removes it when
// the test ends.
func NewNetwork(t testing.TB, n int) *Network {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the chaos suite makes network namespaces, which needs root: run it as root (CI and these machines do)")
	}
	if n < 1 || n > 9 {
		t.Fatalf("a network of %d hosts: 1 to 9", n)
	}
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("network id: %v", err)
	}
	nw := &Network{t: t, id: hex.EncodeToString(b), n: n, down: map[link]bool{}}
	t.Cleanup(nw.remove)
	for i := range n {
		ns := nw.namespace(i)
		nw.ip("netns", "add", ns)
		nw.in(i, "ip", "link", "set", "lo", "up")
		nw.in(i, "ip", "addr", "add", nw.Addr(i)+"/32", "dev", "lo")
		// The clients' link: its root end is named after the network, its
		// host end "client".
		root := nw.clientLink(i)
		nw.ip("link", "add", root, "type", "veth", "peer", "name", "client", "netns", ns)
		nw.ip("addr", "add", fmt.Sprintf("10.98.%d.1/30", i), "dev", root)
		nw.ip("link", "set", root, "up")
		nw.in(i, "ip", "addr", "add", fmt.Sprintf("10.98.%d.2/30", i), "dev", "client")
		nw.in(i, "ip", "link", "set", "client", "up")
		nw.ip("route", "add", nw.Addr(i)+"/32", "via", fmt.Sprintf("10.98.%d.2", i))
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			a, b := pairLink(j), pairLink(i) // in host i the link to j, in host j the link to i
			nw.ip("link", "add", a, "netns", nw.namespace(i), "type", "veth", "peer", "name", b, "netns", nw.namespace(j))
			nw.in(i, "ip", "addr", "add", fmt.Sprintf("10.97.%d%d.1/30", i, j), "dev", a)
			nw.in(j, "ip", "addr", "add", fmt.Sprintf("10.97.%d%d.2/30", i, j), "dev", b)
			nw.in(i, "ip", "link", "set", a, "up")
			nw.in(j, "ip", "link", "set", b, "up")
			nw.in(i, "ip", "route", "add", nw.Addr(j)+"/32", "via", fmt.Sprintf("10.97.%d%d.2", i, j))
			nw.in(j, "ip", "route", "add", nw.Addr(i)+"/32", "via", fmt.Sprintf("10.97.%d%d.1", i, j))
		}
	}
	return nw
}

// Addr is host i's service address, which its agent binds.
func (nw *Network) Addr(i int) string { return fmt.Sprintf("10.99.0.%d", i+1) }

// Exec returns the command line that runs argv in host i.
func (nw *Network) Exec(i int, argv ...string) []string {
	return append([]string{"ip", "netns", "exec", nw.namespace(i)}, argv...)
}

// Cut drops every packet between hosts i and j, both ways, until Heal.
func (nw *Network) Cut(i, j int) {
	nw.t.Helper()
	nw.setLink(i, j, true)
}

// Isolate cuts host i from every other host; the clients still reach it.
func (nw *Network) Isolate(i int) {
	nw.t.Helper()
	for j := range nw.n {
		if j != i {
			nw.Cut(i, j)
		}
	}
}

// Heal undoes every cut.
func (nw *Network) Heal() {
	nw.t.Helper()
	for l := range nw.down {
		nw.setLink(l.a, l.b, false)
	}
}

func (nw *Network) setLink(i, j int, cut bool) {
	if i > j {
		i, j = j, i
	}
	pair := link{i, j}
	if nw.down[pair] == cut {
		return
	}
	state := "down"
	if !cut {
		state = "up"
	}
	for _, end := range []link{{i, j}, {j, i}} {
		nw.in(end.a, "ip", "link", "set", pairLink(end.b), state)
	}
	if !cut {
		// Routes through a link that went down may be gone.
		nw.in(i, "ip", "route", "replace", nw.Addr(j)+"/32", "via", fmt.Sprintf("10.97.%d%d.2", i, j))
		nw.in(j, "ip", "route", "replace", nw.Addr(i)+"/32", "via", fmt.Sprintf("10.97.%d%d.1", i, j))
	}
	if cut {
		nw.down[pair] = true
	} else {
		delete(nw.down, pair)
	}
}

// link is the link between hosts a and b, a < b; in a loop over the
// ends of a link, a is the end's host and b the host across.
type link struct{ a, b int }

func (nw *Network) namespace(i int) string { return fmt.Sprintf("cv%s-%d", nw.id, i) }

// clientLink is the root end of host i's clients' link (at most 15
// characters, as Linux allows).
func (nw *Network) clientLink(i int) string { return fmt.Sprintf("cv%s%d", nw.id, i) }

// pairLink is, in a host, the name of its link to host j.
func pairLink(j int) string { return fmt.Sprintf("peer%d", j) }

func (nw *Network) ip(args ...string) {
	nw.t.Helper()
	run(nw.t, append([]string{"ip"}, args...)...)
}

func (nw *Network) in(i int, argv ...string) {
	nw.t.Helper()
	run(nw.t, nw.Exec(i, argv...)...)
}

func (nw *Network) remove() {
	for i := range nw.n {
		// Deleting a namespace deletes the links in it, and the veths'
		// other ends with them.
		_ = exec.Command("ip", "netns", "del", nw.namespace(i)).Run()
		_ = exec.Command("ip", "link", "del", nw.clientLink(i)).Run()
	}
}

func run(t testing.TB, argv ...string) {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}
