package jobmeta

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// KeySize is the size of a generated admission key; shorter keys are
// refused.
const KeySize = 32

// Defaults of the seal's time window (see Sealer).
const (
	DefaultMaxSkew  = 30 * time.Second
	DefaultMaxDelay = 2 * time.Minute
)

// sealVersion prefixes every seal, so the format can change.
const sealVersion = "v1"

// Reasons a stored job's record does not count. Verify wraps them.
var (
	// ErrNoRecord: the job carries no governor record.
	ErrNoRecord = errors.New("no governor record")
	// ErrUnsealed: the job carries a record but no seal.
	ErrUnsealed = errors.New("governor record without a seal")
	// ErrBadSeal: the seal does not match this job, this shape and this
	// record (forged, copied from another job, or the job changed since).
	ErrBadSeal = errors.New("seal does not match the job")
	// ErrStale: the seal is genuine but Nomad stored this version outside
	// the seal's time window (a revert, a replay, or a direct re-register).
	ErrStale = errors.New("seal was made for an earlier version")
	// ErrNoKey: the sealer has no key.
	ErrNoKey = errors.New("no admission key")
)

// Sealer makes and checks admission seals. A seal is
//
//	allot.seal = "v1." + sealed-at (Unix ms) + "." + base64url(HMAC-SHA256(key, …))
//
// over the job's namespace and ID, its admission Shape, every allot.* meta
// key and value (the governor's record and the user-set keys such as the
// class), and sealed-at. A seal holds only when Nomad's own SubmitTime of
// the stored job (set by the Nomad server on every register, revert
// included, never by the caller) lies in [sealed-at − MaxSkew,
// sealed-at + MaxSkew + MaxDelay]: a genuine record of an earlier version
// (revert, replay after a purge, re-register straight to Nomad) fails. A
// nil *Sealer verifies nothing: no job counts as sealed.
type Sealer struct {
	key []byte
	// MaxSkew bounds the clock difference between governor and Nomad
	// servers; MaxDelay how long a write may take to reach Nomad.
	MaxSkew, MaxDelay time.Duration
}

// NewSealer returns a sealer with key (at least KeySize bytes).
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) < KeySize {
		return nil, fmt.Errorf("admission key has %d bytes, needs at least %d", len(key), KeySize)
	}
	return &Sealer{key: append([]byte(nil), key...), MaxSkew: DefaultMaxSkew, MaxDelay: DefaultMaxDelay}, nil
}

// seal computes the seal of job j as sealed at t. j.Meta must already hold
// the record to seal.
func (s *Sealer) seal(j *api.Job, at time.Time) string {
	ms := at.UnixMilli()
	return sealVersion + "." + strconv.FormatInt(ms, 10) + "." + base64.RawURLEncoding.EncodeToString(s.mac(j, ms))
}

func (s *Sealer) mac(j *api.Job, ms int64) []byte {
	m := hmac.New(sha256.New, s.key)
	shape := Shape(j)
	writeField(m, "allot-seal", sealVersion, strconv.FormatInt(ms, 10))
	m.Write(shape[:])
	writeMeta(m, allotMeta(j.Meta))
	return m.Sum(nil)
}

func writeMeta(h hash.Hash, meta map[string]string) {
	for _, k := range keysOf(meta) {
		writeField(h, "meta", k, meta[k])
	}
}

// Verify returns the governor's record of stored job j when its seal
// holds, else the zero Record and why (wrapping ErrNoRecord, ErrUnsealed,
// ErrBadSeal or ErrStale). Only the job as Nomad stores it (with its
// SubmitTime) can verify.
func (s *Sealer) Verify(j *api.Job) (Record, error) {
	if j == nil || !HasOwned(j.Meta) {
		return Record{}, ErrNoRecord
	}
	raw, ok := j.Meta[Seal]
	if !ok {
		return Record{}, ErrUnsealed
	}
	if s == nil || len(s.key) == 0 {
		return Record{}, ErrNoKey
	}
	ms, mac, err := parseSeal(raw)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrBadSeal, err)
	}
	if !hmac.Equal(mac, s.mac(j, ms)) {
		return Record{}, ErrBadSeal
	}
	if err := s.inWindow(j, ms); err != nil {
		return Record{}, err
	}
	return Parse(j.Meta), nil
}

// inWindow checks Nomad's SubmitTime against the seal's time.
func (s *Sealer) inWindow(j *api.Job, ms int64) error {
	if j.SubmitTime == nil {
		return fmt.Errorf("%w: the job has no submit time", ErrStale)
	}
	sealed := time.UnixMilli(ms)
	submitted := time.Unix(0, *j.SubmitTime)
	if submitted.Before(sealed.Add(-s.MaxSkew)) || submitted.After(sealed.Add(s.MaxSkew+s.MaxDelay)) {
		return fmt.Errorf("%w: sealed at %s, stored at %s", ErrStale, sealed.UTC().Format(time.RFC3339), submitted.UTC().Format(time.RFC3339))
	}
	return nil
}

func parseSeal(raw string) (int64, []byte, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 || parts[0] != sealVersion {
		return 0, nil, errors.New("malformed seal")
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("malformed seal time: %w", err)
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(mac) != sha256.Size {
		return 0, nil, errors.New("malformed seal MAC")
	}
	return ms, mac, nil
}
