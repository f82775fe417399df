package structs

import (
	"math"
	"strconv"
	"strings"
)

// Attribute is a typed device attribute as Nomad's device plugins report it:
// exactly one of Int, Float, String and Bool is set, and numbers may carry a
// Unit ("16 GiB", "1530 MHz"). Numbers with units of the same kind compare by
// value, so "16 GiB" equals "16384 MiB".
type Attribute struct {
	Int    *int64
	Float  *float64
	String *string
	Bool   *bool
	Unit   string
}

type unit struct {
	kind string
	mult float64
}

// units are the units Nomad's device plugins use, by kind, with their
// multiplier to the kind's base unit.
var units = map[string]unit{
	"B": {"bytes", 1}, "KB": {"bytes", 1e3}, "MB": {"bytes", 1e6}, "GB": {"bytes", 1e9},
	"TB": {"bytes", 1e12}, "PB": {"bytes", 1e15}, "KiB": {"bytes", 1 << 10},
	"MiB": {"bytes", 1 << 20}, "GiB": {"bytes", 1 << 30}, "TiB": {"bytes", 1 << 40},
	"PiB": {"bytes", 1 << 50},
	"B/s": {"bytes/s", 1}, "KB/s": {"bytes/s", 1e3}, "MB/s": {"bytes/s", 1e6},
	"GB/s": {"bytes/s", 1e9}, "KiB/s": {"bytes/s", 1 << 10}, "MiB/s": {"bytes/s", 1 << 20},
	"GiB/s": {"bytes/s", 1 << 30},
	"Hz":    {"hertz", 1}, "KHz": {"hertz", 1e3}, "MHz": {"hertz", 1e6}, "GHz": {"hertz", 1e9},
	"mW": {"watts", 1e-3}, "W": {"watts", 1}, "kW": {"watts", 1e3},
}

// ParseAttribute parses s the way Nomad reads device attributes and
// constraint values: a bool, an integer or a float with an optional known
// unit after a space or not ("16 GiB", "16GiB"), and otherwise a string.
func ParseAttribute(s string) *Attribute {
	s = strings.TrimSpace(s)
	if b, err := strconv.ParseBool(s); err == nil {
		return &Attribute{Bool: &b}
	}
	num, u := s, ""
	if i := strings.LastIndexAny(s, "0123456789."); i >= 0 && i < len(s)-1 {
		if _, ok := units[strings.TrimSpace(s[i+1:])]; ok {
			num, u = strings.TrimSpace(s[:i+1]), strings.TrimSpace(s[i+1:])
		}
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		return &Attribute{Int: &n, Unit: u}
	}
	if f, err := strconv.ParseFloat(num, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return &Attribute{Float: &f, Unit: u}
	}
	return &Attribute{String: &s}
}

// GoString renders the attribute as its original text, e.g. "16 GiB".
func (a *Attribute) GoString() string {
	var s string
	switch {
	case a.Int != nil:
		s = strconv.FormatInt(*a.Int, 10)
	case a.Float != nil:
		s = strconv.FormatFloat(*a.Float, 'g', -1, 64)
	case a.Bool != nil:
		s = strconv.FormatBool(*a.Bool)
	case a.String != nil:
		return *a.String
	}
	if a.Unit != "" {
		s += " " + a.Unit
	}
	return s
}

// number returns the attribute's value in its kind's base unit.
func (a *Attribute) number() (v float64, kind string, ok bool) {
	switch {
	case a.Int != nil:
		v = float64(*a.Int)
	case a.Float != nil:
		v = *a.Float
	default:
		return 0, "", false
	}
	if a.Unit == "" {
		return v, "", true
	}
	u := units[a.Unit]
	return v * u.mult, u.kind, true
}

// Compare orders a against b: -1, 0 or 1, and ok false when they are not
// comparable (different types, or numbers of different unit kinds). Strings
// compare lexically and bools only for equality.
func (a *Attribute) Compare(b *Attribute) (cmp int, ok bool) {
	if x, xk, xok := a.number(); xok {
		y, yk, yok := b.number()
		if !yok || (xk != yk && xk != "" && yk != "") {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	switch {
	case a.String != nil && b.String != nil:
		return strings.Compare(*a.String, *b.String), true
	case a.Bool != nil && b.Bool != nil:
		if *a.Bool == *b.Bool {
			return 0, true
		}
		return 1, true
	}
	return 0, false
}
