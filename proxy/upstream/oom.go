package upstream

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/proxy/upstream/link"
)

// Upstream settings Spillway overrides so that the upstream itself gives
// Redis's answer (its own error bytes) to what runs there: maxmemory while
// Spillway's budget is unreachable, min-replicas-to-write while Spillway's
// own replicas do not meet it. Each overridden setting's own value is kept
// in a file in `dir` (upstream-<name>.override) before it is first
// overridden, and put back (file removed) when the override ends; a
// Spillway stopped meanwhile restores it at its next start (the rules are
// applied at start, and a file with no rule overriding restores).

// overridePath is the file holding the upstream's own value of name while
// Spillway overrides it.
func (f *Front) overridePath(name string) string {
	return filepath.Join(f.cfg.Dir(), "upstream-"+name+".override")
}

// overrideUpstream sets the upstream's setting name to value, saving its
// own value first unless saved already. It reports success; f.guard is
// held.
func (f *Front) overrideUpstream(name, value string) bool {
	path := f.overridePath(name)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		r, err := f.ctlDo(f.defaultDB, [][]byte{[]byte("CONFIG"), []byte("GET"), []byte(name)})
		vals, perr := link.ParseBulks(r)
		if err != nil || perr != nil || len(vals) != 2 {
			f.log.Warn("upstream override: cannot read the upstream's value", "setting", name, "err", errors.Join(err, perr))
			return false
		}
		if err := os.WriteFile(path, vals[1], 0o600); err != nil {
			f.log.Warn("upstream override: cannot save the upstream's value", "path", path, "err", err)
			return false
		}
	} else if err != nil {
		f.log.Warn("upstream override: cannot read its file", "path", path, "err", err)
		return false
	}
	return f.setUpstream(name, value)
}

// restoreUpstream puts back the upstream's own value of name if Spillway
// overrides it (its file exists). It reports whether the upstream holds its
// own value now; f.guard is held.
func (f *Front) restoreUpstream(name string) bool {
	path := f.overridePath(name)
	saved, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		f.log.Warn("upstream override: cannot read its file", "path", path, "err", err)
		return false
	}
	v := strings.TrimSpace(string(saved))
	if !f.setUpstream(name, v) {
		return false
	}
	if err := os.Remove(path); err != nil {
		f.log.Warn("upstream override: cannot remove its file", "path", path, "err", err)
	}
	f.log.Info("upstream setting restored", "setting", name, "value", v)
	return true
}

// setUpstream runs CONFIG SET name value upstream, reporting success.
func (f *Front) setUpstream(name, v string) bool {
	r, err := f.ctlDo(f.defaultDB, [][]byte{[]byte("CONFIG"), []byte("SET"), []byte(name), []byte(v)})
	if err != nil || link.IsError(r) {
		f.log.Warn("upstream override: CONFIG SET failed upstream", "setting", name, "value", v, "err", err, "reply", string(r))
		return false
	}
	return true
}

// watchBudget applies the override rules now and on each change of what
// they follow: maxmemory; min-replicas-to-write and min-replicas-max-lag,
// and the server's tick (its replicas' acknowledgements).
func (f *Front) watchBudget() {
	f.applyBudget()
	_ = f.cfg.OnChange("maxmemory", func(string) { f.applyBudget() })
	f.applyReplicas()
	// After the server's own callbacks (registered first): synchronous, so
	// a CONFIG SET's reply follows the upstream's change.
	_ = f.cfg.OnChange("min-replicas-to-write", func(string) { f.applyReplicas() })
	_ = f.cfg.OnChange("min-replicas-max-lag", func(string) { f.applyReplicas() })
	f.srv.OnNoReplicasChange(func() { go f.applyReplicas() })
}

// The maxmemory rule. Spillway's maxmemory in upstream mode is its budget
// of the upstream's memory, met by demoting keys to disk. A budget below
// what the upstream uses holding no data at all (INFO memory's
// used_memory_startup) can never be met, and Redis's answer to such a
// maxmemory is its own: OOM errors (to writes, to scripts and functions by
// their flags, to MULTI's queued commands), or eviction with `evicted`
// events under an eviction policy. The upstream itself gives that answer
// exactly when it has that maxmemory: so while the budget is unreachable,
// Spillway sets it as the upstream's maxmemory, and puts the upstream's
// own value back once the budget can be met again (maxmemory raised, or
// 0). Checked at start and on each change of maxmemory: one INFO, and
// CONFIG GET/SET only when the state changes.

