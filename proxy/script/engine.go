package script

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/resp"
)

// Host executes the commands a running script calls. The script package has
// already checked them (known command, arity, allowed from scripts, read-only
// rules); Call runs args (args[0] the name as the script passed it; cmd is its
// cmdtable entry, the subcommand entry for container commands) and returns its
// reply as exactly one RESP value in protocol proto (2 or 3; redis.setresp).
type Host interface {
	Call(cmd *cmdtable.Command, args [][]byte, proto int) []byte
	// OutOfMemory reports whether the server was over its memory budget
	// when the command running the script started (Redis's
	// pre_command_oom_state): until its first write, the script's calls of
	// commands that may grow memory (denyoom) then fail with OOM, unless
	// the script declared allow-oom.
	OutOfMemory() bool
	// WriteRefusal returns the error ("-CODE text") every write command
	// gets while the server refuses writes (NOREPLICAS: fewer good
	// replicas than min-replicas-to-write), or "".
	WriteRefusal() string
	// Rejected records a call the script's checks refused (cmd nil for an
	// unknown command): Redis counts it as the command's rejected call
	// and the error (msg: "-CODE text", or a text whose code is ERR) in
	// the error statistics.
	Rejected(cmd *cmdtable.Command, msg string)
	// ACLCheck checks a call against the permissions of the user running
	// the script: "" if allowed, else the error text ("The user executing
	// the script can't ..."); log records a refusal in the ACL LOG
	// (redis.call does, redis.acl_check_cmd does not).
	ACLCheck(cmd *cmdtable.Command, args [][]byte, log bool) string
}

// Options configures an Engine.
type Options struct {
	// Logger receives redis.log messages (and the engine's own warnings).
	// Nil discards them.
	Logger *slog.Logger
}

// Engine holds the script cache, the function libraries and the two Lua
// interpreters (one for EVAL, one for functions, as in Redis).
type Engine struct {
	log *slog.Logger

	// runMu serializes everything that touches an interpreter.
	runMu sync.Mutex

	// Guarded by runMu.
	evm     *luaVM
	scripts map[string]*evalScript // lower-case sha1 -> script
	fvm     *luaVM
	libs    map[string]*library  // library name -> library
	funcs   map[string]*function // lower-case function name -> function
	rand    rand48

	// mu guards the running-script state and the library snapshot, which
	// Kill, Running, FUNCTION STATS and Libraries read while a script runs.
	mu   sync.Mutex
	cur  *runCtx
	done chan struct{} // closed when cur finishes; made by the first WaitIdle
	// running mirrors cur != nil for Busy's lock-free fast path (every
	// command of every client asks).
	running  atomic.Bool
	snapshot []libSnapshot // sorted by name

	nScripts   atomic.Int64
	scriptMem  atomic.Int64 // bytes of cached script bodies
	libraryMem atomic.Int64 // bytes of library code
}

// libSnapshot is what FUNCTION STATS and DUMP need of a library.
type libSnapshot struct {
	name   string
	code   string
	nfuncs int
}

// runCtx is one running script or function.
type runCtx struct {
	host     Host
	proto    int // protocol of the script's own client (redis.setresp)
	readOnly bool
	allowOOM bool // allow-oom (or no-writes) declared: no OOM check
	eval     bool
	name     string   // sha1 of the script, or function name
	args     [][]byte // the caller's command, for FUNCTION STATS
	start    time.Time
	cancel   context.CancelFunc

	// dirty and killed are guarded by Engine.mu: a script that has written
	// cannot be killed, and a killed script must not write.
	dirty  bool
	killed bool
}

// New returns an Engine with empty caches.
func New(opts Options) *Engine {
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	e := &Engine{
		log:     lg,
		scripts: make(map[string]*evalScript),
		libs:    make(map[string]*library),
		funcs:   make(map[string]*function),
		rand:    newRand48(),
	}
	e.evm = newVM(e, evalVM)
	e.fvm = newVM(e, funcVM)
	return e
}

// Running reports whether a script or function runs now, and since when.
// Safe from any goroutine.
func (e *Engine) Running() (since time.Time, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur == nil {
		return time.Time{}, false
	}
	return e.cur.start, true
}

