// Package streams holds the stream commands of Redis 7.0 (XADD, XRANGE,
// XREAD, consumer groups, XINFO...): argument parsing, Redis's errors and
// replies, over the engine's streams (tiering.Stream, a tiering/stream
// model stored record by record). Register adds them to a server.Table;
// the command library (proxy/commands) calls it.
package streams

import (
	"strconv"
	"strings"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering/stream"
)

// Register adds the stream commands to t.
func Register(t *server.Table) {
	t.Register("xadd", cmdXAdd)
	t.Register("xtrim", cmdXTrim)
	t.Register("xdel", cmdXDel)
	t.Register("xlen", cmdXLen)
	t.Register("xrange", func(x *server.Ctx, a [][]byte) error { return cmdXRange(x, a, false) })
	t.Register("xrevrange", func(x *server.Ctx, a [][]byte) error { return cmdXRange(x, a, true) })
	t.Register("xsetid", cmdXSetID)
	t.Register("xread", cmdXRead)
	t.Register("xreadgroup", cmdXRead)
	t.Register("xgroup|create", cmdXGroupCreate)
	t.Register("xgroup|setid", cmdXGroupSetID)
	t.Register("xgroup|destroy", cmdXGroupDestroy)
	t.Register("xgroup|createconsumer", cmdXGroupCreateConsumer)
	t.Register("xgroup|delconsumer", cmdXGroupDelConsumer)
	t.Register("xgroup|help", func(x *server.Ctx, a [][]byte) error { return help(x, xgroupHelp) })
	t.Register("xack", cmdXAck)
	t.Register("xpending", cmdXPending)
	t.Register("xclaim", cmdXClaim)
	t.Register("xautoclaim", cmdXAutoClaim)
	t.Register("xinfo|stream", cmdXInfoStream)
	t.Register("xinfo|groups", cmdXInfoGroups)
	t.Register("xinfo|consumers", cmdXInfoConsumers)
	t.Register("xinfo|help", func(x *server.Ctx, a [][]byte) error { return help(x, xinfoHelp) })
}

const (
	errInvalidID = "ERR Invalid stream ID specified as stream command argument"
	errNoKey     = "ERR no such key"
)

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Prints this help.",
}

var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Prints this help.",
}

func help(x *server.Ctx, lines []string) error {
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
	return nil
}

// subcommandSyntax is Redis's addReplySubcommandSyntaxError.
func subcommandSyntax(args [][]byte) error {
	return resp.Err("ERR unknown subcommand or wrong number of arguments for '" + cstr.ErrArg(args[1]) +
		"'. Try " + strings.ToUpper(string(cstr.CString(args[0]))) + " HELP.")
}

// parseID parses a strict ID ("-" and "+" refused), missing seq 0.
func parseID(b []byte) (stream.ID, error) {
	id, _, ok := stream.ParseID(b, 0, true, false)
	if !ok {
		return id, resp.Err(errInvalidID)
	}
	return id, nil
}

// parseRangeID parses a range bound: "-", "+", an ID, or "(ID" exclusive
// (then incremented, or decremented for an end).
func parseRangeID(b []byte, missingSeq uint64, end bool) (stream.ID, error) {
	if len(b) > 1 && b[0] == '(' {
		id, _, ok := stream.ParseID(b[1:], missingSeq, true, false)
		if !ok {
			return id, resp.Err(errInvalidID)
		}
		if end {
			if id, ok = stream.Decr(id); !ok {
				return id, resp.Err("ERR invalid end ID for the interval")
			}
		} else if id, ok = stream.Incr(id); !ok {
			return id, resp.Err("ERR invalid start ID for the interval")
		}
		return id, nil
	}
	id, _, ok := stream.ParseID(b, missingSeq, false, false)
	if !ok {
		return id, resp.Err(errInvalidID)
	}
	return id, nil
}

// parseInt is getLongLongFromObjectOrReply.
func parseInt(b []byte, msg string) (int64, error) {
	n, ok := cstr.ParseInt(b)
	if !ok {
		if msg == "" {
			msg = strops.ErrNotInteger
		}
		return 0, resp.Err(msg)
	}
	return n, nil
}

func writeID(w *resp.Writer, id stream.ID) {
	var buf [48]byte
	w.Bulk(stream.AppendID(buf[:0], id))
}

// writeEntry writes [id, [field, value...]].
func writeEntry(w *resp.Writer, e *stream.Entry) {
	w.Array(2)
	writeID(w, e.ID)
	w.Array(len(e.Fields))
	for _, f := range e.Fields {
		w.Bulk(f)
	}
}

// nodeSettings returns stream-node-max-entries and -max-bytes.
func nodeSettings(x *server.Ctx) (entries, bytes int64) {
	v, _ := x.Config().Value("stream-node-max-entries")
	entries, _ = strconv.ParseInt(v, 10, 64)
	v, _ = x.Config().Value("stream-node-max-bytes")
	bytes, _ = strconv.ParseInt(v, 10, 64)
	return entries, bytes
}