// applyBudget overrides or restores the upstream's maxmemory as the
// budget is unreachable or not. An upstream that cannot be asked is left
// alone (the next change or start tries again).
func (f *Front) applyBudget() {
	f.guard.Lock()
	defer f.guard.Unlock()
	budget := f.cfg.MaxMemory()
	if budget > 0 && f.belowUpstreamFloor(budget) {
		if f.overrideUpstream("maxmemory", strconv.FormatInt(budget, 10)) {
			f.log.Warn("maxmemory is below what the upstream uses empty: the upstream applies it itself (OOM or eviction, as its policy says) until it is raised",
				"maxmemory", budget)
		}
		return
	}
	f.restoreUpstream("maxmemory")
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

// The min-replicas rule. In upstream mode min-replicas-to-write and
// min-replicas-max-lag are Spillway's settings and count Spillway's own
// replicas (the relay's), as in embedded mode: the server refuses what
// Spillway answers or forwards outside a transaction (its dispatch), and
// what runs upstream (a script's first write when it declared no flags,
// MULTI's queued writes and EXEC, functions) must be refused by the
// upstream with Redis's own bytes. So while Spillway's condition is unmet
// the upstream's min-replicas-to-write is set to a count no upstream meets
// (and its max lag to a non-zero one), and its own values are put back
// once the condition is met, the setting is 0, or Spillway becomes a
// replica. Meanwhile the upstream refuses Spillway's own writes too: no
// demotion runs (the demoter is held: writesHeld) and a read of a cold key
// is answered from the store rather than reloaded.

// unmeetableReplicas is the largest min-replicas-to-write Redis accepts.
const unmeetableReplicas = "2147483647"

// applyReplicas overrides or restores the upstream's min-replicas settings
// as the server refuses writes for want of replicas or not. Idempotent;
// an upstream that cannot be asked is retried on the next change or tick.
func (f *Front) applyReplicas() {
	f.guard.Lock()
	defer f.guard.Unlock()
	f.replicasTried.Store(time.Now().UnixNano())
	if f.srv.RefusesForReplicas() {
		// Held before the upstream refuses: no demotion fails on it.
		f.writesHeld.Store(true)
		ok := f.overrideUpstream("min-replicas-max-lag", "10") &&
			f.overrideUpstream("min-replicas-to-write", unmeetableReplicas)
		f.replicasSynced.Store(ok)
		if !ok {
			f.log.Warn("min-replicas-to-write: the upstream could not be made to refuse writes; scripts and transactions may write without enough replicas until it can")
		}
		return
	}
	// min-replicas-to-write first: once it is back no write is refused.
	ok := f.restoreUpstream("min-replicas-to-write") && f.restoreUpstream("min-replicas-max-lag")
	f.replicasSynced.Store(ok)
	if ok {
		f.writesHeld.Store(false)
	}
}

// replicasRetry is how often the min-replicas rule is applied again while
// it failed (an upstream unreachable), or while the upstream refuses
// writes (an upstream restarted meanwhile lost the override).
const replicasRetry = 5 * time.Second

// demotionHeld reports whether demotion must wait (DemoterOptions.Paused,
// asked on each of the demoter's polls): the cluster follower's reasons,
// or the upstream refusing writes. It also retries the min-replicas rule
// (replicasRetry), in the background.
func (f *Front) demotionHeld() bool {
	held := f.writesHeld.Load()
	if (held || !f.replicasSynced.Load()) && time.Now().UnixNano()-f.replicasTried.Load() >= int64(replicasRetry) &&
		f.replicasRetrying.CompareAndSwap(false, true) {
		f.replicasTried.Store(time.Now().UnixNano())
		go func() {
			defer f.replicasRetrying.Store(false)
			f.applyReplicas()
		}()
	}
	return held || f.follow.paused()
}

// replicasState is the min-replicas rule's state (applyReplicas).
type replicasState struct {
	// writesHeld: the upstream refuses writes, or is about to.
	writesHeld atomic.Bool
	// replicasSynced: the last application succeeded; replicasTried is
	// when it was last tried (Unix ns), replicasRetrying a retry runs.
	replicasSynced   atomic.Bool
	replicasTried    atomic.Int64
	replicasRetrying atomic.Bool
}
