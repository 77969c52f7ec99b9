package allotapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// MaxRequeueReason bounds a requeue's reason, in characters (runes): the
// API refuses a longer one (it goes into the decisions, the audit log and
// the governor's log), and the console's form says so first.
const MaxRequeueReason = 500

// RequeueReason cleans a requeue's reason: trimmed; an empty one is
// allowed (the reason is optional), one over MaxRequeueReason characters
// is refused.
func RequeueReason(s string) (string, error) {
	r := strings.TrimSpace(s)
	if n := utf8.RuneCountInString(r); n > MaxRequeueReason {
		return "", fmt.Errorf("the reason is %d characters, over %d", n, MaxRequeueReason)
	}
	return r, nil
}

// RequeueRequest is the optional body of POST
// /allot/v1/jobs/<namespace>/<job>/requeue.
type RequeueRequest struct {
	// Reason is recorded with the requeue (decisions, audit log).
	Reason string `json:"reason,omitempty"`
}

// RequeueResult answers a requeue: the job was checkpoint-stopped and is
// held in the queue again; it resumes from its checkpoint when the
// governor admits it again.
type RequeueResult struct {
	Namespace string `json:"namespace"`
	JobID     string `json:"job_id"`
	// State is the governor's state of the job after the requeue
	// ("queued").
	State string `json:"state"`
	// Actor is who requeued it as the audit log names them (the token's
	// accessor ID, "anonymous" or "acl-disabled"); ActorName the token's
	// name.
	Actor     string `json:"actor"`
	ActorName string `json:"actor_name,omitempty"`
	// Reason is the decision's text ("requeued by <actor>: <reason>").
	Reason string `json:"reason"`
	// Audited tells whether the requeue was written to the ledger's audit
	// log; AuditError says why not (no ledger configured, or it failed).
	Audited    bool   `json:"audited"`
	AuditError string `json:"audit_error,omitempty"`
}

// StatusError is a non-2xx answer of the governor's API to a write.
type StatusError struct {
	Method, Path string
	Status       int
	Msg          string
	// RetryAfter is the answer's Retry-After header ("" when none): a
	// standby or a governor without a leader asks to retry.
	RetryAfter string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.Method, e.Path, e.Status, e.Msg)
}

// Is lets errors.Is(err, ErrNotFound) hold for a 404.
func (e *StatusError) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

// Requeue checkpoint-stops the running job ns/id and puts it back in the
// governor's queue (POST /allot/v1/jobs/<ns>/<id>/requeue). The token
// needs submit-job in ns. Refusals are *StatusError: 403 (token), 404
// (unknown job), 409 (not running, or not governed), 503 (not the
// leader; retry).
func (c *Client) Requeue(ctx context.Context, ns, id, reason string) (*RequeueResult, error) {
	var out RequeueResult
	path := "/allot/v1/jobs/" + url.PathEscape(ns) + "/" + url.PathEscape(id) + "/requeue"
	return &out, c.post(ctx, path, RequeueRequest{Reason: reason}, &out)
}

// post sends in as JSON and decodes a 2xx answer into out.
func (c *Client) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	resp, raw, err := c.do(ctx, http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &StatusError{Method: http.MethodPost, Path: path, Status: resp.StatusCode, Msg: ErrorText(raw),
			RetryAfter: resp.Header.Get("Retry-After")}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("POST %s: decoding: %w", path, err)
	}
	return nil
}

// IsStatus reports whether err is a *StatusError with that status.
func IsStatus(err error, status int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == status
}
