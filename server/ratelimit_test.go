package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestClientLimiter counts what a limiter allows on a clock of its own.
func TestClientLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name string
		// requests are (address, seconds after t0) in order.
		requests []string
		at       []float64
		allowed  []bool
		// wait is the wait answered to the last request when refused.
		wait time.Duration
	}{
		{"burst then refused", []string{"a", "a", "a", "a"}, []float64{0, 0, 0, 0}, []bool{true, true, true, false}, 10 * time.Second},
		{"refills one per interval", []string{"a", "a", "a", "a", "a"}, []float64{0, 0, 0, 10, 10}, []bool{true, true, true, true, false}, 10 * time.Second},
		{"part refilled", []string{"a", "a", "a", "a"}, []float64{0, 0, 0, 4}, []bool{true, true, true, false}, 6 * time.Second},
		{"addresses apart", []string{"a", "a", "a", "b"}, []float64{0, 0, 0, 0}, []bool{true, true, true, true}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newClientLimiter(10*time.Second, 3, 100)
			var wait time.Duration
			for i, addr := range tc.requests {
				var ok bool
				ok, wait = l.allow(addr, t0.Add(time.Duration(tc.at[i]*float64(time.Second))))
				must.Eq(t, tc.allowed[i], ok, must.Sprintf("request %d", i))
			}
			must.Eq(t, tc.wait, wait)
		})
	}
}

// TestClientLimiter_Bounded: past maxClients addresses, idle buckets are
// forgotten, and without idle ones new addresses share one bucket, so the
// map never grows past maxClients and nobody's limit is reset.
func TestClientLimiter_Bounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newClientLimiter(10*time.Second, 1, 10)
	for i := range 10 {
		ok, _ := l.allow(fmt.Sprint("busy-", i), t0)
		must.True(t, ok)
	}
	allowed := 0
	for i := range 1000 {
		if ok, _ := l.allow(fmt.Sprint("new-", i), t0); ok {
			allowed++
		}
	}
	must.Eq(t, 1, allowed, must.Sprint("new addresses share one bucket while every known one is busy"))
	must.MapLen(t, 10, l.clients)
	ok, _ := l.allow("busy-0", t0)
	must.False(t, ok, must.Sprint("a flood of addresses resets nobody's limit"))
	// Once the known buckets refill, new addresses take their place.
	ok, _ = l.allow("later", t0.Add(time.Minute))
	must.True(t, ok)
	must.MapLen(t, 1, l.clients)
}
