package commands

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
)

// The ACL command, as Redis 7.0's aclCommand: users live in the server's
// acl.Registry (in memory; ACL SAVE/LOAD with an aclfile), the server
// checks every command against them.
func registerACL(t *server.Table) {
	t.Register("acl|setuser", cmdACLSetUser)
	t.Register("acl|getuser", cmdACLGetUser)
	t.Register("acl|deluser", cmdACLDelUser)
	t.Register("acl|list", func(x *server.Ctx, _ [][]byte) error { return aclList(x, false) })
	t.Register("acl|users", func(x *server.Ctx, _ [][]byte) error { return aclList(x, true) })
	t.Register("acl|whoami", func(x *server.Ctx, _ [][]byte) error { x.W.BulkString(x.User().Name()); return nil })
	t.Register("acl|cat", cmdACLCat)
	t.Register("acl|genpass", cmdACLGenPass)
	t.Register("acl|dryrun", cmdACLDryRun)
	t.Register("acl|log", cmdACLLog)
	t.Register("acl|load", cmdACLLoad)
	t.Register("acl|save", cmdACLSave)
	t.Register("acl|help", server.HelpHandler(aclHelp))
}

var aclHelp = []string{
	"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
	"HELP",
	"    Prints this help.",
}

// safeErr is addReplyErrorSdsSafe: an error text whose line breaks
// become spaces, with the ERR code.
func safeErr(msg string) error {
	return resp.Err("ERR " + strings.NewReplacer("\r", " ", "\n", " ").Replace(msg))
}

// subcommandSyntax is addReplySubcommandSyntaxError: too many arguments
// for a subcommand whose arity allows any number.
func subcommandSyntax(args [][]byte) error {
	return resp.Err("ERR unknown subcommand or wrong number of arguments for '" + cstr.ErrArg(args[1]) +
		"'. Try " + strings.ToUpper(string(cstr.CString(args[0]))) + " HELP.")
}

func cmdACLSetUser(x *server.Ctx, args [][]byte) error {
	ops := make([]string, len(args)-3)
	for i, a := range args[3:] {
		ops[i] = string(a)
	}
	u, old, err := x.ACL().SetUser(string(args[2]), ops)
	if err != nil {
		return safeErr(err.Error())
	}
	x.UserChanged(u, old)
	x.W.OK()
	return nil
}

func cmdACLGetUser(x *server.Ctx, args [][]byte) error {
	u := x.ACL().Get(string(args[2]))
	if u == nil {
		x.W.Null()
		return nil
	}
	r := u.Rules()
	w := x.W
	w.Map(6)
	w.BulkString("flags")
	flags := r.Flags()
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("passwords")
	w.Array(len(r.Passwords()))
	for _, p := range r.Passwords() {
		w.BulkString(p)
	}
	writeSelector(w, r, 0)
	w.BulkString("selectors")
	w.Array(r.NumSelectors())
	for i := 1; i <= r.NumSelectors(); i++ {
		w.Map(3)
		writeSelector(w, r, i)
	}
	return nil
}

func writeSelector(w *resp.Writer, r *acl.Rules, i int) {
	cmds, keys, chans := r.Selector(i)
	w.BulkString("commands")
	w.BulkString(cmds)
	w.BulkString("keys")
	w.BulkString(keys)
	w.BulkString("channels")
	w.BulkString(chans)
}

func cmdACLDelUser(x *server.Ctx, args [][]byte) error {
	names := make([]string, len(args)-2)
	for i, a := range args[2:] {
		names[i] = string(a)
	}
	gone, err := x.ACL().Delete(names)
	if err != nil {
		return safeErr(err.Error())
	}
	x.UsersDeleted(gone)
	x.W.Int(int64(len(gone)))
	return nil
}

func aclList(x *server.Ctx, namesOnly bool) error {
	users := x.ACL().Users()
	x.W.Array(len(users))
	for _, u := range users {
		if namesOnly {
			x.W.BulkString(u.Name())
		} else {
			x.W.BulkString("user " + u.Name() + " " + u.Rules().Describe())
		}
	}
	return nil
}

func cmdACLCat(x *server.Ctx, args [][]byte) error {
	if len(args) > 3 {
		return subcommandSyntax(args)
	}
	if len(args) == 2 {
		cats := acl.Categories()
		x.W.Array(len(cats))
		for _, c := range cats {
			x.W.BulkString(c)
		}
		return nil
	}
	names, ok := acl.CategoryCommands(string(args[2]))
	if !ok {
		return resp.Err("ERR Unknown category '" + cstr.ErrArg(args[2]) + "'")
	}
	x.W.Array(len(names))
	for _, n := range names {
		x.W.BulkString(n)
	}
	return nil
}

