package integration

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
	"testing"
	"time"
)

// rpcProxy is a loopback JSON-RPC proxy between kintfs and the node. It injects faults into a
// share of the HTTP round trips (dropping, resetting or erroring them, losing the answer of a
// call the node did run, or delaying it), holds or delays chosen methods so a test can kill a
// process at a known stage, and can rewrite answers to play a lying RPC. It understands
// JSON-RPC batches, and counts what passes through it.
type rpcProxy struct {
	t        *testing.T
	upstream string
	URL      string
	srv      *http.Server
	client   *http.Client

	mu        sync.Mutex
	rng       *rand.Rand
	faultRate float64
	faultKind []string // the kinds injected at faultRate, chosen at random
	rules     map[string]proxyRule
	held      chan struct{} // closed by release
	heldFwd   bool          // what release does with held calls: forward them, or drop them
	lie       func(method string, params json.RawMessage, result json.RawMessage) json.RawMessage
	refuse    func(method string, params json.RawMessage) string // a JSON-RPC error message instead of forwarding
	lose      map[string]int                                     // lose the answers of this many next round trips carrying a method
	streak    map[[32]byte]int                                   // faults in a row per call (ids stripped): retries are counted, and capped
	stats     proxyStats
	recent    []string // the last round trips with their fate, for a failure message
}

// proxyRule applies to every round trip that carries a method.
type proxyRule struct {
	Delay time.Duration // wait this long before forwarding
	Hold  bool          // wait until release, then forward or drop as release says
}

type proxyStats struct {
	Requests  int            // HTTP round trips
	Calls     int            // JSON-RPC calls, each element of a batch counted
	Batches   int            // round trips that were batches
	Retries   int            // round trips repeating one that was faulted
	Faults    map[string]int // injected faults by kind
	Methods   map[string]int // calls by method that reached the node
	Seen      map[string]int // calls by method that arrived (forwarded or not)
	Forwarded int            // round trips the node answered
	// LongestStreak is the most faults one call met in a row
	LongestStreak int
}

type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// Fault kinds.
const (
	faultDrop  = "drop"  // close the connection without an answer
	faultReset = "reset" // reset the connection (RST)
	faultLost  = "lost"  // run the call on the node, then reset: the answer is lost
	faultError = "error" // answer HTTP 502, 503 or 429
	faultDelay = "delay" // answer late (0.2 to 1.5 s)
)

var allFaults = []string{faultDrop, faultReset, faultLost, faultError, faultDelay}

// maxStreak bounds the faults one call meets in a row (below the client's 4 retries).
const maxStreak = 3

func startRPCProxy(t *testing.T, upstream string) *rpcProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &rpcProxy{
		t: t, upstream: upstream, URL: "http://" + ln.Addr().String(),
		client: &http.Client{Timeout: 60 * time.Second},
		rng:    rand.New(rand.NewSource(time.Now().UnixNano())),
		rules:  map[string]proxyRule{},
		held:   make(chan struct{}),
		streak: map[[32]byte]int{},
		lose:   map[string]int{},
	}
	p.stats = proxyStats{Faults: map[string]int{}, Methods: map[string]int{}, Seen: map[string]int{}}
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	t.Cleanup(func() {
		p.release(false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.srv.Shutdown(ctx)
	})
	return p
}

// setFaults injects faults of the given kinds into rate of the round trips (0 turns them off).
func (p *rpcProxy) setFaults(rate float64, kinds ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(kinds) == 0 {
		kinds = allFaults
	}
	p.faultRate, p.faultKind = rate, kinds
}

func (p *rpcProxy) setRule(method string, r proxyRule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules[method] = r
}

func (p *rpcProxy) clearRules() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = map[string]proxyRule{}
}

// release lets every held round trip go on: forwarded to the node, or dropped unanswered.
func (p *rpcProxy) release(forward bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heldFwd = forward
	close(p.held)
	p.held = make(chan struct{})
}

// setLie installs a rewrite of answers (nil: honest). It sees each call with its result and
// returns the result to send instead (or the same one).
func (p *rpcProxy) setLie(f func(method string, params json.RawMessage, result json.RawMessage) json.RawMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lie = f
}

// setRefuse has the proxy answer a single call with a JSON-RPC error (code -32005) carrying
// the message f returns, instead of forwarding it, when f returns one (nil: forward all).
// It plays a provider's limits: "block range too large", "more than 10000 results".
func (p *rpcProxy) setRefuse(f func(method string, params json.RawMessage) string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = f
}

// loseNext has the node run the next round trip carrying method, and loses its answer.
func (p *rpcProxy) loseNext(method string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose[method]++
}

