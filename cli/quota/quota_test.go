package quota

import (
	"testing"

	"github.com/shoenig/test/must"

	gq "github.com/allot-sh/allot/governor/quota"
)

var classes = map[string]bool{"production": true, "high": true, "standard": true, "low": true, "best-effort": true}

func TestParsePair(t *testing.T) {
	tests := map[string]struct {
		pair, key, amount, err string
	}{
		"gpu":            {pair: "gpu=8", key: "allot.quota.gpu", amount: "8"},
		"device id":      {pair: "nvidia/gpu/H200=4", key: "allot.quota.nvidia/gpu/H200", amount: "4"},
		"memory unit":    {pair: "memory=256GiB", key: "allot.quota.memory", amount: "256GiB"},
		"spaces trimmed": {pair: " cpu = 2GHz ", key: "allot.quota.cpu", amount: "2GHz"},
		"unknown":        {pair: "tpu=4", err: `unknown resource "tpu"`},
		"negative":       {pair: "gpu=-1", err: "not a non-negative whole number"},
		"fraction":       {pair: "gpu=1.5", err: "not a non-negative whole number"},
		"no equals":      {pair: "gpu", err: "want resource=amount"},
		"no resource":    {pair: "=4", err: "want resource=amount"},
		"empty amount":   {pair: "gpu=", err: "empty value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			key, amount, err := ParsePair(gq.PrefixQuota, tc.pair)
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.key, key)
			must.Eq(t, tc.amount, amount)
		})
	}
}

// edits builds Edits from key=value pairs; a value "<nil>" removes.
func edits(kv ...string) Edits {
	e := Edits{}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "<nil>" {
			e[kv[i]] = nil
			continue
		}
		e.set(kv[i], kv[i+1])
	}
	return e
}

func TestEditsApply(t *testing.T) {
	base := map[string]string{"owner": "ml", "allot.quota.gpu": "8"}
	tests := map[string]struct {
		edits Edits
		want  map[string]string
		err   string
	}{
		"set and keep others": {edits: edits("allot.limit.gpu", "16"),
			want: map[string]string{"owner": "ml", "allot.quota.gpu": "8", "allot.limit.gpu": "16"}},
		"overwrite": {edits: edits("allot.quota.gpu", "4"), want: map[string]string{"owner": "ml", "allot.quota.gpu": "4"}},
		"remove":    {edits: edits("allot.quota.gpu", "<nil>"), want: map[string]string{"owner": "ml"}},
		"remove missing": {edits: edits("allot.quota.gpu", "<nil>", "allot.lend.gpu", "<nil>"),
			err: "not set, nothing to unset: allot.lend.gpu"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.edits.Apply(base)
			must.Eq(t, map[string]string{"owner": "ml", "allot.quota.gpu": "8"}, base, must.Sprint("input changed"))
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}

func TestValidate(t *testing.T) {
	_, err := Validate("ns", map[string]string{"allot.quota.gpu": "8", "allot.limit.gpu": "4"}, classes)
	must.ErrorIs(t, err, ErrInvalid)
	must.ErrorContains(t, err, "allot.limit.gpu=4 is below allot.quota.gpu=8")
	ten, err := Validate("ns", map[string]string{"allot.quota.gpu": "8", "allot.classes": "high"}, classes)
	must.NoError(t, err)
	must.Eq(t, gq.Vector{"gpu": 8}, ten.Quota)
}

func TestDiff(t *testing.T) {
	before := map[string]string{"a": "1", "b": "2", "c": "3"}
	after := map[string]string{"a": "1", "b": "5", "d": "4"}
	got := Diff(before, after)
	must.SliceLen(t, 3, got)
	must.Eq(t, "b", got[0].Key)
	must.Eq(t, "2", *got[0].Old)
	must.Eq(t, "5", *got[0].New)
	must.Eq(t, "c", got[1].Key)
	must.Nil(t, got[1].New)
	must.Eq(t, "d", got[2].Key)
	must.Nil(t, got[2].Old)
	must.SliceEmpty(t, Diff(before, before))
}

func TestReplace(t *testing.T) {
	got := Replace(map[string]string{"owner": "ml", "allot.quota.gpu": "8", "allot.cohort": "x"},
		map[string]string{"allot.quota.npu": "8"})
	must.Eq(t, map[string]string{"owner": "ml", "allot.quota.npu": "8"}, got)
}
