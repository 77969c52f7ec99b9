//go:build e2e

package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/allotapi"
	"github.com/allot-sh/allot/internal/nomadagent"
	"github.com/allot-sh/allot/internal/testcluster"
)

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestE2E_DevUp(t *testing.T) {
	nomadBin, err := testcluster.NomadBinary()
	must.NoError(t, err)
	binDir := filepath.Dir(nomadBin)
	for _, p := range []string{"nomad-device-accel", "nomad-driver-ckpt", "allot-governor"} {
		_, err := os.Stat(filepath.Join(binDir, p))
		must.NoError(t, err, must.Sprintf("%s missing from %s: `make e2e` builds it", p, binDir))
	}
	root, err := testcluster.RepoRoot()
	must.NoError(t, err)
	ports, err := nomadagent.FreePorts(4)
	must.NoError(t, err)
	dir := t.TempDir()
	opts := Options{
		Dir: dir, BinDir: binDir, LogLevel: "DEBUG",
		InventoryFile: filepath.Join(root, "device-plugin", "inventory", "examples", "dev-node.hcl"),
		JobspecsDir:   filepath.Join(root, "jobspecs"),
		HTTPPort:      ports[0], RPCPort: ports[1], SerfPort: ports[2], GovernorPort: ports[3],
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan struct{})
	var upErr error
	go func() { upErr = Up(ctx, opts, &out); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "nomad", "agent.log"))
			gov, _ := os.ReadFile(filepath.Join(dir, "governor.log"))
			t.Logf("dev up output:\n%s\nagent log:\n%s\ngovernor log:\n%s", out.String(), log, gov)
		}
	})

	waitFor(t, 2*time.Minute, func() error {
		select {
		case <-done:
			return errors.Join(errStopped, upErr)
		default:
		}
		if !strings.Contains(out.String(), "is ready") {
			return errors.New("not ready yet")
		}
		return nil
	})
	govAddr := "http://127.0.0.1:" + itoa(ports[3])
	must.StrContains(t, out.String(), "export NOMAD_ADDR="+govAddr)

	client, err := api.NewClient(&api.Config{Address: "http://127.0.0.1:" + itoa(ports[0])})
	must.NoError(t, err)
	node, err := nomadagent.NodeByName(client, NodeName)
	must.NoError(t, err)
	must.Eq(t, api.NodeStatusReady, node.Status)
	must.True(t, node.Drivers["ckpt"].Healthy, must.Sprint("ckpt driver not healthy"))
	must.Eq(t, 8, testcluster.HealthyDevices(node, "nvidia/gpu"))
	must.Eq(t, 8, testcluster.HealthyDevices(node, "huawei/npu"))
	must.StrContains(t, out.String(), "8× nvidia/gpu/H200")

	tenants, err := (&allotapi.Client{Address: govAddr}).Tenants(context.Background())
	must.NoError(t, err)
	var names []string
	for _, tn := range tenants.Tenants {
		names = append(names, tn.Namespace)
		must.Eq(t, int64(4), tn.Quota["gpu"], must.Sprintf("tenant %s quota", tn.Namespace))
	}
	must.SliceContainsAll(t, names, []string{"ml-research", "ml-prod"})

	// A ckpt task never runs as root: isolated as nobody when dev up runs
	// as root (issue 11's "uid=0(root)" through make dev), and the
	// quickstart's Python trainer runs in its chroot.
	if os.Geteuid() == 0 {
		must.StrContains(t, out.String(), "ckpt tasks: isolated")
	} else {
		must.StrContains(t, out.String(), "ckpt tasks: NOT isolated")
	}
	gov, err := api.NewClient(&api.Config{Address: govAddr})
	must.NoError(t, err)
	probe := runProbe(t, gov, client, filepath.Join(root, "jobspecs"))
	t.Logf("dev task output:\n%s", probe)
	checkProbe(t, probe)
	waitForLedgerRow(t, govAddr, "ml-research")
	// data_dir = the dev dir puts the ledger's SQLite file there by default.
	_, err = os.Stat(filepath.Join(dir, "ledger.db"))
	must.NoError(t, err, must.Sprint("the dev ledger is not at <data_dir>/ledger.db"))

	cancel()
	select {
	case <-done:
		must.NoError(t, upErr)
	case <-time.After(2 * time.Minute):
		t.Fatal("dev up did not stop within 2 minutes of the interrupt")
	}
	must.StrContains(t, out.String(), "Stopped")
	_, err = os.Stat(filepath.Join(dir, "nomad", "data"))
	must.True(t, os.IsNotExist(err), must.Sprint("data dir not removed"))
	_, err = os.Stat(filepath.Join(dir, deviceNodeDir))
	must.True(t, os.IsNotExist(err), must.Sprint("device nodes not removed"))
	killed, err := nomadagent.Sweep(dir)
	must.NoError(t, err)
	must.SliceEmpty(t, killed, must.Sprint("processes outlived dev up"))
}

var errStopped = errors.New("dev up returned early")

func waitFor(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	must.NoError(t, nomadagent.Poll(ctx, 100*time.Millisecond, check))
}

func itoa(i int) string { return strconv.Itoa(i) }

// waitForLedgerRow polls the governor's usage report until the dev
// ledger (SQLite in the dev data dir) holds a segment of tenant ns.
func waitForLedgerRow(t *testing.T, govAddr, ns string) {
	t.Helper()
	waitFor(t, time.Minute, func() error {
		resp, err := http.Get(govAddr + "/allot/v1/usage?by=tenant")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var out struct {
			Rows []struct {
				Key         map[string]string `json:"key"`
				Allocations int64             `json:"allocations"`
			} `json:"rows"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return fmt.Errorf("usage report (%s): %w", resp.Status, err)
		}
		for _, r := range out.Rows {
			if r.Key["tenant"] == ns && r.Allocations > 0 {
				return nil
			}
		}
		return fmt.Errorf("no ledger row for %s yet: %+v", ns, out.Rows)
	})
}
