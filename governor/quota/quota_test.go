package quota

import (
	"testing"

	"github.com/shoenig/test/must"
)

var knownClasses = map[string]bool{"production": true, "high": true, "standard": true, "low": true, "best-effort": true}

// TestCheckAmount: the rule every writer of quota amounts checks with
// (allotctl quota set and quota files, the console's quota form).
func TestCheckAmount(t *testing.T) {
	cases := map[string]struct {
		prefix, res, amount string
		wantKey, wantErr    string
		badAmount           bool
	}{
		"gpu quota":      {prefix: PrefixQuota, res: GPU, amount: "8", wantKey: "allot.quota.gpu"},
		"memory limit":   {prefix: PrefixLimit, res: Memory, amount: "256GiB", wantKey: "allot.limit.memory"},
		"device lend":    {prefix: PrefixLend, res: "nvidia/gpu/H200", amount: "2", wantKey: "allot.lend.nvidia/gpu/H200"},
		"unknown":        {prefix: PrefixQuota, res: "tpu", amount: "4", wantErr: `unknown resource "tpu": use cpu, memory, gpu, npu or a device vendor/type/model such as nvidia/gpu/H200`},
		"bad device id":  {prefix: PrefixQuota, res: "nvidia/gpu", amount: "4", wantErr: `unknown resource "nvidia/gpu"`},
		"bad amount":     {prefix: PrefixLimit, res: GPU, amount: "lots", wantErr: "allot.limit.gpu: ", badAmount: true},
		"unit on device": {prefix: PrefixQuota, res: GPU, amount: "8GiB", wantErr: "allot.quota.gpu: ", badAmount: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			key, err := CheckAmount(tc.prefix, tc.res, tc.amount)
			if tc.wantErr == "" {
				must.NoError(t, err)
				must.Eq(t, tc.wantKey, key)
				must.NoError(t, CheckResource(tc.res))
				return
			}
			must.ErrorContains(t, err, tc.wantErr)
			must.Eq(t, "", key)
			if tc.badAmount {
				must.ErrorIs(t, err, ErrBadAmount)
				must.StrHasPrefix(t, tc.wantErr, err.Error())
			} else {
				must.EqError(t, CheckResource(tc.res), err.Error())
			}
		})
	}
}

