package server

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/proxy/tracking"
	"github.com/spillway/spillway/tiering"
)

func registerConn(t *Table) {
	t.Register("ping", cmdPing)
	t.Register("echo", cmdEcho)
	t.Register("quit", cmdQuit)
	t.Register("reset", cmdReset)
	t.Register("hello", cmdHello)
	t.Register("auth", cmdAuth)
	t.Register("select", cmdSelect)
	t.Register("client|id", cmdClientID)
	t.Register("client|setname", cmdClientSetName)
	t.Register("client|getname", cmdClientGetName)
	t.Register("client|list", cmdClientList)
	t.Register("client|info", cmdClientInfo)
	t.Register("client|kill", cmdClientKill)
	t.Register("client|pause", cmdClientPause)
	t.Register("client|unpause", cmdClientUnpause)
	t.Register("client|reply", cmdClientReply)
	t.Register("client|help", HelpHandler(clientHelp))
	t.Register("client|no-evict", cmdClientNoEvict)
	t.Register("client|unblock", cmdClientUnblock)
	t.Register("monitor", cmdMonitor)
	t.Register("client|tracking", cmdClientTracking)
	t.Register("client|caching", cmdClientCaching)
	t.Register("client|getredir", cmdClientGetRedir)
	t.Register("client|trackinginfo", cmdClientTrackingInfo)
}

// HelpHandler returns a HELP subcommand's handler: it replies lines as an
// array of status replies, as Redis sends them.
func HelpHandler(lines []string) Handler {
	return func(x *Ctx, _ [][]byte) error {
		x.W.Array(len(lines))
		for _, l := range lines {
			x.W.Simple(l)
		}
		return nil
	}
}

func cmdPing(x *Ctx, args [][]byte) error {
	c := x.c
	if len(args) > 2 {
		return resp.Err("ERR wrong number of arguments for 'ping' command")
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
		return nil
	}
	if len(args) == 2 {
		c.w.Bulk(args[1])
		return nil
	}
	c.w.Simple("PONG")
	return nil
}

func cmdEcho(x *Ctx, args [][]byte) error {
	x.W.Bulk(args[1])
	return nil
}

// cmdQuit replies OK and closes the connection once the reply is sent.
func cmdQuit(x *Ctx, _ [][]byte) error {
	x.W.OK()
	x.c.quit = true
	return nil
}

func cmdReset(x *Ctx, _ [][]byte) error {
	c := x.c
	c.discardMulti()
	c.dropWatches() // RESET runs during a busy script: no wait for its lock
	c.resetPubSub()
	c.stopMonitor()
	if c.trk.On() {
		c.s.trk.Disable(c.trk)
		go c.s.refreshObserving() // not under a busy script's lock
	}
	c.db = 0
	c.dbShown.Store(0)
	c.setProto(2)
	c.replyMode = replyOn
	c.mu.Lock()
	c.name = ""
	c.mu.Unlock()
	c.setUser(c.s.acl.Default(), defaultNeedsNoAuth(c.s.acl))
	c.w.Simple("RESET")
	return nil
}

func (c *Client) setProto(v int) {
	c.w.Proto = v
	c.protoVer.Store(int32(v))
}

// errWrongPass is the reply to a failed authentication.
var errWrongPass = resp.Err("WRONGPASS invalid username-password pair or user is disabled.")

// checkPassword authenticates user/pass against the ACL users: on success
// the client is authenticated as the user; on failure the attempt is in
// ACL LOG (object: args[0] as sent) and the error reply is returned.
func (c *Client) checkPassword(user, pass []byte, args [][]byte) error {
	if u := c.s.acl.Authenticate(user, pass); u != nil {
		c.setUser(u, true)
		return nil
	}
	ctx := acl.CtxTopLevel
	if c.multi.active || c.group != nil {
		ctx = acl.CtxMulti
	}
	c.logDenial(c, acl.DeniedAuth, ctx, string(args[0]), string(user), args)
	return errWrongPass
}

