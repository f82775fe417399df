package ui_test

import (
	"testing"

	"github.com/caravan-sched/caravan/api"
	"github.com/caravan-sched/caravan/server"
	"github.com/chromedp/chromedp"
	"github.com/shoenig/test/must"
)

// readerRules is a policy that reads everything the UI shows.
const readerRules = `
namespace "default" {
  policy = "read"
}
operator {
  policy = "read"
}
plugin {
  policy = "read"
}
agent {
  policy = "read"
}
`

// TestBrowser_ACLs: on an agent with ACLs on, the UI without a token
// shows no job and says which token it needs; a read-only token typed
// into the header's field is kept in the browser, sent with every read,
// and every page then loads with no error.
func TestBrowser_ACLs(t *testing.T) {
	s, anon := startServer(t, 30, func(cfg *server.Config) {
		cfg.ACL = server.ACLConfig{Enabled: true, ServerToken: "ui-test-server-token"}
	})
	boot, _, err := anon.ACL().Bootstrap(nil)
	must.NoError(t, err)
	mgmt, err := api.NewClient(&api.Config{Address: s.HTTPAddr(), Token: boot.SecretID})
	must.NoError(t, err)
	_, _, err = mgmt.ACL().ApplyPolicy("ui-reader", &api.ACLPolicyRequest{Rules: readerRules}, nil)
	must.NoError(t, err)
	reader, _, err := mgmt.ACL().CreateToken(&api.ACLTokenRequest{Name: "ui", Policies: []string{"ui-reader"}}, nil)
	must.NoError(t, err)
	register(t, mgmt, "demo.hcl")

	base := "http://" + s.HTTPAddr()
	b := newBrowser(t)
	must.NoError(t, b.do(chromedp.Navigate(base+"/ui/")))
	b.waitNumber(t, "a problem that asks for a token",
		`[...document.querySelectorAll('.problem')].filter((e) => e.innerText.includes("set an ACL token")).length`, 1)
	jobs, err := eval[float64](b, `document.querySelectorAll('tr[data-job]').length`)
	must.NoError(t, err)
	must.EqOp(t, 0, jobs, must.Sprint("jobs shown without a token"))

	must.NoError(t, b.do(
		chromedp.SendKeys(`input[aria-label="ACL token"]`, reader.SecretID),
		chromedp.Click(`form.token button`),
	))
	b.waitNumber(t, "the demo job in the list", `document.querySelectorAll('tr[data-job="demo"]').length`, 1)
	saved, err := eval[string](b, `localStorage.getItem("caravan.token")`)
	must.NoError(t, err)
	must.EqOp(t, reader.SecretID, saved)

	// The 403s before the token were expected; from here on, none.
	b.mu.Lock()
	b.problems = nil
	b.mu.Unlock()
	for _, page := range []struct{ path, what, js string }{
		{"/ui/jobs/demo", "measured losses", attr(`[data-chart="loss"]`, "data-points")},
		{"/ui/cluster", "the nodes", attr(`table.nodes`, "data-rows")},
		{"/ui/scheduler", "the plugins", attr(`table.plugins`, "data-rows")},
	} {
		must.NoError(t, b.do(chromedp.Navigate(base+page.path)))
		b.waitNumber(t, page.what+" on "+page.path, page.js, 1)
		problems, err := eval[float64](b, `document.querySelectorAll('.problem').length`)
		must.NoError(t, err)
		must.EqOp(t, 0, problems, must.Sprintf("%s shows a problem with the token", page.path))
	}
	b.checkClean(t)
}
