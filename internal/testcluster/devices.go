package testcluster

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// HasDevices is a ClientSpec.Ready check: the node has at least n healthy
// device instances in groups matching id, which is "vendor/type" or
// "vendor/type/name" as in a jobspec's device block.
func HasDevices(id string, n int) func(*api.Node) error {
	return func(node *api.Node) error {
		if got := HealthyDevices(node, id); got < n {
			return fmt.Errorf("node %s has %d healthy %s devices, want %d", node.Name, got, id, n)
		}
		return nil
	}
}

// AllReady combines Ready checks; the first failing one is reported.
func AllReady(checks ...func(*api.Node) error) func(*api.Node) error {
	return func(node *api.Node) error {
		for _, c := range checks {
			if err := c(node); err != nil {
				return err
			}
		}
		return nil
	}
}

// HealthyDevices counts the node's healthy device instances in groups
// matching id ("vendor/type" or "vendor/type/name").
func HealthyDevices(node *api.Node, id string) int {
	n := 0
	for _, g := range DeviceGroups(node, id) {
		for _, inst := range g.Instances {
			if inst.Healthy {
				n++
			}
		}
	}
	return n
}

// DeviceGroups returns the node's device groups matching id
// ("vendor/type" or "vendor/type/name").
func DeviceGroups(node *api.Node, id string) []*api.NodeDeviceResource {
	if node.NodeResources == nil {
		return nil
	}
	parts := strings.SplitN(id, "/", 3)
	var out []*api.NodeDeviceResource
	for _, g := range node.NodeResources.Devices {
		if len(parts) > 0 && g.Vendor != parts[0] || len(parts) > 1 && g.Type != parts[1] || len(parts) > 2 && g.Name != parts[2] {
			continue
		}
		out = append(out, g)
	}
	return out
}