func cmdAuth(x *Ctx, args [][]byte) error {
	c := x.c
	if len(args) > 3 {
		return resp.Err("ERR syntax error")
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 2 {
		if c.s.acl.Default().Rules().NoPass() {
			return resp.Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		}
	} else {
		user, pass = args[1], args[2]
	}
	if err := c.checkPassword(user, pass, args); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// cmdHello switches the protocol and replies the server's description in
// the new one; an error (bad version or option, failed AUTH or SETNAME)
// leaves the protocol as it was, though a successful AUTH option before a
// bad SETNAME has authenticated the client, as in Redis.
func cmdHello(x *Ctx, args [][]byte) error {
	c := x.c
	proto := int64(c.w.Proto)
	if len(args) >= 2 {
		v, ok := cstr.ParseInt(args[1])
		if !ok {
			return resp.Err("ERR Protocol version is not an integer or out of range")
		}
		if v < 2 || v > 3 {
			return resp.Err("NOPROTO unsupported protocol version")
		}
		proto = v
	}
	var user, pass, name []byte
	var setName bool
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case cstr.EqualFold(args[i], "auth") && more >= 2:
			user, pass = args[i+1], args[i+2]
			i += 2
		case cstr.EqualFold(args[i], "setname") && more >= 1:
			name, setName = args[i+1], true
			i++
		default:
			return resp.Err("ERR Syntax error in HELLO option '" + cstr.ErrArg(args[i]) + "'")
		}
	}
	if user != nil {
		if err := c.checkPassword(user, pass, args); err != nil {
			return err
		}
	}
	if !c.authed && !defaultNeedsNoAuth(c.s.acl) {
		return resp.Err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
	}
	if setName {
		if err := c.setName(name); err != nil {
			return err
		}
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
	return nil
}

func cmdSelect(x *Ctx, args [][]byte) error {
	c := x.c
	db, ok := cstr.ParseInt(args[1])
	if !ok {
		return resp.Err("ERR value is not an integer or out of range")
	}
	if db < 0 || db >= int64(c.s.engine.Databases()) {
		return resp.Err("ERR DB index is out of range")
	}
	c.db = int(db)
	c.dbShown.Store(int32(db))
	c.w.OK()
	return nil
}

func cmdClientID(x *Ctx, _ [][]byte) error {
	x.W.Int(x.c.id)
	return nil
}

// setName validates and sets the connection name; a bad name is left
// unset and Redis's error returned.
func (c *Client) setName(name []byte) error {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return resp.Err("ERR Client names cannot contain spaces, newlines or special characters.")
		}
	}
	c.mu.Lock()
	c.name = string(name)
	c.mu.Unlock()
	return nil
}

func cmdClientSetName(x *Ctx, args [][]byte) error {
	if err := x.c.setName(args[2]); err != nil {
		return err
	}
	x.W.OK()
	return nil
}

func cmdClientGetName(x *Ctx, _ [][]byte) error {
	c := x.c
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if name == "" {
		c.w.Null()
		return nil
	}
	c.w.BulkString(name)
	return nil
}