func (p *rpcProxy) snapshot() proxyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Faults, s.Methods, s.Seen = copyCounts(p.stats.Faults), copyCounts(p.stats.Methods), copyCounts(p.stats.Seen)
	return s
}

func (p *rpcProxy) resetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats = proxyStats{Faults: map[string]int{}, Methods: map[string]int{}, Seen: map[string]int{}}
	p.streak = map[[32]byte]int{}
}

// lastRoundTrips lists the latest round trips and what the proxy did with them.
func (p *rpcProxy) lastRoundTrips() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.recent, "\n")
}

// seen is how many calls of method arrived at the proxy.
func (p *rpcProxy) seen(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.Seen[method]
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s proxyStats) faultTotal() int {
	n := 0
	for _, v := range s.Faults {
		n += v
	}
	return n
}

func (s proxyStats) faultString() string {
	var parts []string
	for _, k := range allFaults {
		if s.Faults[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Faults[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
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

func (p *rpcProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	msgs, batch, perr := parseRPC(body)
	key := callKey(msgs)

	p.mu.Lock()
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
	var rule proxyRule
	for _, m := range msgs {
		p.stats.Seen[m.Method]++
		if rr, ok := p.rules[m.Method]; ok {
			rule.Delay = max(rule.Delay, rr.Delay)
			rule.Hold = rule.Hold || rr.Hold
		}
	}
	fault := ""
	for _, m := range msgs {
		if p.lose[m.Method] > 0 {
			p.lose[m.Method]--
			fault = faultLost
			p.stats.Faults[fault]++
			p.streak[key] = streak + 1
			break
		}
	}
	// A call is never failed more than maxStreak times in a row: the client gives each call
	// five attempts, and at 20% faults one in ten thousand calls would otherwise fail all of
	// them, which would make the test flaky rather than find anything.
	if fault == "" && perr == nil && p.faultRate > 0 && streak < maxStreak && p.rng.Float64() < p.faultRate {
		fault = p.faultKind[p.rng.Intn(len(p.faultKind))]
		p.stats.Faults[fault]++
		if fault != faultDelay {
			p.streak[key] = streak + 1
			p.stats.LongestStreak = max(p.stats.LongestStreak, streak+1)
		}
	}
	delay := time.Duration(200+p.rng.Intn(1300)) * time.Millisecond
	held := p.held
	refuse := p.refuse
	var methods []string
	for _, m := range msgs {
		methods = append(methods, m.Method)
	}
	fate := fault
	if fate == "" {
		fate = "ok"
	}
	p.recent = append(p.recent, fmt.Sprintf("%s %s: %s", time.Now().Format("15:04:05.000"), strings.Join(methods, ","), fate))
	if len(p.recent) > 60 {
		p.recent = p.recent[len(p.recent)-60:]
	}
	p.mu.Unlock()

	if rule.Delay > 0 {
		select {
		case <-time.After(rule.Delay):
		case <-r.Context().Done():
		}
	}
	if rule.Hold {
		<-held
		p.mu.Lock()
		fwd := p.heldFwd
		p.mu.Unlock()
		if !fwd {
			hijackClose(w, false)
			return
		}
	}
	if refuse != nil && perr == nil && !batch && fault == "" {
		if msg := refuse(msgs[0].Method, msgs[0].Params); msg != "" {
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
	switch fault {
	case faultDrop:
		hijackClose(w, false)
		return
	case faultReset:
		hijackClose(w, true)
		return
	case faultError:
		codes := []int{http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusTooManyRequests}
		http.Error(w, "injected fault", codes[int(key[0])%len(codes)])
		return
	case faultDelay:
		time.Sleep(delay)
	}

	resp, err := p.client.Post(p.upstream, "application/json", bytes.NewReader(body))
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
	for _, m := range msgs {
		p.stats.Methods[m.Method]++
	}
	lie := p.lie
	p.mu.Unlock()
	if fault == faultLost {
		hijackClose(w, true)
		return
	}
	if lie != nil && perr == nil {
		out = rewriteAnswers(msgs, out, lie)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}

// rewriteAnswers passes each result of a response through lie, matching answers to calls by id.
func rewriteAnswers(calls []rpcMsg, out []byte, lie func(string, json.RawMessage, json.RawMessage) json.RawMessage) []byte {
	answers, batch, err := parseRPC(out)
	if err != nil {
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
		answers[i].Result = lie(c.Method, c.Params, a.Result)
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
		panic("rpc proxy: the response writer cannot be hijacked")
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
