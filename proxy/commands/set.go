package commands

import "github.com/spillway/spillway/proxy/server"

func registerSet(t *server.Table) {}
