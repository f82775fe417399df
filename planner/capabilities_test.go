package planner

import (
	"testing"

	"github.com/shoenig/test/must"
)

type plain struct{}

func (plain) Name() string                     { return "plain" }
func (plain) Plan(*Request) (*Decision, error) { return &Decision{}, nil }

type modelDriven struct{ plain }

func (modelDriven) SpeedModels() bool { return true }

type described struct{ plain }

func (described) SpeedModels() bool { return false }
func (described) Capabilities() Capabilities {
	return Capabilities{Reads: []Estimator{EstimatorUsage}, FixedSize: true}
}

// TestCapabilitiesOf: a Describer's declaration wins; an algorithm that
// declares nothing gets the zero declaration, with SpeedModels from
// ModelDriven when it is one.
func TestCapabilitiesOf(t *testing.T) {
	must.Eq(t, Capabilities{}, CapabilitiesOf(plain{}))
	must.Eq(t, Capabilities{SpeedModels: true}, CapabilitiesOf(modelDriven{}))
	got := CapabilitiesOf(described{})
	must.Eq(t, Capabilities{Reads: []Estimator{EstimatorUsage}, FixedSize: true}, got)
	must.True(t, got.ReadsEstimator(EstimatorUsage))
	must.False(t, got.ReadsEstimator(EstimatorLoss))
}
