package server

import "github.com/spillway/spillway/proxy/cmdtable"

// Redis 7.0's protected commands: DEBUG and MODULE LOAD/LOADEX/UNLOAD,
// which a stock redis-server refuses (enable-debug-command and
// enable-module-command default to "no") right after the arity check,
// before authentication, and inside MULTI by failing the transaction.
// Spillway has no debugger and loads no modules, so it refuses them as
// such a server does; MODULE LIST (none loaded) and MODULE HELP answer.
// In upstream mode the upstream answers them. With SPILLWAY_TEST_HOOKS=1
// DEBUG's test hooks (testhooks.go) are served instead.

var (
	cmdDebug        = cmdtable.LookupFullName([]byte("debug"))
	cmdModuleLoad   = cmdtable.LookupFullName([]byte("module|load"))
	cmdModuleLoadEx = cmdtable.LookupFullName([]byte("module|loadex"))
	cmdModuleUnload = cmdtable.LookupFullName([]byte("module|unload"))
)

// protectedRefusal returns the error Redis 7.0 replies to cmd when its
// protected commands are disabled, or "" if cmd may run.
func (c *Client) protectedRefusal(cmd *cmdtable.Command) string {
	switch cmd {
	case cmdDebug:
		if c.s.table.Has(cmdDebug) {
			return "" // the test hooks
		}
		return protectedMsg("DEBUG", "enable-debug-command")
	case cmdModuleLoad, cmdModuleLoadEx, cmdModuleUnload:
		return protectedMsg("MODULE", "enable-module-command")
	}
	return ""
}

func protectedMsg(name, option string) string {
	return "ERR " + name + " command not allowed. If the " + option + " option is set to \"local\", " +
		"you can run it from a local connection, otherwise you need to set this option " +
		"in the configuration file, and then restart the server."
}

// moduleHelp is MODULE HELP's reply, as redis-server 7.0.15 sends it.
var moduleHelp = []string{
	"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LIST",
	"    Return a list of loaded modules.",
	"LOAD <path> [<arg> ...]",
	"    Load a module library from <path>, passing to it any optional arguments.",
	"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
	"    Load a module library from <path>, while passing it module configurations and optional arguments.",
	"UNLOAD <name>",
	"    Unload a module.",
	"HELP",
	"    Prints this help.",
}

// registerModule adds MODULE LIST (no module is ever loaded) and HELP.
func registerModule(t *Table) {
	t.Register("module|list", func(x *Ctx, _ [][]byte) error {
		x.W.Array(0)
		return nil
	})
	t.Register("module|help", HelpHandler(moduleHelp))
}
