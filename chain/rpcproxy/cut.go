package rpcproxy

import (
	"io"
	"net"
	"sync"
)

// Cut forwards TCP connections to a target until Cut, which closes every connection and
// stops listening: a websocket whose server goes away.
type Cut struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	n     int // connections accepted
}

// StartCut listens on a free loopback port and forwards what connects there to target
// (host:port).
func StartCut(target string) (*Cut, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Cut{ln: ln}
	go p.accept(target)
	return p, nil
}

func (p *Cut) accept(target string) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.n++
		p.mu.Unlock()
		go func() { io.Copy(u, c); u.Close() }()
		go func() { io.Copy(c, u); c.Close() }()
	}
}

// Addr is the host:port to connect to.
func (p *Cut) Addr() string { return p.ln.Addr().String() }

// Accepted is how many connections were forwarded.
func (p *Cut) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Cut closes every connection and stops listening. It may be called more than once.
func (p *Cut) Cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
