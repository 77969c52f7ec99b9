package auth

import (
	"errors"
	"net/http"
)

// The errors Authenticate returns. Every refusal wraps ErrPermissionDenied,
// so callers can answer 403 for all of them with one errors.Is, as Nomad
// answers 403 "Permission denied" for a token it cannot resolve.
var (
	// ErrPermissionDenied is a refusal: Nomad's own text.
	ErrPermissionDenied = errors.New("Permission denied")
	// ErrTokenNotFound: the secret names no ACL token (deleted, revoked,
	// mistyped, or a workload identity, which the governor does not accept).
	ErrTokenNotFound = deny("ACL token not found")
	// ErrTokenExpired: the token's expiration time has passed.
	ErrTokenExpired = deny("ACL token expired")
	// ErrClientCertRequired: Nomad requires client certificates and the
	// caller presented none to the governor, so the governor's own
	// certificate must not stand in for it.
	ErrClientCertRequired = deny("a verified client certificate is required: Nomad requires client certificates, and the governor's own does not stand in for a caller's")
	// ErrUnavailable: Nomad could not be asked (unreachable, or an answer
	// the governor could not read). Not cached; the caller may retry.
	ErrUnavailable = errors.New("cannot resolve the ACL token with Nomad")
)

// denied is a refusal with its own text that is also ErrPermissionDenied.
type denied struct{ msg string }

func deny(msg string) error { return &denied{msg: msg} }

func (d *denied) Error() string { return d.msg }

// Is makes every refusal match ErrPermissionDenied.
func (d *denied) Is(target error) bool { return target == ErrPermissionDenied }

// Status is the HTTP status for an error of Authenticate: 403 for a
// refusal, 503 when Nomad could not be asked, 500 otherwise.
func Status(err error) int {
	switch {
	case errors.Is(err, ErrPermissionDenied):
		return http.StatusForbidden
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// Message is the text to show the caller for an error of Authenticate. A
// refusal shows its own reason ("ACL token not found", "Permission
// denied", ...); an unavailable Nomad says so without Nomad's address.
func Message(err error) string {
	var d *denied
	switch {
	case errors.As(err, &d):
		return d.msg
	case errors.Is(err, ErrPermissionDenied):
		return ErrPermissionDenied.Error()
	case errors.Is(err, ErrUnavailable):
		return ErrUnavailable.Error() + "; try again"
	default:
		return "cannot authenticate the request"
	}
}

// Deny answers a refusal the way Nomad's HTTP API answers one: the status
// of Status and the text of Message, as plain text.
func Deny(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(Status(err))
	_, _ = w.Write([]byte(Message(err)))
}
