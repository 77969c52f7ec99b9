package jobmeta

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// DefaultKeyPath is the Nomad Variables path of the generated admission
// key; DefaultKeyNamespace its namespace.
const (
	DefaultKeyPath      = "allot/governor/admission-key"
	DefaultKeyNamespace = api.DefaultNamespace
)

// ErrMalformedKey means a key was found but is not a usable key.
var ErrMalformedKey = errors.New("malformed admission key")

// keyItem is the variable item that holds the key (base64).
const keyItem = "key"

// Variables is the part of Nomad's Variables API the key loader uses.
type Variables interface {
	Read(path string, q *api.QueryOptions) (*api.Variable, *api.QueryMeta, error)
	CheckedCreate(v *api.Variable, q *api.WriteOptions) (*api.Variable, *api.WriteMeta, error)
}

// KeySource says where the admission key comes from: File when set (the
// same file for every governor of an HA pair), else the Nomad variable
// Path in Namespace, read and, when absent, created once with the
// governor's own token.
type KeySource struct {
	File      string
	Vars      Variables
	Namespace string
	Path      string
}

// LoadKey returns the admission key. A key file holds the key in base64
// (at least KeySize bytes decoded; surrounding whitespace ignored). Without
// a file, the key is read from Nomad Variables; when the variable does not
// exist a random key is created with check-and-set, so governors racing to
// create it end with the same key.
func LoadKey(ctx context.Context, src KeySource) ([]byte, error) {
	if src.File != "" {
		return keyFromFile(src.File)
	}
	if src.Vars == nil {
		return nil, errors.New("no admission key file and no Nomad Variables client")
	}
	ns, path := src.Namespace, src.Path
	if ns == "" {
		ns = DefaultKeyNamespace
	}
	if path == "" {
		path = DefaultKeyPath
	}
	for attempt := 0; attempt < 3; attempt++ {
		key, err := readKeyVar(ctx, src.Vars, ns, path)
		if !errors.Is(err, api.ErrVariablePathNotFound) {
			return key, err
		}
		if err := createKeyVar(ctx, src.Vars, ns, path); err != nil && !isConflict(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("admission key variable %s/%s: created but not readable", ns, path)
}

func keyFromFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading admission key file: %w", err)
	}
	return decodeKey(strings.TrimSpace(string(raw)), "admission key file "+path)
}

func decodeKey(s, where string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: not base64: %v", where, ErrMalformedKey, err)
	}
	if len(key) < KeySize {
		return nil, fmt.Errorf("%s: %w: %d bytes, needs at least %d", where, ErrMalformedKey, len(key), KeySize)
	}
	return key, nil
}

func readKeyVar(ctx context.Context, vars Variables, ns, path string) ([]byte, error) {
	v, _, err := vars.Read(path, (&api.QueryOptions{Namespace: ns}).WithContext(ctx))
	if err != nil {
		if errors.Is(err, api.ErrVariablePathNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("reading admission key variable %s/%s: %w", ns, path, err)
	}
	return decodeKey(v.Items[keyItem], "admission key variable "+ns+"/"+path)
}

func createKeyVar(ctx context.Context, vars Variables, ns, path string) error {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("generating admission key: %w", err)
	}
	v := &api.Variable{Namespace: ns, Path: path, Items: api.VariableItems{keyItem: base64.StdEncoding.EncodeToString(key)}}
	if _, _, err := vars.CheckedCreate(v, (&api.WriteOptions{Namespace: ns}).WithContext(ctx)); err != nil {
		return fmt.Errorf("creating admission key variable %s/%s: %w", ns, path, err)
	}
	return nil
}

// isConflict tells whether a checked create lost a race (the variable
// exists now).
func isConflict(err error) bool {
	var conflict api.ErrCASConflict
	return errors.As(err, &conflict) || errors.As(err, new(*api.ErrCASConflict))
}
