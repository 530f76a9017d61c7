// Package script runs Redis 7.0 Lua scripts (EVAL, EVALSHA and their _RO
// variants, SCRIPT) and functions (FUNCTION, FCALL, FCALL_RO) on the
// gopher-lua VM, reproducing redis-server 7.0.15's replies and errors.
//
// The package knows nothing about the keyspace: the commands a script calls
// with redis.call and redis.pcall are checked here (known command, arity,
// noscript, read-only rules) and then executed by a Host supplied by the
// caller, whose RESP reply is converted to Lua values as Redis does.
//
// Concurrency: Eval, FCall, Script and Function run one at a time (they
// serialize on an internal mutex, so SCRIPT LOAD or FUNCTION LOAD called
// while a script runs waits for it). Kill, Running, WaitIdle, NumScripts,
// MemoryBytes, Libraries and FUNCTION STATS never wait for a running script.
//
// # How Redis's Lua is reproduced
//
//   - vm.go builds each interpreter as Redis does (the libraries it keeps,
//     the redis table, read-only globals; gopher-lua has no read-only tables,
//     so protected tables are proxies, see luaVM).
//   - syntax.go is a port of Lua 5.1's lexer and parser checks, for C Lua's
//     compile error messages; luaerrors.go rewrites gopher-lua's runtime
//     errors into C Lua's words (variable names included) using the failing
//     frame, read through luainternals.go.
//   - stdlib.go and numconv.go replace the library functions whose results
//     differ (tonumber, string.format, tostring, table.concat, ...).
//   - convert.go, luatable.go: RESP <-> Lua conversions, with C Lua's table
//     iteration order for map and set replies.
//   - runctx.go: SCRIPT/FUNCTION KILL, FUNCTION LOAD's timeout and C Lua's
//     "stack overflow" limit.
//   - dump.go: FUNCTION DUMP/RESTORE payloads, byte-identical (RDB strings
//     and LZF from proxy/rdb).
//
// # Known differences from redis-server 7.0.15
//
//   - The .. operator formats numbers as gopher-lua does (shortest round-trip
//     form; C Lua uses "%.14g"): 2^53 .. "" and 1e15 .. "" differ.
//     tostring, string.format and redis.call arguments are exact.
//   - Table iteration order (pairs, next, map and set replies) follows a
//     model of C Lua's hash layout (luatable.go): exact for tables filled one
//     key at a time and for tables built from replies; constructors with
//     colliding keys, deletions followed by insertions and integer keys
//     added after other keys can be ordered differently. # of a table with
//     holes follows gopher-lua's layout.
//   - FUNCTION LIST, FUNCTION DUMP and RESTORE collisions use name order;
//     Redis uses its hash table order, which varies between runs.
//   - error({}) and other error tables without an err field crash Redis
//     7.0.15; here the caller gets "ERR unknown error".
//   - No Lua debugger: SCRIPT DEBUG YES|SYNC fails. ACLs are the
//     Host's (ACLCheck): redis.call and redis.acl_check_cmd ask it. No OOM, stale-replica
//     or cluster checks (allow-oom, allow-stale, no-cluster are accepted
//     and ignored).
//   - x % 0 is nan, not -nan; C Lua's C-call depth limit (200 nested pcall
//     or metamethod calls, "C stack overflow") is not enforced.
//   - string.dump returns a chunk in C Lua 5.1's layout but with
//     gopher-lua's instructions, so its bytes differ from Redis's; as in
//     Redis, loadstring refuses it either way (binary chunks are parsed as
//     source text and fail).
//   - A coroutine left suspended by one script or FCALL (kept in a library's
//     upvalue) cannot be resumed by a later one: a coroutine inherits the
//     run's cancellation context, which is cancelled when a run that
//     created coroutines ends (runs without coroutines or kills share one).
package script
