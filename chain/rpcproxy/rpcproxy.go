// Package rpcproxy is a loopback JSON-RPC proxy to put between a client and an Ethereum node,
// to play a slow, flaky, pruned or lying RPC and to count what passes through it; beside it,
// Cut, a TCP forwarder whose connections can be dropped at once (a websocket that goes away).
//
// It is for tests and benchmarks only: the product (cmd, fs, replica) never imports it. It
// imports no kintfs package.
package rpcproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fault is a kind of failure the proxy injects into a round trip.
type Fault string

// Fault kinds.
const (
	Drop  Fault = "drop"  // close the connection without an answer
	Reset Fault = "reset" // reset the connection (RST)
	Lost  Fault = "lost"  // run the call on the node, then reset: the answer is lost
	Error Fault = "error" // answer HTTP 502 (random faults: 502, 503 or 429)
	Delay Fault = "delay" // answer late (random faults: 0.2 to 1.5 s)
)

// AllFaults are the kinds SetFaults injects when it is given none.
var AllFaults = []Fault{Drop, Reset, Lost, Error, Delay}

// maxStreak bounds the random faults one call meets in a row (below a client's retries).
const maxStreak = 3

// Rule applies to every round trip that carries its method.
type Rule struct {
	Delay time.Duration // wait this long before forwarding: latency
	Hold  bool          // wait until Release, then forward or drop as Release says
}

// Rewrite sees each answered call with its result and returns the result to send instead
// (or the same one).
type Rewrite func(method string, params, result json.RawMessage) json.RawMessage

// Refuse returns a JSON-RPC error message to answer a single call with instead of forwarding
// it, or "" to forward it.
type Refuse func(method string, params json.RawMessage) string

// Stats counts what passed through the proxy.
type Stats struct {
	Requests      int            // HTTP round trips
	Calls         int            // JSON-RPC calls, each element of a batch counted
	Batches       int            // round trips that were batches
	Retries       int            // round trips repeating one that was faulted
	Faults        map[Fault]int  // injected faults by kind ("refused" for Refuse)
	Methods       map[string]int // calls by method that reached the node
	Seen          map[string]int // calls by method that arrived (forwarded or not)
	Forwarded     int            // round trips the node answered
	ResponseBytes int64          // bytes of the node's answers
	LongestStreak int            // the most random faults one call met in a row
}

// FaultTotal is the number of faults injected.
func (s Stats) FaultTotal() int {
	n := 0
	for _, v := range s.Faults {
		n += v
	}
	return n
}

// FaultString lists the injected faults by kind ("none" when there were none).
func (s Stats) FaultString() string {
	var parts []string
	for _, k := range AllFaults {
		if s.Faults[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Faults[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// queued is a fault for one of the next round trips carrying method ("" any).
type queued struct {
	method string
	kind   Fault
	delay  time.Duration
}

// Proxy forwards JSON-RPC over HTTP to its upstream, with the faults, rules, rewrites and
// refusals set on it. It understands batches. Its methods are safe to call while it serves.
type Proxy struct {
	URL      string // http://127.0.0.1:port
	upstream string
	srv      *http.Server
	client   *http.Client

	mu        sync.Mutex
	rng       *rand.Rand
	faultRate float64
	faultKind []Fault
	next      []queued
	rules     map[string]Rule
	held      chan struct{} // closed by Release
	heldFwd   bool
	rewrite   Rewrite
	refuse    Refuse
	streak    map[[32]byte]int // faults in a row per call (ids stripped)
	stats     Stats
	recent    []string // the last round trips with their fate
}

// New is a proxy to upstream that does not listen yet: serve it with Start, or as an
// http.Handler.
func New(upstream string) *Proxy {
	p := &Proxy{
		upstream: upstream,
		client:   &http.Client{Timeout: 60 * time.Second},
		rng:      rand.New(rand.NewSource(time.Now().UnixNano())),
		rules:    map[string]Rule{},
		held:     make(chan struct{}),
		streak:   map[[32]byte]int{},
	}
	p.stats = newStats()
	return p
}

// Start listens on addr (loopback with a free port when empty) and serves in the background
// until Close.
func Start(upstream, addr string) (*Proxy, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := New(upstream)
	p.URL = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	return p, nil
}

// Close drops the held round trips and stops serving.
func (p *Proxy) Close() {
	p.Release(false)
	if p.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.srv.Shutdown(ctx)
}

func newStats() Stats {
	return Stats{Faults: map[Fault]int{}, Methods: map[string]int{}, Seen: map[string]int{}}
}

// SetFaults injects faults of the given kinds (all when none) into rate of the round trips, at
// random; 0 turns them off. One call meets at most maxStreak of them in a row.
func (p *Proxy) SetFaults(rate float64, kinds ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(kinds) == 0 {
		kinds = AllFaults
	}
	p.faultRate, p.faultKind = rate, kinds
}

// FaultNext injects kind into the next n round trips that carry method ("" any), after the
// ones queued before.
func (p *Proxy) FaultNext(method string, kind Fault, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.next = append(p.next, queued{method: method, kind: kind, delay: time.Second})
	}
}

// DelayNext answers the next n round trips that carry method ("" any) after d.
func (p *Proxy) DelayNext(method string, d time.Duration, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.next = append(p.next, queued{method: method, kind: Delay, delay: d})
	}
}

// ClearFaults forgets the queued faults.
func (p *Proxy) ClearFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = nil
}

// SetRule sets the rule of method.
func (p *Proxy) SetRule(method string, r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules[method] = r
}

// ClearRules removes every rule.
func (p *Proxy) ClearRules() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = map[string]Rule{}
}

