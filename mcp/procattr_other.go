//go:build !linux

package mcp

import "syscall"

// procAttr puts a stdio server in its own process group.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
