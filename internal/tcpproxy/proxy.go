// Package tcpproxy is a small loopback TCP proxy for failure tests: put it
// between a process and a server it depends on (the governor and Consul or
// Nomad), then Break the link (every open connection dropped, new ones
// closed at once) or Stall it (connections stay open but no byte passes:
// requests hang, as across a network partition that drops packets), and
// Heal it.
package tcpproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// Proxy forwards every connection accepted on a loopback port to a target
// on loopback.
type Proxy struct {
	target string
	ln     net.Listener

	mu     sync.Mutex
	broken bool
	closed bool
	conns  map[net.Conn]struct{}
	// flow is closed while bytes may pass; Stall replaces it with an open
	// channel that Heal closes.
	flow chan struct{}
	// dropped is closed (and replaced) by Break and Close, to wake
	// forwarders waiting on a stalled link.
	dropped chan struct{}
	wg      sync.WaitGroup
}

// New listens on a free 127.0.0.1 port and forwards to target ("host:port";
// the host must be a loopback address: tests never reach past this
// machine).
func New(target string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: target %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("tcpproxy: target %q is not a loopback address", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: listening: %w", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{},
		flow: closedChan(), dropped: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's own address (host:port) to give the client.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Break drops every open connection (both directions) and closes each new
// one as soon as it is accepted, until Heal.
func (p *Proxy) Break() {
	p.mu.Lock()
	p.broken = true
	conns := p.takeConnsLocked()
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Stall stops every byte in both directions on open and new connections,
// which stay open (a client's request hangs until its own timeout), until
// Heal.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalledLocked() {
		return
	}
	p.flow = make(chan struct{})
}

// Heal ends a Break or a Stall: new connections are forwarded again, and
// the bytes held by a stall pass on.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.broken = false
	if p.stalledLocked() {
		close(p.flow)
	}
}

// Stalled reports whether the link is stalled.
func (p *Proxy) Stalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalledLocked()
}

func (p *Proxy) stalledLocked() bool {
	select {
	case <-p.flow:
		return false
	default:
		return true
	}
}

// waitFlow blocks while the link is stalled; it returns false when the
// connection was dropped meanwhile (Break or Close).
func (p *Proxy) waitFlow() bool {
	p.mu.Lock()
	flow, dropped := p.flow, p.dropped
	p.mu.Unlock()
	select {
	case <-flow:
		return true
	case <-dropped:
		return false
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Broken reports whether the link is broken.
func (p *Proxy) Broken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.broken
}

// Close stops listening, drops every connection and waits for the proxy's
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := p.takeConnsLocked()
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) takeConnsLocked() []net.Conn {
	close(p.dropped) // wake forwarders held by a stall
	p.dropped = make(chan struct{})
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
		delete(p.conns, c)
	}
	return conns
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve forwards one client connection, unless the link is broken.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		client.Close()
		return
	}
	upstream, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(upstream) {
		if upstream != nil {
			upstream.Close()
		}
		p.drop(client)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		p.copy(dst, src)
		done <- struct{}{}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
	<-done // either side ended: end both
	p.drop(client)
	p.drop(upstream)
	<-done
}

// copy forwards src to dst until either fails, holding each chunk while
// the link is stalled.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitFlow() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// track registers an open connection; it refuses while broken or closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken || p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}
