package server

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-bexpr"
)

// nextTokenHeader carries the token of a list's next page, as Nomad's
// X-Nomad-NextToken; it is absent on the last page.
const nextTokenHeader = "X-Caravan-NextToken"

// listOptions are the query parameters every list endpoint takes, as
// Nomad's do:
//
//   - prefix: only the items whose ID starts with it;
//   - filter: only the items a go-bexpr expression selects, such as
//     `Status == "running" and GPUs > 2`, evaluated on each item as the
//     endpoint answers it (its JSON field names);
//   - per_page and next_token: at most per_page items, starting with the
//     one whose token is next_token (a previous page's X-Caravan-NextToken);
//   - reverse: the items in descending order of their tokens.
//
// Items are ordered by their token, which each endpoint defines (the ID,
// or the namespace and ID).
type listOptions struct {
	prefix    string
	filter    *bexpr.Evaluator
	perPage   int
	nextToken string
	reverse   bool
}

// parseListOptions reads r's list parameters; a bad per_page or filter is a
// 400 that says what is wrong.
func parseListOptions(r *http.Request) (*listOptions, error) {
	q := r.URL.Query()
	o := &listOptions{prefix: q.Get("prefix"), nextToken: q.Get("next_token")}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, badRequest("per_page=%q is not a non-negative integer", v)
		}
		o.perPage = n
	}
	var err error
	if o.filter, err = parseFilter(r); err != nil {
		return nil, err
	}
	if v := q.Get("reverse"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, badRequest("reverse=%q is not a boolean", v)
		}
		o.reverse = b
	}
	return o, nil
}

// parseFilter compiles ?filter=, a go-bexpr expression; nil without one.
func parseFilter(r *http.Request) (*bexpr.Evaluator, error) {
	v := r.URL.Query().Get("filter")
	if v == "" {
		return nil, nil
	}
	ev, err := bexpr.CreateEvaluator(v)
	if err != nil {
		return nil, badRequest("filter %q is not a valid expression: %v", v, err)
	}
	return ev, nil
}

// listKeys say how a list endpoint's items are matched by ?prefix= (id)
// and ordered for pagination (token, unique per item).
type listKeys[T any] struct {
	id    func(T) string
	token func(T) string
}

// apply returns the page of items o selects, and sets X-Caravan-NextToken
// when more follow. items are not modified. A filter that cannot be
// evaluated on an item (a field it does not have) is a 400.
func apply[T any](w http.ResponseWriter, o *listOptions, items []T, k listKeys[T]) ([]T, error) {
	return applyBuilt(w, o, items, k, func(it T) (T, error) { return it, nil })
}

// applyBuilt is apply for items that cost something to build: keys are
// ordered and matched by prefix and next_token, and only the keys that
// pass are built into the items the filter sees and the page holds, up
// to the page's end. It may run in a blocking query's read. The first page of a long list costs its page (and,
// with a filter, the items the filter passes over), not the whole list.
func applyBuilt[K, T any](w http.ResponseWriter, o *listOptions, keys []K, k listKeys[K], build func(K) (T, error)) ([]T, error) {
	// A blocking query runs this again: a later answer may be the last page.
	w.Header().Del(nextTokenHeader)
	tokens := make([]string, len(keys))
	order := make([]int, len(keys))
	for i, key := range keys {
		tokens[i], order[i] = k.token(key), i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if o.reverse {
			return cmp.Compare(tokens[b], tokens[a])
		}
		return cmp.Compare(tokens[a], tokens[b])
	})
	var out []T
	for _, i := range order {
		t := tokens[i]
		if o.prefix != "" && !strings.HasPrefix(k.id(keys[i]), o.prefix) {
			continue
		}
		if o.nextToken != "" && (!o.reverse && t < o.nextToken || o.reverse && t > o.nextToken) {
			continue
		}
		it, err := build(keys[i])
		if err != nil {
			return nil, err
		}
		if o.filter != nil {
			ok, err := o.filter.Evaluate(it)
			if err != nil {
				return nil, badRequest("filter: %v", err)
			}
			if !ok {
				continue
			}
		}
		if o.perPage > 0 && len(out) == o.perPage {
			w.Header().Set(nextTokenHeader, t)
			break
		}
		out = append(out, it)
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

// byID are the keys of items with an ID unique across namespaces.
func byID[T any](id func(T) string) listKeys[T] { return listKeys[T]{id: id, token: id} }

// byNamespacedID are the keys of items whose ID is unique per namespace:
// the token is "<namespace>.<id>", as Nomad's.
func byNamespacedID[T any](ns, id func(T) string) listKeys[T] {
	return listKeys[T]{id: id, token: func(t T) string { return ns(t) + "." + id(t) }}
}
