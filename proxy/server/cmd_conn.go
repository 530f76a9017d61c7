package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/strops"
)

func registerConn(t *Table) {
	t.own("ping", cmdPing)
	t.own("echo", cmdEcho)
	t.own("quit", cmdQuit)
	t.own("reset", cmdReset)
	t.own("hello", cmdHello)
	t.own("auth", cmdAuth)
	t.own("select", cmdSelect)
	t.own("client|id", cmdClientID)
	t.own("client|setname", cmdClientSetName)
	t.own("client|getname", cmdClientGetName)
	t.own("client|list", cmdClientList)
	t.own("client|info", cmdClientInfo)
	t.own("client|kill", cmdClientKill)
	t.own("client|pause", cmdClientPause)
	t.own("client|unpause", cmdClientUnpause)
	t.own("client|reply", cmdClientReply)
	t.own("client|help", func(c *Client, _ [][]byte) { c.help(clientHelp) })
	t.own("client|no-evict", cmdClientOnOff)
	t.own("client|unblock", cmdClientUnblock)
	t.own("client|getredir", func(c *Client, _ [][]byte) { c.w.Int(-1) })
}

// help writes a HELP reply: one status line per entry.
func (c *Client) help(lines []string) {
	c.w.Array(len(lines))
	for _, l := range lines {
		c.w.Simple(l)
	}
}

func eqFold(b []byte, s string) bool { return strings.EqualFold(string(b), s) }

func cmdPing(c *Client, args [][]byte) {
	if len(args) > 2 {
		c.err("ERR wrong number of arguments for 'ping' command")
		return
	}
	if c.subscribed && c.w.Proto == 2 {
		// Redis's reply in the RESP2 subscribed context.
		c.w.Array(2)
		c.w.BulkString("pong")
		if len(args) == 2 {
			c.w.Bulk(args[1])
		} else {
			c.w.BulkString("")
		}
		return
	}
	if len(args) == 2 {
		c.w.Bulk(args[1])
		return
	}
	c.w.Simple("PONG")
}

func cmdEcho(c *Client, args [][]byte) { c.w.Bulk(args[1]) }

func cmdQuit(c *Client, _ [][]byte) {
	c.w.OK()
	c.quit = true
}

func cmdReset(c *Client, _ [][]byte) {
	c.discardMulti()
	c.unwatchAll()
	c.resetPubSub()
	c.db = 0
	c.dbShown.Store(0)
	c.setProto(2)
	c.replyMode = replyOn
	c.mu.Lock()
	c.name = ""
	c.mu.Unlock()
	if c.s.cfg.RequirePass() != "" {
		c.authed = false
		c.applyLimits()
	}
	c.w.Simple("RESET")
}

func (c *Client) setProto(v int) {
	c.w.Proto = v
	c.protoVer.Store(int32(v))
}

// checkPassword authenticates user/pass against requirepass (the default
// user is the only user). It writes the error reply and reports false on
// failure.
func (c *Client) checkPassword(user, pass []byte) bool {
	required := c.s.cfg.RequirePass()
	if string(user) == "default" && (required == "" || string(pass) == required) {
		c.authed = true
		c.applyLimits()
		return true
	}
	c.err("WRONGPASS invalid username-password pair or user is disabled.")
	return false
}

func cmdAuth(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.err("ERR syntax error")
		return
	}
	if len(args) == 2 {
		if c.s.cfg.RequirePass() == "" {
			c.err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
			return
		}
		if c.checkPassword([]byte("default"), args[1]) {
			c.w.OK()
		}
		return
	}
	if c.checkPassword(args[1], args[2]) {
		c.w.OK()
	}
}

func cmdHello(c *Client, args [][]byte) {
	proto := int64(c.w.Proto)
	if len(args) >= 2 {
		v, ok := cstr.ParseInt(args[1])
		if !ok {
			c.err("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.err("NOPROTO unsupported protocol version")
			return
		}
		proto = v
	}
	var user, pass, name []byte
	var setName bool
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case eqFold(args[i], "auth") && more >= 2:
			user, pass = args[i+1], args[i+2]
			i += 2
		case eqFold(args[i], "setname") && more >= 1:
			name, setName = args[i+1], true
			i++
		default:
			c.err("ERR Syntax error in HELLO option '" + trunc(args[i]) + "'")
			return
		}
	}
	if user != nil && !c.checkPassword(user, pass) {
		return
	}
	if !c.authed {
		c.err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName && !c.setName(name) {
		return
	}
	c.setProto(int(proto))
	w := &c.w
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(RedisVersion)
	w.BulkString("proto")
	w.Int(proto)
	w.BulkString("id")
	w.Int(c.id)
	w.BulkString("mode")
	w.BulkString("standalone")
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("modules")
	w.Array(0)
}

func cmdSelect(c *Client, args [][]byte) {
	db, ok := cstr.ParseInt(args[1])
	if !ok {
		c.err("ERR value is not an integer or out of range")
		return
	}
	if db < 0 || db >= int64(c.s.engine.Databases()) {
		c.err("ERR DB index is out of range")
		return
	}
	c.db = int(db)
	c.dbShown.Store(int32(db))
	c.w.OK()
}

