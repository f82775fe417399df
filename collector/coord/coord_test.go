package coord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func newCoord(t *testing.T, cfg Config) *Coordinator {
	t.Helper()
	c, err := New(cfg)
	must.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func acquire(t *testing.T, c *Coordinator, r Resource, holder string) *Grant {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := c.Acquire(ctx, Request{Resource: r, Holder: holder}, 0)
	must.NoError(t, err)
	must.NotNil(t, g)
	return g
}

// waitQueued polls until n requests wait for r.
func waitQueued(t *testing.T, c *Coordinator, r Resource, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.Status().Resources[r].Queued != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued for %s, want %d", c.Status().Resources[r].Queued, r, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCPU_OneAtATimeInOrder: many holders hammer the CPU; never two hold
// it at once, and queued requests are granted first come, first served.
func TestCPU_OneAtATimeInOrder(t *testing.T) {
	c := newCoord(t, Config{})
	first := acquire(t, c, CPU, "a")

	// Three more queue behind in a known order.
	order := make(chan string, 3)
	var wg sync.WaitGroup
	for i, h := range []string{"b", "c", "d"} {
		wg.Go(func() {
			g := acquire(t, c, CPU, h)
			order <- h
			must.NoError(t, c.Release(g.Lease))
		})
		waitQueued(t, c, CPU, i+1)
	}
	must.NoError(t, c.Release(first.Lease))
	wg.Wait()
	close(order)
	var got []string
	for h := range order {
		got = append(got, h)
	}
	must.Eq(t, []string{"b", "c", "d"}, got)

	// Concurrent holders never overlap.
	var inside, overlaps atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				g := acquire(t, c, CPU, fmt.Sprint(i))
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				must.NoError(t, c.Release(g.Lease))
			}
		})
	}
	wg.Wait()
	must.Eq(t, 0, overlaps.Load())
	st := c.Status().Resources[CPU]
	must.Eq(t, 1, st.MaxHolders)
	must.Eq(t, uint64(4+400), st.Granted)
	must.Eq(t, st.Granted, st.Released)
}

// TestCPUAndNet_Independent: a COMP subtask of one job runs beside a COMM
// subtask of another.
func TestCPUAndNet_Independent(t *testing.T) {
	c := newCoord(t, Config{})
	cpu := acquire(t, c, CPU, "a")
	net := acquire(t, c, Net, "b")
	must.Eq(t, RoleCPU, cpu.Role)
	must.Eq(t, RolePrimary, net.Role)
}

// TestNet_PrimaryAndSecondary: the second COMM subtask runs as the
// secondary, the third waits; when the primary ends the secondary is
// promoted and the third becomes the secondary.
func TestNet_PrimaryAndSecondary(t *testing.T) {
	c := newCoord(t, Config{})
	p := acquire(t, c, Net, "a")
	s := acquire(t, c, Net, "b")
	must.Eq(t, RolePrimary, p.Role)
	must.Eq(t, RoleSecondary, s.Role)

	third := make(chan *Grant, 1)
	go func() { third <- acquire(t, c, Net, "c") }()
	waitQueued(t, c, Net, 1)
	must.NoError(t, c.Release(p.Lease))
	g := <-third
	must.Eq(t, RoleSecondary, g.Role)
	st := c.Status()
	must.Eq(t, 2, st.Resources[Net].Holders)
	must.Eq(t, 2, st.Resources[Net].MaxHolders)
	must.Eq(t, uint64(1), st.Resources[Net].Promoted)
	roles := map[string]Role{}
	for _, h := range st.Holders {
		roles[h.Holder] = h.Role
	}
	must.Eq(t, map[string]Role{"b": RolePrimary, "c": RoleSecondary}, roles)

	// Without the secondary slot, one COMM subtask at a time.
	one := newCoord(t, Config{NoSecondary: true})
	acquire(t, one, Net, "a")
	g2, err := one.Acquire(context.Background(), Request{Resource: Net}, 20*time.Millisecond)
	must.NoError(t, err)
	must.Nil(t, g2)
	must.Eq(t, uint64(1), one.Status().Resources[Net].Abandoned)
}

// TestLease_Expiry: a holder that dies (never releases) blocks the others
// only until its TTL, an expiry counted once; its late release is refused.
func TestLease_Expiry(t *testing.T) {
	c := newCoord(t, Config{})
	ctx := context.Background()
	dead, err := c.Acquire(ctx, Request{Resource: CPU, Holder: "dies", TTL: 100 * time.Millisecond}, 0)
	must.NoError(t, err)
	start := time.Now()
	next := acquire(t, c, CPU, "lives")
	waited := time.Since(start)
	// Served only once the TTL freed the resource (at least 50 of its 100
	// ms after start), counted as an expiry; acquire's context bounds the
	// wait should the lease never expire.
	must.GreaterEq(t, 50*time.Millisecond, waited)
	must.NotEq(t, dead.Lease, next.Lease)
	err = c.Release(dead.Lease)
	must.ErrorIs(t, err, ErrUnknownLease)
	st := c.Status().Resources[CPU]
	must.Eq(t, uint64(1), st.Expired)
	must.Eq(t, 1, st.Holders)
}

