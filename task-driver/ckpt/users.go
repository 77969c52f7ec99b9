package ckpt

import (
	"errors"
	"fmt"
	"os/user"
	"sort"
	"strconv"
	"strings"
)

// Names of the user rules; a refused task's error names the rule that
// refused it, so an operator knows which setting to change.
const (
	RuleAllowRoot      = "allow_root"
	RuleNamespaceUsers = "namespace_users"
	RuleUnknownUser    = "unknown user"
)

// ErrUserRefused is wrapped by every refusal of a task's user.
var ErrUserRefused = errors.New("task user refused")

// userRules decide which user a task runs as. A task that names no user
// runs as defaultUser. A task may run as defaultUser or, in a namespace
// with an entry in namespaces, as one of the users listed there; a
// namespace without an entry gets defaultUser only. Root (by name or uid
// 0) is refused unless allowRoot.
type userRules struct {
	defaultUser string
	allowRoot   bool
	namespaces  map[string][]string
	// lookupUID returns the uid of a user on this node.
	lookupUID func(name string) (int, error)
}

// hostUID looks a user up in the node's user database. A name made of
// digits that is not a user name is a uid, as the executors take it.
func hostUID(name string) (int, error) {
	u, err := user.Lookup(name)
	if err == nil {
		return strconv.Atoi(u.Uid)
	}
	if uid, perr := strconv.Atoi(name); perr == nil && uid >= 0 {
		return uid, nil
	}
	return 0, err
}

// isRootName says, without a lookup, whether name means uid 0: "root",
// "0", or a "uid:gid" form with uid 0 (which libcontainer accepts).
func isRootName(name string) bool {
	uid := strings.SplitN(name, ":", 2)[0]
	if uid == "root" {
		return true
	}
	n, err := strconv.Atoi(uid)
	return err == nil && n == 0
}

// resolve returns the user a task of namespace runs as, given the user it
// asked for ("" when none), or an error wrapping ErrUserRefused that names
// the rule.
func (r userRules) resolve(namespace, requested string) (string, error) {
	name := requested
	if name == "" {
		name = r.defaultUser
	}
	if !r.allowRoot && isRootName(name) {
		return "", r.rootRefusal(name)
	}
	if !r.allowed(namespace, name) {
		return "", fmt.Errorf("%w: user %q in namespace %q (rule %s: this namespace may run tasks as %s; "+
			"set the ckpt plugin's default_user or namespace_users to change it)",
			ErrUserRefused, name, namespace, RuleNamespaceUsers, quoteList(r.usersOf(namespace)))
	}
	if r.allowRoot {
		return name, nil
	}
	uid, err := r.lookupUID(name)
	if err != nil {
		return "", fmt.Errorf("%w: user %q (rule %s: it does not exist on this node: %v)",
			ErrUserRefused, name, RuleUnknownUser, err)
	}
	if uid == 0 {
		return "", r.rootRefusal(name)
	}
	return name, nil
}

func (r userRules) rootRefusal(name string) error {
	return fmt.Errorf("%w: user %q has uid 0 (rule %s: tasks never run as root unless the ckpt plugin config sets allow_root = true)",
		ErrUserRefused, name, RuleAllowRoot)
}

// allowed says whether namespace may run tasks as name.
func (r userRules) allowed(namespace, name string) bool {
	for _, u := range r.usersOf(namespace) {
		if u == name {
			return true
		}
	}
	return false
}

// usersOf lists the users namespace may run tasks as, default user first.
func (r userRules) usersOf(namespace string) []string {
	users := []string{r.defaultUser}
	for _, u := range r.namespaces[namespace] {
		if u != r.defaultUser {
			users = append(users, u)
		}
	}
	return users
}

// validate reports config problems of the rules: an empty default user,
// empty names, and root users while allow_root is off.
func (r userRules) validate() []error {
	var errs []error
	if r.defaultUser == "" {
		errs = append(errs, errors.New("default_user must not be empty"))
	} else if !r.allowRoot && r.isRoot(r.defaultUser) {
		errs = append(errs, fmt.Errorf("default_user %q is root; set allow_root = true to allow it", r.defaultUser))
	}
	namespaces := make([]string, 0, len(r.namespaces))
	for ns := range r.namespaces {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		if ns == "" {
			errs = append(errs, errors.New("namespace_users: a namespace name is empty"))
		}
		for _, u := range r.namespaces[ns] {
			switch {
			case u == "":
				errs = append(errs, fmt.Errorf("namespace_users[%q]: a user name is empty", ns))
			case !r.allowRoot && r.isRoot(u):
				errs = append(errs, fmt.Errorf("namespace_users[%q]: user %q is root; set allow_root = true to allow it", ns, u))
			}
		}
	}
	return errs
}

// isRoot says whether name is root by name or by a uid-0 entry on this
// node; a user unknown here is checked again when a task starts.
func (r userRules) isRoot(name string) bool {
	if isRootName(name) {
		return true
	}
	uid, err := r.lookupUID(name)
	return err == nil && uid == 0
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
