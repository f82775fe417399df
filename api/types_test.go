package api

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/caravan-sched/caravan/structs"
	"github.com/shoenig/test/must"
)

// mirrors pairs each api type with the server's type it mirrors: a value
// of one, every field set, must encode the same after a trip through the
// other.
var mirrors = []struct{ server, client any }{
	{structs.Job{}, Job{}},
	{structs.NomadSource{}, NomadSource{}},
	{structs.Training{}, Training{}},
	{structs.BatchSize{}, BatchSize{}},
	{structs.SpeedPrior{}, SpeedPrior{}},
	{structs.Convergence{}, Convergence{}},
	{structs.Elastic{}, Elastic{}},
	{structs.Bounds{}, Bounds{}},
	{structs.Checkpoint{}, Checkpoint{}},
	{structs.Role{}, Role{}},
	{structs.Resources{}, Resources{}},
	{structs.ResourceRange{}, ResourceRange{}},
	{structs.RequestedDevice{}, RequestedDevice{}},
	{structs.Constraint{}, Constraint{}},
	{structs.Affinity{}, Affinity{}},
	{structs.Plan{}, Plan{}},
	{structs.Placement{}, Placement{}},
	{structs.Batch{}, Batch{}},
	{structs.NodeTasks{}, NodeTasks{}},
	{structs.TaskSize{}, TaskSize{}},
	{structs.TaskAction{}, TaskAction{}},
	{structs.PlacementMetric{}, PlacementMetric{}},
	{structs.Shape{}, Shape{}},
	{structs.JobPlacement{}, JobPlacement{}},
	{structs.Observed{}, Observed{}},
	{structs.Failure{}, Failure{}},
	{structs.Change{}, Change{}},
	{structs.JobDiff{}, JobDiff{}},
	{structs.FieldDiff{}, FieldDiff{}},
	{structs.Node{}, Node{}},
	{structs.NodeDeviceResource{}, NodeDeviceResource{}},
	{structs.NodeDevice{}, NodeDevice{}},
	{structs.Attribute{}, Attribute{}},
	{structs.Event{}, Event{}},
	{structs.Sample{}, Sample{}},
	{structs.JobSamples{}, JobSamples{}},
	{structs.JobModel{}, JobModel{}},
	{structs.GoodputModel{}, GoodputModel{}},
	{structs.GPUTypeModel{}, GPUTypeModel{}},
	{structs.PerfPoint{}, PerfPoint{}},
	{structs.JobUsage{}, JobUsage{}},
	{structs.TaskUsage{}, TaskUsage{}},
	{structs.ShapeUsage{}, ShapeUsage{}},
	{structs.SchedulerConfig{}, SchedulerConfig{}},
	{structs.PluginStatus{}, PluginStatus{}},
	{structs.ACLPolicy{}, ACLPolicy{}},
	{structs.ACLToken{}, ACLToken{}},
	{structs.ACLPolicyRequest{}, ACLPolicyRequest{}},
	{structs.ACLTokenRequest{}, ACLTokenRequest{}},
	{structs.Queue{}, Queue{}},
	{structs.QueueQuota{}, QueueQuota{}},
	{structs.GPUQuota{}, GPUQuota{}},
	{structs.QueueUsage{}, QueueUsage{}},
	{structs.QueueResource{}, QueueResource{}},
	{structs.QueueJob{}, QueueJob{}},
	{structs.QueueUpsertRequest{}, QueueUpsertRequest{}},
	{structs.QueueUpsertResponse{}, QueueUpsertResponse{}},
	{structs.JobRegisterRequest{}, JobRegisterRequest{}},
	{structs.JobRegisterResponse{}, JobRegisterResponse{}},
	{structs.JobRevertRequest{}, JobRevertRequest{}},
	{structs.JobSummary{}, JobSummary{}},
	{structs.PlanResponse{}, PlanResponse{}},
	{structs.AgentSelf{}, AgentSelf{}},
	{structs.NomadCluster{}, NomadCluster{}},
	{structs.RaftServer{}, RaftServer{}},
	{structs.RaftConfiguration{}, RaftConfiguration{}},
	{structs.SchedulerConfigRequest{}, SchedulerConfigRequest{}},
	{structs.JobListStub{}, JobListStub{}},
	{structs.NodeDetail{}, NodeDetail{}},
	{structs.NodeJobTasks{}, NodeJobTasks{}},
}