func cmdClientID(c *Client, _ [][]byte) { c.w.Int(c.id) }

// setName validates and sets the connection name; on a bad name it writes
// Redis's error and reports false.
func (c *Client) setName(name []byte) bool {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			c.err("ERR Client names cannot contain spaces, newlines or special characters.")
			return false
		}
	}
	c.mu.Lock()
	c.name = string(name)
	c.mu.Unlock()
	return true
}

func cmdClientSetName(c *Client, args [][]byte) {
	if c.setName(args[2]) {
		c.w.OK()
	}
}

func cmdClientGetName(c *Client, _ [][]byte) {
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if name == "" {
		c.w.Null()
		return
	}
	c.w.BulkString(name)
}

// describe formats one CLIENT LIST line as Redis 7.0 does. Fields Spillway
// has no equivalent for carry Redis's idle values.
func (c *Client) describe(sb *strings.Builder, now time.Time) {
	c.mu.Lock()
	name, user := c.name, c.user
	c.mu.Unlock()
	cmd := "NULL"
	if last := c.lastCmd.Load(); last != nil {
		cmd = last.Name
	}
	age := int64(now.Sub(c.created) / time.Second)
	idle := (now.UnixMilli() - c.lastIO.Load()) / 1000
	laddr := c.nc.LocalAddr().String()
	sb.WriteString("id=" + strconv.FormatInt(c.id, 10))
	sb.WriteString(" addr=" + c.nc.RemoteAddr().String())
	sb.WriteString(" laddr=" + laddr)
	sb.WriteString(" fd=" + strconv.FormatInt(c.id+7, 10))
	sb.WriteString(" name=" + name)
	sb.WriteString(" age=" + strconv.FormatInt(age, 10))
	sb.WriteString(" idle=" + strconv.FormatInt(idle, 10))
	sub, psub, ssub := c.nSub.Load(), c.nPSub.Load(), c.nSSub.Load()
	flags := " flags="
	if sub+psub+ssub > 0 {
		flags += "P"
	}
	multi := c.multiLen.Load() - 1
	if multi >= 0 {
		flags += "x"
	}
	if c.blocked.Load() {
		flags += "b"
	}
	if flags == " flags=" {
		flags += "N"
	}
	sb.WriteString(flags + " db=" + strconv.Itoa(int(c.dbShown.Load())))
	sb.WriteString(" sub=" + strconv.Itoa(int(sub)) + " psub=" + strconv.Itoa(int(psub)) + " ssub=" + strconv.Itoa(int(ssub)))
	sb.WriteString(" multi=" + strconv.Itoa(int(multi)) + " qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r")
	sb.WriteString(" cmd=" + cmd)
	sb.WriteString(" user=" + user)
	sb.WriteString(" redir=-1 resp=" + strconv.Itoa(int(c.protoVer.Load())))
	sb.WriteByte('\n')
}

// clientType is the client's type for CLIENT LIST/KILL TYPE: "pubsub"
// while it subscribes to anything, else "normal".
func (c *Client) clientType() string {
	if c.nSub.Load()+c.nPSub.Load()+c.nSSub.Load() > 0 {
		return "pubsub"
	}
	return "normal"
}

func cmdClientList(c *Client, args [][]byte) {
	var ids map[int64]bool
	typeFilter := ""
	for i := 2; i < len(args); i++ {
		switch {
		case eqFold(args[i], "type") && i+1 < len(args):
			t := strings.ToLower(string(args[i+1]))
			switch t {
			case "normal", "master", "replica", "slave", "pubsub":
			default:
				c.err("ERR Unknown client type '" + trunc(args[i+1]) + "'")
				return
			}
			typeFilter = t
			i++
		case eqFold(args[i], "id") && i+1 < len(args):
			ids = map[int64]bool{}
			for i++; i < len(args); i++ {
				id, ok := cstr.ParseInt(args[i])
				if !ok || id <= 0 {
					c.err("ERR Invalid client ID")
					return
				}
				ids[id] = true
			}
		default:
			c.err("ERR syntax error")
			return
		}
	}
	clients := c.s.clientList()
	sortClients(clients)
	var sb strings.Builder
	now := time.Now()
	for _, cl := range clients {
		if ids != nil && !ids[cl.id] {
			continue
		}
		if typeFilter != "" && typeFilter != cl.clientType() {
			continue
		}
		cl.describe(&sb, now)
	}
	c.w.Verbatim("txt", []byte(sb.String()))
}

func sortClients(cl []*Client) {
	for i := 1; i < len(cl); i++ {
		for j := i; j > 0 && cl[j].id < cl[j-1].id; j-- {
			cl[j], cl[j-1] = cl[j-1], cl[j]
		}
	}
}

func cmdClientInfo(c *Client, _ [][]byte) {
	var sb strings.Builder
	c.describe(&sb, time.Now())
	c.w.Verbatim("txt", []byte(sb.String()))
}

