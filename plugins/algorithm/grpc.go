package algorithm

import (
	"context"
	"errors"
	"fmt"

	"github.com/caravan-sched/caravan/planner"
	pb "github.com/caravan-sched/caravan/plugins/algorithm/proto/v1"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Plugin is the go-plugin Plugin of algorithms, over gRPC only. A plugin
// process serves Impl; the host's dispensed value is an Algorithm that
// calls it.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Algorithm
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers Impl's service.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterAlgorithmServer(s, &server{impl: p.Impl})
	return nil
}

// GRPCClient returns an Algorithm that calls the plugin.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &client{c: pb.NewAlgorithmClient(c)}, nil
}

// MaxMessageSize bounds a request or decision on the wire. gRPC's default
// of 4 MiB would refuse a request for several thousand jobs on ten
// thousand nodes; this is far above any cluster Caravan plans.
const MaxMessageSize = 256 << 20

// ServerOptions are the gRPC server options a plugin serves with.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize)}
}

// DialOptions are the gRPC dial options the host calls a plugin with.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize))}
}

// PluginSet is the plugin set of an algorithm plugin serving impl, or of
// the host when impl is nil.
func PluginSet(impl Algorithm) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &Plugin{Impl: impl}}
}

// server serves an Algorithm in the plugin process.
type server struct {
	pb.UnimplementedAlgorithmServer
	impl Algorithm
}

func (s *server) PluginInfo(ctx context.Context, _ *pb.PluginInfoRequest) (*pb.PluginInfoResponse, error) {
	info, err := s.impl.PluginInfo(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.PluginInfoResponse{
		Name: info.Name, Version: info.Version, ApiVersions: info.APIVersions,
		Capabilities: CapabilitiesToProto(info.Capabilities),
	}, nil
}

func (s *server) SetConfig(ctx context.Context, req *pb.SetConfigRequest) (*pb.SetConfigResponse, error) {
	if err := s.impl.SetConfig(ctx, req.GetApiVersion(), req.GetOptions()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.SetConfigResponse{}, nil
}

func (s *server) Plan(ctx context.Context, req *pb.PlanRequest) (*pb.PlanResponse, error) {
	r, err := RequestFromProto(req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	dec, err := s.impl.Plan(ctx, r)
	if err != nil {
		return nil, err
	}
	return DecisionToProto(dec), nil
}

// client is the host's side of a plugin.
type client struct {
	c pb.AlgorithmClient
}

func (c *client) PluginInfo(ctx context.Context) (*PluginInfo, error) {
	resp, err := c.c.PluginInfo(ctx, &pb.PluginInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("plugin info: %w", unwrap(err))
	}
	if resp.GetName() == "" {
		return nil, errors.New("plugin info: the plugin gives no name")
	}
	return &PluginInfo{
		Name: resp.GetName(), Version: resp.GetVersion(), APIVersions: resp.GetApiVersions(),
		Capabilities: CapabilitiesFromProto(resp.GetCapabilities()),
	}, nil
}

func (c *client) SetConfig(ctx context.Context, apiVersion string, options map[string]string) error {
	_, err := c.c.SetConfig(ctx, &pb.SetConfigRequest{ApiVersion: apiVersion, Options: options})
	return unwrap(err)
}

func (c *client) Plan(ctx context.Context, req *planner.Request) (*planner.Decision, error) {
	resp, err := c.c.Plan(ctx, RequestToProto(req))
	if err != nil {
		return nil, unwrap(err)
	}
	dec, err := DecisionFromProto(resp)
	if err != nil {
		return nil, fmt.Errorf("malformed decision from the plugin: %w", err)
	}
	return dec, nil
}

// ErrConnection is wrapped by the errors of calls that did not reach the
// plugin, or whose answer was lost: its process died or its connection
// broke.
var ErrConnection = errors.New("plugin connection lost")

// unwrap turns a gRPC status into an error with its message, keeping
// context and connection errors recognisable.
func unwrap(err error) error {
	if err == nil {
		return nil
	}
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch s.Code() {
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s: %w", s.Message(), context.DeadlineExceeded)
	case codes.Canceled:
		return fmt.Errorf("%s: %w", s.Message(), context.Canceled)
	case codes.Unavailable:
		return fmt.Errorf("%w: %s", ErrConnection, s.Message())
	}
	return errors.New(s.Message())
}
