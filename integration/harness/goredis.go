package harness

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// GoRedis returns a go-redis v9 client for addr speaking protocol (2 or 3),
// closed when the test ends.
func GoRedis(t testing.TB, addr string, protocol int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// Client returns a go-redis v9 client (RESP2) for the server, using its
// password if it has one; it is closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.Password, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}
