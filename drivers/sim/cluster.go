package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// GPUType is a kind of GPU node of the Sia artifact's clusters (SOSP'23,
// sia-simulator/simulator_config.py): the device its nodes report, how
// many of them a node holds, and the suffix of its measurements in the
// sia traces (placements-<suffix>.csv).
type GPUType struct {
	// Short is the name a cluster spec uses ("t4").
	Short string
	// Model is the device name nodes report (structs.Node.GPUType) and its
	// memory.
	Model GPUModel
	// GPUsPerNode is the GPUs of one node, unless a spec overrides it.
	GPUsPerNode int
	// TraceSuffix names the type's files in sia/traces/<model>/.
	TraceSuffix string
}

// GPUTypes is the catalog of GPU types, by short name: the four of the
// Sia artifact's clusters (simulator_config.py's cluster_ngpus_per_node;
// the data README's "sia/" section names the GPUs).
var GPUTypes = map[string]GPUType{
	"t4":   {Short: "t4", Model: GPUModel{Name: "Tesla T4", Memory: "16 GiB"}, GPUsPerNode: 4, TraceSuffix: "aws"},
	"rtx":  {Short: "rtx", Model: GPUModel{Name: "GeForce RTX 2080 Ti", Memory: "11 GiB"}, GPUsPerNode: 8, TraceSuffix: "rtx"},
	"a100": {Short: "a100", Model: GPUModel{Name: "A100-SXM4-40GB", Memory: "40 GiB"}, GPUsPerNode: 8, TraceSuffix: "dgx-ext"},
	"quad": {Short: "quad", Model: GPUModel{Name: "Quadro RTX 6000", Memory: "24 GiB"}, GPUsPerNode: 4, TraceSuffix: "quad"},
}

// GPUTypeOf returns the catalog's type of a device model name, and false
// for a model the catalog does not hold (DefaultGPUModel's among them).
func GPUTypeOf(model string) (GPUType, bool) {
	for _, t := range GPUTypes {
		if t.Model.Name == model {
			return t, true
		}
	}
	return GPUType{}, false
}

// NodeGroup is a run of identical nodes of a ClusterSpec.
type NodeGroup struct {
	Nodes, GPUsPerNode int
	// Type is the catalog's short name of the nodes' GPUs; "" means
	// nodes of DefaultGPUModel (or of Config.GPUModels in turn).
	Type string
}

// ClusterSpec is a simulated cluster's shape as `caravan sim -cluster`
// takes it (ParseCluster): groups of nodes, in node order.
type ClusterSpec struct {
	Groups []NodeGroup
}

// ParseCluster parses a cluster's shape: "NODESxGPUS" ("16x4": 16 nodes
// of 4 GPUs of DefaultGPUModel), or comma-separated groups
// "NODESxTYPE[:GPUS]" of catalog GPU types (GPUTypes), such as
// "6xt4,3xrtx,2xa100" (Sia's Heterogeneous cluster, 64 GPUs) or "6xt4:2"
// (six T4 nodes of 2 GPUs each); a group "NODESxGPUS" among others is of
// DefaultGPUModel. Nodes are numbered group by group.
func ParseCluster(s string) (ClusterSpec, error) {
	if s == "" {
		return ClusterSpec{}, errors.New("cluster is empty; want NODESxGPUS (16x4) or groups NODESxTYPE[:GPUS] (6xt4,3xrtx,2xa100)")
	}
	var spec ClusterSpec
	for _, part := range strings.Split(s, ",") {
		g, err := parseGroup(strings.TrimSpace(part))
		if err != nil {
			return ClusterSpec{}, fmt.Errorf("cluster %q: %w", s, err)
		}
		spec.Groups = append(spec.Groups, g)
	}
	return spec, nil
}

// parseGroup parses one group, "16x4" or "6xt4[:GPUS]".
func parseGroup(s string) (NodeGroup, error) {
	a, b, ok := strings.Cut(s, "x")
	if !ok {
		return NodeGroup{}, fmt.Errorf("group %q is not NODESxGPUS (16x4) or NODESxTYPE[:GPUS] (6xt4)", s)
	}
	nodes, err := strconv.Atoi(a)
	if err != nil || nodes < 1 {
		return NodeGroup{}, fmt.Errorf("group %q: node count %q is not a positive number", s, a)
	}
	if gpus, err := strconv.Atoi(b); err == nil {
		if gpus < 0 {
			return NodeGroup{}, fmt.Errorf("group %q: GPUs per node %d is negative", s, gpus)
		}
		return NodeGroup{Nodes: nodes, GPUsPerNode: gpus}, nil
	}
	name, per, hasPer := strings.Cut(b, ":")
	t, ok := GPUTypes[strings.ToLower(name)]
	if !ok {
		return NodeGroup{}, fmt.Errorf("group %q: %q is neither a GPU count nor a GPU type; the types are %s", s, name, strings.Join(slices.Sorted(maps.Keys(GPUTypes)), ", "))
	}
	g := NodeGroup{Nodes: nodes, GPUsPerNode: t.GPUsPerNode, Type: t.Short}
	if hasPer {
		if g.GPUsPerNode, err = strconv.Atoi(per); err != nil || g.GPUsPerNode < 1 {
			return NodeGroup{}, fmt.Errorf("group %q: GPUs per node %q is not a positive number", s, per)
		}
	}
	return g, nil
}

// Typed reports whether the spec names GPU types (a catalog cluster).
func (c ClusterSpec) Typed() bool {
	return slices.ContainsFunc(c.Groups, func(g NodeGroup) bool { return g.Type != "" })
}

// Apply sets cfg's nodes to the spec's: Nodes and GPUsPerNode for one
// untyped group (cfg's GPUModels then still apply), else one NodeGPUs and
// NodeModels entry per node, DefaultGPUModel for untyped groups.
func (c ClusterSpec) Apply(cfg *Config) {
	if len(c.Groups) == 1 && c.Groups[0].Type == "" {
		cfg.Nodes, cfg.GPUsPerNode = c.Groups[0].Nodes, c.Groups[0].GPUsPerNode
		cfg.NodeGPUs, cfg.NodeModels = nil, nil
		return
	}
	cfg.NodeGPUs, cfg.NodeModels = nil, nil
	for _, g := range c.Groups {
		m := DefaultGPUModel
		if t, ok := GPUTypes[g.Type]; ok {
			m = t.Model
		}
		for range g.Nodes {
			cfg.NodeGPUs = append(cfg.NodeGPUs, g.GPUsPerNode)
			cfg.NodeModels = append(cfg.NodeModels, m)
		}
	}
	cfg.Nodes, cfg.GPUsPerNode = len(cfg.NodeGPUs), 0
}

// String is the spec as ParseCluster reads it.
func (c ClusterSpec) String() string {
	parts := make([]string, len(c.Groups))
	for i, g := range c.Groups {
		switch t, ok := GPUTypes[g.Type]; {
		case !ok:
			parts[i] = fmt.Sprintf("%dx%d", g.Nodes, g.GPUsPerNode)
		case g.GPUsPerNode == t.GPUsPerNode:
			parts[i] = fmt.Sprintf("%dx%s", g.Nodes, g.Type)
		default:
			parts[i] = fmt.Sprintf("%dx%s:%d", g.Nodes, g.Type, g.GPUsPerNode)
		}
	}
	return strings.Join(parts, ",")
}

// TotalGPUs returns the spec's GPUs.
func (c ClusterSpec) TotalGPUs() int {
	n := 0
	for _, g := range c.Groups {
		n += g.Nodes * g.GPUsPerNode
	}
	return n
}
