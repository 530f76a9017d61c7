package commands

import "github.com/spillway/spillway/proxy/server"

func registerZSet(t *server.Table) {}
