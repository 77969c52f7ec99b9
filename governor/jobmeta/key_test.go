package jobmeta

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"
)

// fakeVars is an in-memory Variables API; race makes the first create
// lose to a concurrent governor.
type fakeVars struct {
	vars    map[string]*api.Variable
	creates int
	readErr error
	race    *api.Variable
}

func (f *fakeVars) Read(path string, q *api.QueryOptions) (*api.Variable, *api.QueryMeta, error) {
	if f.readErr != nil {
		return nil, nil, f.readErr
	}
	v, ok := f.vars[q.Namespace+"/"+path]
	if !ok {
		return nil, nil, api.ErrVariablePathNotFound
	}
	return v, nil, nil
}

func (f *fakeVars) CheckedCreate(v *api.Variable, q *api.WriteOptions) (*api.Variable, *api.WriteMeta, error) {
	f.creates++
	if f.race != nil {
		f.vars[q.Namespace+"/"+v.Path], f.race = f.race, nil
		return nil, nil, api.ErrCASConflict{CheckIndex: 0}
	}
	if _, ok := f.vars[q.Namespace+"/"+v.Path]; ok {
		return nil, nil, api.ErrCASConflict{CheckIndex: 0}
	}
	f.vars[q.Namespace+"/"+v.Path] = v
	return v, nil, nil
}

func TestLoadKeyFromVariables(t *testing.T) {
	ctx := context.Background()
	f := &fakeVars{vars: map[string]*api.Variable{}}
	src := KeySource{Vars: f, Namespace: "allot-system"}
	k1, err := LoadKey(ctx, src)
	must.NoError(t, err)
	must.Len(t, KeySize, k1)
	must.MapContainsKey(t, f.vars, "allot-system/"+DefaultKeyPath)
	k2, err := LoadKey(ctx, src)
	must.NoError(t, err)
	must.Eq(t, k1, k2)
	must.Eq(t, 1, f.creates)
}

func TestLoadKeyLosesTheRaceToAnotherGovernor(t *testing.T) {
	theirs := []byte(strings.Repeat("k", KeySize))
	f := &fakeVars{vars: map[string]*api.Variable{}, race: &api.Variable{Path: DefaultKeyPath,
		Items: api.VariableItems{"key": base64.StdEncoding.EncodeToString(theirs)}}}
	got, err := LoadKey(context.Background(), KeySource{Vars: f})
	must.NoError(t, err)
	must.Eq(t, theirs, got)
}

func TestLoadKeyErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	must.NoError(t, os.WriteFile(short, []byte(base64.StdEncoding.EncodeToString([]byte("short"))), 0o600))
	bad := filepath.Join(dir, "bad")
	must.NoError(t, os.WriteFile(bad, []byte("%%%"), 0o600))
	cases := map[string]KeySource{
		"missing file":     {File: filepath.Join(dir, "none")},
		"short key":        {File: short},
		"not base64":       {File: bad},
		"nothing":          {},
		"nomad read fails": {Vars: &fakeVars{readErr: errors.New("403 Permission denied")}},
		"variable is garbage": {Vars: &fakeVars{vars: map[string]*api.Variable{
			"default/" + DefaultKeyPath: {Items: api.VariableItems{"key": "short"}}}}},
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadKey(context.Background(), src)
			must.Error(t, err)
		})
	}
}

func TestLoadKeyFromFile(t *testing.T) {
	key := []byte(strings.Repeat("z", 48))
	path := filepath.Join(t.TempDir(), "key")
	must.NoError(t, os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600))
	got, err := LoadKey(context.Background(), KeySource{File: path})
	must.NoError(t, err)
	must.Eq(t, key, got)
}
