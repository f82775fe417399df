package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/server"
	"github.com/caravan-sched/caravan/structs"
	"github.com/chromedp/chromedp"
	"github.com/shoenig/test/must"
)

// invalidDeclaration is a cluster that declares one job Caravan cannot
// run.
type invalidDeclaration struct{}

func (invalidDeclaration) Declared(context.Context) (map[structs.JobKey]*structs.Declaration, uint64, error) {
	errs := []string{"typo (submitted to Nomad, version 0):12:9: Missing required argument", "typo (submitted to Nomad, version 0):18:13: Unsupported argument"}
	d := &structs.Declaration{Namespace: structs.DefaultNamespace, JobID: "typo", Kind: structs.DeclaredInvalid, Index: 7,
		Message: strings.Join(errs, "; "), Errors: errs}
	return map[structs.JobKey]*structs.Declaration{d.Key(): d}, 1, nil
}

// TestBrowser_Rejected: a job declared in Nomad that Caravan rejected is
// listed as rejected, and its page lists each error instead of a spec,
// with no error in the console.
func TestBrowser_Rejected(t *testing.T) {
	s, _ := startServer(t, 1, func(cfg *server.Config) { cfg.Discoverer = invalidDeclaration{} })
	base := "http://" + s.HTTPAddr()
	b := newBrowser(t)

	must.NoError(t, b.do(chromedp.Navigate(base+"/ui/")))
	b.waitNumber(t, "the rejected job in the list", `document.querySelectorAll('tr[data-job="typo"]').length`, 1)
	row, err := eval[string](b, `document.querySelector('tr[data-job="typo"]').innerText`)
	must.NoError(t, err)
	must.StrContains(t, row, "rejected")

	must.NoError(t, b.do(chromedp.Navigate(base+"/ui/jobs/typo")))
	b.waitNumber(t, "the errors", `document.querySelectorAll('#rejected li').length`, 2)
	text, err := eval[string](b, `document.querySelector('#rejected').innerText`)
	must.NoError(t, err)
	must.StrContains(t, text, "version 0):18:13: Unsupported argument")
	charts, err := eval[float64](b, `document.querySelectorAll('[data-chart]').length`)
	must.NoError(t, err)
	must.EqOp(t, 0, charts)
	b.checkClean(t)
}