// Release lets every held round trip go on: forwarded to the node, or dropped unanswered.
func (p *Proxy) Release(forward bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heldFwd = forward
	close(p.held)
	p.held = make(chan struct{})
}

// SetRewrite installs a rewrite of answers (nil: honest).
func (p *Proxy) SetRewrite(f Rewrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rewrite = f
}

// SetRefuse has the proxy answer a single call with a JSON-RPC error (code -32005) carrying
// the message f returns, instead of forwarding it (nil: forward all). It plays a provider's
// limits: "block range too large", "more than 10000 results".
func (p *Proxy) SetRefuse(f Refuse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = f
}

// Stats is a copy of the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Faults, s.Methods, s.Seen = copyCounts(p.stats.Faults), copyCounts(p.stats.Methods), copyCounts(p.stats.Seen)
	return s
}

// ResetStats zeroes the counts.
func (p *Proxy) ResetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats = newStats()
	p.streak = map[[32]byte]int{}
}

// Seen is how many calls of method arrived at the proxy.
func (p *Proxy) Seen(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.Seen[method]
}

// Recent lists the latest round trips and what the proxy did with them, one a line.
func (p *Proxy) Recent() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.recent, "\n")
}

func copyCounts[K comparable](m map[K]int) map[K]int {
	out := make(map[K]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// parseRPC reads a body as one call or a batch.
func parseRPC(body []byte) (msgs []rpcMsg, batch bool, err error) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		err = json.Unmarshal(body, &msgs)
		return msgs, true, err
	}
	var m rpcMsg
	err = json.Unmarshal(body, &m)
	return []rpcMsg{m}, false, err
}