func TestParseAmount(t *testing.T) {
	cases := map[string]struct {
		res, in string
		want    int64
		bad     bool
	}{
		"bare memory is MiB":   {res: Memory, in: "4096", want: 4096},
		"GiB":                  {res: Memory, in: "64GiB", want: 65536},
		"GiB with space":       {res: Memory, in: "1.5 GiB", want: 1536},
		"TiB":                  {res: Memory, in: "1TiB", want: 1 << 20},
		"KiB not whole MiB":    {res: Memory, in: "100KiB", bad: true},
		"GHz":                  {res: CPU, in: "2GHz", want: 2000},
		"MHz":                  {res: CPU, in: "500MHz", want: 500},
		"device count":         {res: "nvidia/gpu/H200", in: "8", want: 8},
		"device with unit":     {res: GPU, in: "8GiB", bad: true},
		"negative":             {res: GPU, in: "-1", bad: true},
		"empty":                {res: CPU, in: " ", bad: true},
		"garbage":              {res: Memory, in: "lots", bad: true},
		"negative with a unit": {res: Memory, in: "-2GiB", bad: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseAmount(tc.res, tc.in)
			if tc.bad {
				must.ErrorIs(t, err, ErrBadAmount)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}

func TestParse(t *testing.T) {
	cases := map[string]struct {
		meta    map[string]string
		errs    []string
		check   func(t *testing.T, tn Tenant)
		governs []string
	}{
		"defaults": {
			meta: map[string]string{"allot.quota.gpu": "4"},
			check: func(t *testing.T, tn Tenant) {
				must.Eq(t, "default", tn.Cohort)
				must.Eq(t, 1.0, tn.Weight)
				must.Eq(t, "standard", tn.DefaultClass)
				must.Eq(t, int64(4), tn.LendCap(GPU))
				must.True(t, tn.MayUse("high", false))
				must.False(t, tn.MayUse("production", true))
			},
			governs: []string{GPU},
		},
		"every key": {
			meta: map[string]string{
				"allot.cohort": "ml", "allot.weight": "2.5", "allot.classes": "production, high",
				"allot.default-class": "high", "allot.quota.memory": "64GiB", "allot.limit.memory": "128GiB",
				"allot.lend.memory": "32GiB", "allot.quota.nvidia/gpu/H200": "8", "allot.limit.cpu": "4GHz",
				"other": "ignored",
			},
			check: func(t *testing.T, tn Tenant) {
				must.Eq(t, "ml", tn.Cohort)
				must.Eq(t, 2.5, tn.Weight)
				must.Eq(t, Vector{Memory: 65536, "nvidia/gpu/H200": 8}, tn.Quota)
				must.Eq(t, Vector{Memory: 131072, CPU: 4000}, tn.Limit)
				must.Eq(t, int64(32768), tn.LendCap(Memory))
				must.True(t, tn.MayUse("production", true))
				must.False(t, tn.MayUse("standard", false))
			},
			governs: []string{Memory, CPU, "nvidia/gpu/H200"},
		},
		"every bad key reported": {
			meta: map[string]string{
				"allot.quota.gpus": "1", "allot.quota.memory": "lots", "allot.weight": "0",
				"allot.classes": "gold", "allot.limit.gpu": "2", "allot.quota.gpu": "4",
				"allot.lend.cpu": "10", "allot.cohort": "", "allot.quotas.cpu": "1",
				"allot.default-class": "silver",
			},
			errs: []string{
				`allot.quota.gpus="1": unknown resource "gpus"`, "allot.quota.memory", "weight must be a number > 0",
				"unknown class(es) gold", "allot.limit.gpu=2 is below allot.quota.gpu=4",
				"allot.lend.cpu=10 exceeds allot.quota.cpu=0", "cohort must not be empty",
				"allot.quotas.cpu", `unknown class "silver"`,
			},
		},
		"malformed device id": {
			meta: map[string]string{"allot.quota.nvidia/gpu": "1"},
			errs: []string{`unknown resource "nvidia/gpu"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tn, err := Parse("ns1", tc.meta, knownClasses)
			if len(tc.errs) > 0 {
				must.ErrorIs(t, err, ErrInvalid)
				for _, e := range tc.errs {
					must.StrContains(t, err.Error(), e)
				}
				return
			}
			must.NoError(t, err)
			tc.check(t, tn)
			for _, r := range tc.governs {
				must.True(t, tn.Governs(r), must.Sprint(r))
			}
			must.False(t, tn.Governs(NPU))
		})
	}
}

func TestBookKeepsLastValid(t *testing.T) {
	b := NewBook([]string{"standard", "high"})
	_, governed := b.Update("plain", map[string]string{"owner": "x"})
	must.False(t, governed)

	e, _ := b.Update("ml", map[string]string{"allot.quota.gpu": "zero"})
	must.Error(t, e.Err)
	must.False(t, e.EverValid)
	must.Eq(t, int64(0), e.Tenant.Limit[GPU])
	must.True(t, e.Tenant.Governs(CPU))
	must.Eq(t, "invalid-meta:ml", e.Tenant.Cohort, must.Sprint("alone, so it constrains no other tenant"))

	e, _ = b.Update("ml", map[string]string{"allot.quota.gpu": "4"})
	must.NoError(t, e.Err)
	must.Eq(t, int64(4), e.Tenant.Quota[GPU])

	e, _ = b.Update("ml", map[string]string{"allot.quota.gpu": "4x"})
	must.ErrorContains(t, e.Err, `"4x"`)
	must.Eq(t, int64(4), e.Tenant.Quota[GPU])
	must.True(t, e.EverValid)

	b.Update("other", map[string]string{"allot.quota.cpu": "100"})
	b.Retain(map[string]bool{"other": true})
	_, ok := b.Get("ml")
	must.False(t, ok)
	must.SliceLen(t, 1, b.All())
}

func TestVector(t *testing.T) {
	v := Vector{CPU: 100, GPU: 2}
	c := v.Clone()
	c.Add(Vector{GPU: 1, Memory: 10})
	must.Eq(t, Vector{CPU: 100, GPU: 2}, v)
	must.Eq(t, "cpu=100 gpu=3 memory=10", c.String())
	c.Sub(Vector{CPU: 100})
	must.Eq(t, "gpu=3 memory=10", c.String())
	must.Eq(t, "4096 MiB", Format(Memory, 4096))
	must.True(t, ValidResource("huawei/npu/Ascend910B"))
	must.False(t, ValidResource("a//b"))
}

func TestIdleKeysAreNotQuotaKeys(t *testing.T) {
	meta := map[string]string{"allot.idle.window": "1h", "allot.idle.exempt.train": "until=2030-01-01T00:00:00Z;reason=x"}
	must.False(t, Governed(meta))
	meta["allot.quota.gpu"] = "2"
	tn, err := Parse("ml", meta, map[string]bool{DefaultClassName: true})
	must.NoError(t, err)
	must.Eq(t, int64(2), tn.Quota["gpu"])
}
