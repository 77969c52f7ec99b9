package dev

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// pluginSpec says how the dev node runs one of the project's plugins.
type pluginSpec struct {
	// driver is the task driver name, for driver plugins.
	driver string
	// config returns the HCL body of the plugin's config block.
	config func(opts Options, iso isolation) (string, error)
}

// knownPlugins are the project plugins dev loads when their binary exists in
// the bin dir.
var knownPlugins = map[string]pluginSpec{
	"nomad-device-accel": {config: deviceConfig},
	"nomad-driver-ckpt":  {driver: "ckpt", config: driverConfig},
}

// deviceConfig points the device plugin at the dev inventory (8×H200 on
// NVSwitch + 8×Ascend910B); with an inventory file set, no hardware is
// probed. The file is re-read every 2s, so editing its unhealthy list shows
// in Nomad within seconds. (An isolated node reads the copy with
// device_dir that Start wrote: deviceInventory.)
func deviceConfig(opts Options, _ isolation) (string, error) {
	inv, err := filepath.Abs(opts.InventoryFile)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(inv); err != nil {
		return "", fmt.Errorf("device inventory: %w", err)
	}
	return fmt.Sprintf("inventory_file     = %q\nfingerprint_period = \"2s\"", inv), nil
}

// driverConfig keeps checkpoints under the dev dir, outside the agent's
// data dir, so they survive allocations as on a real shared volume. Run
// as root, the node isolates tasks as a real node does (the driver's
// defaults: chroot, nobody, no root); otherwise tasks run unisolated as
// the invoking user. Never as root: allow_root stays false.
func driverConfig(opts Options, iso isolation) (string, error) {
	root := filepath.Join(opts.Dir, "checkpoints")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("creating checkpoint root: %w", err)
	}
	return fmt.Sprintf("checkpoint_root = %q\n%s", root, iso.driverLines()), nil
}

// preparePlugins copies the plugins found in the bin dir into the agent's
// plugin_dir (Nomad would try to load any other executable there, nomad and
// allotctl included) and renders their configs.
func preparePlugins(opts Options, iso isolation) ([]string, map[string]string, error) {
	pluginDir := filepath.Join(opts.Dir, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating plugin dir: %w", err)
	}
	var names []string
	configs := map[string]string{}
	for name, spec := range knownPlugins {
		src := filepath.Join(opts.BinDir, name)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := copyFile(src, filepath.Join(pluginDir, name)); err != nil {
			return nil, nil, err
		}
		cfg, err := spec.config(opts, iso)
		if err != nil {
			return nil, nil, fmt.Errorf("configuring plugin %s: %w", name, err)
		}
		names = append(names, name)
		configs[name] = cfg
	}
	sort.Strings(names)
	return names, configs, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copying plugin: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("copying plugin: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying plugin %s: %w", src, err)
	}
	return out.Close()
}
