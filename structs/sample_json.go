package structs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// sampleKeys maps a sample's JSON key, folded (lower case, no
// underscores), to its field's name: "step_time_s" and "StepTimeS" both
// fold to "steptimes".
var sampleKeys = sync.OnceValue(func() map[string]string {
	t := reflect.TypeFor[Sample]()
	keys := make(map[string]string, t.NumField())
	for i := range t.NumField() {
		name := t.Field(i).Name
		keys[foldKey(name)] = name
	}
	return keys
})

func foldKey(k string) string { return strings.ToLower(strings.ReplaceAll(k, "_", "")) }

// UnmarshalJSON decodes a sample whose keys are its field names or the
// trainers' snake_case (DESIGN.md §3), in any letter case; a key that is
// neither is an error naming it, so that a misspelt field is never
// silently dropped.
func (s *Sample) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		return nil // null
	}
	canon := make(map[string]json.RawMessage, len(raw))
	for k, v := range raw {
		name, ok := sampleKeys()[foldKey(k)]
		if !ok {
			return fmt.Errorf("sample: unknown field %q", k)
		}
		if _, dup := canon[name]; dup {
			return fmt.Errorf("sample: field %q given twice", name)
		}
		canon[name] = v
	}
	b, err := json.Marshal(canon)
	if err != nil {
		return err
	}
	type plain Sample
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode((*plain)(s))
}
