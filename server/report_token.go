package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"

	"github.com/caravan-sched/caravan/acl"
	"github.com/caravan-sched/caravan/server/state"
	"github.com/caravan-sched/caravan/structs"
)

// Per-job report tokens. A job's tasks report samples with a token that
// allows reporting for that job and nothing else:
//
//	caravan-report.<base64url namespace>.<base64url job ID>.<base64url MAC>
//
// The MAC is HMAC-SHA256 of the job's namespace and ID under the report
// key drawn at ACL bootstrap and replicated with it, so every server checks
// a token without storing one per job, and a token outlives restarts and
// leaders. It stops working only if the cluster's ACLs are bootstrapped
// again (a new key).
const reportTokenPrefix = "caravan-report."

var b64 = base64.RawURLEncoding

// JobReportToken returns the token job's tasks report with; empty while
// ACLs are off or not bootstrapped. It makes the Server the host the
// nomad driver asks (structs.DriverHost).
func (s *Server) JobReportToken(job structs.JobKey) string {
	key := s.reportKey()
	if key == nil {
		return ""
	}
	return reportTokenPrefix + b64.EncodeToString([]byte(job.Namespace)) + "." + b64.EncodeToString([]byte(job.ID)) + "." + b64.EncodeToString(reportMAC(key, job))
}

// reportKey returns the replicated report key, nil without one.
func (s *Server) reportKey() []byte {
	if !s.cfg.ACL.Enabled {
		return nil
	}
	b, err := state.ACLBootstrapped(s.State().Txn())
	if err != nil || b == nil || len(b.ReportKey) == 0 {
		return nil
	}
	return b.ReportKey
}

func reportMAC(key []byte, job structs.JobKey) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(job.Namespace))
	m.Write([]byte{0})
	m.Write([]byte(job.ID))
	return m.Sum(nil)
}

// reportIdentity checks a per-job report token: the identity it gives may
// report for its job only. A token that does not verify is not found.
func (s *Server) reportIdentity(secret string) (*identity, error) {
	parts := strings.Split(strings.TrimPrefix(secret, reportTokenPrefix), ".")
	key := s.reportKey()
	if len(parts) != 3 || key == nil {
		return nil, errTokenNotFound
	}
	ns, err1 := b64.DecodeString(parts[0])
	id, err2 := b64.DecodeString(parts[1])
	mac, err3 := b64.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, errTokenNotFound
	}
	job := structs.JobKey{Namespace: string(ns), ID: string(id)}
	if !hmac.Equal(mac, reportMAC(key, job)) {
		return nil, errTokenNotFound
	}
	return &identity{acl: reportACL(job.Namespace), reportJob: &job}, nil
}

// reportACLs caches the ACL of reporting in one namespace.
var reportACLs sync.Map

func reportACL(ns string) *acl.ACL {
	if a, ok := reportACLs.Load(ns); ok {
		return a.(*acl.ACL)
	}
	a := acl.New(&acl.Policy{Namespaces: []*acl.NamespaceRule{{Name: ns, Capabilities: []string{acl.CapReport}}}})
	reportACLs.Store(ns, a)
	return a
}

// allowReport checks that a request that may report reports for job: a
// per-job report token reports for its own job only.
func (s *Server) allowReport(r *http.Request, job structs.JobKey) error {
	id, _ := r.Context().Value(identityKey{}).(*identity)
	if id == nil || id.reportJob == nil || *id.reportJob == job {
		return nil
	}
	return denied(id, "report for job %q in namespace %q", job.ID, job.Namespace)
}
