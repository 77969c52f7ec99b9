package nomadagent

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// handedOut remembers every port this process has handed out, so two agents
// of one test binary never get the same port even after a listener closed.
var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// FreePorts returns n distinct loopback ports that were free for both TCP
// and UDP (serf uses both) at the time of the call.
//
// The kernel picks the ports (bind to port 0), so parallel test binaries get
// random, mostly distinct ports; the small window between closing the probe
// and the agent binding the port is closed by Start, which retries with new
// ports when an agent fails with "address already in use".
func FreePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 100*n {
			return nil, errors.New("no free loopback ports found")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("probing for a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut[port] || !udpFree(port) {
			l.Close()
			continue
		}
		// Keep the listener open until all n are picked so they differ.
		held = append(held, l)
		handedOut[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// NewPorts returns HTTP, RPC and serf ports for one agent.
func NewPorts() (Ports, error) {
	p, err := FreePorts(3)
	if err != nil {
		return Ports{}, err
	}
	return Ports{HTTP: p[0], RPC: p[1], Serf: p[2]}, nil
}

func udpFree(port int) bool {
	c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	c.Close()
	return true
}