// callKey identifies a round trip by its methods and params, not its ids: a retry of the same
// calls has new ids.
func callKey(msgs []rpcMsg) [32]byte {
	h := sha256.New()
	for _, m := range msgs {
		h.Write([]byte(m.Method))
		h.Write([]byte{0})
		h.Write(m.Params)
		h.Write([]byte{0})
	}
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

// plan is what the proxy does with one round trip.
type plan struct {
	rule   Rule
	fault  Fault
	delay  time.Duration // of a Delay fault
	wait   bool          // a random Delay: wait it out even when the client gives up
	status int           // of an Error fault
	held   chan struct{}
	refuse Refuse
}

// decide counts the round trip and picks its fate. p.mu is held.
func (p *Proxy) decide(msgs []rpcMsg, batch, parsed bool, key [32]byte) plan {
	p.stats.Requests++
	p.stats.Calls += len(msgs)
	if batch {
		p.stats.Batches++
	}
	streak := p.streak[key]
	if streak > 0 {
		p.stats.Retries++
	}
	delete(p.streak, key)
	pl := plan{held: p.held, refuse: p.refuse}
	var methods []string
	for _, m := range msgs {
		p.stats.Seen[m.Method]++
		methods = append(methods, m.Method)
		if r, ok := p.rules[m.Method]; ok {
			pl.rule.Delay = max(pl.rule.Delay, r.Delay)
			pl.rule.Hold = pl.rule.Hold || r.Hold
		}
	}
	if i := p.queuedFor(msgs); i >= 0 {
		q := p.next[i]
		p.next = append(p.next[:i], p.next[i+1:]...)
		pl.fault, pl.delay, pl.status = q.kind, q.delay, http.StatusBadGateway
		p.stats.Faults[q.kind]++
		if q.kind != Delay {
			p.streak[key] = streak + 1
		}
	} else if parsed && p.faultRate > 0 && streak < maxStreak && p.rng.Float64() < p.faultRate {
		// A call is never failed more than maxStreak times in a row: a client gives each call
		// a few attempts, and at 20% faults one call in ten thousand would otherwise fail all
		// of them, which makes a test flaky rather than find anything.
		pl.fault = p.faultKind[p.rng.Intn(len(p.faultKind))]
		pl.delay, pl.wait = time.Duration(200+p.rng.Intn(1300))*time.Millisecond, true
		codes := []int{http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusTooManyRequests}
		pl.status = codes[int(key[0])%len(codes)]
		p.stats.Faults[pl.fault]++
		if pl.fault != Delay {
			p.streak[key] = streak + 1
			p.stats.LongestStreak = max(p.stats.LongestStreak, streak+1)
		}
	}
	fate := string(pl.fault)
	if fate == "" {
		fate = "ok"
	}
	p.recent = append(p.recent, fmt.Sprintf("%s %s: %s", time.Now().Format("15:04:05.000"), strings.Join(methods, ","), fate))
	if len(p.recent) > 60 {
		p.recent = p.recent[len(p.recent)-60:]
	}
	return pl
}

// queuedFor is the index of the first queued fault for a method of msgs, or -1.
func (p *Proxy) queuedFor(msgs []rpcMsg) int {
	for i, q := range p.next {
		if q.method == "" {
			return i
		}
		for _, m := range msgs {
			if m.Method == q.method {
				return i
			}
		}
	}
	return -1
}

// ServeHTTP forwards one round trip, or fails it as the proxy is set to.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	msgs, batch, perr := parseRPC(body)
	key := callKey(msgs)
	p.mu.Lock()
	pl := p.decide(msgs, batch, perr == nil, key)
	p.mu.Unlock()

	if pl.rule.Delay > 0 {
		select {
		case <-time.After(pl.rule.Delay):
		case <-r.Context().Done():
		}
	}
	if pl.rule.Hold {
		<-pl.held
		p.mu.Lock()
		fwd := p.heldFwd
		p.mu.Unlock()
		if !fwd {
			hijackClose(w, false)
			return
		}
	}
	if pl.refuse != nil && perr == nil && !batch && pl.fault == "" {
		if msg := pl.refuse(msgs[0].Method, msgs[0].Params); msg != "" {
			p.mu.Lock()
			p.stats.Faults["refused"]++
			p.mu.Unlock()
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msgs[0].ID,
				"error": map[string]any{"code": -32005, "message": msg}})
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
	}
	switch pl.fault {
	case Drop:
		hijackClose(w, false)
		return
	case Reset:
		hijackClose(w, true)
		return
	case Error:
		http.Error(w, "injected fault", pl.status)
		return
	case Delay:
		if pl.wait {
			time.Sleep(pl.delay)
			break
		}
		select {
		case <-time.After(pl.delay):
		case <-r.Context().Done():
			return
		}
	}
	p.forward(w, r, body, msgs, perr == nil, pl.fault == Lost)
}

// forward sends body to the node and its answer back, rewritten when a rewrite is set; lost
// resets the connection instead of answering.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, msgs []rpcMsg, parsed, lost bool) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.upstream, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.mu.Lock()
	p.stats.Forwarded++
	p.stats.ResponseBytes += int64(len(out))
	for _, m := range msgs {
		p.stats.Methods[m.Method]++
	}
	rewrite := p.rewrite
	p.mu.Unlock()
	if lost {
		hijackClose(w, true)
		return
	}
	if rewrite != nil && parsed {
		out = rewriteAnswers(msgs, out, rewrite)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}

// rewriteAnswers passes each result of a response through f, matching answers to calls by id.
func rewriteAnswers(calls []rpcMsg, out []byte, f Rewrite) []byte {
	answers, batch, err := parseRPC(out)
	if err != nil || len(answers) == 0 {
		return out
	}
	byID := map[string]rpcMsg{}
	for _, c := range calls {
		byID[string(c.ID)] = c
	}
	for i, a := range answers {
		c, ok := byID[string(a.ID)]
		if !ok || a.Result == nil {
			continue
		}
		answers[i].Result = f(c.Method, c.Params, a.Result)
	}
	var b []byte
	if batch {
		b, err = json.Marshal(answers)
	} else {
		b, err = json.Marshal(answers[0])
	}
	if err != nil {
		return out
	}
	return b
}

// hijackClose ends the round trip without an answer: a plain close, or a reset.
func hijackClose(w http.ResponseWriter, reset bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("rpcproxy: the response writer cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}