// TestTypes_MirrorServer checks each api type against the server's: a
// value of either type with every field set encodes to the same JSON after
// a trip through the other, so that a field one has and the other lacks
// fails with its path.
func TestTypes_MirrorServer(t *testing.T) {
	for _, m := range mirrors {
		server, client := reflect.TypeOf(m.server), reflect.TypeOf(m.client)
		t.Run(client.Name(), func(t *testing.T) {
			must.EqOp(t, server.Name(), client.Name(), must.Sprint("a mirror has its original's name"))
			roundTrip(t, server, client)
			roundTrip(t, client, server)
		})
	}
}

// roundTrip encodes a filled value of from, decodes it into a to, encodes
// that and compares the two documents.
func roundTrip(t *testing.T, from, to reflect.Type) {
	t.Helper()
	v := reflect.New(from)
	fill(v.Elem())
	want, err := json.Marshal(v.Interface())
	must.NoError(t, err)
	through := reflect.New(to)
	must.NoError(t, json.Unmarshal(want, through.Interface()), must.Sprintf("decode %s into %s", from, to))
	got, err := json.Marshal(through.Interface())
	must.NoError(t, err)
	var a, b any
	must.NoError(t, json.Unmarshal(want, &a))
	must.NoError(t, json.Unmarshal(got, &b))
	if diffs := jsonDiff("", a, b); len(diffs) > 0 {
		t.Errorf("%s through %s loses or changes:\n%s", from, to, strings.Join(diffs, "\n"))
	}
}

// jsonDiff lists the paths where two decoded JSON documents differ.
func jsonDiff(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		for k, av := range am {
			bv, ok := bm[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			out = append(out, jsonDiff(path+"."+k, av, bv)...)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: added", path, k))
			}
		}
		slices.Sort(out)
		return out
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		var out []string
		for i := range as {
			out = append(out, jsonDiff(path+"["+strconv.Itoa(i)+"]", as[i], bs[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(a, b) {
		return []string{fmt.Sprintf("%s: %v became %v", path, a, b)}
	}
	return nil
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// fill sets every field of v to a non-zero value: pointers, and slices
// and maps of one element, filled in turn.
func fill(v reflect.Value) {
	if v.Type() == rawMessage {
		v.SetBytes([]byte(`{"Key":"value"}`))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.SetMapIndex(k, e)
	case reflect.Interface:
		v.Set(reflect.ValueOf("value"))
	case reflect.String:
		v.SetString("value")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(2.5)
	default:
		panic(fmt.Sprintf("fill: no value for %s", v.Type()))
	}
}

// TestFill_SetsEveryField checks the filler itself: a filled job has no
// zero field, so that a mirror test cannot pass over a field.
func TestFill_SetsEveryField(t *testing.T) {
	var job structs.Job
	fill(reflect.ValueOf(&job).Elem())
	for i := range reflect.TypeFor[structs.Job]().NumField() {
		f := reflect.ValueOf(job).Field(i)
		must.False(t, f.IsZero(), must.Sprintf("field %s", reflect.TypeFor[structs.Job]().Field(i).Name))
	}
}

// parseDir parses the non-test Go files of dir.
func parseDir(t *testing.T, dir string, mode parser.Mode) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	must.NoError(t, err)
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, mode)
		must.NoError(t, err)
		files[name] = f
	}
	must.MapNotEmpty(t, files)
	return files
}

// structTypes returns the names of the struct types files declare.
func structTypes(files map[string]*ast.File) map[string]bool {
	out := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
						if _, ok := ts.Type.(*ast.StructType); ok {
							out[ts.Name.Name] = true
						}
					}
				}
			}
		}
	}
	return out
}

// TestTypes_EveryMirrorChecked checks that mirrors lists every api type
// that has a namesake in structs.
func TestTypes_EveryMirrorChecked(t *testing.T) {
	listed := map[string]bool{}
	for _, m := range mirrors {
		listed[reflect.TypeOf(m.client).Name()] = true
	}
	server := structTypes(parseDir(t, "../structs", parser.SkipObjectResolution))
	for name := range structTypes(parseDir(t, ".", parser.SkipObjectResolution)) {
		if server[name] {
			must.True(t, listed[name], must.Sprintf("api.%s mirrors structs.%s: add it to mirrors", name, name))
		}
	}
}

// TestImports_NoCaravanPackage checks that programs can use the client
// without the server: no non-test file of package api imports a package of
// Caravan's module.
func TestImports_NoCaravanPackage(t *testing.T) {
	for name, f := range parseDir(t, ".", parser.ImportsOnly) {
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			must.StrNotHasPrefix(t, "github.com/caravan-sched/caravan", path, must.Sprintf("%s imports %s", name, path))
		}
	}
}