// Busy is Running for the per-command check: one atomic load when nothing
// runs. function reports whether the running script is a FUNCTION (FCALL)
// rather than an EVAL script (the BUSY error names the kill command).
func (e *Engine) Busy() (since time.Time, function bool, ok bool) {
	if !e.running.Load() {
		return time.Time{}, false, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur == nil {
		return time.Time{}, false, false
	}
	return e.cur.start, !e.cur.eval, true
}

// ForceKill stops the running script even if it has written (SHUTDOWN
// NOSAVE); the caller must discard what it wrote. It reports whether a
// script was running.
func (e *Engine) ForceKill() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur == nil {
		return false
	}
	e.cur.killed = true
	e.cur.cancel()
	return true
}

// WaitIdle waits until no script runs or until deadline; it reports whether
// none runs.
func (e *Engine) WaitIdle(deadline time.Time) bool {
	for {
		e.mu.Lock()
		if e.cur == nil {
			e.mu.Unlock()
			return true
		}
		if e.done == nil {
			e.done = make(chan struct{})
		}
		done := e.done
		e.mu.Unlock()
		d := time.Until(deadline)
		if d <= 0 {
			return false
		}
		t := time.NewTimer(d)
		select {
		case <-done:
			t.Stop()
		case <-t.C:
			return e.idle()
		}
	}
}

func (e *Engine) idle() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur == nil
}

// Redis's shared error replies about busy scripts.
const (
	errNotBusy     = "NOTBUSY No scripts in execution right now."
	errUnkillable  = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	errBusyEval    = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errBusyFunc    = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	errKilled      = "ERR Script killed by user with SCRIPT KILL..."
	errLoadTimeout = "ERR FUNCTION LOAD timeout"
)

// Kill is SCRIPT KILL (functions false) or FUNCTION KILL (true): it writes
// the reply (+OK, or Redis's NOTBUSY / UNKILLABLE / BUSY errors) to w and, on
// success, makes the running script stop with Redis's error. Safe from any
// goroutine while another runs a script.
func (e *Engine) Kill(w *resp.Writer, functions bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rc := e.cur
	switch {
	case rc == nil:
		w.Error(errNotBusy)
	case rc.dirty:
		w.Error(errUnkillable)
	case !functions && !rc.eval:
		w.Error(errBusyFunc)
	case functions && rc.eval:
		w.Error(errBusyEval)
	default:
		rc.killed = true
		rc.cancel()
		w.OK()
	}
}

// setRunning publishes rc as the running script.
func (e *Engine) setRunning(rc *runCtx) {
	e.mu.Lock()
	e.cur = rc
	e.running.Store(true)
	e.mu.Unlock()
}

// clearRunning marks the end of the running script.
func (e *Engine) clearRunning() {
	e.mu.Lock()
	e.cur = nil
	e.running.Store(false)
	if e.done != nil {
		close(e.done)
		e.done = nil
	}
	e.mu.Unlock()
}

// beforeWrite is called before a script runs a write command: it marks the
// script dirty (no longer killable) unless it was already killed, which it
// reports.
func (e *Engine) beforeWrite(rc *runCtx) (killed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if rc.killed {
		return true
	}
	rc.dirty = true
	return false
}

// wasKilled reports whether rc was killed.
func (e *Engine) wasKilled(rc *runCtx) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return rc.killed
}

// NumScripts returns the number of cached EVAL scripts.
func (e *Engine) NumScripts() int { return int(e.nScripts.Load()) }

// vmBaseBytes approximates the memory of a freshly initialised interpreter
// (Redis reports about 31 KB for its own).
const vmBaseBytes = 32 << 10

// MemoryBytes estimates the memory of the interpreters: a base per VM plus
// the cached scripts and the library code (each compiled to a few times its
// size).
func (e *Engine) MemoryBytes() int64 {
	return 2*vmBaseBytes + 4*e.scriptMem.Load() + 4*e.libraryMem.Load()
}

// vmMemory estimates one interpreter's memory, for gcinfo and
// collectgarbage("count").
func (e *Engine) vmMemory() int64 {
	return vmBaseBytes + 4*e.scriptMem.Load()
}
