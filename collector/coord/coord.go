package coord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Resource is what a subtask uses: the CPU (a COMP subtask) or the
// network (a COMM subtask, a pull or a push).
type Resource string

// The resources a Coordinator schedules.
const (
	CPU Resource = "cpu"
	Net Resource = "net"
)

// Role is the slot a lease holds. A CPU lease is always RoleCPU; a
// network lease is RolePrimary or RoleSecondary (§4.3.1).
type Role string

// The roles of a lease.
const (
	RoleCPU       Role = "cpu"
	RolePrimary   Role = "primary"
	RoleSecondary Role = "secondary"
)

// Defaults and limits of Config.
const (
	// DefaultLeaseTTL is how long a lease lasts when the request names no
	// TTL; MaxLeaseTTL bounds any TTL.
	DefaultLeaseTTL = 30 * time.Second
	MaxLeaseTTL     = 10 * time.Minute
	// DefaultMaxQueue bounds the waiters of one resource.
	DefaultMaxQueue = 1024
	// MaxHolderLength bounds the bytes of a holder's name.
	MaxHolderLength = 256
)

// Config configures a Coordinator. Zero values take the defaults.
type Config struct {
	// MaxQueue bounds the subtasks waiting for one resource (default
	// 1024); one more is refused with ErrQueueFull.
	MaxQueue int
	// DefaultTTL is the lease of an Acquire that names none (default 30s).
	DefaultTTL time.Duration
	// NoSecondary admits one network subtask at a time instead of a
	// primary and a secondary.
	NoSecondary bool
}

func (c *Config) setDefaults() {
	if c.MaxQueue == 0 {
		c.MaxQueue = DefaultMaxQueue
	}
	if c.DefaultTTL == 0 {
		c.DefaultTTL = DefaultLeaseTTL
	}
}

// Validate reports every invalid field of c, defaults applied.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxQueue < 1 {
		errs = append(errs, fmt.Errorf("max queue %d must be positive", c.MaxQueue))
	}
	if c.DefaultTTL <= 0 || c.DefaultTTL > MaxLeaseTTL {
		errs = append(errs, fmt.Errorf("default lease TTL %v must be positive and at most %v", c.DefaultTTL, MaxLeaseTTL))
	}
	return errors.Join(errs...)
}

// Request asks for a resource.
type Request struct {
	Resource Resource
	// Holder names the subtask for the status and the logs, e.g.
	// "job-a/worker-0"; at most MaxHolderLength bytes.
	Holder string
	// TTL is how long the lease lasts unless released: a holder that dies
	// loses it then. 0 means Config.DefaultTTL; at most MaxLeaseTTL.
	TTL time.Duration
}

