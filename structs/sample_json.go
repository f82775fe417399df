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
// trainers' snake_case (DESIGN.md §3), in any letter case. It skips a key
// that is neither, so that a reader of samples (a server reading a newer
// collector's) keeps working across versions; where samples enter
// Caravan, ReportRequest and DecodeSample refuse such a key by name.
func (s *Sample) UnmarshalJSON(b []byte) error { return s.decode(b, false) }

// DecodeSample decodes one sample as UnmarshalJSON does, except that an
// unknown key is an error naming it, so that a misspelt field is never
// silently dropped.
func DecodeSample(b []byte) (Sample, error) {
	var s Sample
	err := s.decode(b, true)
	return s, err
}

func (s *Sample) decode(b []byte, strict bool) error {
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
		switch {
		case !ok && strict:
			return fmt.Errorf("sample: unknown field %q", k)
		case !ok:
			continue
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
	return json.Unmarshal(b, (*plain)(s))
}

// UnmarshalJSON decodes a report as it enters Caravan: a key other than
// Samples (in any letter case), or a sample's unknown key, is an error
// naming it.
func (r *ReportRequest) UnmarshalJSON(b []byte) error {
	var raw struct{ Samples []json.RawMessage }
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	r.Samples = nil
	if raw.Samples != nil {
		r.Samples = make([]Sample, len(raw.Samples))
	}
	for i, m := range raw.Samples {
		s, err := DecodeSample(m)
		if err != nil {
			return fmt.Errorf("samples[%d]: %w", i, err)
		}
		r.Samples[i] = s
	}
	return nil
}