// genpassMaxBits is Redis's GENPASS_MAX_BITS.
const genpassMaxBits = 4096

func cmdACLGenPass(x *server.Ctx, args [][]byte) error {
	if len(args) > 3 {
		return subcommandSyntax(args)
	}
	bits := int64(256)
	if len(args) == 3 {
		n, ok := cstr.ParseInt(args[2])
		if !ok {
			return resp.Err("ERR value is not an integer or out of range")
		}
		bits = n
	}
	if bits <= 0 || bits > genpassMaxBits {
		return resp.Err("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
	}
	chars := (bits + 3) / 4
	buf := make([]byte, (chars+1)/2)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	x.W.BulkString(hex.EncodeToString(buf)[:chars])
	return nil
}

func cmdACLDryRun(x *server.Ctx, args [][]byte) error {
	u := x.ACL().Get(string(args[2]))
	if u == nil {
		return resp.Err("ERR User '" + string(cstr.CString(args[2])) + "' not found")
	}
	cmdArgs := args[3:]
	cmd := cmdtable.LookupArgs(cmdArgs)
	if cmd == nil {
		return resp.Err("ERR Command '" + string(cstr.CString(args[3])) + "' not found")
	}
	if !cmd.ArityOK(len(cmdArgs)) {
		return resp.Err("ERR wrong number of arguments for '" + cmd.Name + "' command")
	}
	reason, pos := u.Rules().Check(cmd, cmdArgs)
	switch reason {
	case acl.OK:
		x.W.OK()
	case acl.DeniedCmd:
		x.W.BulkString("This user has no permissions to run the '" + cmd.Name + "' command")
	case acl.DeniedKey:
		x.W.BulkString("This user has no permissions to access the '" + string(cstr.CString(cmdArgs[pos])) + "' key")
	default:
		x.W.BulkString("This user has no permissions to access the '" + string(cstr.CString(cmdArgs[pos])) + "' channel")
	}
	return nil
}

func cmdACLLog(x *server.Ctx, args [][]byte) error {
	if len(args) > 3 {
		return subcommandSyntax(args)
	}
	count := int64(10)
	if len(args) == 3 {
		if cstr.EqualFold(args[2], "reset") {
			x.ACL().Log.Reset()
			x.W.OK()
			return nil
		}
		n, ok := cstr.ParseInt(args[2])
		if !ok {
			return resp.Err("ERR value is not an integer or out of range")
		}
		count = max(n, 0)
	}
	entries := x.ACL().Log.Entries(int(min(count, 1<<30)))
	now := time.Now().UnixMilli()
	w := x.W
	w.Array(len(entries))
	for _, e := range entries {
		w.Map(7)
		w.BulkString("count")
		w.Int(e.Count)
		w.BulkString("reason")
		w.BulkString(e.Reason.String())
		w.BulkString("context")
		w.BulkString(e.Context.String())
		w.BulkString("object")
		w.BulkString(e.Object)
		w.BulkString("username")
		w.BulkString(e.Username)
		w.BulkString("age-seconds")
		w.Double(float64(now-e.Millis) / 1000)
		w.BulkString("client-info")
		w.BulkString(e.ClientInfo)
	}
	return nil
}

// errNoACLFile is Redis's reply to ACL LOAD and SAVE without an aclfile.
var errNoACLFile = resp.Err("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")

func aclFile(x *server.Ctx) string {
	f, _ := x.Config().Value("aclfile")
	return f
}

func cmdACLLoad(x *server.Ctx, _ [][]byte) error {
	file := aclFile(x)
	if file == "" {
		return errNoACLFile
	}
	users, err := acl.LoadFile(file, x.ACL().PubSubDefault())
	if err != nil {
		return safeErr(err.Error())
	}
	gone := x.ACL().Replace(users)
	x.UsersDeleted(gone)
	x.UserChanged(x.ACL().Default(), nil)
	x.W.OK()
	return nil
}

func cmdACLSave(x *server.Ctx, _ [][]byte) error {
	file := aclFile(x)
	if file == "" {
		return errNoACLFile
	}
	if err := x.ACL().SaveFile(file); err != nil {
		return resp.Err("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
	}
	x.W.OK()
	return nil
}
