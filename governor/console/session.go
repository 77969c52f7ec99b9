package console

import (
	"container/list"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"time"
)

// Session is one signed-in browser. The token is kept on the server only:
// the browser holds the random session id, never the secret.
type Session struct {
	ID string
	// Token is the Nomad ACL secret the user signed in with ("" when
	// Nomad's ACLs are off).
	Token string
	// CSRF is the per-session token every form carries.
	CSRF string
	// Expires is when the session ends, however active it is.
	Expires time.Time
}

// sessions is the server-side session store: bounded (the least recently
// used session goes first when full) and with an absolute expiry.
type sessions struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	now   func() time.Time
	byID  map[string]*list.Element
	order *list.List // front = most recently used
}

func newSessions(ttl time.Duration, max int, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, max: max, now: now, byID: map[string]*list.Element{}, order: list.New()}
}

// randomID returns 32 random bytes from crypto/rand, base64url.
func randomID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// create stores a new session for token.
func (s *sessions) create(token string) (*Session, error) {
	id, err := randomID()
	if err != nil {
		return nil, err
	}
	csrf, err := randomID()
	if err != nil {
		return nil, err
	}
	ses := &Session{ID: id, Token: token, CSRF: csrf, Expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[id] = s.order.PushFront(ses)
	for s.order.Len() > s.max {
		oldest := s.order.Back()
		s.order.Remove(oldest)
		delete(s.byID, oldest.Value.(*Session).ID)
	}
	return ses, nil
}

// get returns the live session id names, or nil; an expired one is
// removed.
func (s *sessions) get(id string) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok {
		return nil
	}
	ses := e.Value.(*Session)
	if !s.now().Before(ses.Expires) {
		s.order.Remove(e)
		delete(s.byID, id)
		return nil
	}
	s.order.MoveToFront(e)
	return ses
}

// remove ends the session id (sign-out).
func (s *sessions) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[id]; ok {
		s.order.Remove(e)
		delete(s.byID, id)
	}
}

// len is the number of stored sessions (tests).
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
