package upstream

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spillway/spillway/proxy/upstream/link"
)

// A budget the upstream cannot meet. Spillway's maxmemory in upstream mode
// is its budget of the upstream's memory, met by demoting keys to disk.
// A budget below what the upstream uses holding no data at all (INFO
// memory's used_memory_startup) can never be met, and Redis's answer to
// such a maxmemory is its own: OOM errors (to writes, to scripts and
// functions by their flags, to MULTI's queued commands), or eviction with
// `evicted` events under an eviction policy. The upstream itself gives
// that answer exactly when it has that maxmemory: so while the budget is
// unreachable, Spillway sets it as the upstream's maxmemory, and puts the
// upstream's own value back once the budget can be met again (maxmemory
// raised, or 0). The upstream's value is kept in a file in `dir` before it
// is overridden, so a Spillway stopped meanwhile restores it at its next
// start. Checked at start and on each change of maxmemory: one INFO, and
// CONFIG GET/SET only when the state changes.

// overrideFile holds the upstream's maxmemory while Spillway overrides it.
const overrideFile = "upstream-maxmemory.override"

// watchBudget applies the override rule now and on each maxmemory change.
func (f *Front) watchBudget() {
	f.applyBudget()
	_ = f.cfg.OnChange("maxmemory", func(string) { f.applyBudget() })
}

// applyBudget overrides or restores the upstream's maxmemory as the
// budget is unreachable or not. An upstream that cannot be asked is left
// alone (the next change or start tries again).
func (f *Front) applyBudget() {
	f.guard.Lock()
	defer f.guard.Unlock()
	path := filepath.Join(f.cfg.Dir(), overrideFile)
	saved, err := os.ReadFile(path)
	overriding := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.log.Warn("upstream maxmemory override: cannot read its file", "path", path, "err", err)
		return
	}
	budget := f.cfg.MaxMemory()
	unreachable := budget > 0 && f.belowUpstreamFloor(budget)
	switch {
	case unreachable:
		if !overriding {
			r, err := f.ctlDo(f.defaultDB, [][]byte{[]byte("CONFIG"), []byte("GET"), []byte("maxmemory")})
			vals, perr := link.ParseBulks(r)
			if err != nil || perr != nil || len(vals) != 2 {
				f.log.Warn("upstream maxmemory override: cannot read the upstream's maxmemory", "err", errors.Join(err, perr))
				return
			}
			if err := os.WriteFile(path, vals[1], 0o600); err != nil {
				f.log.Warn("upstream maxmemory override: cannot save the upstream's value", "path", path, "err", err)
				return
			}
		}
		if f.setUpstreamMaxmemory(strconv.FormatInt(budget, 10)) {
			f.log.Warn("maxmemory is below what the upstream uses empty: the upstream applies it itself (OOM or eviction, as its policy says) until it is raised",
				"maxmemory", budget)
		}
	case overriding:
		if f.setUpstreamMaxmemory(strings.TrimSpace(string(saved))) {
			if err := os.Remove(path); err != nil {
				f.log.Warn("upstream maxmemory override: cannot remove its file", "path", path, "err", err)
			}
			f.log.Info("upstream maxmemory restored", "maxmemory", strings.TrimSpace(string(saved)))
		}
	}
}

// setUpstreamMaxmemory sets the upstream's maxmemory, reporting success.
func (f *Front) setUpstreamMaxmemory(v string) bool {
	r, err := f.ctlDo(f.defaultDB, [][]byte{[]byte("CONFIG"), []byte("SET"), []byte("maxmemory"), []byte(v)})
	if err != nil || link.IsError(r) {
		f.log.Warn("upstream maxmemory override: CONFIG SET maxmemory failed upstream", "value", v, "err", err, "reply", string(r))
		return false
	}
	return true
}

// belowUpstreamFloor reports whether budget is below the upstream's
// used_memory_startup (false if the upstream cannot be asked).
func (f *Front) belowUpstreamFloor(budget int64) bool {
	r, err := f.ctlDo(f.defaultDB, [][]byte{[]byte("INFO"), []byte("memory")})
	if err != nil || link.IsError(r) {
		return false
	}
	body := link.ReplyText(r)
	start, end, ok := infoFieldSpan(body, "used_memory_startup")
	if !ok {
		return false
	}
	floor, err := strconv.ParseInt(body[start:end], 10, 64)
	return err == nil && budget < floor
}
