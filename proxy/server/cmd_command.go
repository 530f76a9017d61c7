package server

import "github.com/spillway/spillway/proxy/cmdtable"

func registerCommand(t *Table) {
	t.Register("command", func(x *Ctx, _ [][]byte) error { cmdtable.WriteCommand(x.W); return nil })
	t.Register("command|count", func(x *Ctx, _ [][]byte) error { cmdtable.WriteCommandCount(x.W); return nil })
	t.Register("command|info", func(x *Ctx, a [][]byte) error { cmdtable.WriteCommandInfo(x.W, a[2:]); return nil })
	t.Register("command|docs", func(x *Ctx, a [][]byte) error { cmdtable.WriteCommandDocs(x.W, a[2:]); return nil })
	t.Register("command|list", func(x *Ctx, a [][]byte) error { cmdtable.WriteCommandList(x.W, a[2:]); return nil })
	t.Register("command|getkeys", func(x *Ctx, a [][]byte) error {
		cmdtable.WriteCommandGetKeys(x.W, a[2:])
		return nil
	})
	t.Register("command|getkeysandflags", func(x *Ctx, a [][]byte) error {
		cmdtable.WriteCommandGetKeysAndFlags(x.W, a[2:])
		return nil
	})
	t.Register("command|help", HelpHandler(commandHelp))
}
