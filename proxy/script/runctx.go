package script

import (
	"context"
	"errors"

	lua "github.com/yuin/gopher-lua"
)

// runContext is the context a script runs under. gopher-lua polls Done
// before every instruction; besides cancellation (SCRIPT KILL, FUNCTION
// LOAD's timeout) it reports a call depth beyond C Lua's limit, so that the
// script gets Lua's "stack overflow" error while there is still room on
// gopher-lua's call stack for the error handler (gopher-lua's own overflow
// is a Go panic no handler can see).
//
// C Lua's limit depends on history: the CallInfo array of a lua_State
// starts with 8 entries and doubles as calls nest; growing it beyond
// LUAI_MAXCALLS (20000) raises "stack overflow", after which the array is
// cut back to exactly 20000 entries. So a fresh interpreter overflows at
// 16385 nested frames and, once it has overflowed, at 20001. luaVM.ciSize
// models that array.
type runContext struct {
	context.Context
	L        *lua.LState
	vm       *luaVM
	overflow bool
}

var (
	errStackOverflow = errors.New("stack overflow")
	closedChan       = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
)

// Lua 5.1's CallInfo limits (BASIC_CI_SIZE, LUAI_MAXCALLS).
const (
	basicCISize = 8
	maxCalls    = 20000
)

func newRunContext(parent context.Context, vm *luaVM) *runContext {
	return &runContext{Context: parent, L: vm.L, vm: vm}
}

// Done reports cancellation, or a call depth C Lua would refuse.
func (c *runContext) Done() <-chan struct{} {
	c.overflow = false
	// C Lua's CallInfo 0 is the C caller; gopher-lua's first frame is
	// the script's.
	if f := currentFrame(c.L); f != nil && f.Idx+2 > c.vm.ciSize {
		c.vm.ciSize *= 2
		if c.vm.ciSize > maxCalls {
			c.vm.ciSize = maxCalls // restore_stack_limit, once the error is caught
			c.vm.overflowAt = f
			c.overflow = true
			return closedChan
		}
	}
	return c.Context.Done()
}

// Err is the error gopher-lua raises when Done fires.
func (c *runContext) Err() error {
	if c.overflow {
		return errStackOverflow
	}
	return c.Context.Err()
}

// watchThreads makes coroutine.create and coroutine.wrap note that the run
// created a coroutine (see endRunContext).
func (v *luaVM) watchThreads(g *lua.LTable) {
	co, ok := g.RawGetString("coroutine").(*lua.LTable)
	if !ok {
		return
	}
	for _, name := range []string{"create", "wrap"} {
		orig, ok := co.RawGetString(name).(*lua.LFunction)
		if !ok || orig.GFunction == nil {
			continue
		}
		gf := orig.GFunction
		co.RawSetString(name, v.L.NewFunction(func(L *lua.LState) int {
			v.threads = true
			return gf(L)
		}))
	}
}

// close releases the interpreter (SCRIPT FLUSH, FUNCTION FLUSH).
func (v *luaVM) close() {
	if v.cancel != nil {
		v.cancel()
		v.cctx, v.cancel = nil, nil
	}
	v.L.Close()
}

// newRun returns the interpreter's run context, for the caller to fill
// (the caller holds runMu).
func (v *luaVM) newRun() *runCtx { return &v.rcBuf }

// runContext returns the cancellation context of a run, and the function
// that cancels it.
func (v *luaVM) runContext() (*runContext, context.CancelFunc) {
	if v.cctx == nil {
		ctx, cancel := context.WithCancel(context.Background())
		v.cctx, v.cancel = newRunContext(ctx, v), cancel
	}
	return v.cctx, v.cancel
}

// endRunContext is called at a run's end, once the run is no longer the
// Engine's current one (no Kill can reach it): the context is dropped if it
// was cancelled or if coroutines were created under it.
func (v *luaVM) endRunContext() {
	if v.cctx != nil && (v.threads || v.cctx.Context.Err() != nil) {
		v.cancel()
		v.cctx, v.cancel = nil, nil
	}
	v.threads = false
}
