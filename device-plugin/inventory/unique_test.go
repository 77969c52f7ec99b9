package inventory

import (
	"context"
	"errors"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/allot-sh/allot/device-plugin/accel"
)

// TestAudit26_DuplicateIDsRefusedWithFileAndLine is the regression test
// for audit #26: every way an inventory could give two devices one ID is
// refused, with the file and line of the block that repeats it.
func TestAudit26_DuplicateIDsRefusedWithFileAndLine(t *testing.T) {
	cases := map[string]struct {
		src      string
		wantSrc  string // suffix after the path
		wantText string
	}{
		"audit #26: two blocks of one model": {
			src:      "gpu \"H200\" {\n  count = 4\n}\ngpu \"H200\" {\n  count = 4\n}\n",
			wantSrc:  ":4,1",
			wantText: `gpu "H200" is already defined on line 1`,
		},
		"two blocks of one model, other vendor": {
			src:      "gpu \"X1\" {\n  vendor = \"amd\"\n}\ngpu \"X1\" {\n}\n",
			wantSrc:  ":4,1",
			wantText: "model defined twice",
		},
		"two npu blocks of one model": {
			src:      "npu \"Ascend910B\" {\n}\n\nnpu \"Ascend910B\" {\n}\n",
			wantSrc:  ":4,1",
			wantText: `npu "Ascend910B" is already defined on line 1`,
		},
		"audit #26: mig gpus = [0, 0]": {
			src:      "gpu \"A100\" {\n  count = 2\n  mig \"1g.10gb\" {\n    gpus = [0, 0]\n  }\n}\n",
			wantSrc:  ":4,5",
			wantText: "gpu 0 appears twice in gpus",
		},
		"one mig profile in two blocks on one gpu": {
			src:      "gpu \"A100\" {\n  count = 2\n  mig \"1g.10gb\" {\n    gpus = [0]\n  }\n  mig \"1g.10gb\" {\n    gpus = [1, 0]\n  }\n}\n",
			wantSrc:  ":6,3",
			wantText: `mig "1g.10gb" on gpu 0 is already defined on line 3`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeInventory(t, "dup.hcl", tc.src)
			devs, err := New(path).Fingerprint(context.Background())
			must.Nil(t, devs)
			var fe *accel.FingerprintError
			must.True(t, errors.As(err, &fe), must.Sprintf("error %v", err))
			must.Eq(t, path+tc.wantSrc, fe.Source)
			must.StrContains(t, err.Error(), tc.wantText)
		})
	}
}

// TestAudit26_DistinctDevicesStillAccepted checks what the rule leaves
// alone: models of one name but different kinds, two profiles on one GPU,
// one profile on two GPUs; and that every ID is distinct.
func TestAudit26_DistinctDevicesStillAccepted(t *testing.T) {
	src := `
gpu "X1" {
  count = 2
  mig "1g.10gb" {
    gpus  = [0, 1]
    count = 3
  }
  mig "2g.20gb" {
    gpus = [0]
  }
}
npu "X1" {
  count = 2
}
gpu "H200" {
  count = 2
}
`
	devs := fingerprint(t, New(writeInventory(t, "ok.hcl", src)))
	must.Len(t, 2+3+3+1+2+2, devs)
	ids := map[string]bool{}
	for _, d := range devs {
		must.False(t, ids[d.ID], must.Sprintf("duplicate ID %s", d.ID))
		ids[d.ID] = true
	}
}

// TestAudit26_DuplicateIDsGuard checks the last line of defence: should an
// expansion ever repeat an ID, whatever the cause, Parse refuses it at the
// block that repeats it.
func TestAudit26_DuplicateIDsGuard(t *testing.T) {
	inv, diags := Parse("g.hcl", []byte("gpu \"H200\" {\n  count = 2\n}\n\ngpu \"A100\" {\n}\n"), "s")
	must.False(t, diags.HasErrors())
	inv.Models[1].Name = "H200" // what duplicateBlocks would have refused
	diags = inv.duplicateIDs()
	must.Len(t, 1, diags)
	must.Eq(t, 5, diags[0].Subject.Start.Line)
	must.StrContains(t, diags[0].Detail, "repeats a device of the block on line 1")
}

// TestNamesAndTextAreClean checks what FuzzInventory found: a file that is
// not UTF-8 (here an unquoted label with a stray byte) was accepted, and
// Nomad's plugin protocol cannot carry such a model name. Names that
// would split or garble a device ID ("vendor/type/model") are refused too.
func TestNamesAndTextAreClean(t *testing.T) {
	cases := map[string]struct {
		src      string
		wantSrc  string
		wantText string
	}{
		"fuzz: label with a byte that is not UTF-8": {src: "gpu \xe600{}", wantSrc: ":1,5", wantText: "byte 0xe6 is not UTF-8 text"},
		"not UTF-8 on a later line":                 {src: "gpu \"H200\" {\n  compute_capability = \"9.\xff\"\n}\n", wantSrc: ":2,27", wantText: "invalid UTF-8"},
		"slash in a model":                          {src: "gpu \"H200/x\" {\n}\n", wantSrc: ":1,5", wantText: `bad model name: "H200/x"`},
		"space in a model":                          {src: "gpu \"H 200\" {\n}\n", wantSrc: ":1,5", wantText: "bad model name"},
		"control character in a model":              {src: "gpu \"H\\u0000\" {\n}\n", wantSrc: ":1,5", wantText: "bad model name"},
		"slash in a vendor":                         {src: "gpu \"H200\" {\n  vendor = \"a/b\"\n}\n", wantSrc: ":2,12", wantText: "bad vendor name"},
		"space in a mig profile":                    {src: "gpu \"A100\" {\n  mig \"1g 10gb\" {\n    gpus = [0]\n  }\n}\n", wantSrc: ":2,7", wantText: "bad mig profile name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeInventory(t, "bad.hcl", tc.src)
			_, err := New(path).Fingerprint(context.Background())
			var fe *accel.FingerprintError
			must.True(t, errors.As(err, &fe), must.Sprintf("error %v", err))
			must.Eq(t, path+tc.wantSrc, fe.Source)
			must.StrContains(t, err.Error(), tc.wantText)
		})
	}
}
