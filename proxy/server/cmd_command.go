package server

import "github.com/spillway/spillway/proxy/cmdtable"

func registerCommand(t *Table) {
	t.own("command", func(c *Client, _ [][]byte) { cmdtable.WriteCommand(&c.w) })
	t.own("command|count", func(c *Client, _ [][]byte) { cmdtable.WriteCommandCount(&c.w) })
	t.own("command|info", func(c *Client, a [][]byte) { cmdtable.WriteCommandInfo(&c.w, a[2:]) })
	t.own("command|docs", func(c *Client, a [][]byte) { cmdtable.WriteCommandDocs(&c.w, a[2:]) })
	t.own("command|list", func(c *Client, a [][]byte) { cmdtable.WriteCommandList(&c.w, a[2:]) })
	t.own("command|getkeys", func(c *Client, a [][]byte) { cmdtable.WriteCommandGetKeys(&c.w, a[2:]) })
	t.own("command|getkeysandflags", func(c *Client, a [][]byte) { cmdtable.WriteCommandGetKeysAndFlags(&c.w, a[2:]) })
	t.own("command|help", func(c *Client, _ [][]byte) { c.help(commandHelp) })
}
