package server

import "github.com/spillway/spillway/proxy/cmdtable"

func init() {
	register("command", func(c *Client, _ [][]byte) { cmdtable.WriteCommand(&c.w) })
	register("command|count", func(c *Client, _ [][]byte) { cmdtable.WriteCommandCount(&c.w) })
	register("command|info", func(c *Client, a [][]byte) { cmdtable.WriteCommandInfo(&c.w, a[2:]) })
	register("command|docs", func(c *Client, a [][]byte) { cmdtable.WriteCommandDocs(&c.w, a[2:]) })
	register("command|list", func(c *Client, a [][]byte) { cmdtable.WriteCommandList(&c.w, a[2:]) })
	register("command|getkeys", func(c *Client, a [][]byte) { cmdtable.WriteCommandGetKeys(&c.w, a[2:]) })
	register("command|getkeysandflags", func(c *Client, a [][]byte) { cmdtable.WriteCommandGetKeysAndFlags(&c.w, a[2:]) })
	register("command|help", func(c *Client, _ [][]byte) { c.help(commandHelp) })
}
