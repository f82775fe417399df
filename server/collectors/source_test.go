package collectors

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestPoll_NewerCollector: a page from a collector of a newer version,
// whose samples carry a field this server does not know, is read with
// the fields it knows, rather than stopping the scrape.
func TestPoll_NewerCollector(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"Samples": [{"JobID": "a", "Step": 3, "AFieldOfANewerVersion": 1}], "Next": 2}`))
	}))
	t.Cleanup(srv.Close)
	s := New(Config{})
	p, err := s.poll(context.Background(), strings.TrimPrefix(srv.URL, "http://"), 0)
	must.NoError(t, err)
	must.Eq(t, []structs.Sample{{JobID: "a", Step: 3}}, p.Samples)
	must.Eq(t, 2, p.Next)
}
