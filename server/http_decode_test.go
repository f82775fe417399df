package server

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/internal/testutil"
	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// TestDecode_Depth: a body nesting over maxBodyDepth levels is refused
// before it is decoded, so that a job the API accepts always decodes from
// the Raft log (msgpack stops at 1024 levels); brackets in strings do not
// count.
func TestDecode_Depth(t *testing.T) {
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		name, body string
		err        string
	}{
		{"deep job config", string(testutil.DeepConfigJobJSON(1_100)), "more than 128 levels deep"},
		{"at the limit", `{"Variables":{"a":"b"},"JobHCL":` + nested(127)[:127] + `"x"` + nested(127)[127:] + `}`, "not valid JSON"},
		{"one over", `{"JobHCL":` + nested(128) + `}`, "more than 128 levels deep"},
		{"brackets in strings", `{"JobHCL":"` + strings.Repeat(`[{\"`, 1_000) + `"}`, ""},
		{"escaped backslash ends the string", `{"JobHCL":"\\","Filename":"` + strings.Repeat("[", 200) + `"}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var req structs.JobRegisterRequest
			err := decode(httptest.NewRequest("POST", "/v1/jobs", bytes.NewReader([]byte(tc.body))), &req)
			if tc.err == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorContains(t, err, tc.err)
			must.Eq(t, 400, errorCode(err))
		})
	}
}
