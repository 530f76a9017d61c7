package acl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PubSubDefault reports acl-pubsub-default allchannels.
func (r *Registry) PubSubDefault() bool { return r.allChannels.Load() }

// ParseUsers builds the users of the config file's user directives (each
// the name then the rules), as Redis's ACLLoadConfiguredUsers: the default
// user is reset before its rules apply; a user defined twice, a name with
// spaces or a rule refused is an error naming it.
func ParseUsers(dirs [][]string, allChannels bool) (map[string]*Rules, error) {
	users := map[string]*Rules{}
	for _, d := range dirs {
		name := d[0]
		if _, dup := users[name]; dup {
			return nil, errors.New("Duplicate user '" + name + "' found. A user can only be defined once in config files")
		}
		if hasSpaces(name) {
			return nil, errors.New("Spaces not allowed in ACL usernames")
		}
		merged, bad := mergeSelectors(d[1:])
		if bad >= 0 {
			return nil, errors.New("Unmatched parenthesis in acl selector starting at '" + d[1+bad] + "'")
		}
		r := newRules(allChannels)
		if name == "default" {
			r.apply("reset", allChannels)
		}
		for _, op := range merged {
			if e := r.apply(op, allChannels); e != errNone {
				return nil, fmt.Errorf("Error loading ACL rule '%s' for the user named '%s': %s", op, name, e)
			}
		}
		users[name] = r
	}
	return users, nil
}

// LoadFile reads an ACL file (ACL LOAD, aclfile at start): one "user name
// rules..." per line. Any error leaves nothing loaded and returns Redis's
// text, every faulty line named. Without a default user in the file, the
// default user is the initial one (on, nopass, everything).
func LoadFile(path string, allChannels bool) (map[string]*Rules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		msg := err.Error()
		if errors.As(err, &pe) {
			msg = strings.ToUpper(pe.Err.Error()[:1]) + pe.Err.Error()[1:]
		}
		return nil, fmt.Errorf("Error loading ACLs, opening file '%s': %s", path, msg)
	}
	users := map[string]*Rules{}
	var errs strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		// As Redis (sdssplitlen), split on single spaces, no quoting.
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", path, n)
			continue
		}
		name := argv[1]
		if hasSpaces(name) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", path, n, name)
			continue
		}
		if _, dup := users[name]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", name, n)
			continue
		}
		r := newRules(allChannels)
		users[name] = r
		merged, bad := mergeSelectors(argv[2:])
		if bad >= 0 {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", path, n)
		}
		syntax := false
		for _, op := range merged {
			op = strings.Trim(op, "\t\r\n")
			e := r.apply(op, allChannels)
			switch {
			case e == errNone:
			case e == errNoEnt:
				fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", path, n, op, e)
			case !syntax:
				fmt.Fprintf(&errs, "%s:%d: %s. ", path, n, e)
				syntax = true
			}
		}
	}
	if errs.Len() > 0 {
		errs.WriteString("WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
		return nil, errors.New(errs.String())
	}
	if users["default"] == nil {
		users["default"], _ = Parse(nil, []string{"+@all", "~*", "&*", "on", "nopass"}, false)
	}
	return users, nil
}

// SaveFile writes every user to an ACL file (ACL SAVE), through a
// temporary file renamed over it.
func (r *Registry) SaveFile(path string) error {
	var b strings.Builder
	for _, u := range r.Users() {
		b.WriteString("user " + u.Name() + " " + u.Rules().Describe() + "\n")
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
