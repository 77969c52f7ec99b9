package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shoenig/test/must"
)

func params(seed int64) Params {
	return Params{Seed: seed, Jobs: 5000, Span: 7 * 24 * time.Hour, CapacityGPUs: 512, Load: 0.9,
		Tenants: []TenantLoad{{"a", 3}, {"b", 1}}}
}

func TestGenerateIsSeededAndFollowsTheDistributions(t *testing.T) {
	a, err := Generate(params(1))
	must.NoError(t, err)
	b, err := Generate(params(1))
	must.NoError(t, err)
	must.Eq(t, "", cmp.Diff(a, b))
	c, err := Generate(params(2))
	must.NoError(t, err)
	must.NotEq(t, "", cmp.Diff(a, c))

	single, gang, tenantA, day, night := 0, 0, 0, 0, 0
	var gpuSec float64
	for _, j := range a {
		must.NoError(t, j.Validate())
		if j.GPUs() == 1 {
			single++
		}
		if j.GPUs() > 8 {
			gang++
			must.EqOp(t, 8, j.Groups[0].GPUs)
		}
		if j.Tenant == "a" {
			tenantA++
		}
		switch h := int(j.Submit.Hours()) % 24; {
		case h >= 10 && h < 18:
			day++
		case h < 4 || h >= 22:
			night++
		}
		gpuSec += float64(j.GPUs()) * j.Duration.Seconds()
	}
	must.Between(t, 0.58, float64(single)/5000, 0.66)
	must.Between(t, 0.05, float64(gang)/5000, 0.09)
	must.Between(t, 0.72, float64(tenantA)/5000, 0.78)
	must.Greater(t, 2*night, day, must.Sprint("diurnal: afternoons busier than nights"))
	// Offered load within 5 % of 0.9 (clamping moves it a little).
	must.Between(t, 0.85, gpuSec/(512*7*24*3600), 0.95)
}

func TestGenerateRejectsBadParams(t *testing.T) {
	cases := map[string]func(*Params){
		"no jobs":       func(p *Params) { p.Jobs = 0 },
		"no span":       func(p *Params) { p.Span = 0 },
		"no tenants":    func(p *Params) { p.Tenants = nil },
		"zero share":    func(p *Params) { p.Tenants[0].Share = 0 },
		"load no cap":   func(p *Params) { p.CapacityGPUs = 0 },
		"negative load": func(p *Params) { p.Load = -1 },
	}
	for name, mut := range cases {
		t.Run(name, func(t *testing.T) {
			p := params(1)
			mut(&p)
			_, err := Generate(p)
			must.ErrorContains(t, err, "workload parameters")
		})
	}
}

func TestTraceRoundTrip(t *testing.T) {
	p := params(3)
	p.Jobs = 50
	jobs, err := Generate(p)
	must.NoError(t, err)
	MarkSavesOnStop(jobs, 0.5, 3)
	var buf bytes.Buffer
	must.NoError(t, WriteJSONL(&buf, jobs))
	back, err := ReadJSONL("t.jsonl", &buf)
	must.NoError(t, err)
	must.Eq(t, "", cmp.Diff(jobs, back))
}

func TestReadCSV(t *testing.T) {
	src := "# a comment\nid,submit_s,tenant,class,count,gpus,duration_s,checkpoint_s,gang,saves_on_stop\n" +
		"j2,60,a,high,2,8,3600,600,true,true\nj1,0,b,,1,1,120,,,\n"
	jobs, err := ReadCSV("t.csv", bytes.NewBufferString(src))
	must.NoError(t, err)
	must.SliceLen(t, 2, jobs)
	must.EqOp(t, "j1", jobs[0].ID)
	must.EqOp(t, DefaultDevice, jobs[0].Groups[0].Device)
	must.True(t, jobs[0].Gang)
	must.EqOp(t, 16, jobs[1].GPUs())
	must.EqOp(t, 10*time.Minute, jobs[1].Checkpoint)
	must.EqOp(t, time.Minute, jobs[1].Submit)
	must.False(t, jobs[0].SavesOnStop)
	must.True(t, jobs[1].SavesOnStop)
}

// MarkSavesOnStop marks about the share asked, the same jobs for the same
// seed, keeps jobs already marked, and changes nothing else of a job.
func TestMarkSavesOnStop(t *testing.T) {
	p := params(3)
	p.Jobs = 2000
	gen := func() []*Job {
		jobs, err := Generate(p)
		must.NoError(t, err)
		return jobs
	}
	marked := func(jobs []*Job) (n int) {
		for _, j := range jobs {
			if j.SavesOnStop {
				n++
			}
		}
		return n
	}
	for _, share := range []float64{0, 0.25, 0.5, 1} {
		a, b := gen(), gen()
		MarkSavesOnStop(a, share, 7)
		MarkSavesOnStop(b, share, 7)
		must.Eq(t, a, b, must.Sprintf("share %g: the same jobs", share))
		got := float64(marked(a)) / float64(len(a))
		must.Between(t, share-0.05, got, share+0.05, must.Sprintf("share %g", share))
	}
	plain, jobs := gen(), gen()
	jobs[0].SavesOnStop = true
	MarkSavesOnStop(jobs, 0, 7)
	must.True(t, jobs[0].SavesOnStop, must.Sprint("a job the trace marks stays marked"))
	jobs[0].SavesOnStop = false
	must.Eq(t, plain, jobs)
}