// Validate checks r; an invalid request wraps ErrInvalidRequest.
func (r *Request) Validate() error {
	var errs []error
	if r.Resource != CPU && r.Resource != Net {
		errs = append(errs, fmt.Errorf("resource %q is not %q or %q", truncate(string(r.Resource)), CPU, Net))
	}
	if len(r.Holder) > MaxHolderLength {
		errs = append(errs, fmt.Errorf("holder is %d bytes long; the limit is %d", len(r.Holder), MaxHolderLength))
	}
	if r.TTL < 0 || r.TTL > MaxLeaseTTL {
		errs = append(errs, fmt.Errorf("ttl %v must be between 0 and %v", r.TTL, MaxLeaseTTL))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// Grant is a lease a Coordinator gave.
type Grant struct {
	Lease    string
	Resource Resource
	Role     Role
	TTL      time.Duration `json:"-"`
	// Waited is how long the request queued.
	Waited time.Duration `json:"-"`
}

// lease is a granted slot.
type lease struct {
	Grant
	holder  string
	granted time.Time
	timer   *time.Timer
}

// waiter is a queued request; ch receives its grant once, and is
// buffered so that granting never blocks.
type waiter struct {
	req    Request
	queued time.Time
	ch     chan Grant
}

// resourceState is the queue and the holders of one resource.
type resourceState struct {
	queue []*waiter
	// slots[0] is the CPU slot, or the primary network slot;
	// slots[1], for the network only, the secondary.
	slots []*lease
	stats ResourceStats
}

// Coordinator admits subtasks of co-located jobs on one machine: one CPU
// subtask at a time, and a primary and a secondary network subtask, each
// resource with its own FIFO queue (see the package doc). Its methods are
// safe for concurrent use.
type Coordinator struct {
	cfg Config

	mu     sync.Mutex
	res    map[Resource]*resourceState
	leases map[string]*lease
	closed bool
	// closedCh is closed by Close, to end waiting Acquires.
	closedCh chan struct{}
}

// New validates cfg and returns a Coordinator.
func New(cfg Config) (*Coordinator, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid coordinator configuration: %w", err)
	}
	netSlots := 2
	if cfg.NoSecondary {
		netSlots = 1
	}
	return &Coordinator{
		cfg: cfg,
		res: map[Resource]*resourceState{
			CPU: {slots: make([]*lease, 1)},
			Net: {slots: make([]*lease, netSlots)},
		},
		leases:   map[string]*lease{},
		closedCh: make(chan struct{}),
	}, nil
}

// Acquire queues req behind the earlier requests for the same resource
// and returns its grant once a slot is free. It returns nil and no error
// when wait passes first (wait <= 0 waits only for ctx), and ctx.Err()
// when ctx ends first: the request then leaves the queue, and a grant
// that raced with the end is released, so a caller that goes away never
// holds a slot. Errors wrap ErrInvalidRequest, ErrQueueFull or ErrClosed.
func (c *Coordinator) Acquire(ctx context.Context, req Request, wait time.Duration) (*Grant, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if req.TTL == 0 {
		req.TTL = c.cfg.DefaultTTL
	}
	w := &waiter{req: req, queued: time.Now(), ch: make(chan Grant, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	rs := c.res[req.Resource]
	if len(rs.queue) >= c.cfg.MaxQueue {
		rs.stats.Rejected++
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %d subtasks wait for %s", ErrQueueFull, len(rs.queue), req.Resource)
	}
	rs.queue = append(rs.queue, w)
	c.admit(rs)
	c.mu.Unlock()

	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case g := <-w.ch:
		return &g, nil
	case <-timeout:
		if g := c.dequeue(w); g != nil {
			return g, nil
		}
		return nil, nil
	case <-ctx.Done():
		if g := c.dequeue(w); g != nil {
			_ = c.Release(g.Lease)
		}
		return nil, ctx.Err()
	case <-c.closedCh:
		c.dequeue(w)
		return nil, ErrClosed
	}
}

// dequeue takes w out of its queue; when it was granted meanwhile, it
// returns the grant instead.
func (c *Coordinator) dequeue(w *waiter) *Grant {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case g := <-w.ch:
		return &g
	default:
	}
	rs := c.res[w.req.Resource]
	for i, q := range rs.queue {
		if q == w {
			rs.queue = append(rs.queue[:i], rs.queue[i+1:]...)
			rs.stats.Abandoned++
			break
		}
	}
	return nil
}

// admit grants free slots to the head of rs's queue, in order. c.mu is
// held. The secondary network slot is only given while the primary is
// held: a lone network subtask is always the primary.
func (c *Coordinator) admit(rs *resourceState) {
	for len(rs.queue) > 0 {
		slot := -1
		for i, l := range rs.slots {
			if l == nil {
				slot = i
				break
			}
		}
		if slot < 0 {
			return
		}
		w := rs.queue[0]
		rs.queue = rs.queue[1:]
		now := time.Now()
		l := &lease{
			Grant: Grant{
				Lease: newLeaseID(), Resource: w.req.Resource, Role: roleOf(w.req.Resource, slot),
				TTL: w.req.TTL, Waited: now.Sub(w.queued),
			},
			holder: w.req.Holder, granted: now,
		}
		id := l.Lease
		l.timer = time.AfterFunc(w.req.TTL, func() { c.expire(id) })
		rs.slots[slot] = l
		c.leases[id] = l
		rs.stats.Granted++
		rs.stats.WaitedSeconds += l.Waited.Seconds()
		if l.Role == RoleSecondary {
			rs.stats.Secondary++
		}
		held := 0
		for _, s := range rs.slots {
			if s != nil {
				held++
			}
		}
		rs.stats.MaxHolders = max(rs.stats.MaxHolders, held)
		w.ch <- l.Grant
	}
}

func roleOf(r Resource, slot int) Role {
	switch {
	case r == CPU:
		return RoleCPU
	case slot == 0:
		return RolePrimary
	}
	return RoleSecondary
}

func newLeaseID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Release ends a lease and admits the next waiter. It returns an error
// wrapping ErrUnknownLease when the lease expired or was released already.
func (c *Coordinator) Release(id string) error {
	return c.end(id, false)
}

func (c *Coordinator) expire(id string) { _ = c.end(id, true) }

func (c *Coordinator) end(id string, expired bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.leases[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownLease, truncate(id))
	}
	delete(c.leases, id)
	l.timer.Stop()
	rs := c.res[l.Resource]
	if expired {
		rs.stats.Expired++
	} else {
		rs.stats.Released++
	}
	rs.stats.BusySeconds += time.Since(l.granted).Seconds()
	for i, s := range rs.slots {
		if s == l {
			rs.slots[i] = nil
		}
	}
	// The secondary network subtask takes over as the primary (§4.3.1:
	// the primary is the one the other yields to), and the next waiter
	// may become the secondary.
	if len(rs.slots) == 2 && rs.slots[0] == nil && rs.slots[1] != nil {
		rs.slots[0], rs.slots[1] = rs.slots[1], nil
		rs.slots[0].Role = RolePrimary
		rs.stats.Promoted++
	}
	c.admit(rs)
	return nil
}

