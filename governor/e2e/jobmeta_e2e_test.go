//go:build e2e

package e2e

import (
	"encoding/base64"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/governor/jobmeta"
	"github.com/allot-sh/allot/internal/testcluster"
)

// TestE2E_JobMetaSeal: against a real Nomad 1.6.1, the governor's record
// counts only when the governor sealed it. Jobs written straight to Nomad
// (:4646) with forged meta, or an admitted job scaled there, are governed
// like any direct registration (audit #4, #11).
func TestE2E_JobMetaSeal(t *testing.T) {
	e := newEnv(t)

	t.Run("a job admitted through the proxy is sealed and counts as admitted", func(t *testing.T) {
		out := e.run("team-a", "sealed", "v1", 1)
		must.StrContains(t, out, "admitted")
		e.waitRunning("team-a", "sealed", time.Minute)
		j := e.job("team-a", "sealed")
		must.MapContainsKey(t, j.Meta, jobmeta.Seal)
		e.waitWhy("team-a", "sealed", "admitted")
	})

	t.Run("forged admitted production meta written straight to Nomad is held with the allowed classes", func(t *testing.T) {
		job, err := testcluster.ParseHCL("forged.nomad.hcl", []byte(jobSpec{ID: "forged", Namespace: "team-a", Note: "v1", GPUs: 1}.HCL()))
		must.NoError(t, err)
		job.Meta[jobmeta.State] = jobmeta.StateAdmitted
		job.Meta[jobmeta.Class] = "production"
		job.Meta[jobmeta.AdmittedAt] = time.Now().UTC().Format(time.RFC3339)
		job.Meta[jobmeta.Seal] = "v1.1764504000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		job.Priority = pointerTo(90)
		_, _, err = e.c.API.Jobs().Register(job, &api.WriteOptions{Namespace: "team-a"})
		must.NoError(t, err)
		e.waitHeld("team-a", "forged")
		e.waitWhy("team-a", "forged", "queued", "may not use", `"production"`)
	})

	t.Run("an admitted job scaled straight to Nomad over the limit is held", func(t *testing.T) {
		_, _, err := e.c.API.Jobs().Scale("sealed", "g", pointerTo(5), "straight to Nomad", false, nil,
			&api.WriteOptions{Namespace: "team-a"})
		must.NoError(t, err)
		e.waitHeld("team-a", "sealed")
		e.waitWhy("team-a", "sealed", "queued", "limit")
	})
}

// TestE2E_SealHoldsForGeneratedBodies: the seal the proxy writes verifies
// on the job as Nomad stores it, whatever Nomad fills in (device counts,
// counts from scaling, default resources, datacenters, node pool, implied
// constraints), for bodies of the differential test's generator. The key
// is read from Nomad Variables, where the governor created it.
func TestE2E_SealHoldsForGeneratedBodies(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	inv := writeInventory(t, dir, "gpu-1", 4)
	c := testcluster.New(t, testcluster.Options{Plugins: []string{"nomad-device-accel"}, Clients: []testcluster.ClientSpec{{
		Name: "gpu-1", NodePool: "gpu", PluginConfig: map[string]string{"nomad-device-accel": fmt.Sprintf("inventory_file = %q", inv)},
		Ready: testcluster.HasDevices("nvidia/gpu/H200", 4)}}})
	_, err := c.API.Namespaces().Register(&api.Namespace{Name: "ml", Meta: map[string]string{"allot.quota.gpu": "4", "allot.limit.gpu": "8"}}, nil)
	must.NoError(t, err)
	g := c.StartGovernor()

	gen := &bodyGen{r: rand.New(rand.NewSource(diffSeed + 1))}
	var sealed []string
	for i := 0; i < 80; i++ {
		b := gen.next(i)
		status, _ := putGov(t, g.Addr, b.path, string(b.body))
		if status == 200 && b.governed {
			sealed = append(sealed, b.id)
		}
	}
	s := sealerFromNomad(t, c)
	checked := 0
	for _, id := range sealed {
		j, _, err := c.API.Jobs().Info(id, &api.QueryOptions{Namespace: "ml"})
		must.NoError(t, err)
		if j.IsPeriodic() || j.IsParameterized() {
			must.False(t, jobmeta.HasOwned(j.Meta), must.Sprintf("a parent carries no governor record: %v", j.Meta))
			continue
		}
		rec, err := s.Verify(j)
		must.NoError(t, err, must.Sprintf("%s: %v", id, j.Meta))
		must.True(t, rec.Queued() || rec.Admitted())
		checked++
	}
	t.Logf("%d of %d stored governed jobs sealed and verified in %s", checked, len(sealed), time.Since(start).Round(time.Millisecond))
	must.Greater(t, 25, checked)
}

// sealerFromNomad is a sealer with the key the governor keeps in Nomad
// Variables (read with the cluster's own client).
func sealerFromNomad(t *testing.T, c *testcluster.Cluster) *jobmeta.Sealer {
	t.Helper()
	v, _, err := c.API.Variables().Read(jobmeta.DefaultKeyPath, &api.QueryOptions{Namespace: jobmeta.DefaultKeyNamespace})
	must.NoError(t, err, must.Sprint("the governor keeps its key in Nomad Variables"))
	key, err := base64.StdEncoding.DecodeString(v.Items["key"])
	must.NoError(t, err)
	s, err := jobmeta.NewSealer(key)
	must.NoError(t, err)
	return s
}
