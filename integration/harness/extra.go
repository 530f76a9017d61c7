package harness

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// WaitExit waits up to timeout for the server process to exit on its own
// (after SHUTDOWN, say) and reports whether it did. It sends no signal.
func (s *Server) WaitExit(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for s.Running() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// Info sends INFO section on c and returns its "name:value" fields. A
// transport error or an error reply is returned as an error.
func Info(c *Conn, section string) (map[string]string, error) {
	args := []string{"INFO"}
	if section != "" {
		args = append(args, section)
	}
	if err := c.Send(args...); err != nil {
		return nil, err
	}
	r := c.Read()
	if r.Err != nil {
		return nil, fmt.Errorf("INFO %s: %w", section, r.Err)
	}
	if r.IsError() || r.Null {
		return nil, fmt.Errorf("INFO %s answered %s", section, r.String())
	}
	m := make(map[string]string)
	for _, line := range strings.Split(r.Str, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// RSSSampler samples a process's RSS at a fixed interval in the background
// until Stop.
type RSSSampler struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	peak    int64
	samples int
	err     error
}

// SampleRSS starts sampling the RSS of process pid every interval (the
// first sample is taken at once).
func SampleRSS(pid int, interval time.Duration) *RSSSampler {
	r := &RSSSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			n, err := ProcRSS(pid)
			r.mu.Lock()
			if err != nil && r.err == nil {
				r.err = err
			}
			if err == nil {
				r.samples++
				r.peak = max(r.peak, n)
			}
			r.mu.Unlock()
			select {
			case <-r.stop:
				return
			case <-tk.C:
			}
		}
	}()
	return r
}

// Peak returns the largest RSS seen so far, in bytes, and the number of
// successful samples.
func (r *RSSSampler) Peak() (peak int64, samples int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak, r.samples
}

// Stop ends sampling and returns the peak RSS, the number of samples and the
// first read error (a process that exited, for instance).
func (r *RSSSampler) Stop() (peak int64, samples int, err error) {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak, r.samples, r.err
}
