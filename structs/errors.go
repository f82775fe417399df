package structs

import (
	"errors"
	"fmt"
)

// ErrMissing is wrapped by a FieldError for a required field or block that
// was not given.
var ErrMissing = errors.New("is required")

// FieldError reports one invalid field. Path names the field as it is spelled
// in a jobspec, with dots between blocks and [i] for the i-th repeated block:
// "worker.resources.device[0].count". An empty Path means the object itself.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// FieldErrors returns the *FieldError values inside err, which is usually the
// result of a Validate method. Errors that are not FieldErrors are returned
// with an empty path, so nothing in err is lost.
func FieldErrors(err error) []*FieldError {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*FieldError); ok {
		return []*FieldError{fe}
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*FieldError
		for _, e := range joined.Unwrap() {
			out = append(out, FieldErrors(e)...)
		}
		return out
	}
	return []*FieldError{{Err: err}}
}

// validator collects FieldErrors under a path prefix. Its zero value is not
// usable; start with newValidator.
type validator struct {
	prefix string
	errs   *[]error
}

func newValidator() validator { return validator{errs: new([]error)} }

// at returns a validator for a child path.
func (v validator) at(name string) validator {
	return validator{prefix: join(v.prefix, name), errs: v.errs}
}

// fail records an error for the field name (relative to the prefix; "" for
// the prefix itself).
func (v validator) fail(name string, format string, args ...any) {
	*v.errs = append(*v.errs, &FieldError{Path: join(v.prefix, name), Err: fmt.Errorf(format, args...)})
}

// missing records that the field name is required but absent.
func (v validator) missing(name string) {
	*v.errs = append(*v.errs, &FieldError{Path: join(v.prefix, name), Err: ErrMissing})
}

func (v validator) err() error { return errors.Join(*v.errs...) }

func join(prefix, name string) string {
	switch {
	case prefix == "":
		return name
	case name == "":
		return prefix
	case name[0] == '[':
		return prefix + name
	}
	return prefix + "." + name
}
