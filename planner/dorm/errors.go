package dorm

import "errors"

// ErrNoSolver is returned by SetConfig (and so when the agent or `caravan
// sim` instantiates the algorithm) and by Plan when GLPK's glpsol is not on
// the PATH or at the configured path.
var ErrNoSolver = errors.New("dorm needs GLPK's glpsol: install glpk-utils (make tools)")