// describe formats one CLIENT LIST line as Redis 7.0's catClientInfoString
// does, with Spillway's values: the query buffer is the request reader's
// (the calling client's as it stands, another's as of its last wait for
// input), argv-mem the current command's argument bytes (the caller's;
// another client is between commands), omem what waits in a Pub/Sub or
// MONITOR client's output queue, tot-mem the sum of those with the
// client's fixed part. rbs and rbp carry Redis's values for an idle reply
// buffer: Spillway's reply buffer is a growable slice with no static part.
func (c *Client) describe(sb *strings.Builder, self *Client, args [][]byte, now time.Time) {
	c.mu.Lock()
	name, user := c.name, c.user.Name()
	c.mu.Unlock()
	cmd := "NULL"
	if last := c.lastCmd.Load(); last != nil {
		cmd = last.Name
	}
	age := int64(now.Sub(c.created) / time.Second)
	idle := (now.UnixMilli() - c.lastIO.Load()) / 1000
	sub, psub, ssub := c.nSub.Load(), c.nPSub.Load(), c.nSSub.Load()
	flags := ""
	if c.replica.Load() {
		flags += "S"
	}
	if c.monitoring.Load() {
		flags += "O"
	}
	if c.ml != nil {
		flags += "M" // the master client (commit.go)
	}
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
	flags += c.s.trk.ListFlags(c.trk)
	if c.noEvict.Load() {
		flags += "e"
	}
	if flags == "" {
		flags = "N"
	}
	qbuf, qfree := int64(c.qbufUsed.Load()), int64(c.qbufFree.Load())
	var argv int64
	if c == self {
		u, f := c.rd.QueryBuf()
		qbuf, qfree = int64(u), int64(f)
		argv = argvMem(args)
	}
	multiMem := c.multiMem.Load()
	var omem int64
	// c.out is set before the monitoring flag and the subscription
	// counters are (atomics): another client reads it only after them.
	if c == self || c.monitoring.Load() || sub+psub+ssub > 0 {
		if q := c.out; q != nil {
			q.mu.Lock()
			omem = int64(len(q.buf) + len(q.held) + q.writing)
			q.mu.Unlock()
		}
	}
	const rbs = 16384
	tot := int64(unsafe.Sizeof(*c)) + qbuf + qfree + argv + multiMem + omem + rbs
	b := make([]byte, 0, 320)
	b = append(b, "id="...)
	b = strconv.AppendInt(b, c.id, 10)
	b = append(b, " addr="...)
	b = append(b, c.nc.RemoteAddr().String()...)
	b = append(b, " laddr="...)
	b = append(b, c.nc.LocalAddr().String()...)
	b = append(b, " fd="...)
	b = strconv.AppendInt(b, c.id+7, 10)
	b = append(b, " name="...)
	b = append(b, name...)
	for _, f := range []struct {
		k string
		v int64
	}{{"age", age}, {"idle", idle}} {
		b = append(b, ' ')
		b = append(b, f.k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, f.v, 10)
	}
	b = append(b, " flags="...)
	b = append(b, flags...)
	for _, f := range []struct {
		k string
		v int64
	}{
		{"db", int64(c.dbShown.Load())}, {"sub", int64(sub)}, {"psub", int64(psub)}, {"ssub", int64(ssub)},
		{"multi", int64(multi)}, {"qbuf", qbuf}, {"qbuf-free", qfree}, {"argv-mem", argv},
		{"multi-mem", multiMem}, {"rbs", rbs}, {"rbp", 0}, {"obl", 0}, {"oll", 0},
		{"omem", omem}, {"tot-mem", tot},
	} {
		b = append(b, ' ')
		b = append(b, f.k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, f.v, 10)
	}
	b = append(b, " events=r cmd="...)
	b = append(b, cmd...)
	b = append(b, " user="...)
	b = append(b, user...)
	b = append(b, " redir="...)
	b = strconv.AppendInt(b, c.s.trk.Redirection(c.trk), 10)
	b = append(b, " resp="...)
	b = strconv.AppendInt(b, int64(c.protoVer.Load()), 10)
	b = append(b, '\n')
	sb.Write(b)
}

// argvMem is Redis's argv_len_sum: the bytes of a command's arguments.
func argvMem(args [][]byte) int64 {
	var n int64
	for _, a := range args {
		n += int64(len(a))
	}
	return n
}

// clientType is the client's type for CLIENT LIST/KILL TYPE: "pubsub"
// while it subscribes to anything, else "normal" (monitors included, as
// Redis shows them).
func (c *Client) clientType() string {
	if c.replica.Load() {
		return "replica"
	}
	if c.ml != nil {
		return "master"
	}
	if c.nSub.Load()+c.nPSub.Load()+c.nSSub.Load() > 0 {
		return "pubsub"
	}
	return "normal"
}

// clientTypeByName is Redis's getClientTypeByName: "" for an unknown name;
// "slave" is "replica".
func clientTypeByName(name []byte) string {
	switch t := strings.ToLower(string(name)); t {
	case "normal", "master", "replica", "pubsub":
		return t
	case "slave":
		return "replica"
	}
	return ""
}

