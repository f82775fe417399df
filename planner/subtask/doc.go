// Package subtask is Cruise's cost model of a parameter-server job's step
// (Lee's dissertation, ch. 3, eqs. 3.1–3.5): its computation and
// communication, estimated from the subtask times the server measures
// (planner.Subtasks), and the split of machines between workers and
// servers it predicts best, on homogeneous machines and on machines that
// differ. The cruise algorithm (planner/cruise) decides with it, and drf
// grows a job's servers in the ratio it gives (split = "cruise"); the
// equations and the choices where the text is silent are in
// planner/cruise's documentation.
package subtask
