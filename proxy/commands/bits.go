package commands

import "github.com/spillway/spillway/proxy/server"

func registerBits(t *server.Table) {}
