package state

import (
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestDriverFailing: the driver fails from its DriverError event until a
// DriverRecovered event, whatever events come between.
func TestDriverFailing(t *testing.T) {
	s := newStore(t)
	failing := func() *structs.Event {
		ev, err := DriverFailing(s.Txn())
		must.NoError(t, err)
		return ev
	}
	must.Nil(t, failing(), must.Sprint("no event: the driver works"))

	must.NoError(t, s.AppendEvent(10, &structs.Event{Time: 5, Type: structs.EventDriverError, Message: "read nodes: refused"}))
	must.NoError(t, s.AppendEvent(11, &structs.Event{Time: 6, Type: structs.EventAlgorithmChanged, Message: "other"}))
	ev := failing()
	must.NotNil(t, ev)
	must.Eq(t, "read nodes: refused", ev.Message)
	must.Eq(t, 5, ev.Time)

	must.NoError(t, s.AppendEvent(12, &structs.Event{Time: 7, Type: structs.EventDriverRecovered, Message: "back"}))
	must.NoError(t, s.AppendEvent(13, &structs.Event{Time: 8, Type: structs.EventAlgorithmChanged, Message: "other"}))
	must.Nil(t, failing())
}
