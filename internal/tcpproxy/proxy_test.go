package tcpproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// echoServer answers every line with the same line, on loopback.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func newProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := New(echoServer(t))
	must.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip sends a line and reads the echo, bounded by a read deadline.
func roundTrip(c net.Conn, line string) (string, error) {
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return got, err
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	must.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestProxyForwards(t *testing.T) {
	p := newProxy(t)
	c := dial(t, p)
	got, err := roundTrip(c, "hello")
	must.NoError(t, err)
	must.Eq(t, "hello\n", got)
	must.False(t, p.Broken())
}

func TestBreakDropsOpenConnections(t *testing.T) {
	p := newProxy(t)
	c := dial(t, p)
	_, err := roundTrip(c, "before")
	must.NoError(t, err)

	p.Break()
	must.True(t, p.Broken())
	_, err = roundTrip(c, "after")
	must.Error(t, err) // EOF or reset, not a timeout: the proxy closed it
	var ne net.Error
	if errors.As(err, &ne) {
		must.False(t, ne.Timeout(), must.Sprint("the connection should be dropped, not stalled"))
	}
}

func TestBreakRefusesNewConnectionsUntilHeal(t *testing.T) {
	p := newProxy(t)
	p.Break()
	_, err := roundTrip(dial(t, p), "refused")
	must.Error(t, err)

	p.Heal()
	must.False(t, p.Broken())
	got, err := roundTrip(dial(t, p), "healed")
	must.NoError(t, err)
	must.Eq(t, "healed\n", got)
}

func TestNewRejectsNonLoopbackTargets(t *testing.T) {
	cases := map[string]struct {
		target string
	}{
		"private address": {target: "10.0.0.1:80"},
		"public address":  {target: "93.184.216.34:80"},
		"no port":         {target: "127.0.0.1"},
		"host name":       {target: "example.com:80"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.target)
			must.Error(t, err)
		})
	}
}

func TestCloseDropsConnections(t *testing.T) {
	p, err := New(echoServer(t))
	must.NoError(t, err)
	c := dial(t, p)
	_, err = roundTrip(c, "x")
	must.NoError(t, err)
	must.NoError(t, p.Close())
	_, err = roundTrip(c, "y")
	must.Error(t, err)
	_, err = net.Dial("tcp", p.Addr())
	must.Error(t, err)
}

// expectSilence asserts that nothing arrives on c within a short read
// deadline (the stall holds the bytes).
func expectSilence(t *testing.T, r *bufio.Reader, c net.Conn) {
	t.Helper()
	must.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err := r.ReadString('\n')
	var ne net.Error
	must.True(t, errors.As(err, &ne) && ne.Timeout(), must.Sprintf("want a read timeout, got %v", err))
}

func TestStallHoldsBytesUntilHeal(t *testing.T) {
	p := newProxy(t)
	open := dial(t, p)
	_, err := roundTrip(open, "before")
	must.NoError(t, err)

	p.Stall()
	must.True(t, p.Stalled())
	late := dial(t, p) // a new connection is accepted but hears nothing either
	for _, c := range []net.Conn{open, late} {
		_, err := io.WriteString(c, "held\n")
		must.NoError(t, err)
	}
	readers := []*bufio.Reader{bufio.NewReader(open), bufio.NewReader(late)}
	expectSilence(t, readers[0], open)
	expectSilence(t, readers[1], late)

	p.Heal()
	must.False(t, p.Stalled())
	for i, c := range []net.Conn{open, late} {
		must.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		got, err := readers[i].ReadString('\n')
		must.NoError(t, err)
		must.Eq(t, "held\n", got)
	}
}

func TestBreakDuringStallDropsHeldConnections(t *testing.T) {
	p := newProxy(t)
	c := dial(t, p)
	p.Stall()
	_, err := io.WriteString(c, "held\n")
	must.NoError(t, err)
	p.Break()
	must.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = bufio.NewReader(c).ReadString('\n')
	must.Error(t, err)
	var ne net.Error
	must.False(t, errors.As(err, &ne) && ne.Timeout(), must.Sprint("the held connection should be dropped"))
	p.Heal()
	got, err := roundTrip(dial(t, p), "again")
	must.NoError(t, err)
	must.Eq(t, "again\n", got)
}
