package structs

// Declaration is what a cluster says of one of its jobs that Caravan may
// run: a job declared outside Caravan's API, such as a Nomad job whose
// groups carry a caravan scaling policy. Drivers that find such jobs
// (drivers/nomad) report one per job of the cluster; the leader registers,
// updates, stops and hands back jobs from them.
type Declaration struct {
	// Namespace and JobID name the job in the cluster and in Caravan.
	Namespace, JobID string
	// Kind says what the job's current version is; Declared* constants.
	Kind string
	// Index is the cluster's modify index of the job's current version.
	Index uint64
	// Job is the job a DeclaredJob version declares, with Job.Nomad set.
	Job *Job
	// Message says why a DeclaredInvalid version cannot run: its Errors,
	// "; "-separated.
	Message string
	// Errors are a DeclaredInvalid version's errors, one by one, each
	// with the file, line and column of the source the user submitted
	// when the cluster kept it, else with the group and field.
	Errors []string
	// Name is the job's display name in the cluster.
	Name string
}

// Kinds of declarations.
const (
	// DeclaredJob is a user's version that declares a job (Declaration.Job).
	DeclaredJob = "declared"
	// DeclaredInvalid is a user's version with a caravan policy Caravan
	// cannot run: the leader rejects it (see JobStatusRejected).
	DeclaredInvalid = "invalid"
	// DeclaredPlain is a user's version without a caravan policy: a job
	// that is not, or no longer, Caravan's.
	DeclaredPlain = "plain"
	// DeclaredManaged is a version Caravan wrote.
	DeclaredManaged = "managed"
	// DeclaredStopped is a stopped job, whoever wrote its version.
	DeclaredStopped = "stopped"
)

// Key returns the declaration's job key.
func (d *Declaration) Key() JobKey { return JobKey{Namespace: d.Namespace, ID: d.JobID} }
