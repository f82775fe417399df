package state

import (
	"github.com/caravan-sched/caravan/structs"
	"github.com/hashicorp/go-memdb"
)

// DriverFailing returns the EventDriverError event of an outage of the
// driver (the cluster) that is still on: the newest of the kept events
// that say how the driver fares is an EventDriverError, which the leader
// records once when the driver starts failing, and which an
// EventDriverRecovered ends. It returns nil when the driver works, or when
// no kept event says otherwise (at most MaxEvents are kept). The events
// table is not watched.
func DriverFailing(txn *memdb.Txn) (*structs.Event, error) {
	it, err := txn.GetReverse(TableEvents, "id")
	if err != nil {
		return nil, err
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		switch ev := raw.(*structs.Event); ev.Type {
		case structs.EventDriverError:
			return ev, nil
		case structs.EventDriverRecovered:
			return nil, nil
		}
	}
	return nil, nil
}
