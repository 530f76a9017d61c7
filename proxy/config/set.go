package config

import (
	"errors"
	"fmt"
	"log/slog"
)

// ErrSyntax is Redis's reply to CONFIG SET with an odd number of arguments
// after SET; Set itself takes pairs, so the caller sends it.
var ErrSyntax = errors.New("ERR syntax error")

func setFailed(arg string, reason any) error {
	return fmt.Errorf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", arg, reason)
}

// applyHook is a function registered with RegisterApply.
type applyHook struct {
	fn    func() error
	first string // the first setting it was registered for, for logs
}

// RegisterApply registers fn as the apply step of the named settings
// (names or aliases), as Redis's apply functions: after a Set has stored
// its new values, fn runs once if any of those settings changed, reading
// the new values with the typed accessors. If fn fails, Set restores every
// value it stored, runs every hook of the call again so that they act on
// the restored values, and fails with fn's error as the reason. fn runs in
// the goroutine calling Set, with no lock of the Config held; Sets are
// serialised, so hooks never run concurrently with each other.
func (c *Config) RegisterApply(fn func() error, names ...string) error {
	h := &applyHook{fn: fn}
	idx := make([]int, 0, len(names))
	for _, n := range names {
		e, ok := lookup(n)
		if !ok {
			return fmt.Errorf("config: RegisterApply: unknown setting %q", n)
		}
		idx = append(idx, e.idx)
	}
	if len(idx) > 0 {
		h.first = registry[idx[0]].name
	}
	c.cbMu.Lock()
	for _, i := range idx {
		c.hooks[i] = append(c.hooks[i], h)
	}
	c.cbMu.Unlock()
	return nil
}

// Set answers CONFIG SET name value [name value ...]: it changes all the
// settings or none. Errors carry Redis 7.0's reply text, "ERR" prefix
// included, in Redis's order: first every name (unknown, immutable or
// protected, duplicate: the first problem is reported, naming the argument
// as given), then every value (naming the setting), then the apply hooks
// of the settings that changed (RegisterApply), in the order of their
// first setting; an apply failure restores every value. The OnChange
// callbacks of the settings that changed run before Set returns.
func (c *Config) Set(pairs [][2]string) error {
	notify, err := c.SetDeferred(pairs)
	if err != nil {
		return err
	}
	notify()
	return nil
}

// SetDeferred is Set, except that the OnChange callbacks of the settings
// that changed are not run: it returns a function that runs them, which
// the caller calls once (when it no longer holds what a callback may
// take, such as the engine's lock inside MULTI/EXEC). The values and the
// apply hooks take effect before SetDeferred returns; notify is nil when
// err is not.
func (c *Config) SetDeferred(pairs [][2]string) (notify func(), err error) {
	if len(pairs) == 0 {
		return nil, errors.New("ERR wrong number of arguments for 'config|set' command")
	}
	c.setMu.Lock()
	defer c.setMu.Unlock()
	entries := make([]nameEntry, len(pairs))
	for i, p := range pairs {
		e, ok := lookup(p[0])
		if !ok {
			return nil, fmt.Errorf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", p[0])
		}
		switch registry[e.idx].mut {
		case immutable:
			return nil, setFailed(p[0], "can't set immutable config")
		case protected:
			return nil, setFailed(p[0], "can't set protected config")
		}
		for _, prev := range entries[:i] {
			if prev.idx == e.idx && prev.alias == e.alias { // a name and its alias are distinct, as in Redis 7.0
				return nil, setFailed(p[0], "duplicate parameter")
			}
		}
		entries[i] = e
	}
	newVals := make([]*value, len(pairs))
	for i, p := range pairs {
		s := registry[entries[i].idx]
		v, err := s.parseSet(p[1])
		if err != nil {
			return nil, setFailed(entries[i].name(), err)
		}
		if s.onSet != nil && v.text != c.vals[entries[i].idx].Load().text {
			s.onSet(v) // as Redis runs apply functions: only on a change
		}
		if s.mut == fixed && v.text != c.vals[entries[i].idx].Load().text {
			return nil, setFailed(p[0], "can't set immutable config")
		}
		newVals[i] = v
	}

	oldVals := make([]*value, len(pairs))
	changed := make([]bool, len(pairs))
	c.mu.Lock()
	for i, e := range entries {
		if m := registry[e.idx].merge; m != nil {
			newVals[i] = m(c.vals[e.idx].Load(), newVals[i])
		}
		oldVals[i] = c.vals[e.idx].Swap(newVals[i])
		changed[i] = oldVals[i].text != newVals[i].text || registry[e.idx].volatile
	}
	c.mu.Unlock()

	// The hooks of the settings that changed, each once.
	var hooks []*applyHook
	var hookArg []string // the setting each hook is reported for
	c.cbMu.Lock()
	for i, e := range entries {
		if !changed[i] {
			continue
		}
	next:
		for _, h := range c.hooks[e.idx] {
			for _, seen := range hooks {
				if seen == h {
					continue next
				}
			}
			hooks = append(hooks, h)
			hookArg = append(hookArg, e.name())
		}
	}
	c.cbMu.Unlock()
	for j, h := range hooks {
		if err := h.fn(); err != nil {
			slog.Warn("CONFIG SET: applying the new configuration failed; restoring the previous settings",
				"setting", hookArg[j], "err", err)
			c.restore(entries, oldVals, hooks)
			return nil, setFailed(hookArg[j], err)
		}
	}

	return func() {
		for i, e := range entries {
			if !changed[i] {
				continue
			}
			c.cbMu.Lock()
			fns := c.callbacks[e.idx]
			c.cbMu.Unlock()
			for _, fn := range fns {
				fn(newVals[i].text)
			}
		}
	}, nil
}

// restore puts back the values a failed Set replaced, last first (a
// setting given under its name and its alias gets its oldest value back),
// and runs the hooks again on them.
func (c *Config) restore(entries []nameEntry, oldVals []*value, hooks []*applyHook) {
	c.mu.Lock()
	for i := len(entries) - 1; i >= 0; i-- {
		c.vals[entries[i].idx].Store(oldVals[i])
	}
	c.mu.Unlock()
	for _, h := range hooks {
		if err := h.fn(); err != nil {
			slog.Warn("CONFIG SET: applying the restored configuration failed",
				"setting", h.first, "err", err)
		}
	}
}