// TestAcquire_CallerGone: a waiter whose context ends leaves the queue,
// and the next is served in its place.
func TestAcquire_CallerGone(t *testing.T) {
	c := newCoord(t, Config{})
	held := acquire(t, c, CPU, "a")
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := c.Acquire(ctx, Request{Resource: CPU, Holder: "gone"}, 0)
		gone <- err
	}()
	waitQueued(t, c, CPU, 1)
	cancel()
	must.ErrorIs(t, <-gone, context.Canceled)
	waitQueued(t, c, CPU, 0)
	must.NoError(t, c.Release(held.Lease))
	g := acquire(t, c, CPU, "b")
	must.NotNil(t, g)
	must.Eq(t, uint64(1), c.Status().Resources[CPU].Abandoned)
}

// TestAcquire_Bounds: a full queue refuses with ErrQueueFull, bad input
// with ErrInvalidRequest, a closed coordinator with ErrClosed (waiters
// included).
func TestAcquire_Bounds(t *testing.T) {
	c := newCoord(t, Config{MaxQueue: 2})
	acquire(t, c, CPU, "a")
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := c.Acquire(context.Background(), Request{Resource: CPU}, 0)
			errs <- err
		}()
		waitQueued(t, c, CPU, i+1)
	}
	_, err := c.Acquire(context.Background(), Request{Resource: CPU}, 0)
	must.ErrorIs(t, err, ErrQueueFull)
	must.Eq(t, uint64(1), c.Status().Resources[CPU].Rejected)

	for _, req := range []Request{
		{Resource: "gpu"},
		{Resource: ""},
		{Resource: CPU, Holder: strings.Repeat("x", MaxHolderLength+1)},
		{Resource: CPU, TTL: -time.Second},
		{Resource: CPU, TTL: MaxLeaseTTL + time.Second},
	} {
		_, err := c.Acquire(context.Background(), req, 0)
		must.ErrorIs(t, err, ErrInvalidRequest, must.Sprintf("%+v", req))
	}

	c.Close()
	for range 2 {
		must.ErrorIs(t, <-errs, ErrClosed)
	}
	_, err = c.Acquire(context.Background(), Request{Resource: Net}, 0)
	must.True(t, errors.Is(err, ErrClosed))

	_, err = New(Config{MaxQueue: -1, DefaultTTL: time.Hour})
	must.ErrorContains(t, err, "max queue")
	must.ErrorContains(t, err, "default lease TTL")
}

// TestInvariants_RandomLoad: many holders ask for random resources, hold
// them for random times, and some die (never release, short TTLs); at
// every moment the CPU has at most one holder, the network at most two,
// a secondary only beside a primary; everything granted ends, released or
// expired.
func TestInvariants_RandomLoad(t *testing.T) {
	c := newCoord(t, Config{})
	stop := make(chan struct{})
	violations := make(chan string, 1)
	checked := make(chan int)
	go func() {
		n := 0
		defer func() { checked <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			st := c.Status()
			n++
			roles := map[Role]int{}
			for _, h := range st.Holders {
				roles[h.Role]++
			}
			var bad string
			switch {
			case st.Resources[CPU].Holders > 1:
				bad = fmt.Sprintf("%d CPU holders", st.Resources[CPU].Holders)
			case st.Resources[Net].Holders > 2:
				bad = fmt.Sprintf("%d network holders", st.Resources[Net].Holders)
			case roles[RoleSecondary] > 0 && roles[RolePrimary] == 0:
				bad = "a secondary without a primary"
			case roles[RolePrimary] > 1 || roles[RoleSecondary] > 1:
				bad = fmt.Sprintf("roles %v", roles)
			}
			if bad != "" {
				select {
				case violations <- bad:
				default:
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			for k := range 40 {
				r := CPU
				if (i+k)%3 != 0 {
					r = Net
				}
				dies := (i*40+k)%17 == 0
				ttl := time.Second
				if dies {
					ttl = 5 * time.Millisecond
				}
				g, err := c.Acquire(context.Background(), Request{Resource: r, Holder: fmt.Sprint(i), TTL: ttl}, 0)
				must.NoError(t, err)
				time.Sleep(time.Duration((i*7+k*13)%500) * time.Microsecond)
				if !dies {
					must.NoError(t, c.Release(g.Lease))
				}
			}
		})
	}
	wg.Wait()
	// The dead holders' leases expire.
	deadline := time.Now().Add(10 * time.Second)
	for c.Status().Resources[CPU].Holders+c.Status().Resources[Net].Holders > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	t.Logf("invariants checked %d times", <-checked)
	select {
	case bad := <-violations:
		t.Fatal(bad)
	default:
	}
	st := c.Status().Resources
	for _, r := range []Resource{CPU, Net} {
		must.Eq(t, 0, st[r].Holders)
		must.Eq(t, st[r].Granted, st[r].Released+st[r].Expired, must.Sprintf("%s: every lease ended", r))
	}
	must.Positive(t, st[CPU].Expired+st[Net].Expired)
	must.Eq(t, uint64(12*40), st[CPU].Granted+st[Net].Granted)
}
