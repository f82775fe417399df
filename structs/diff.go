package structs

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Diff types: how a job or one of its fields changed, as Nomad's job plan
// marks them.
const (
	DiffTypeNone    = "None"
	DiffTypeAdded   = "Added"
	DiffTypeDeleted = "Deleted"
	DiffTypeEdited  = "Edited"
)

// JobDiff is how a job's spec differs from another version of it, field by
// field. Only the fields a user gives count: a job's status, version, submit
// time and indexes never appear.
type JobDiff struct {
	// Type is DiffTypeNone when the specs are equal, DiffTypeAdded when there
	// was no old job, DiffTypeDeleted when there is no new one and
	// DiffTypeEdited otherwise.
	Type string
	ID   string
	// Fields are the fields that differ, in the order of the job's struct:
	// job-level fields first, then training, elastic and the roles.
	Fields []*FieldDiff
}

// FieldDiff is one field that differs between two versions of a job.
type FieldDiff struct {
	// Type is DiffTypeAdded, DiffTypeDeleted or DiffTypeEdited.
	Type string
	// Path names the field as FieldError.Path does, as a jobspec spells it:
	// "elastic.workers.max", "worker.resources.device[0].count",
	// "worker.env.NCCL_DEBUG". A list of plain values is one field.
	Path string
	// Old and New are the values rendered for people: strings quoted,
	// durations as "30s", lists of plain values as ["a", "b"]. Old is empty
	// for an added field, New for a deleted one.
	Old string `json:",omitempty"`
	New string `json:",omitempty"`
}

// Changed reports whether the diff has any field.
func (d *JobDiff) Changed() bool { return d != nil && len(d.Fields) > 0 }

// String renders the change on one line: "elastic.workers.max 24 → 12",
// "+worker.env.DEBUG \"1\"" or "-meta.team".
func (f *FieldDiff) String() string {
	switch f.Type {
	case DiffTypeAdded:
		return "+" + f.Path + " " + f.New
	case DiffTypeDeleted:
		return "-" + f.Path
	}
	return f.Path + " " + f.Old + " → " + f.New
}

// SpecChanged reports whether next differs from j in any field a user gives,
// as Nomad's Job.SpecChanged: every field but Status, StatusDescription,
// Version, SubmitTime, CreateIndex, ModifyIndex and ModifyTime. Values compare as the
// jobspec means them, whatever the encoding they came through: numbers in
// driver config by value (JSON gives float64, HCL int64, msgpack uint64),
// and nil and empty lists and maps alike. Either job may be nil.
func (j *Job) SpecChanged(next *Job) bool {
	return j.Diff(next).Changed()
}

// Diff returns how next differs from j, j being the older version; either
// may be nil. It never returns nil.
func (j *Job) Diff(next *Job) *JobDiff {
	d := &JobDiff{Type: DiffTypeNone}
	switch {
	case j == nil && next == nil:
		return d
	case j == nil:
		d.Type, d.ID = DiffTypeAdded, next.ID
	case next == nil:
		d.Type, d.ID = DiffTypeDeleted, j.ID
	default:
		d.ID = next.ID
	}
	d.Fields = diffLeaves(j.leaves(), next.leaves())
	if d.Type == DiffTypeNone && len(d.Fields) > 0 {
		d.Type = DiffTypeEdited
	}
	return d
}

// leaf is one field of a flattened job spec: its jobspec path and its
// value rendered.
type leaf struct{ path, value string }

// leaves flattens the job's spec in struct order; nil gives none.
func (j *Job) leaves() []leaf {
	var out []leaf
	if j != nil {
		flatten("", reflect.ValueOf(j), &out)
	}
	return out
}

