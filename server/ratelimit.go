package server

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// clientLimiter is a token bucket per client address: each address may
// make burst requests at once and one more every `every`. Its memory is
// bounded: past maxClients addresses, buckets that refilled (clients idle
// long enough to have their whole burst back) are forgotten, and if none
// did, new addresses share one bucket, so that a flood of addresses can
// neither grow the map nor reset anybody's limit. It is safe for
// concurrent use.
type clientLimiter struct {
	every      time.Duration
	burst      float64
	maxClients int

	mu       sync.Mutex
	clients  map[string]*bucket
	overflow bucket
}

// bucket holds tokens as they were at last.
type bucket struct {
	tokens float64
	last   time.Time
}

// newClientLimiter returns a limiter of burst requests at once and one
// more every `every`, per address, for up to maxClients addresses.
func newClientLimiter(every time.Duration, burst, maxClients int) *clientLimiter {
	return &clientLimiter{every: every, burst: float64(burst), maxClients: maxClients, clients: map[string]*bucket{}}
}

// refill brings b's tokens to now.
func (l *clientLimiter) refill(b *bucket, now time.Time) {
	if b.last.IsZero() {
		b.tokens, b.last = l.burst, now
		return
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(l.burst, b.tokens+float64(d)/float64(l.every))
		b.last = now
	}
}

// allow takes a token of addr's bucket at now. When there is none it
// returns false and how long until there is one.
func (l *clientLimiter) allow(addr string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.clients[addr]
	if !ok {
		if len(l.clients) >= l.maxClients {
			for a, c := range l.clients {
				if l.refill(c, now); c.tokens >= l.burst {
					delete(l.clients, a)
				}
			}
		}
		if len(l.clients) < l.maxClients {
			b = &bucket{}
			l.clients[addr] = b
		} else {
			b = &l.overflow
		}
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) * float64(l.every))
}

// Limits of POST /v1/acl/bootstrap per client address: it is anonymous,
// and needed once per cluster (or per reset).
const (
	bootstrapBurst      = 10
	bootstrapEvery      = 10 * time.Second
	bootstrapMaxClients = 4096
)

// limited wraps a handler so that each client address (the host of the
// request's remote address) is held to l: a request over the limit is
// answered 429 with Retry-After, in whole seconds, before anything else
// is done or forwarded. The server that receives a request counts it; a
// leader counts the requests a follower forwards against that follower's
// address, after the follower counted them against their clients'.
func (s *Server) limited(l *clientLimiter, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if ok, wait := l.allow(host, time.Now()); !ok {
			secs := int(math.Ceil(wait.Seconds()))
			s.log.Debug("request over its rate limit", "method", r.Method, "path", r.URL.Path, "remote", host, "retry_after", secs)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			http.Error(w, fmt.Sprintf("too many requests from %s: retry in %d s", host, secs), http.StatusTooManyRequests)
			return
		}
		h(w, r)
	}
}
