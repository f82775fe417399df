package simulate

import "errors"

// ErrNoQueueAPI is returned by a run given queues (Options.Queues) while
// the simulator cannot store them in its server: the server's queue API
// (issue 32) is not part of this build.
var ErrNoQueueAPI = errors.New("queues need the server's queue API")
