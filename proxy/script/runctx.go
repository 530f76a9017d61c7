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
