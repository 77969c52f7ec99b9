package proxy

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestClassify(t *testing.T) {
	cases := map[string]struct {
		method, path string
		kind         Kind
		id           string
	}{
		"register":                    {"PUT", "/v1/jobs", Register, ""},
		"register by POST":            {"POST", "/v1/jobs", Register, ""},
		"list is passthrough":         {"GET", "/v1/jobs", Passthrough, ""},
		"update with odd id":          {"PUT", "/v1/job/Train_v1.2-B", Register, "Train_v1.2-B"},
		"update with slash in id":     {"POST", "/v1/job/team/train", Register, "team/train"},
		"read is passthrough":         {"GET", "/v1/job/Train_v1.2-B", Passthrough, ""},
		"delete is passthrough":       {"DELETE", "/v1/job/x", Passthrough, ""},
		"plan":                        {"PUT", "/v1/job/My.Job_1/plan", Plan, "My.Job_1"},
		"scale":                       {"POST", "/v1/job/a_b.C/scale", Scale, "a_b.C"},
		"dispatch":                    {"PUT", "/v1/job/batch.Param_X/dispatch", Dispatch, "batch.Param_X"},
		"revert":                      {"PUT", "/v1/job/A.b_c/revert", Revert, "A.b_c"},
		"evaluate":                    {"PUT", "/v1/job/x/evaluate", Passthrough, "x"},
		"periodic force":              {"PUT", "/v1/job/x/periodic/force", PeriodicForce, "x"},
		"stable":                      {"PUT", "/v1/job/x/stable", Passthrough, "x"},
		"parse is passthrough":        {"PUT", "/v1/jobs/parse", Passthrough, ""},
		"validate is passthrough":     {"PUT", "/v1/validate/job", Passthrough, ""},
		"job ending in plan-like id":  {"PUT", "/v1/job/myplan", Register, "myplan"},
		"empty id registers in Nomad": {"PUT", "/v1/job/", Register, ""},
		"namespace api":               {"PUT", "/v1/namespace/ml", Passthrough, ""},
		"unicode id":                  {"PUT", "/v1/job/tränings-Job", Register, "tränings-Job"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kind, id := Classify(tc.method, tc.path)
			must.Eq(t, tc.kind, kind)
			must.Eq(t, tc.id, id)
		})
	}
}
