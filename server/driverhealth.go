package server

import (
	"net/http"
	"strconv"

	"github.com/caravan-sched/caravan/server/state"
	"github.com/hashicorp/go-memdb"
)

// Headers of the answers about nodes while the driver cannot read the
// cluster (state.DriverFailing): the nodes are the ones it last read.
const (
	// driverErrorHeader is the DriverError event's message.
	driverErrorHeader = "X-Caravan-Driver-Error"
	// driverErrorSinceHeader is when the outage began, Unix nanoseconds.
	driverErrorSinceHeader = "X-Caravan-Driver-Error-Since"
)

// setDriverHealth sets or clears the driver error headers of w from the
// state that txn reads.
func setDriverHealth(w http.ResponseWriter, txn *memdb.Txn) error {
	ev, err := state.DriverFailing(txn)
	if err != nil {
		return err
	}
	h := w.Header()
	if ev == nil {
		h.Del(driverErrorHeader)
		h.Del(driverErrorSinceHeader)
		return nil
	}
	h.Set(driverErrorHeader, ev.Message)
	h.Set(driverErrorSinceHeader, strconv.FormatInt(ev.Time, 10))
	return nil
}
