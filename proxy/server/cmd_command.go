package server

import (
	"sync"

	"github.com/spillway/spillway/proxy/cmdtable"
)

// registerCommand adds COMMAND and its subcommands. They describe the
// commands this server serves: in embedded mode those with a handler in
// the server's table (the command library's and the server's own), so a
// client probing capabilities is not told of commands it would find
// unknown; in upstream mode every command, since every command the table
// has is forwarded.
func registerCommand(t *Table) {
	var once sync.Once
	var embedded *cmdtable.View
	view := func(x *Ctx) *cmdtable.View {
		s := x.c.s
		if s.fwd != nil {
			return cmdtable.Full
		}
		// The table is complete and read-only once the server serves.
		once.Do(func() { embedded = cmdtable.NewView(s.table.Has) })
		return embedded
	}
	t.Register("command", func(x *Ctx, _ [][]byte) error { view(x).WriteCommand(x.W); return nil })
	t.Register("command|count", func(x *Ctx, _ [][]byte) error { view(x).WriteCommandCount(x.W); return nil })
	t.Register("command|info", func(x *Ctx, a [][]byte) error { view(x).WriteCommandInfo(x.W, a[2:]); return nil })
	t.Register("command|docs", func(x *Ctx, a [][]byte) error { view(x).WriteCommandDocs(x.W, a[2:]); return nil })
	t.Register("command|list", func(x *Ctx, a [][]byte) error { view(x).WriteCommandList(x.W, a[2:]); return nil })
	t.Register("command|getkeys", func(x *Ctx, a [][]byte) error {
		view(x).WriteCommandGetKeys(x.W, a[2:])
		return nil
	})
	t.Register("command|getkeysandflags", func(x *Ctx, a [][]byte) error {
		view(x).WriteCommandGetKeysAndFlags(x.W, a[2:])
		return nil
	})
	t.Register("command|help", HelpHandler(commandHelp))
}