// cmdClientList is CLIENT LIST [TYPE type | ID id...]: the clients in id
// order, or those of the IDs given, in their order (as Redis, an ID
// given twice is listed twice).
func cmdClientList(x *Ctx, args [][]byte) error {
	c := x.c
	typ := ""
	var ids []int64
	switch {
	case len(args) == 4 && cstr.EqualFold(args[2], "type"):
		if typ = clientTypeByName(args[3]); typ == "" {
			return resp.Err("ERR Unknown client type '" + cstr.ErrArg(args[3]) + "'")
		}
	case len(args) > 3 && cstr.EqualFold(args[2], "id"):
		for _, a := range args[3:] {
			id, ok := cstr.ParseInt(a)
			if !ok {
				return resp.Err("ERR Invalid client ID")
			}
			ids = append(ids, id)
		}
	case len(args) != 2:
		return resp.Err("ERR syntax error")
	}
	clients := c.s.clientList()
	sortClients(clients)
	var sb strings.Builder
	now := time.Now()
	if ids != nil {
		for _, id := range ids {
			for _, cl := range clients {
				if cl.id == id {
					cl.describe(&sb, c, args, now)
				}
			}
		}
	} else {
		for _, cl := range clients {
			if typ == "" || typ == cl.clientType() {
				cl.describe(&sb, c, args, now)
			}
		}
	}
	c.w.Verbatim("txt", []byte(sb.String()))
	return nil
}

func sortClients(cl []*Client) {
	slices.SortFunc(cl, func(a, b *Client) int { return cmp.Compare(a.id, b.id) })
}

func cmdClientInfo(x *Ctx, args [][]byte) error {
	var sb strings.Builder
	x.c.describe(&sb, x.c, args, time.Now())
	x.W.Verbatim("txt", []byte(sb.String()))
	return nil
}

// cmdClientKill closes the clients chosen; killing oneself closes the
// connection after the reply (killClient).
func cmdClientKill(x *Ctx, args [][]byte) error {
	c := x.c
	if len(args) == 3 {
		// Old form: CLIENT KILL addr:port.
		for _, cl := range c.s.clientList() {
			if cl.nc.RemoteAddr().String() == string(args[2]) {
				c.killClient(cl)
				c.w.OK()
				return nil
			}
		}
		return resp.Err("ERR No such client")
	}
	if len(args)%2 != 0 {
		return resp.Err("ERR syntax error")
	}
	var id int64
	var addr, laddr, user, typ string
	skipMe := true
	for i := 2; i < len(args); i += 2 {
		v := args[i+1]
		switch {
		case cstr.EqualFold(args[i], "id"):
			n, ok := cstr.ParseInt(v)
			if !ok || n <= 0 {
				return resp.Err("ERR client-id should be greater than 0")
			}
			id = n
		case cstr.EqualFold(args[i], "type"):
			if typ = clientTypeByName(v); typ == "" {
				return resp.Err("ERR Unknown client type '" + cstr.ErrArg(v) + "'")
			}
		case cstr.EqualFold(args[i], "addr"):
			addr = string(v)
		case cstr.EqualFold(args[i], "laddr"):
			laddr = string(v)
		case cstr.EqualFold(args[i], "user"):
			user = string(v)
			if c.s.acl.Get(user) == nil {
				return resp.Err("ERR No such user '" + cstr.ErrArg(v) + "'")
			}
		case cstr.EqualFold(args[i], "skipme"):
			switch {
			case cstr.EqualFold(v, "yes"):
				skipMe = true
			case cstr.EqualFold(v, "no"):
				skipMe = false
			default:
				return resp.Err("ERR syntax error")
			}
		default:
			return resp.Err("ERR syntax error")
		}
	}
	killed := 0
	for _, cl := range c.s.clientList() {
		switch {
		case id != 0 && cl.id != id,
			addr != "" && cl.nc.RemoteAddr().String() != addr,
			laddr != "" && cl.nc.LocalAddr().String() != laddr,
			typ != "" && typ != cl.clientType(),
			user != "" && cl.userOf().Name() != user,
			skipMe && cl == c:
			continue
		}
		c.killClient(cl)
		killed++
	}
	c.w.Int(int64(killed))
	return nil
}