// diffLeaves compares two flattened specs. Both list their common paths in
// the same order (the struct's, with map keys sorted), so one pass merges
// them: a deleted field is reported where it stood in the old spec.
func diffLeaves(old, next []leaf) []*FieldDiff {
	inOld := make(map[string]string, len(old))
	for _, l := range old {
		inOld[l.path] = l.value
	}
	inNext := make(map[string]bool, len(next))
	for _, l := range next {
		inNext[l.path] = true
	}
	var out []*FieldDiff
	i := 0
	deletedUpTo := func(path string) {
		for ; i < len(old) && old[i].path != path; i++ {
			if !inNext[old[i].path] {
				out = append(out, &FieldDiff{Type: DiffTypeDeleted, Path: old[i].path, Old: old[i].value})
			}
		}
	}
	for _, l := range next {
		prev, ok := inOld[l.path]
		if !ok {
			out = append(out, &FieldDiff{Type: DiffTypeAdded, Path: l.path, New: l.value})
			continue
		}
		deletedUpTo(l.path)
		i++
		if prev != l.value {
			out = append(out, &FieldDiff{Type: DiffTypeEdited, Path: l.path, Old: prev, New: l.value})
		}
	}
	deletedUpTo("")
	return out
}

// serverFields are the fields of Job that the server sets; they are not
// part of the spec.
var serverFields = map[string]bool{
	"Status": true, "StatusDescription": true, "Version": true,
	"SubmitTime": true, "CreateIndex": true, "ModifyIndex": true, "ModifyTime": true,
}

// A field tagged `diff:"-"` is not compared either: it is bulk whose
// changes other fields mark (a new NomadSource.Template comes with a new
// JobModifyIndex).

// specNames are the jobspec names of fields that snake case does not give.
var specNames = map[string]string{
	"Constraints": "constraint", "Affinities": "affinity", "Speeds": "speed",
	"Devices": "device", "MemoryMB": "memory", "CPURange": "cpu", "MemoryRange": "memory",
	"LTarget": "attribute", "RTarget": "value", "Operand": "operator",
}

var (
	jobType      = reflect.TypeFor[Job]()
	durationType = reflect.TypeFor[time.Duration]()
	identifier   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// flatten appends the leaves of v under path. Nil pointers and empty lists
// and maps have none; lists of plain values are one leaf.
func flatten(path string, v reflect.Value, out *[]leaf) {
	if v.Type() == durationType {
		*out = append(*out, leaf{path, time.Duration(v.Int()).String()})
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			flatten(path, v.Elem(), out)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || t == jobType && serverFields[f.Name] || f.Tag.Get("diff") == "-" {
				continue
			}
			flatten(join(path, specName(f.Name)), v.Field(i), out)
		}
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return
		}
		if s, ok := plainList(v); ok {
			*out = append(*out, leaf{path, s})
			return
		}
		for i := range v.Len() {
			flatten(path+"["+strconv.Itoa(i)+"]", v.Index(i), out)
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			name := fmt.Sprint(k)
			if identifier.MatchString(name) {
				name = join(path, name)
			} else {
				name = path + "[" + strconv.Quote(name) + "]"
			}
			flatten(name, v.MapIndex(k), out)
		}
	default:
		*out = append(*out, leaf{path, plain(v)})
	}
}

// plainList renders a list whose elements are all plain values, such as
// datacenters or a command's args, as ["a", "b"].
func plainList(v reflect.Value) (string, bool) {
	parts := make([]string, v.Len())
	for i := range v.Len() {
		e := v.Index(i)
		for e.Kind() == reflect.Interface && !e.IsNil() {
			e = e.Elem()
		}
		switch e.Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Struct, reflect.Slice, reflect.Array, reflect.Map:
			return "", false
		}
		parts[i] = plain(e)
	}
	return "[" + strings.Join(parts, ", ") + "]", true
}

// plain renders a plain value. Numbers render by value, so that 64 reads
// the same as an int64, a uint64 or a float64.
func plain(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return strconv.FormatInt(int64(f), 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

// specName returns the jobspec name of a Go field: its snake case
// ("GlobalBatchSize" is "global_batch_size", "CPU" is "cpu") unless
// specNames says otherwise.
func specName(field string) string {
	if n, ok := specNames[field]; ok {
		return n
	}
	var b strings.Builder
	rs := []rune(field)
	for i, r := range rs {
		upper := r >= 'A' && r <= 'Z'
		if upper && i > 0 {
			prevLower := rs[i-1] < 'A' || rs[i-1] > 'Z'
			nextLower := i+1 < len(rs) && rs[i+1] >= 'a' && rs[i+1] <= 'z'
			if prevLower || nextLower {
				b.WriteByte('_')
			}
		}
		if upper {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
