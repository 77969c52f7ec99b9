//go:build !linux

package ckpt

import (
	"errors"

	ldevices "github.com/opencontainers/runc/libcontainer/devices"
)

// setDeviceFilterV2 needs Linux; isolation is refused elsewhere.
func setDeviceFilterV2(string, []*ldevices.Rule) error {
	return errors.New("device cgroups need Linux")
}