// killClient closes cl; killing oneself closes after the reply.
func (c *Client) killClient(cl *Client) {
	if cl == c {
		c.quit = true
		return
	}
	cl.kill()
}

// cmdClientPause is CLIENT PAUSE timeout [WRITE|ALL] (the mode is checked
// first, as in Redis). A timeout of 0 pauses nothing that lasts.
func cmdClientPause(x *Ctx, args [][]byte) error {
	all := true
	if len(args) == 4 {
		switch {
		case cstr.EqualFold(args[3], "write"):
			all = false
		case cstr.EqualFold(args[3], "all"):
		default:
			return resp.Err("ERR CLIENT PAUSE mode must be WRITE or ALL")
		}
	} else if len(args) > 4 {
		return resp.Err("ERR unknown subcommand or wrong number of arguments for '" + cstr.ErrArg(args[1]) + "'. Try CLIENT HELP.")
	}
	ms, ok := cstr.ParseInt(args[2])
	if !ok {
		return resp.Err("ERR timeout is not an integer or out of range")
	}
	if ms < 0 {
		return resp.Err("ERR timeout is negative")
	}
	// Beyond what a time.Duration holds (292 years), the pause is as good
	// as endless.
	d := time.Duration(math.MaxInt64)
	if ms < math.MaxInt64/int64(time.Millisecond) {
		d = time.Duration(ms) * time.Millisecond
	}
	x.c.s.pause(d, all)
	x.W.OK()
	return nil
}

func cmdClientUnpause(x *Ctx, _ [][]byte) error {
	x.c.s.unpause()
	x.W.OK()
	return nil
}

// cmdClientReply sets the reply mode (execute applies it to the replies):
// ON replies OK, OFF and SKIP reply nothing, as in Redis. A bad mode
// changes nothing.
func cmdClientReply(x *Ctx, args [][]byte) error {
	c := x.c
	switch {
	case cstr.EqualFold(args[2], "on"):
		c.replyMode = replyOn
		c.w.OK()
	case cstr.EqualFold(args[2], "off"):
		c.replyMode = replyOff
	case cstr.EqualFold(args[2], "skip"):
		if c.replyMode != replyOff {
			c.replyMode = replySkipNext
		}
	default:
		return resp.Err("ERR syntax error")
	}
	return nil
}

// cmdClientNoEvict is CLIENT NO-EVICT ON|OFF: the client's e flag.
// Spillway does not evict clients (maxmemory-clients), so the flag
// changes nothing else.
func cmdClientNoEvict(x *Ctx, args [][]byte) error {
	switch {
	case cstr.EqualFold(args[2], "on"):
		x.c.noEvict.Store(true)
	case cstr.EqualFold(args[2], "off"):
		x.c.noEvict.Store(false)
	default:
		return resp.Err("ERR syntax error")
	}
	x.W.OK()
	return nil
}

func cmdClientUnblock(x *Ctx, args [][]byte) error {
	withError := false
	if len(args) == 4 {
		switch {
		case cstr.EqualFold(args[3], "timeout"):
		case cstr.EqualFold(args[3], "error"):
			withError = true
		default:
			return resp.Err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		}
	}
	id, ok := cstr.ParseInt(args[2])
	if !ok {
		return resp.Err("ERR value is not an integer or out of range")
	}
	unblocked := x.c.s.blocking.unblock(id, withError)
	if unblocked && withError {
		// As Redis, where the UNBLOCKED error is written while CLIENT
		// UNBLOCK runs, it fails CLIENT UNBLOCK too in INFO commandstats
		// (errorstats count it once, for the blocked client).
		x.c.stat.errs++
	}
	x.W.Int(b2i(unblocked))
	return nil
}