func cmdClientKill(c *Client, args [][]byte) {
	if len(args) == 3 {
		// Old form: CLIENT KILL addr:port.
		for _, cl := range c.s.clientList() {
			if cl.nc.RemoteAddr().String() == string(args[2]) {
				c.killClient(cl)
				c.w.OK()
				return
			}
		}
		c.err("ERR No such client")
		return
	}
	if len(args)%2 != 0 {
		c.err("ERR syntax error")
		return
	}
	var id int64
	var addr, laddr, user, typ string
	skipMe := true
	for i := 2; i < len(args); i += 2 {
		v := args[i+1]
		switch {
		case eqFold(args[i], "id"):
			n, ok := cstr.ParseInt(v)
			if !ok || n <= 0 {
				c.err("ERR client-id should be greater than 0")
				return
			}
			id = n
		case eqFold(args[i], "type"):
			typ = strings.ToLower(string(v))
			switch typ {
			case "normal", "master", "replica", "slave", "pubsub":
			default:
				c.err("ERR Unknown client type '" + trunc(v) + "'")
				return
			}
		case eqFold(args[i], "addr"):
			addr = string(v)
		case eqFold(args[i], "laddr"):
			laddr = string(v)
		case eqFold(args[i], "user"):
			user = string(v)
			if user != "default" {
				c.err("ERR No such user '" + trunc(v) + "'")
				return
			}
		case eqFold(args[i], "skipme"):
			switch {
			case eqFold(v, "yes"):
				skipMe = true
			case eqFold(v, "no"):
				skipMe = false
			default:
				c.err("ERR syntax error")
				return
			}
		default:
			c.err("ERR syntax error")
			return
		}
	}
	killed := 0
	for _, cl := range c.s.clientList() {
		switch {
		case id != 0 && cl.id != id,
			addr != "" && cl.nc.RemoteAddr().String() != addr,
			laddr != "" && cl.nc.LocalAddr().String() != laddr,
			typ != "" && typ != cl.clientType(),
			skipMe && cl == c:
			continue
		}
		c.killClient(cl)
		killed++
	}
	c.w.Int(int64(killed))
}

// killClient closes cl; killing oneself closes after the reply.
func (c *Client) killClient(cl *Client) {
	if cl == c {
		c.quit = true
		return
	}
	cl.kill()
}

func cmdClientPause(c *Client, args [][]byte) {
	ms, ok := cstr.ParseInt(args[2])
	if !ok {
		c.err("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.err("ERR timeout is negative")
		return
	}
	all := true
	if len(args) == 4 {
		switch {
		case eqFold(args[3], "write"):
			all = false
		case eqFold(args[3], "all"):
		default:
			c.err("ERR syntax error")
			return
		}
	} else if len(args) > 4 {
		c.err("ERR syntax error")
		return
	}
	c.s.pause(time.Duration(ms)*time.Millisecond, all)
	c.w.OK()
}

func cmdClientUnpause(c *Client, _ [][]byte) {
	c.s.unpause()
	c.w.OK()
}

func cmdClientReply(c *Client, args [][]byte) {
	switch {
	case eqFold(args[2], "on"):
		c.replyMode = replyOn
		c.w.OK()
	case eqFold(args[2], "off"):
		c.replyMode = replyOff
	case eqFold(args[2], "skip"):
		if c.replyMode != replyOff {
			c.replyMode = replySkipNext
		}
	default:
		c.err("ERR syntax error")
	}
}

func cmdClientOnOff(c *Client, args [][]byte) {
	if eqFold(args[2], "on") || eqFold(args[2], "off") {
		c.w.OK()
		return
	}
	c.err("ERR syntax error")
}

func cmdClientUnblock(c *Client, args [][]byte) {
	withError := false
	if len(args) == 4 {
		switch {
		case eqFold(args[3], "timeout"):
		case eqFold(args[3], "error"):
			withError = true
		default:
			c.err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := cstr.ParseInt(args[2])
	if !ok {
		c.err("ERR value is not an integer or out of range")
		return
	}
	c.w.Int(b2i(c.s.blocking.unblock(id, withError)))
}

// cmdClientSetInfo implements Redis 7.2's CLIENT SETINFO LIB-NAME|LIB-VER,
// which client libraries send when they connect. It is not in Redis 7.0's
// command table, so dispatch routes it here directly.
func cmdClientSetInfo(c *Client, args [][]byte) {
	if len(args) != 4 {
		c.err("ERR wrong number of arguments for 'client|setinfo' command")
		return
	}
	if !c.authed {
		c.err("NOAUTH Authentication required.")
		return
	}
	attr := args[2]
	if !eqFold(attr, "lib-name") && !eqFold(attr, "lib-ver") {
		c.err("ERR Unrecognized option '" + trunc(attr) + "'")
		return
	}
	for _, ch := range args[3] {
		if ch < '!' || ch > '~' {
			c.err("ERR " + strops.LowerASCII(attr) + " cannot contain spaces, newlines or special characters.")
			return
		}
	}
	c.mu.Lock()
	if eqFold(attr, "lib-name") {
		c.libName = string(args[3])
	} else {
		c.libVer = string(args[3])
	}
	c.mu.Unlock()
	c.w.OK()
}