// Close ends every lease and every waiting Acquire, which returns
// ErrClosed, as do later ones. It is idempotent.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	close(c.closedCh)
	for id, l := range c.leases {
		l.timer.Stop()
		delete(c.leases, id)
	}
	for _, rs := range c.res {
		clear(rs.slots)
	}
}

// ResourceStats counts what happened to one resource since the start.
type ResourceStats struct {
	// Holders and Queued are the leases held and the requests waiting now.
	Holders int
	Queued  int
	// Granted counts leases given, Secondary those given as the secondary
	// network slot, Promoted the secondaries that became the primary.
	Granted   uint64
	Secondary uint64
	Promoted  uint64
	// Released counts leases their holder ended, Expired those that
	// outlived their TTL (a holder that died or overran).
	Released uint64
	Expired  uint64
	// Abandoned counts requests that left the queue unserved (their wait
	// passed or their caller went away), Rejected those refused because
	// the queue was full.
	Abandoned uint64
	Rejected  uint64
	// MaxHolders is the most leases held at once: 1 for the CPU, at most
	// 2 for the network.
	MaxHolders int
	// BusySeconds sums the time leases were held, WaitedSeconds the time
	// granted requests queued.
	BusySeconds   float64
	WaitedSeconds float64
}

// HolderStatus is a lease held now.
type HolderStatus struct {
	Holder   string
	Resource Resource
	Role     Role
	HeldS    float64
}

// Status is a snapshot of the coordinator.
type Status struct {
	Resources map[Resource]ResourceStats
	Holders   []HolderStatus
}

// Status returns the counters and the leases held now.
func (c *Coordinator) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{Resources: map[Resource]ResourceStats{}, Holders: []HolderStatus{}}
	now := time.Now()
	for _, r := range []Resource{CPU, Net} {
		rs := c.res[r]
		s := rs.stats
		s.Queued = len(rs.queue)
		for _, l := range rs.slots {
			if l != nil {
				s.Holders++
				st.Holders = append(st.Holders, HolderStatus{Holder: l.holder, Resource: r, Role: l.Role, HeldS: now.Sub(l.granted).Seconds()})
			}
		}
		st.Resources[r] = s
	}
	return st
}