// cmdClientSetInfo implements Redis 7.2's CLIENT SETINFO LIB-NAME|LIB-VER,
// which client libraries send when they connect. It is not in Redis 7.0's
// command table, so dispatch calls it directly (before the arity and
// authentication checks, which it makes itself).
func cmdClientSetInfo(x *Ctx, args [][]byte) error {
	c := x.c
	if len(args) != 4 {
		return resp.Err("ERR wrong number of arguments for 'client|setinfo' command")
	}
	if !c.authed {
		return resp.Err("NOAUTH Authentication required.")
	}
	attr := args[2]
	if !cstr.EqualFold(attr, "lib-name") && !cstr.EqualFold(attr, "lib-ver") {
		return resp.Err("ERR Unrecognized option '" + cstr.ErrArg(attr) + "'")
	}
	for _, ch := range args[3] {
		if ch < '!' || ch > '~' {
			return resp.Err("ERR " + strops.LowerASCII(attr) + " cannot contain spaces, newlines or special characters.")
		}
	}
	c.mu.Lock()
	if cstr.EqualFold(attr, "lib-name") {
		c.libName = string(args[3])
	} else {
		c.libVer = string(args[3])
	}
	c.mu.Unlock()
	c.w.OK()
	return nil
}

// cmdClientTracking is CLIENT TRACKING on|off [REDIRECT id] [PREFIX p]...
// [BCAST] [OPTIN] [OPTOUT] [NOLOOP] (notify.go, proxy/tracking). A
// tracking client gets an output queue, through which other clients'
// commands push it invalidations.
func cmdClientTracking(x *Ctx, args [][]byte) error {
	c := x.c
	o, err := tracking.Parse(args, func(id int64) bool {
		cl := c.s.clientByID(id)
		return cl != nil && cl.pushable()
	})
	if err != nil {
		return trackingErr(err)
	}
	if o.On && !c.noBlock { // an in-process client gets no pushes (pushAsync)
		c.ensurePushOut()
	}
	var overlap error
	err = x.Update(func(*tiering.Tx) error {
		if !o.On {
			c.s.trk.Disable(c.trk)
		} else if overlap, err = c.s.trk.Enable(c.trk, o); err != nil {
			return trackingErr(err)
		}
		c.s.updateObserving()
		return nil
	})
	if err != nil {
		return err
	}
	if overlap != nil {
		c.err(overlap.Error()) // Redis 7.0.15 replies it, then OK
	}
	c.s.startTrackingCron()
	x.W.OK()
	return nil
}

// trackingErr turns the tracking package's errors into Redis error replies.
func trackingErr(err error) error {
	if e, ok := err.(tracking.Error); ok {
		return resp.Err(string(e))
	}
	return err
}

// cmdClientCaching is CLIENT CACHING yes|no.
func cmdClientCaching(x *Ctx, args [][]byte) error {
	c := x.c
	yes := true
	if c.trk.On() {
		switch {
		case cstr.EqualFold(args[2], "yes"):
		case cstr.EqualFold(args[2], "no"):
			yes = false
		default:
			return resp.Err("ERR syntax error")
		}
	}
	if err := c.s.trk.SetCaching(c.trk, yes); err != nil {
		return trackingErr(err)
	}
	x.W.OK()
	return nil
}

// cmdClientGetRedir is CLIENT GETREDIR: the redirection, 0 for none, -1
// when tracking is off.
func cmdClientGetRedir(x *Ctx, _ [][]byte) error {
	x.W.Int(x.c.s.trk.Redirection(x.c.trk))
	return nil
}

// cmdClientTrackingInfo is CLIENT TRACKINGINFO.
func cmdClientTrackingInfo(x *Ctx, _ [][]byte) error {
	flags, redirect, prefixes := x.c.s.trk.Info(x.c.trk)
	x.W.Map(3)
	x.W.BulkString("flags")
	x.W.Set(len(flags))
	for _, f := range flags {
		x.W.BulkString(f)
	}
	x.W.BulkString("redirect")
	x.W.Int(redirect)
	x.W.BulkString("prefixes")
	x.W.Array(len(prefixes))
	for _, p := range prefixes {
		x.W.BulkString(p)
	}
	return nil
}