func TestBadTracesNameFileAndLine(t *testing.T) {
	cases := map[string]struct{ file, src, want string }{
		"csv unknown column":             {"t.csv", "id,submit_s,tenant,gpus,duration_s,colour\n", "t.csv:1: unknown column \"colour\""},
		"csv missing column":             {"t.csv", "id,submit_s,tenant,gpus\n", "t.csv:1: missing column \"duration_s\""},
		"csv bad number":                 {"t.csv", "id,submit_s,tenant,gpus,duration_s\nj,0,a,x,5\n", "t.csv:2: column gpus: \"x\" is not a number"},
		"csv bad duration":               {"t.csv", "id,submit_s,tenant,gpus,duration_s\nj,0,a,1,0\n", "t.csv:2: duration 0s must be > 0"},
		"csv duplicate id":               {"t.csv", "id,submit_s,tenant,gpus,duration_s\nj,0,a,1,5\nj,1,a,1,5\n", "t.csv:3: job id \"j\" already used on line 2"},
		"csv bad gang":                   {"t.csv", "id,submit_s,tenant,gpus,duration_s,gang\nj,0,a,1,5,maybe\n", "t.csv:2: column gang"},
		"csv bad saves_on_stop":          {"t.csv", "id,submit_s,tenant,gpus,duration_s,saves_on_stop\nj,0,a,1,5,ckpt\n", "t.csv:2: column saves_on_stop: \"ckpt\" is not true or false"},
		"jsonl saves_on_stop not a bool": {"t.jsonl", `{"id":"j","tenant":"a","duration_s":5,"saves_on_stop":"yes","groups":[{"count":1}]}` + "\n", "t.jsonl:1: json: cannot unmarshal string"},
		"jsonl syntax":                   {"t.jsonl", "{\"id\":\"j\",\n", "t.jsonl:1:"},
		"jsonl unknown field":            {"t.jsonl", "\n{\"id\":\"j\",\"colour\":1}\n", "t.jsonl:2: json: unknown field \"colour\""},
		"jsonl no groups":                {"t.jsonl", `{"id":"j","tenant":"a","duration_s":5}` + "\n", "t.jsonl:1: job has no groups"},
		"jsonl bad group":                {"t.jsonl", `{"id":"j","tenant":"a","duration_s":5,"groups":[{"count":0}]}` + "\n", "t.jsonl:1: group 0"},
		"jsonl no tenant":                {"t.jsonl", `{"id":"j","duration_s":5,"groups":[{"count":1}]}` + "\n", "t.jsonl:1: tenant is empty"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			must.NoError(t, os.WriteFile(path, []byte(tc.src), 0o600))
			_, err := ReadFile(path)
			must.ErrorContains(t, err, filepath.Dir(path))
			must.ErrorContains(t, err, tc.want[len(tc.file):])
		})
	}
	_, err := ReadFile(filepath.Join(t.TempDir(), "missing.csv"))
	must.ErrorContains(t, err, "missing.csv")
}

// TestGenerateShape: MaxGPUs clamps sizes without changing the other
// draws; Services adds long 1-GPU services on top.
func TestGenerateShape(t *testing.T) {
	p := Params{Seed: 5, Jobs: 500, Span: 24 * time.Hour, Tenants: []TenantLoad{{"a", 1}, {"b", 1}}}
	plain, err := Generate(p)
	must.NoError(t, err)
	p.MaxGPUs, p.Services = 8, 10
	shaped, err := Generate(p)
	must.NoError(t, err)
	must.Eq(t, len(plain)+10, len(shaped))
	byID := map[string]*Job{}
	for _, j := range plain {
		byID[j.ID] = j
	}
	services := 0
	for _, j := range shaped {
		must.LessEq(t, 8, j.GPUs())
		if j.Groups[0].Name == "serve" {
			services++
			must.Eq(t, p.Span, j.Duration)
			must.Eq(t, 1, j.GPUs())
			continue
		}
		orig := byID[j.ID]
		must.Eq(t, orig.Submit, j.Submit)
		must.Eq(t, orig.Tenant, j.Tenant)
		want := orig.GPUs()
		if want > 8 {
			want = 8
		}
		must.Eq(t, want, j.GPUs())
	}
	must.Eq(t, 10, services)
}
