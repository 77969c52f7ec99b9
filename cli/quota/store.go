package quota

import (
	"errors"
	"fmt"
	"maps"

	"github.com/hashicorp/nomad/api"
)

// ErrNoNamespace is returned for a namespace that does not exist.
var ErrNoNamespace = errors.New("namespace not found")

// casAttempts bounds how often Update retries when the namespace changed
// under it.
const casAttempts = 3

// Store reads and writes namespace meta through Nomad's namespace API.
type Store struct {
	Nomad *api.Client
}

// Get returns the namespace ns.
func (s *Store) Get(ns string) (*api.Namespace, error) {
	out, _, err := s.Nomad.Namespaces().Info(ns, nil)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("%w: %q (create it first: nomad namespace apply %s)", ErrNoNamespace, ns, ns)
		}
		return nil, fmt.Errorf("reading namespace %q: %w", ns, err)
	}
	if out == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoNamespace, ns)
	}
	return out, nil
}

// Update reads namespace ns, computes its new meta with edit, and writes
// it when it differs. Nomad 1.6's namespace API has no check-and-set, so
// Update re-reads the namespace just before writing and starts over when
// its ModifyIndex moved (a concurrent writer); the window left is one
// request. Every other field of the namespace is written back unchanged.
// edit must not change its argument.
func (s *Store) Update(ns string, edit func(meta map[string]string) (map[string]string, error)) (before, after map[string]string, err error) {
	for attempt := 0; attempt < casAttempts; attempt++ {
		cur, err := s.Get(ns)
		if err != nil {
			return nil, nil, err
		}
		next, err := edit(cur.Meta)
		if err != nil {
			return nil, nil, err
		}
		if maps.Equal(cur.Meta, next) {
			return cur.Meta, next, nil
		}
		again, err := s.Get(ns)
		if err != nil {
			return nil, nil, err
		}
		if again.ModifyIndex != cur.ModifyIndex {
			continue
		}
		upd := *again
		upd.Meta = next
		if _, err := s.Nomad.Namespaces().Register(&upd, nil); err != nil {
			return nil, nil, fmt.Errorf("writing namespace %q: %w", ns, err)
		}
		return cur.Meta, next, nil
	}
	return nil, nil, fmt.Errorf("namespace %q changed %d times while being updated; nothing written, try again", ns, casAttempts)
}

func isNotFound(err error) bool {
	var v api.UnexpectedResponseError
	if errors.As(err, &v) {
		return v.StatusCode() == 404
	}
	var p *api.UnexpectedResponseError
	return errors.As(err, &p) && p.StatusCode() == 404
}
