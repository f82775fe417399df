package structs

import (
	"reflect"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MsgpackHandle is the msgpack configuration every Caravan component must use
// to encode and decode these types (the Raft log, snapshots, plugin payloads).
// Untyped values (driver config) decode as string and map[string]any, as they
// were encoded, rather than []byte and map[any]any. Safe for concurrent use.
var MsgpackHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	// Canonical sorts map keys, so that equal values encode to equal bytes.
	h.Canonical = true
	h.WriteExt = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	return h
}()
